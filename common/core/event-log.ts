// The event log's grouping rules (docs/GATEWAY.md, "The event log"), pure so they can be tested with
// tables. DynamoDB bills per item written, and an ACK already costs the Envoy's STATE write (convergence
// is driven by STATE records), so the events ride in that write (`EnvoyState.unlogged`) and move, many
// at a time, to an event-log item only when the STATE would otherwise grow past a bound. Every event is
// durable from the moment the STATE write carrying it is confirmed; it is in the log item before it
// leaves the STATE. A crash between the two writes leaves an event in both: readers keep one
// (`dedupeEvents`), as they would for any replay.
import { CarriedEventSchema, MAX_EVENTS_PER_ITEM, carriedEventIdentity, carriedTypeFields, carriedTypeUrl, type CarriedEvent, type EnvoyEvent } from './envoy-event';
import { type EnvoyState, type TypeState } from './envoy-record';
import { MAX_MESSAGE_BYTES, truncateUtf8 } from './truncate';

export interface EventLogLimits {
  /** Events a STATE may carry; one more and they all move to an event-log item. */
  maxCarriedEvents: number;
  /** Serialized size (UTF-16 units of the JSON, ≈ bytes) of the carried events above which they move. */
  maxCarriedChars: number;
}

/**
 * Defaults: 8 compact events are ~0.8 KB, so a STATE carrying them stays within a couple of write
 * units, and a change touching one type costs 1 + 1/9 item writes per ACK at the gateway (docs/GATEWAY.md).
 */
export const DEFAULT_EVENT_LOG_LIMITS: EventLogLimits = { maxCarriedEvents: 8, maxCarriedChars: 2048 };

/** Events per event-log item at most (bounded further by characters, so an item stays far below 400 KB). */
export const MAX_EVENTS_PER_LOG_ITEM = 100;
const MAX_CHARS_PER_LOG_ITEM = 64 * 1024;

export function toCarriedEvent(event: EnvoyEvent): CarriedEvent {
  return {
    o: event.outcome,
    l: event.lineage,
    q: event.seq,
    ...carriedTypeFields(event.typeUrl),
    a: event.at,
    ...(event.message === undefined ? {} : { m: truncateUtf8(event.message, MAX_MESSAGE_BYTES) }),
    ...(event.sentAt === undefined ? {} : { s: event.sentAt }),
    x: event.ttl,
  };
}

export function fromCarriedEvent(nodeId: string, event: CarriedEvent): EnvoyEvent {
  return {
    nodeId,
    outcome: event.o,
    lineage: event.l,
    seq: event.q,
    typeUrl: carriedTypeUrl(event),
    at: event.a,
    ...(event.m === undefined ? {} : { message: event.m }),
    ...(event.s === undefined ? {} : { sentAt: event.s }),
    ttl: event.x,
  };
}

/** Same identity as carriedEventIdentity, for the full record. */
export function eventIdentity(event: Pick<EnvoyEvent, 'lineage' | 'seq' | 'typeUrl' | 'outcome'>): string {
  return carriedEventIdentity({ o: event.outcome, l: event.lineage, q: event.seq, u: event.typeUrl, a: 0, x: 1 });
}

/** Checks an event before it is carried (it must not make the whole STATE write invalid). */
export function checkCarriedEvent(event: CarriedEvent): string | undefined {
  const parsed = CarriedEventSchema.safeParse(event);
  return parsed.success ? undefined : parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(event)'}: ${issue.message}`).join('; ');
}

/** `base` then `added`, in order, one event per identity (the first copy wins: a replay changes nothing). */
export function mergeCarried(base: readonly CarriedEvent[], added: readonly CarriedEvent[]): CarriedEvent[] {
  const seen = new Set<string>();
  const merged: CarriedEvent[] = [];
  for (const event of [...base, ...added]) {
    const identity = carriedEventIdentity(event);
    if (seen.has(identity)) continue;
    seen.add(identity);
    merged.push(event);
  }
  return merged;
}

/** `events` without those whose identity is in `removed`. */
export function withoutCarried(events: readonly CarriedEvent[], removed: ReadonlySet<string>): CarriedEvent[] {
  return events.filter((event) => !removed.has(carriedEventIdentity(event)));
}

/** Events past their TTL (epoch seconds) may go, like an item DynamoDB's TTL deleted. */
export function withoutExpired(events: readonly CarriedEvent[], nowMs: number): CarriedEvent[] {
  const nowSeconds = Math.floor(nowMs / 1000);
  return events.filter((event) => event.x > nowSeconds);
}

function carriedChars(events: readonly CarriedEvent[]): number {
  return events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
}

export interface CarryPlan {
  /** Events to write to event-log items before the STATE write (empty: nothing to log now). */
  log: CarriedEvent[];
  /** What the STATE write carries. */
  carry: CarriedEvent[];
}

/**
 * Given what the stored STATE carries and the new events, decide what the next STATE write carries.
 * Over either bound, *everything* moves to the log (one log item per N+1 events, not one per event
 * past the bound) and the STATE carries nothing.
 */
export function planCarry(stored: readonly CarriedEvent[], added: readonly CarriedEvent[], limits: EventLogLimits = DEFAULT_EVENT_LOG_LIMITS): CarryPlan {
  const all = mergeCarried(stored, added);
  if (all.length > limits.maxCarriedEvents || carriedChars(all) > limits.maxCarriedChars) return { log: all, carry: [] };
  return { log: [], carry: all };
}

