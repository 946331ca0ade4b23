// Ports: the interfaces the core's callers need from the outside world. Adapters implement them
// (common/store for DynamoDB); the core itself never performs I/O. All methods are async and must not
// throw on a corrupt stored item: it is returned as `corrupt` (with its key) so callers can log and
// skip it. They may reject on infrastructure failure (network, throttling after retries), which
// callers treat as retryable.
import type { EventLogBatch } from './event-log';
import type { ObjectRef } from './identity';
import type { EnvoyEvent } from './envoy-event';
import type { EnvoyState } from './envoy-record';
import type { LineageState } from './lineage-state';
import type { Condition } from './metav1-condition';
import type { LineageWatermark, ObjectGeneration } from './object-generation';
import type { Lineage } from './version';

/** Time, passed in so the core stays deterministic. Epoch milliseconds. */
export interface Clock {
  now(): number;
}

/** Opaque continuation token (adapters encode DynamoDB's LastEvaluatedKey in it). */
export type Cursor = string;

export interface PageRequest {
  /** Upper bound on items examined per call; adapters may return fewer. */
  limit?: number;
  /** From a previous page's `nextCursor`; absent for the first page. */
  cursor?: Cursor;
}

/** Where a stored item is: its table key (common/store/table-layout.ts builds them). */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** An item that failed validation (common/store parseItem): reported, skipped, never thrown. */
export interface CorruptItem {
  key?: ItemKey;
  error: string;
}

export interface Page<T> {
  items: T[];
  /** Items on this page that failed validation. */
  corrupt: CorruptItem[];
  /** Absent on the last page. A page may be empty and still have a next cursor (DynamoDB filters). */
  nextCursor?: Cursor;
}

/** Result of reading one item by key. */
export type ItemRead<T> =
  | { status: 'found'; value: T }
  | { status: 'missing' }
  /** `rev` is the stored numeric rev if it could be read, so a writer can replace the corrupt item. */
  | { status: 'corrupt'; error: string; rev?: number };

/** Result of a write conditioned on `rev`. On conflict, `current` is the stored value (if readable). */
export type ConditionalWriteResult<T> = { ok: true } | { ok: false; reason: 'conflict'; current: ItemRead<T> };

export interface PutEventsResult {
  /** Events durably written (including ones that already existed: writes are idempotent). */
  written: number;
  /** Events still unprocessed after the adapter's own retries; the caller re-queues them. */
  failed: { event: EnvoyEvent; error: string }[];
}

export interface PutEventLogsResult {
  /** Batches durably written (including ones that already existed). */
  written: number;
  /** Batches not written; `retryable: false` when the batch itself is invalid. */
  failed: { batch: EventLogBatch; error: string; retryable: boolean }[];
}

/** Envoy state and the ACK/NACK/STUCK event log (`ENVOY#<nodeId>` partition). */
export interface EnvoyStore {
  /**
   * Writes events in batches (BatchWriteItem, 25 per request), one item per event: the format before
   * the event log (the gateway now carries events in STATE writes and uses putEventLogs; see
   * docs/GATEWAY.md, "The event log"). Idempotent: an event's key is a function of (nodeId, version,
   * typeUrl, outcome), so a replay overwrites the same item with the same content.
   */
  putEvents(events: readonly EnvoyEvent[]): Promise<PutEventsResult>;

  /**
   * Writes event-log items, one per batch (common/core/event-log.ts `eventLogBatches`: one lineage
   * each). Idempotent: an item's key is a function of the events it holds, so a replayed batch
   * rewrites the same item. Failed batches come back (the caller keeps their events carried).
   */
  putEventLogs(batches: readonly EventLogBatch[]): Promise<PutEventLogsResult>;

  getEnvoyState(nodeId: string): Promise<ItemRead<EnvoyState>>;

