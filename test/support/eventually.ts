// One polling loop for the tests. The per-folder helpers (`eventually`, `waitFor`, `until`) are thin
// wrappers that keep their own signatures, defaults and messages on top of `pollUntil`.

/** What a probe may return: `undefined` (and, unless `acceptFalse`, `false`) means "not yet". */
export type Probe<T> = () => Promise<T | undefined | false> | T | undefined | false;

export interface PollOptions {
  timeoutMs: number;
  intervalMs: number;
  /** Keep polling when the probe throws; the last error is appended to the timeout message. Default: errors propagate. */
  retryOnError?: boolean;
  /** `false` is a result, not "not yet" (only `undefined` keeps polling). */
  acceptFalse?: boolean;
}

/** Thrown when the deadline passes; the message is the caller's `timeoutMessage`. */
export class PollTimeoutError extends Error {}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `probe` every `intervalMs` until it returns a result, and returns it. A synchronous probe is
 * called without an extra await. Throws `PollTimeoutError(timeoutMessage)` once past the deadline.
 */
export async function pollUntil<T>(probe: Probe<T>, timeoutMessage: string, options: PollOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const raw = probe();
      const value = isPromiseLike(raw) ? await raw : raw;
      if (value !== undefined && (options.acceptFalse === true || value !== false)) return value as T;
    } catch (error) {
      if (options.retryOnError !== true) throw error;
      last = error;
    }
    if (Date.now() > deadline) throw new PollTimeoutError(`${timeoutMessage}${last === undefined ? '' : ` (last error: ${String(last)})`}`);
    await sleep(options.intervalMs);
  }
}

/** Polls until `probe` returns something other than `undefined`/`false`; message `timed out waiting for: <description>`. */
export function eventually<T>(probe: Probe<T>, description: string, options: Partial<PollOptions> = {}): Promise<T> {
  return pollUntil(probe, `timed out waiting for: ${description}`, { timeoutMs: 20_000, intervalMs: 20, ...options });
}

/** Polls until `probe` returns something other than `undefined`; message `timed out waiting for <what>`. */
export function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, options: Partial<PollOptions> = {}): Promise<T> {
  return pollUntil(probe, `timed out waiting for ${what}`, { timeoutMs: 15_000, intervalMs: 25, acceptFalse: true, ...options });
}
