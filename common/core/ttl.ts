// Expiry times as the table's `ttl` attribute holds them: epoch *seconds*, as DynamoDB's TTL feature
// requires (every other time in the model is epoch milliseconds).

/** DynamoDB TTL value (epoch seconds) for something that happened at `atMs` and is kept `retentionMs`. */
export function ttlEpochSeconds(atMs: number, retentionMs: number): number {
  return Math.ceil((atMs + retentionMs) / 1000);
}