  /**
   * Writes `state` iff the stored rev equals `expectedRev` (`undefined`: iff no state exists yet).
   * Callers pass `state.rev === (expectedRev ?? -1) + 1`, so rev never moves backwards and two writers
   * cannot lose each other's updates; on conflict they re-read, re-apply their transition (the core's
   * transitions never move an acked version backwards) and retry. `state.unlogged` (events carried by
   * the state, part of the event log) is stored as given, no attribute when empty: a writer that
   * replaces a state must carry the stored one's events along (`mergeCarried`).
   */
  updateEnvoyState(state: EnvoyState, expectedRev: number | undefined): Promise<ConditionalWriteResult<EnvoyState>>;

  /**
   * An Envoy's events, optionally one lineage only, from every place the event log keeps them:
   * single-event items (the format before the event log), event-log items, and the events its STATE still
   * carries (`unlogged`; on the first page when descending, on the last page otherwise). Pages follow
   * the items' sort-key order (lineage, then seq); the events of one page are sorted by identity
   * (lineage, seq, type, outcome) with duplicates removed. An event may appear twice across pages
   * only after a crash between its log write and the STATE write that drops it: dedupe by identity
   * (`dedupeEvents`) when counting. `limit` bounds the items examined, not the events returned.
   */
  listEnvoyEvents(nodeId: string, options?: PageRequest & { lineage?: Lineage; descending?: boolean }): Promise<Page<EnvoyEvent>>;

  /** Every Envoy state (for convergence over the fleet and for expiry), optionally one node group. */
  listEnvoyStates(options?: PageRequest & { group?: string }): Promise<Page<EnvoyState>>;
}

/** Watermarks and written conditions per object generation (`OBJECT#<ref>` partition). */
export interface ObjectStore {
  /**
   * Records W(X, G) for one lineage, creating the generation item if needed (`firstSeenAt` = `at`).
   * First write wins per lineage: the watermark is the *first* version reflecting G, and a replayed or
   * late write must not replace it. Returns whether this call set it.
   */
  putWatermark(ref: ObjectRef, generation: number, lineage: Lineage, watermark: LineageWatermark): Promise<'written' | 'alreadySet'>;

  /** Marks a generation as not observable (the kind gives no "controller processed G" signal). */
  markNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): Promise<void>;

  /**
   * Marks a generation as rejected by its controller (processed, but invalid: HTTPProxy `Valid=False`),
   * with the controller's message. Creates the item if needed; written once per generation by the
   * gateway, and convergence decides it Invalid from then on.
   */
  markRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): Promise<void>;

  getObjectGeneration(ref: ObjectRef, generation: number): Promise<ItemRead<ObjectGeneration>>;

  /** An object's generations, ascending by generation unless `descending`. */
  listObjectGenerations(ref: ObjectRef, options?: PageRequest & { descending?: boolean }): Promise<Page<ObjectGeneration>>;

  /**
   * Remembers the condition written to Kubernetes for this generation, and `programmedAt` the first
   * time it is set (never overwritten). `writtenAt`: when it was written (`conditionWrittenAt`; left
   * as stored when absent, e.g. a condition found already in Kubernetes, not written by us now).
   * Creates the item if missing.
   */
  recordCondition(ref: ObjectRef, generation: number, condition: Condition, programmedAt?: number, writtenAt?: number): Promise<void>;
}

/** Gateway lineages: counter, per-type version history, heartbeat (`LINEAGE#<lineage>`). */
export interface LineageStore {
  getLineageState(lineage: Lineage): Promise<ItemRead<LineageState>>;

  /** Same conditional contract as `updateEnvoyState`. */
  putLineageState(state: LineageState, expectedRev: number | undefined): Promise<ConditionalWriteResult<LineageState>>;
}

/** Everything the gateway and the functions need from the table's Envoy, object and lineage items (common/store adds the whole-table scan: TableStore). */
export interface EventStore extends EnvoyStore, ObjectStore, LineageStore {}
