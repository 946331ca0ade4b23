// When the recorder flushes: a timer per flush window (`flushIntervalMs`, the coalescing window for
// state writes; a few milliseconds for urgent work), one flush at a time, a follow-up flush at once
// while a flush left ready states behind (maxStatesPerFlush), a full-jitter backoff after a failed
// flush, idle waiters, and close() (SIGTERM: flush until empty or the timeout). What a flush writes is
// the pipelines' business (index.ts `flushOnce`).
import type { Logger } from 'pino';
import { fullJitterDelay } from '../../../common/store';

/** What one flush did. */
export interface FlushOutcome {
  /** Something must be retried (the next flush waits a backoff). */
  failed: boolean;
  /** It stopped at maxStatesPerFlush with states still ready to write. */
  moreReady: boolean;
}

export interface FlushWork {
  /** Writes what is due; `writeHeld` also writes states being held. */
  flush(writeHeld: boolean): Promise<FlushOutcome>;
  /** Runs after each flush, before idleness is judged (backpressure check, forgetting retired lineages). */
  afterFlush(): void;
  /** Nothing queued anywhere. */
  isEmpty(): boolean;
}

export interface FlushSchedulerOptions {
  logger: Logger;
  flushIntervalMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  random: () => number;
  work: FlushWork;
}

export class FlushScheduler {
  private timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (wall clock: only for comparing two delays). */
  private timerDueAt = 0;
  private flushing: Promise<void> | undefined;
  private closed = false;
  private readonly idleWaiters: Array<() => void> = [];
  private failures = 0;
  private attemptsFailed = 0;

  constructor(private readonly options: FlushSchedulerOptions) {}

  get consecutiveFailures(): number {
    return this.failures;
  }

  get failedAttempts(): number {
    return this.attemptsFailed;
  }

  schedule(delayMs = this.options.flushIntervalMs): void {
    if (this.closed) return;
    const dueAt = Date.now() + delayMs;
    // An earlier flush wins: a timer set by an enqueue during a flush must not delay the follow-up
    // flush that more ready states ask for (maxStatesPerFlush).
    if (this.timer !== undefined) {
      if (this.timerDueAt <= dueAt) return;
      clearTimeout(this.timer);
    }
    this.timerDueAt = dueAt;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.runScheduled();
    }, delayMs);
    // The timer alone must not keep a process alive: close() flushes explicitly.
    this.timer.unref();
  }

  /** Runs one flush now (waits for a running one first); `writeHeld` also writes states being held. */
  async flushNow(writeHeld = false): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    this.flushing = this.flushOnce(writeHeld).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /** A flush is running: states it took are neither queued nor written yet. */
  isFlushing(): boolean {
    return this.flushing !== undefined;
  }

  /** Resolves when every queue is empty and no flush is running. */
  whenIdle(): Promise<void> {
    if (this.options.work.isEmpty() && this.flushing === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops the timer and flushes until everything is written or `timeoutMs` passed (SIGTERM path). */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const deadline = Date.now() + timeoutMs;
    while (!this.options.work.isEmpty() && Date.now() < deadline) {
      await this.flushNow(true);
      if (!this.options.work.isEmpty() && this.failures > 0) {
        await sleep(Math.min(this.backoffMs(), Math.max(0, deadline - Date.now())));
      }
    }
    if (this.flushing !== undefined) await this.flushing;
    this.resolveIdle();
  }

  private async runScheduled(): Promise<void> {
    if (this.flushing !== undefined) {
      await this.flushing;
    }
    if (this.closed) return;
    try {
      await this.flushNow();
    } catch (error) {
      // The pipelines catch store errors themselves; this is a bug guard so the loop never dies.
      this.options.logger.error({ err: error }, 'recorder flush failed unexpectedly');
      this.failures++;
    }
    if (!this.options.work.isEmpty()) {
      // A follow-up flush for more ready states is already due (flushOnce): an earlier timer wins.
      this.schedule(this.failures > 0 ? this.backoffMs() : this.options.flushIntervalMs);
    } else {
      this.resolveIdle();
    }
  }

  private async flushOnce(writeHeld: boolean): Promise<void> {
    const { failed, moreReady } = await this.options.work.flush(writeHeld);
    if (failed) {
      this.failures++;
      this.attemptsFailed++;
    } else {
      this.failures = 0;
    }
    this.options.work.afterFlush();
    if (this.options.work.isEmpty()) this.resolveIdle();
    else if (moreReady && !failed) this.schedule(0);
  }

  private backoffMs(): number {
    return Math.max(1, fullJitterDelay(this.failures, this.options.retryBaseMs, this.options.retryMaxMs, this.options.random));
  }

  private resolveIdle(): void {
    if (!this.options.work.isEmpty() || this.flushing !== undefined) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
