// Staleness (docs/CONVERGENCE.md, "Expiry and stuck Envoys"): an Envoy not seen for the TTL leaves the
// denominator; a response neither ACKed nor NACKed within the ACK timeout is stuck and reported, not
// waited on forever. The rules are stated once here, on plain times, so the evaluation over Envoy
// states (convergence.ts) and the one over aggregate members (aggregate.ts) apply the same ones.
import type { EnvoyState, TypeState } from './envoy-record';
import { tableAge, type TableClockView } from './table-clock';

/**
 * Heard of within the window: `lastSeenAt` at most `windowMs` before `now`. With a table clock
 * (table-clock.ts) the age is in table time, so time the table could not be used does not count.
 */
export function seenWithin(lastSeenAt: number, now: number, windowMs: number, clock?: TableClockView): boolean {
  return tableAge(clock, lastSeenAt, now) <= windowMs;
}

/** Not yet expired, but not seen for more than `ttlMs`. */
export function shouldExpire(envoy: EnvoyState, now: number, ttlMs: number, clock?: TableClockView): boolean {
  return envoy.status !== 'EXPIRED' && !seenWithin(envoy.lastSeenAt, now, ttlMs, clock);
}

/**
 * When the Envoy was last vouched for: its own `lastSeenAt`, or for a CONNECTED state its gateway's
 * lineage heartbeat if later. The gateway heartbeats its lineage while it holds its streams, and it
 * writes DISCONNECTED (with the time) when a stream of the Envoy closes, so a CONNECTED state on a
 * lineage heartbeating at H was connected at H at the earliest reading (a DISCONNECTED still on its
 * way only keeps it counted longer: safe). Without this, a connected Envoy whose own refresh lagged
 * (refreshes are per Envoy, on a coarser tick, and reach the aggregates through the stream) left the
 * denominator while its gateway was alive, and a generation was decided without it
 * (docs/CONVERGENCE.md, "Expiry and stuck Envoys").
 */
export function lastVouchedAt(lastSeenAt: number, connected: boolean, lineageHeartbeatAt: number | undefined): number {
  return connected && lineageHeartbeatAt !== undefined ? Math.max(lastSeenAt, lineageHeartbeatAt) : lastSeenAt;
}

/**
 * Counts in the denominator: not expired and vouched for within the TTL (even if disconnected).
 * `lineageHeartbeatAt`: the heartbeat of the state's lineage (lastVouchedAt); absent: its own stamp only.
 */
export function isLive(envoy: EnvoyState, now: number, ttlMs: number, clock?: TableClockView, lineageHeartbeatAt?: number): boolean {
  return envoy.status !== 'EXPIRED' && seenWithin(lastVouchedAt(envoy.lastSeenAt, envoy.status === 'CONNECTED', lineageHeartbeatAt), now, ttlMs, clock);
}

/** When a type started waiting for an answer: its unanswered response, or names added but not yet served. */
export function typeWaitingSince(type: Pick<TypeState, 'pending' | 'namesChange'>): number | undefined {
  // The earlier of the two; no array (called per type of every state the gateway tracks).
  const sentAt = type.pending?.sentAt;
  const namesAt = type.namesChange?.at;
  if (sentAt === undefined) return namesAt;
  return namesAt === undefined ? sentAt : Math.min(sentAt, namesAt);
}

/** When the subscribed type started waiting for an answer (typeWaitingSince); undefined if not subscribed. */
export function waitingSince(envoy: EnvoyState, typeUrl: string): number | undefined {
  const type = envoy.types[typeUrl];
  if (type === undefined || !type.subscribed) return undefined;
  return typeWaitingSince(type);
}

/** A type waiting since `since` is stuck at `at` once it has waited the ACK timeout. */
export function waitedPastTimeout(since: number, at: number, ackTimeoutMs: number): boolean {
  return at - since >= ackTimeoutMs;
}

/**
 * The moment a stored state is judged at: its own `lastSeenAt` (the last time its gateway vouched for
 * it), never the reader's clock. A stored state lags the gateway by the pipeline (flush, stream,
 * convergence backlog); judged at `now`, an Envoy that ACKed long ago would look stuck because its ACK
 * has not reached the reader yet, and the object would get a false Stuck write. The gateway refreshes
 * `lastSeenAt` when it finds a response unanswered past the timeout (it writes the STUCK event then),
 * so a real stuck Envoy is still reported, one state write later.
 */
export function storedObservationTime(now: number, lastSeenAt: number): number {
  return Math.min(now, lastSeenAt);
}

/**
 * Subscribed types waiting for at least `ackTimeoutMs`, sorted: a response neither ACKed nor NACKed,
 * or added resource names with no ACKed response since (e.g. an EDS name the control plane never serves).
 */
export function stuckTypes(envoy: EnvoyState, now: number, ackTimeoutMs: number): string[] {
  const stuck: string[] = [];
  for (const typeUrl of Object.keys(envoy.types)) {
    const since = waitingSince(envoy, typeUrl);
    if (since !== undefined && waitedPastTimeout(since, now, ackTimeoutMs)) stuck.push(typeUrl);
  }
  return stuck.sort();
}

/** `stuckTypes` as the *stored* state proves it: judged at storedObservationTime, never at the reader's clock. */
export function stuckTypesAsStored(envoy: EnvoyState, now: number, ackTimeoutMs: number): string[] {
  return stuckTypes(envoy, storedObservationTime(now, envoy.lastSeenAt), ackTimeoutMs);
}

export function isStuck(envoy: EnvoyState, now: number, ackTimeoutMs: number): boolean {
  return envoy.status === 'CONNECTED' && stuckTypes(envoy, now, ackTimeoutMs).length > 0;
}

/**
 * Credits time in which the gateway did not read this Envoy's answers (backpressure paused its
 * streams: docs/GATEWAY.md, "Backpressure") to every wait: the Envoy may have answered at once, its
 * ACK held unread by HTTP/2 flow control, so that time must not make it look stuck. The unread span is
 * [`before`, `before` + `creditMs`): a wait begun before it waits `creditMs` less; a wait begun inside
 * it (at the pause's own instant: the pause comes from inside the tracker callback that then records
 * the state, e.g. a names hold the ACK opened) starts at the span's end. Returns the same state when
 * nothing waits.
 */
export function creditUnreadTime(envoy: EnvoyState, args: { creditMs: number; before: number }): EnvoyState {
  if (args.creditMs <= 0) return envoy;
  const end = args.before + args.creditMs;
  // Only waits begun before `end` are credited (below), so one begun inside the span moves to `end`.
  const credited = (start: number): number => (start < args.before ? start + args.creditMs : end);
  let types: Record<string, TypeState> | undefined;
  for (const [typeUrl, type] of Object.entries(envoy.types)) {
    const pending = type.pending !== undefined && type.pending.sentAt < end ? { ...type.pending, sentAt: credited(type.pending.sentAt) } : undefined;
    const namesChange = type.namesChange !== undefined && type.namesChange.at < end ? { ...type.namesChange, at: credited(type.namesChange.at) } : undefined;
    if (pending === undefined && namesChange === undefined) continue;
    types ??= { ...envoy.types };
    types[typeUrl] = { ...type, ...(pending === undefined ? {} : { pending }), ...(namesChange === undefined ? {} : { namesChange }) };
  }
  return types === undefined ? envoy : { ...envoy, types };
}