export interface EventLogBatch {
  nodeId: string;
  lineage: string;
  events: CarriedEvent[];
}

/**
 * Groups one Envoy's events into event-log items: one per lineage (so a lineage's key prefix finds
 * them), chunks bounded by count and size. Deterministic in the input order, so the same events give
 * the same items (the recorder retries a batch as it was built; it never regroups).
 */
export function eventLogBatches(nodeId: string, events: readonly CarriedEvent[]): EventLogBatch[] {
  const byLineage = new Map<string, CarriedEvent[]>();
  for (const event of events) {
    const list = byLineage.get(event.l) ?? [];
    list.push(event);
    byLineage.set(event.l, list);
  }
  const batches: EventLogBatch[] = [];
  const perItem = Math.min(MAX_EVENTS_PER_LOG_ITEM, MAX_EVENTS_PER_ITEM);
  for (const [lineage, list] of byLineage) {
    let chunk: CarriedEvent[] = [];
    let chars = 0;
    for (const event of list) {
      const size = JSON.stringify(event).length;
      if (chunk.length > 0 && (chunk.length >= perItem || chars + size > MAX_CHARS_PER_LOG_ITEM)) {
        batches.push({ nodeId, lineage, events: chunk });
        chunk = [];
        chars = 0;
      }
      chunk.push(event);
      chars += size;
    }
    if (chunk.length > 0) batches.push({ nodeId, lineage, events: chunk });
  }
  return batches;
}

/** Sorts by identity (lineage, seq, type, outcome; descending reverses) and keeps one record per identity. */
export function dedupeEvents(events: readonly EnvoyEvent[], descending = false): EnvoyEvent[] {
  const byIdentity = new Map<string, EnvoyEvent>();
  for (const event of events) {
    const identity = eventIdentity(event);
    if (!byIdentity.has(identity)) byIdentity.set(identity, event);
  }
  const sorted = [...byIdentity.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, event]) => event);
  return descending ? sorted.reverse() : sorted;
}

/** JSON with object keys sorted, so two records equal in content compare equal whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

function typeWithoutAwaiting(type: TypeState): Omit<TypeState, 'pending' | 'namesChange'> & { names?: number } {
  const { pending: _pending, namesChange, ...rest } = type;
  // namesChange.at stays significant (a names change is news); only its `sent` flag is "awaiting".
  return namesChange === undefined ? rest : { ...rest, names: namesChange.at };
}

/**
 * True when some subscribed type of `state` has a response out, sent less than `withinMs` before `now`,
 * that the Envoy has not answered yet. A change reaching an Envoy usually sends it several types at
 * once (ADS pushes CDS, EDS, LDS, RDS) and it answers them one after another within milliseconds.
 * Writing its state at every answer costs an item write per ACK and, at 1,000 Envoys, more writes than
 * the store path carries, so the last ACKs waited seconds behind the first ones (docs/bench/README.md). The recorder
 * holds such a state briefly so that the last answer's write records them all. Responses older than
 * `withinMs` are not awaited: an Envoy that is slow to answer (or stuck) is written at once.
 */
export function answersDueSoon(state: EnvoyState, now: number, withinMs: number): boolean {
  for (const type of Object.values(state.types)) {
    if (type.subscribed && type.pending !== undefined && now - type.pending.sentAt < withinMs) return true;
  }
  return false;
}

/**
 * True when an Envoy state moving from `storedThrough` to `nextThrough` (programmedThrough on one
 * lineage) reaches one of `watermarkSeqs` (ascending, that lineage's): convergence can count
 * something new, so the recorder writes the state at once instead of holding it for answers still due.
 */
export function crossesWatermark(storedThrough: number | undefined, nextThrough: number | undefined, watermarkSeqs: readonly number[]): boolean {
  if (nextThrough === undefined) return false;
  const from = storedThrough ?? -1;
  if (nextThrough <= from) return false;
  // The first seq above `from` (binary search), then whether it is at or below `nextThrough`.
  let low = 0;
  let high = watermarkSeqs.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((watermarkSeqs[mid] as number) <= from) low = mid + 1;
    else high = mid;
  }
  return low < watermarkSeqs.length && (watermarkSeqs[low] as number) <= nextThrough;
}

/**
 * True when `next` differs from `stored` only by what a response being sent changes (per type:
 * `pending`, `namesChange.sent`; core applySent): nothing convergence can count. A heartbeat
 * (`lastSeenAt`) is news: expiry depends on it. The recorder may
 * hold such a state briefly, since the ACK that usually follows within milliseconds supersedes it and
 * one write then records both (docs/GATEWAY.md, "The event log"). Anything else is news and is not held.
 */
export function awaitsAnswerOnly(stored: EnvoyState | undefined, next: EnvoyState): boolean {
  if (stored === undefined) return false;
  const strip = (state: EnvoyState): string => {
    // rev, incarnation and unlogged are the recorder's own stamps (a new connection still differs by connectedAt).
    const { rev: _rev, unlogged: _unlogged, incarnation: _incarnation, types, ...rest } = state;
    const stripped: Record<string, unknown> = {};
    for (const [typeUrl, type] of Object.entries(types)) stripped[typeUrl] = typeWithoutAwaiting(type);
    return canonicalJson({ rest, types: stripped });
  };
  return strip(stored) === strip(next);
}
