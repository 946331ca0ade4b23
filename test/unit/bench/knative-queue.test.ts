import { ItemExponentialBackoff, KNATIVE_PROBER, KnativeRetryLimiter, TokenBucket } from '../../../bench/support/knative-queue';

describe('TokenBucket (golang.org/x/time/rate Reserve semantics)', () => {
  it('lets the burst through at once, then paces at the rate', () => {
    const bucket = new TokenBucket(50, 100, 0);
    const delays = Array.from({ length: 102 }, () => bucket.reserve(0));
    expect(delays.slice(0, 100).every((d) => d === 0)).toBe(true);
    // 101st token: one token of debt at 50/s = 20 ms; 102nd: 40 ms.
    expect(delays[100]).toBeCloseTo(20);
    expect(delays[101]).toBeCloseTo(40);
  });

  it('refills with time, never above the burst', () => {
    const bucket = new TokenBucket(50, 2, 0);
    bucket.reserve(0);
    bucket.reserve(0);
    expect(bucket.reserve(0)).toBeCloseTo(20);
    // After 10 s idle the bucket holds only its burst (2), not 500 tokens.
    const later = 10_000;
    expect(bucket.reserve(later)).toBe(0);
    expect(bucket.reserve(later)).toBe(0);
    expect(bucket.reserve(later)).toBeGreaterThan(0);
  });
});

describe('ItemExponentialBackoff', () => {
  it('doubles from 50 ms per failure up to 30 s, per item, and Forget resets', () => {
    const backoff = new ItemExponentialBackoff<string>(KNATIVE_PROBER.backoffBaseMs, KNATIVE_PROBER.backoffMaxMs);
    const delays = Array.from({ length: 12 }, () => backoff.when('a'));
    expect(delays.slice(0, 5)).toEqual([50, 100, 200, 400, 800]);
    expect(delays.at(-1)).toBe(30_000);
    expect(backoff.when('b')).toBe(50);
    backoff.forget('a');
    expect(backoff.retries('a')).toBe(0);
    expect(backoff.when('a')).toBe(50);
  });
});

describe('KnativeRetryLimiter', () => {
  it('takes the larger of the item backoff and the global bucket delay', () => {
    const limiter = new KnativeRetryLimiter<string>(0, { backoffBaseMs: 50, backoffMaxMs: 30_000, globalQps: 50, globalBurst: 1 });
    expect(limiter.when('a', 0)).toBe(50); // bucket still has its one token
    // Bucket now in debt: 1 token → 20 ms, less than b's 50 ms backoff.
    expect(limiter.when('b', 0)).toBe(50);
    // Many retries at the same instant: the bucket's debt dominates the per-item backoff.
    let last = 0;
    for (let i = 0; i < 20; i++) last = limiter.when(`item-${i}`, 0);
    expect(last).toBeGreaterThan(400);
  });

  it('publishes the parameters the README names', () => {
    expect(KNATIVE_PROBER).toMatchObject({ initialDelayMs: 200, probeTimeoutMs: 1000, backoffBaseMs: 50, backoffMaxMs: 30_000, globalQps: 50 });
  });
});
