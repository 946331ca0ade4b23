// A raw xDS stream in a test: queue the responses, await the next one or the final status.
import type * as grpc from '@grpc/grpc-js';

export class StreamReader<Req, Res> {
  private readonly queue: Res[] = [];
  private waiting: ((value: Res) => void) | undefined;
  readonly status: Promise<grpc.StatusObject>;
  private ended = false;

  constructor(readonly call: grpc.ClientDuplexStream<Req, Res>) {
    call.on('data', (response: Res) => {
      const waiter = this.waiting;
      this.waiting = undefined;
      if (waiter) waiter(response);
      else this.queue.push(response);
    });
    this.status = new Promise((resolve) => {
      call.on('status', (status: grpc.StatusObject) => {
        this.ended = true;
        resolve(status);
      });
    });
    // The status event carries the outcome; 'error' must still be handled or Node throws.
    call.on('error', () => undefined);
  }

  send(request: Req): void {
    this.call.write(request);
  }

  /** The next response, or an error after `timeoutMs`. */
  next(timeoutMs = 10_000): Promise<Res> {
    const queued = this.queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(new Error(`no response within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting = (value) => {
        clearTimeout(timer);
        resolve(value);
      };
    });
  }

  /** True if no response arrives within `ms`. */
  async silentFor(ms: number): Promise<boolean> {
    if (this.queue.length > 0) return false;
    try {
      await this.next(ms);
      return false;
    } catch {
      return true;
    }
  }

  get isEnded(): boolean {
    return this.ended;
  }

  close(): void {
    if (!this.ended) this.call.cancel();
  }
}
