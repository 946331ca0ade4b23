// The rate limiting of Knative's ingress prober (knative.dev/networking, pkg/status), as published:
// a work queue whose retry delay is the max of a per-item exponential backoff (50 ms doubling to
// 30 s) and a global token bucket (50 qps, burst 100), like client-go's MaxOfRateLimiter over
// ItemExponentialFailureRateLimiter and BucketRateLimiter. The first probe of an item is queued with
// AddAfter(initialDelay = 200 ms), which does not consult the limiter; only retries do.
// Pure: time is passed in (ms).

export const KNATIVE_PROBER = {
  initialDelayMs: 200,
  probeTimeoutMs: 1000,
  backoffBaseMs: 50,
  backoffMaxMs: 30_000,
  globalQps: 50,
  globalBurst: 100,
  /** Concurrent probe workers in Knative's prober. */
  workers: 15,
} as const;

/** golang.org/x/time/rate Reserve() semantics: a token is always taken; the delay is the debt's wait. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Takes one token and returns how long (ms) the caller must wait before acting. */
  reserve(now: number): number {
    const elapsed = Math.max(0, now - this.last);
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.ratePerSecond) / 1000);
    this.last = Math.max(this.last, now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.ratePerSecond;
  }
}

/** client-go ItemExponentialFailureRateLimiter: base × 2^failures, capped; Forget resets. */
export class ItemExponentialBackoff<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  when(item: K): number {
    const failures = this.failures.get(item) ?? 0;
    this.failures.set(item, failures + 1);
    return Math.min(this.maxMs, this.baseMs * 2 ** failures);
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  retries(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/** MaxOfRateLimiter(exponential, bucket): every limiter is consulted (the bucket always spends a token). */
export class KnativeRetryLimiter<K> {
  private readonly backoff: ItemExponentialBackoff<K>;
  private readonly bucket: TokenBucket;

  constructor(now: number, parameters: { backoffBaseMs: number; backoffMaxMs: number; globalQps: number; globalBurst: number } = KNATIVE_PROBER) {
    this.backoff = new ItemExponentialBackoff<K>(parameters.backoffBaseMs, parameters.backoffMaxMs);
    this.bucket = new TokenBucket(parameters.globalQps, parameters.globalBurst, now);
  }

  /** Delay (ms) before the item's next attempt after a failed probe (AddRateLimited). */
  when(item: K, now: number): number {
    return Math.max(this.backoff.when(item), this.bucket.reserve(now));
  }

  forget(item: K): void {
    this.backoff.forget(item);
  }
}
