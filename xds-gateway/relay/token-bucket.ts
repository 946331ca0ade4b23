// A per-stream request rate limit. A token bucket (capacity `burst`, refilled at `ratePerSecond`)
// lets an Envoy send the bursts xDS is made of (one request per type at connect, an ACK per response)
// while bounding a client that loops. Time comes from the injected clock so tests can drive it.
export interface RequestRateLimit {
  /** Sustained requests per second per stream. */
  ratePerSecond: number;
  /** Requests a stream may send at once (bucket capacity). */
  burst: number;
}

export class TokenBucket {
  private tokens: number;
  private refilledAt: number;

  constructor(
    private readonly limit: RequestRateLimit,
    now: number,
  ) {
    this.tokens = limit.burst;
    this.refilledAt = now;
  }

  /** Takes one token if there is one; false means the caller is over its rate. */
  take(now: number): boolean {
    const elapsedMs = Math.max(0, now - this.refilledAt);
    this.tokens = Math.min(this.limit.burst, this.tokens + (elapsedMs * this.limit.ratePerSecond) / 1000);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
