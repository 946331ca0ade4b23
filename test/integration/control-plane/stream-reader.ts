// Test helper: turns a client duplex stream into "await the next message / the final status".
import type * as grpc from '@grpc/grpc-js';

export class StreamReader<Req, Res> {
  private readonly queue: Res[] = [];
  private waiters: Array<() => void> = [];
  status: grpc.StatusObject | undefined;
  error: grpc.ServiceError | undefined;

  constructor(readonly call: grpc.ClientDuplexStream<Req, Res>) {
    call.on('data', (message: Res) => {
      this.queue.push(message);
      this.wake();
    });
    call.on('status', (status: grpc.StatusObject) => {
      this.status = status;
      this.wake();
    });
    call.on('error', (error: grpc.ServiceError) => {
      this.error = error;
      this.wake();
    });
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** Next message; rejects on timeout or if the stream ended first. */
  async next(timeoutMs = 10_000): Promise<Res> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.queue.shift();
      if (message !== undefined) return message;
      if (this.error) throw this.error;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error('timed out waiting for a response');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Asserts nothing arrives within `ms` (used only to check the absence of a resend). */
  async nothingWithin(ms: number): Promise<boolean> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.queue.length === 0;
  }

  /** Resolves with the error that ended the stream. */
  async ended(timeoutMs = 10_000): Promise<grpc.ServiceError> {
    const deadline = Date.now() + timeoutMs;
    while (!this.error) {
      if (Date.now() > deadline) throw new Error('stream did not end');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.error;
  }

  close(): void {
    this.call.cancel();
  }
}
