// Staleness (brief §2 "the denominator"): an Envoy not seen for the TTL leaves the denominator; a
// response neither ACKed nor NACKed within the ACK timeout is stuck and reported, not waited on forever.
import type { EnvoyState } from './envoy-record';

/** Not yet expired, but not seen for more than `ttlMs`. */
export function shouldExpire(envoy: EnvoyState, now: number, ttlMs: number): boolean {
  return envoy.status !== 'EXPIRED' && now - envoy.lastSeenAt > ttlMs;
}

/** Counts in the denominator: not expired and seen within the TTL (even if disconnected). */
export function isLive(envoy: EnvoyState, now: number, ttlMs: number): boolean {
  return envoy.status !== 'EXPIRED' && now - envoy.lastSeenAt <= ttlMs;
}

/** When the type started waiting for an answer: an unanswered response, or names added but not yet served. */
export function waitingSince(envoy: EnvoyState, typeUrl: string): number | undefined {
  const type = envoy.types[typeUrl];
  if (type === undefined || !type.subscribed) return undefined;
  const since = [type.pending?.sentAt, type.namesChange?.at].filter((t): t is number => t !== undefined);
  return since.length === 0 ? undefined : Math.min(...since);
}

/**
 * Subscribed types waiting for at least `ackTimeoutMs`, sorted: a response neither ACKed nor NACKed,
 * or added resource names with no ACKed response since (e.g. an EDS name the control plane never serves).
 */
export function stuckTypes(envoy: EnvoyState, now: number, ackTimeoutMs: number): string[] {
  const stuck: string[] = [];
  for (const typeUrl of Object.keys(envoy.types)) {
    const since = waitingSince(envoy, typeUrl);
    if (since !== undefined && now - since >= ackTimeoutMs) stuck.push(typeUrl);
  }
  return stuck.sort();
}

/**
 * `stuckTypes` as the *stored* state proves it: judged at the state's own `lastSeenAt` (the last time
 * its gateway vouched for it), never at the reader's clock. A stored state lags the gateway by the
 * pipeline (flush, stream, convergence backlog); judged at `now`, an Envoy that ACKed long ago would
 * look stuck because its ACK has not reached the reader yet, and the object would get a false Stuck
 * write. The gateway refreshes `lastSeenAt` when it finds a response unanswered past the timeout (it
 * writes the STUCK event then), so a real stuck Envoy is still reported, one state write later.
 */
export function stuckTypesAsStored(envoy: EnvoyState, now: number, ackTimeoutMs: number): string[] {
  return stuckTypes(envoy, Math.min(now, envoy.lastSeenAt), ackTimeoutMs);
}

export function isStuck(envoy: EnvoyState, now: number, ackTimeoutMs: number): boolean {
  return envoy.status === 'CONNECTED' && stuckTypes(envoy, now, ackTimeoutMs).length > 0;
}
