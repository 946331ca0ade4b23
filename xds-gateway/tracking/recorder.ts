// The recorder: everything the gateway learns goes through here to the store port (docs/GATEWAY.md, "What is written when").
// Callers (the relay's synchronous observer callbacks) only enqueue; a flush loop writes:
//   1. Envoy states, coalesced per node (many changes of one Envoy within a flush → one write),
//      conditional on `rev`, each *carrying the node's new ACK/NACK/STUCK events* (`unlogged`): one
//      item write records both the state and the events that justify it, so a stored state can never
//      claim an ACK the event log lacks (docs/GATEWAY.md, "The event log"). When a state would carry
//      more than the bound (core event-log.ts `planCarry`), its events first go to event-log items
//      (putEventLogs, BatchWriteItem), and only once those are confirmed does the state drop them.
//      A state that only records a response being sent (`awaitsAnswerOnly`), or one whose Envoy still
//      has other responses out (`answersDueSoon`: ADS sends CDS, EDS, LDS, RDS at once and the ACKs
//      follow one by one), is held up to `pendingStateHoldMs` from its first hold: the answers usually
//      follow within milliseconds and one write then records them all (one write per Envoy per change,
//      not one per ACK). Urgent states are never held and go first (`flushOrder`): one that
//      reaches a recorded watermark, carries a NACK, or is awaited by a stream admission;
//   2. lineage states (coalesced per lineage) and watermarks (first write wins in the store).
// The denominator (docs/CONVERGENCE.md, "The denominator"): every Envoy state is stamped with its
// `incarnation` on its lineage (1, +1 on a new connection, on a state less programmed than the last,
// or on reviving an EXPIRED state), and each LINEAGE item carries `envoysRecorded`, the sum of the
// nodes' incarnations. A state with a new incarnation is written only after a LINEAGE write that
// counts it has been confirmed (write-ahead), so every state in the table is counted by the stored
// item at any moment — which convergence relies on to tell whether its aggregates hold every Envoy.
// Failures: the SDK retries throttling itself; items the store still reports as failed, and whole
// calls that reject, are re-queued and retried after a full-jitter backoff. Nothing valid is dropped:
// writes are idempotent (event-log keys derived from their events, carried events deduplicated by
// identity, conditional state writes, first-wins watermarks), so replaying them is harmless. Above
// the high-water mark `pressure()` turns true; the gateway reports not-ready and stops acknowledging
// work it cannot record (docs/GATEWAY.md, "Backpressure").
// A write that can never succeed (the store refuses the item itself: isPermanentStoreError, or a state
// that fails envoyStateStorageProblem) is the exception: retrying it would block its node, its lineage
// and with them every object, for ever. It is dropped with an error log line and a metric, the Envoy is
// reported (onUnrecordable) so the gateway ends its streams, and a state is checked *before* it is
// counted, so no count ever covers a state that cannot exist (docs/GATEWAY.md, "What an Envoy may send").
import type { Logger } from 'pino';
import {
  DEFAULT_EVENT_LOG_LIMITS,
  answersDueSoon,
  awaitsAnswerOnly,
  crossesWatermark,
  carriedEventIdentity,
  checkCarriedEvent,
  eventLogBatches,
  mergeCarried,
  planCarry,
  toCarriedEvent,
  withoutCarried,
  withoutExpired,
  envoyStateStorageProblem,
  type CarriedEvent,
  type Clock,
  type EnvoyEvent,
  type EventLogBatch,
  type EventLogLimits,
  type EnvoyState,
  type EventStore,
  type ItemRead,
  type LineageState,
  type LineageWatermark,
  type ObjectRef,
  formatObjectRef,
} from '../../common/core';
import { fullJitterDelay, isPermanentStoreError } from '../../common/store';
import { lineageStateFor } from './lineage-mirror';

export interface RecorderMetrics {
  /** Events durably written (the only point where an event counts as acknowledged). */
  eventsWritten(events: readonly EnvoyEvent[]): void;
  /** Seconds one store call took, by operation. */
  writeLatency(operation: 'putEvents' | 'envoyState' | 'lineageState' | 'watermark', seconds: number): void;
  writeFailed(operation: string): void;
  /** Writes dropped because the store can never accept them (never retried), by operation. */
  writeDropped?(operation: 'envoyState' | 'lineageState' | 'watermark'): void;
}

/** whenStateWritten's rejection: the node's state can never be stored (the reason names what is wrong). */
export class UnrecordableEnvoyError extends Error {
  override readonly name = 'UnrecordableEnvoyError';
}

/**
 * How soon a flush follows an urgent state (one reaching a watermark, or a NACK) instead of the flush
 * window (100 ms): a few milliseconds still let the states of one burst of ACKs share a flush.
 */
const URGENT_FLUSH_DELAY_MS = 5;

/** Forgotten lineages remembered so that a late state on one is dropped, not counted from zero. */
const MAX_FORGOTTEN_LINEAGES = 10_000;

/** Recent watermark seqs kept per lineage for the hold rule (a rebuild adds one per changed object). */
const MAX_WATERMARK_SEQS = 4096;

export interface RecorderOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  random?: () => number;
  /** Pause between flushes when there is nothing to retry (coalescing window for state writes). */
  flushIntervalMs?: number;
  /** Queued events above which `pressure()` is true. Nothing is dropped above it. */
  highWaterEvents?: number;
  /** Bounds on the events one STATE write carries before they move to an event-log item. */
  eventLog?: EventLogLimits;
  /**
   * How long a state that only records a response being sent may wait for the ACK to join it in one
   * write (0: never held). Far below the ACK timeout; SIGTERM (close) writes held states at once.
   */
  pendingStateHoldMs?: number;
  /**
   * `carried` (default): events ride in the STATE write and move to event-log items in groups.
   * `items`: the format before the event log, one item per event written before the state (and no state
   * held); kept as a fallback and as the baseline the bench compares with (bench/recorder-writes.ts).
   */
  eventLogMode?: 'carried' | 'items';
  /** Parallel conditional writes of Envoy states per flush. */
  stateWriteConcurrency?: number;
  /**
   * Envoy states one flush writes at most (default 2 × stateWriteConcurrency), oldest queued first;
   * the next flush starts at once while more are ready. A flush of every queued state made a state
   * queued just after it began wait for the whole flush and then its turn in the next one: at 1,000
   * Envoys a flush took ~2.5 s (docs/bench/README.md). Coalescing is unchanged: a queued state is replaced in place.
   */
  maxStatesPerFlush?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /**
   * Combines our state with the one stored by someone else (another gateway for a per-type stream,
   * the expire function) after a `rev` conflict. Default: ours wins.
   */
  mergeEnvoyState?: (ours: EnvoyState, stored: EnvoyState | undefined) => EnvoyState;
  metrics?: RecorderMetrics;
  /**
   * Registers a lineage in the convergence functions' lineage registry before its first LINEAGE item
   * (and so before any Envoy state on it) is written. Without it a new lineage is invisible to
   * evaluation until its LINEAGE stream record has been processed, and its Envoys could be missing
   * from the denominator (docs/CONVERGENCE.md, "The denominator"). Failures hold the lineage write,
   * and with it the states it covers, until a later flush.
   */
  registerLineage?: (lineage: string, heartbeatAt: number) => Promise<void>;
  /**
   * An Envoy whose state can never be stored (dropped, not retried): the gateway ends its streams with
   * the reason. Synchronous; must not throw.
   */
  onUnrecordable?: (nodeId: string, reason: string) => void;
}

export interface RecorderStats {
  queuedEvents: number;
  queuedEnvoyStates: number;
  queuedLineageStates: number;
  queuedWatermarks: number;
  eventsWritten: number;
  /** Events the store refused as invalid (never retryable; logged with context). Not a drop of a valid event. */
  eventsRejected: number;
  /** Valid work discarded: always 0 by design (the metric exists to prove it). */
  dropped: number;
  failedAttempts: number;
  consecutiveFailures: number;
}

interface WatermarkWrite {
  kind: 'watermark';
  ref: ObjectRef;
  generation: number;
  lineage: string;
  watermark: LineageWatermark;
}

interface NotObservableWrite {
  kind: 'notObservable';
  ref: ObjectRef;
  generation: number;
  reason: string;
  at: number;
}

/** The controller reported the generation processed but invalid (barrier.ts): its message. */
interface RejectedWrite {
  kind: 'rejected';
  ref: ObjectRef;
  generation: number;
  message: string;
  at: number;
}

type ObjectWrite = WatermarkWrite | NotObservableWrite | RejectedWrite;

interface KnownRev<T> {
  /** The rev stored by our last successful write or read; undefined: unknown (write as if absent). */
  rev: number | undefined;
  stored?: T;
}

const defaultMerge = (ours: EnvoyState): EnvoyState => ours;

/** The denominator of one lineage as this recorder counts it (docs/CONVERGENCE.md, "The denominator"). */
interface LineageCount {
  /** Per node: its incarnation, what it was stamped from, and the count that includes it. */
  nodes: Map<string, { incarnation: number; connectedAt: number; programmedThrough: number; countedAt: number; renew?: boolean; storedIncarnation?: number }>;
  /** Sum of the nodes' incarnations: what the next LINEAGE write carries. */
  wanted: number;
  /** The largest count a stored LINEAGE item is confirmed to carry. */
  confirmed: number;
}

/** One Envoy's write in a flush: its state and the new events it carries. */
interface EnvoyWrite {
  state: EnvoyState;
  /** New events taken from the queue (valid), confirmed when the write carrying them succeeds. */
  events: EnvoyEvent[];
  carried: CarriedEvent[];
  /** Identities written to event-log items in this flush: the state no longer carries them. */
  logged: Set<string>;
  /** The node's enqueue count when this state was taken (stream admission, whenStateWritten). */
  enqueued?: number;
  /** Urgent (`flushOrder`): its events stay carried (no event-log write ahead of it). */
  urgent?: boolean;
}

/**
 * How much more an urgent state may carry than the usual bounds before its events move to an
 * event-log item. Moving them means an event-log write *before* the state write, ~40% of a flush's
 * time at 1,000 Envoys (docs/bench/README.md); the events are as durable in the STATE, and move with a later write
 * of the Envoy, more of them per log item. 4 × 8 compact events is ~3 KB, far below the 256-event
 * schema bound and the 400 KB item limit.
 */
const URGENT_CARRY_FACTOR = 4;

export class Recorder {
  private readonly store: EventStore;
  private readonly registerLineage: ((lineage: string, heartbeatAt: number) => Promise<void>) | undefined;
  /** Lineages this process has registered (a lineage is one process lifetime: never unregistered here). */
  private readonly registeredLineages = new Set<string>();
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly flushIntervalMs: number;
  private readonly highWaterEvents: number;
  private readonly eventLogLimits: EventLogLimits;
  private readonly urgentCarryLimits: EventLogLimits;
  private readonly pendingStateHoldMs: number;
  private readonly eventLogMode: 'carried' | 'items';
  private readonly stateWriteConcurrency: number;
  private readonly maxStatesPerFlush: number;
  /** The last flush stopped at maxStatesPerFlush with states still ready to write. */
  private moreReady = false;
  /** When the pending timer fires (wall clock: only for comparing two delays). */
  private timerDueAt = 0;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly merge: (ours: EnvoyState, stored: EnvoyState | undefined) => EnvoyState;
  private readonly metrics: RecorderMetrics | undefined;
  private readonly onUnrecordable: ((nodeId: string, reason: string) => void) | undefined;
  /** Lineages whose LINEAGE item the store refused for good: no state on them can be counted. */
  private readonly unrecordableLineages = new Map<string, string>();

  /** New events per node, in arrival order, not yet confirmed by the store. */
  private readonly nodeEvents = new Map<string, EnvoyEvent[]>();
  /** Events queued or in flight (the backpressure measure). */
  private unconfirmedEvents = 0;
  private readonly envoyStates = new Map<string, EnvoyState>();
  /**
   * Queued states that only await an answer (pendingStateHoldMs): since when held, and the state object
   * last found so (an unchanged queued state is not compared again at every flush).
   */
  private readonly heldSince = new Map<string, { since: number; state: EnvoyState }>();
  /** Per lineage, the seqs of watermarks recorded recently, ascending: a state reaching one is not held. */
  private readonly watermarkSeqs = new Map<string, number[]>();
  /** Per node: states enqueued so far, the enqueue count of the last one written, and waiters (whenStateWritten). */
  private readonly stateEnqueues = new Map<string, number>();
  private readonly statesWritten = new Map<string, number>();
  private readonly stateWaiters = new Map<string, { target: number; resolve: () => void; reject: (error: Error) => void }[]>();
  private readonly lineageStates = new Map<string, LineageState>();
  private objectWrites: ObjectWrite[] = [];
  private readonly envoyRevs = new Map<string, KnownRev<EnvoyState>>();
  private readonly lineageRevs = new Map<string, KnownRev<LineageState>>();
  /** Latest lineage state handed to us, per lineage (what a write-ahead count is written with). */
  private readonly latestLineage = new Map<string, LineageState>();
  /** Per lineage: the denominator count wanted and confirmed by a stored item, and each node's incarnation. */
  private readonly recorded = new Map<string, LineageCount>();
  /** Lineages the relay retired (moved or freed when idle): forgotten once nothing of them is queued. */
  private readonly retiredLineages = new Set<string>();
  /**
   * Lineages forgotten (retireLineage), most recent last, bounded: a state that still arrived on one
   * would be counted from zero and its LINEAGE item rewritten with a count that leaves the others
   * out, so such a state is dropped instead (its Envoy's streams on that lineage are long gone).
   */
  private readonly forgottenLineages = new Set<string>();

  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly pressureListeners: Array<(pressure: boolean) => void> = [];
  private lastPressure = false;
  private readonly counters = { eventsWritten: 0, eventsRejected: 0, failedAttempts: 0, consecutiveFailures: 0 };

  constructor(options: RecorderOptions) {
    this.registerLineage = options.registerLineage;
    this.store = options.store;
    this.logger = options.logger;
    this.clock = options.clock;
    this.random = options.random ?? Math.random;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    this.highWaterEvents = options.highWaterEvents ?? 50_000;
    this.eventLogLimits = options.eventLog ?? DEFAULT_EVENT_LOG_LIMITS;
    this.urgentCarryLimits = {
      maxCarriedEvents: this.eventLogLimits.maxCarriedEvents * URGENT_CARRY_FACTOR,
      maxCarriedChars: this.eventLogLimits.maxCarriedChars * URGENT_CARRY_FACTOR,
    };
    this.eventLogMode = options.eventLogMode ?? 'carried';
    this.pendingStateHoldMs = this.eventLogMode === 'items' ? 0 : (options.pendingStateHoldMs ?? 1000);
    this.stateWriteConcurrency = options.stateWriteConcurrency ?? 64;
    this.maxStatesPerFlush = Math.max(1, options.maxStatesPerFlush ?? 2 * this.stateWriteConcurrency);
    this.retryBaseMs = options.retryBaseMs ?? 100;
    this.retryMaxMs = options.retryMaxMs ?? 10_000;
    this.merge = options.mergeEnvoyState ?? defaultMerge;
    this.metrics = options.metrics;
    this.onUnrecordable = options.onUnrecordable;
  }

  // -------------------------------------------------------------------------------------------
  // Enqueueing: synchronous, never awaits I/O.

  enqueueEvent(event: EnvoyEvent): void {
    const queue = this.nodeEvents.get(event.nodeId);
    if (queue === undefined) this.nodeEvents.set(event.nodeId, [event]);
    else queue.push(event);
    this.unconfirmedEvents++;
    this.checkPressure();
    this.schedule(event.outcome === 'NACK' ? URGENT_FLUSH_DELAY_MS : this.flushIntervalMs);
  }

  /**
   * Latest wins per node: states queued within one flush window become one write. A state that
   * reaches a recorded watermark does not wait for the window: convergence waits for it.
   */
  enqueueEnvoyState(state: EnvoyState): void {
    this.envoyStates.set(state.nodeId, state);
    this.stateEnqueues.set(state.nodeId, (this.stateEnqueues.get(state.nodeId) ?? 0) + 1);
    this.schedule(this.reachesWatermark(state.nodeId, state) ? URGENT_FLUSH_DELAY_MS : this.flushIntervalMs);
  }

  /**
   * Resolves once a state of `nodeId` enqueued no earlier than this call is durably written (the
   * latest one queued now, or a later one that superseded it). A written state is counted by its
   * lineage's stored `envoysRecorded` (write-ahead, above), so the relay's stream admission waits
   * on this before a new stream's first response: no Envoy ever holds config from a lineage whose
   * count leaves it out (docs/GATEWAY.md, "Stream admission"; invariant 1 at start-up). Rejects only
   * with UnrecordableEnvoyError (the state can never be stored: the stream must end, it never gets
   * config); pending waiters are dropped when the recorder is closed (the relay ends its streams).
   */
  whenStateWritten(nodeId: string): Promise<void> {
    const target = this.stateEnqueues.get(nodeId) ?? 0;
    const written = this.statesWritten.get(nodeId) ?? 0;
    if (target === 0 || written >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiters = this.stateWaiters.get(nodeId) ?? [];
      waiters.push({ target, resolve, reject });
      this.stateWaiters.set(nodeId, waiters);
    });
  }

  /**
   * Drops a node's state that can never be stored, and the events queued with it (events of an Envoy
   * we refuse are not valid work: counted in eventsRejected). Its waiters are rejected and the gateway
   * is told, so the Envoy's streams end with the reason instead of waiting for a write that never comes.
   */
  private dropUnrecordable(nodeId: string, events: readonly EnvoyEvent[], reason: string, operation: 'envoyState' | 'lineageState'): void {
    this.counters.eventsRejected += events.length;
    this.unconfirmedEvents -= events.length;
    this.heldSince.delete(nodeId);
    this.metrics?.writeDropped?.(operation);
    this.logger.error({ nodeId, events: events.length, reason }, 'envoy state can never be stored; dropped, not retried, its streams end');
    const waiters = this.stateWaiters.get(nodeId) ?? [];
    this.stateWaiters.delete(nodeId);
    for (const waiter of waiters) waiter.reject(new UnrecordableEnvoyError(reason));
    try {
      this.onUnrecordable?.(nodeId, reason);
    } catch (error) {
      this.logger.error({ err: error, nodeId }, 'recorder: onUnrecordable threw');
    }
  }

  private stateWritten(nodeId: string, enqueued: number | undefined): void {
    if (enqueued === undefined) return;
    const written = Math.max(this.statesWritten.get(nodeId) ?? 0, enqueued);
    this.statesWritten.set(nodeId, written);
    const waiters = this.stateWaiters.get(nodeId);
    if (waiters === undefined) return;
    const due = waiters.filter((waiter) => waiter.target <= written);
    const left = waiters.filter((waiter) => waiter.target > written);
    if (left.length === 0) this.stateWaiters.delete(nodeId);
    else this.stateWaiters.set(nodeId, left);
    for (const waiter of due) waiter.resolve();
  }

  /**
   * Drops what the recorder keeps of an Envoy the tracker has forgotten (disconnected long ago): its
   * known rev and stored state (~1-2 KB each) and its write counters, so a gateway that sees Envoys
   * come and go (new node ids on every rollout) does not grow without bound. Refused (false) while
   * anything of the node is still queued, held or awaited: the caller asks again later. Forgetting
   * is safe: the next write of the node conflicts, re-reads the stored state (its carried events
   * included) and goes on, as after a gateway restart. Its lineage counts are kept (`recorded`): a
   * node that comes back on the same lineage must not be counted twice.
   */
  forgetEnvoy(nodeId: string): boolean {
    if (this.envoyStates.has(nodeId) || this.nodeEvents.has(nodeId) || this.stateWaiters.has(nodeId) || this.heldSince.has(nodeId)) return false;
    this.envoyRevs.delete(nodeId);
    this.stateEnqueues.delete(nodeId);
    this.statesWritten.delete(nodeId);
    return true;
  }

  /**
   * The relay serves nothing more on `lineage` (a group moved, or was freed when idle). What is kept
   * per lineage (its count, revs, registration, watermark seqs: a few hundred bytes to a few KB) goes
   * once nothing of the lineage is queued, so a gateway whose groups come and go (Envoys inventing
   * node clusters, rollouts) does not grow without bound.
   */
  retireLineage(lineage: string): void {
    this.retiredLineages.add(lineage);
    this.forgetRetiredLineages();
  }

  private forgetRetiredLineages(): void {
    if (this.retiredLineages.size === 0) return;
    const busy = new Set<string>(this.lineageStates.keys());
    for (const state of this.envoyStates.values()) busy.add(state.lineage);
    for (const lineage of [...this.retiredLineages]) {
      if (busy.has(lineage)) continue;
      this.retiredLineages.delete(lineage);
      this.recorded.delete(lineage);
      this.lineageRevs.delete(lineage);
      this.latestLineage.delete(lineage);
      this.watermarkSeqs.delete(lineage);
      this.registeredLineages.delete(lineage);
      this.unrecordableLineages.delete(lineage);
      this.forgottenLineages.add(lineage);
      if (this.forgottenLineages.size > MAX_FORGOTTEN_LINEAGES) {
        const oldest = this.forgottenLineages.values().next().value;
        if (oldest !== undefined) this.forgottenLineages.delete(oldest);
      }
    }
  }

  /** Lineages whose per-lineage state this recorder keeps (tests and diagnostics). */
  lineagesKept(): number {
    return new Set([...this.recorded.keys(), ...this.lineageRevs.keys(), ...this.latestLineage.keys(), ...this.registeredLineages]).size;
  }

  enqueueLineageState(state: LineageState): void {
    if (this.forgottenLineages.has(state.lineage)) return;
    this.lineageStates.set(state.lineage, state);
    this.latestLineage.set(state.lineage, state);
    this.schedule();
  }

  enqueueWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): void {
    this.objectWrites.push({ kind: 'watermark', ref, generation, lineage, watermark });
    this.rememberWatermarkSeq(lineage, watermark.seq);
    this.schedule();
  }

  enqueueNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): void {
    this.objectWrites.push({ kind: 'notObservable', ref, generation, reason, at });
    this.schedule();
  }

  enqueueRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): void {
    this.objectWrites.push({ kind: 'rejected', ref, generation, message, at });
    this.schedule();
  }

  /** Keeps the lineage's recent watermark seqs ascending and bounded (the newest are the ones Envoys are reaching). */
  private rememberWatermarkSeq(lineage: string, seq: number): void {
    const seqs = this.watermarkSeqs.get(lineage) ?? [];
    let index = seqs.length;
    while (index > 0 && (seqs[index - 1] as number) > seq) index--;
    if (seqs[index - 1] === seq) return;
    seqs.splice(index, 0, seq);
    if (seqs.length > MAX_WATERMARK_SEQS) seqs.splice(0, seqs.length - MAX_WATERMARK_SEQS);
    this.watermarkSeqs.set(lineage, seqs);
  }

  /** True while more events are queued than the high-water mark. */
  pressure(): boolean {
    return this.unconfirmedEvents >= this.highWaterEvents;
  }

  onPressureChange(listener: (pressure: boolean) => void): void {
    this.pressureListeners.push(listener);
  }

  /** envoysRecorded confirmed by the stored LINEAGE item of `lineage` (tests and diagnostics). */
  envoysRecorded(lineage: string): number {
    return this.recorded.get(lineage)?.confirmed ?? 0;
  }

  /** The Envoy's state as we last stored or read it (for tests and diagnostics). */
  storedEnvoyRev(nodeId: string): number | undefined {
    return this.envoyRevs.get(nodeId)?.rev;
  }

  stats(): RecorderStats {
    return {
      queuedEvents: this.unconfirmedEvents,
      queuedEnvoyStates: this.envoyStates.size,
      queuedLineageStates: this.lineageStates.size,
      queuedWatermarks: this.objectWrites.length,
      eventsWritten: this.counters.eventsWritten,
      eventsRejected: this.counters.eventsRejected,
      dropped: 0,
      failedAttempts: this.counters.failedAttempts,
      consecutiveFailures: this.counters.consecutiveFailures,
    };
  }

  isEmpty(): boolean {
    return this.nodeEvents.size === 0 && this.envoyStates.size === 0 && this.lineageStates.size === 0 && this.objectWrites.length === 0;
  }

  /** Resolves when every queue is empty and no flush is running. */
  whenIdle(): Promise<void> {
    if (this.isEmpty() && this.flushing === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops the timer and flushes until everything is written or `timeoutMs` passed (SIGTERM path).
   * Returns what could not be written (logged by the caller; with a healthy store: all zeros).
   */
  async close(timeoutMs = 10_000): Promise<RecorderStats> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const deadline = Date.now() + timeoutMs;
    while (!this.isEmpty() && Date.now() < deadline) {
      await this.flushNow(true);
      if (!this.isEmpty() && this.counters.consecutiveFailures > 0) {
        await sleep(Math.min(this.backoffMs(), Math.max(0, deadline - Date.now())));
      }
    }
    if (this.flushing !== undefined) await this.flushing;
    this.resolveIdle();
    return this.stats();
  }

  /** Runs one flush now (waits for a running one first); `writeHeld` also writes states being held. */
  async flushNow(writeHeld = false): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    this.flushing = this.flushOnce(writeHeld).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  // -------------------------------------------------------------------------------------------
  // Flush loop

  private schedule(delayMs = this.flushIntervalMs): void {
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

  private async runScheduled(): Promise<void> {
    if (this.flushing !== undefined) {
      await this.flushing;
    }
    if (this.closed) return;
    try {
      await this.flushNow();
    } catch (error) {
      // flushOnce catches store errors itself; this is a bug guard so the loop never dies.
      this.logger.error({ err: error }, 'recorder flush failed unexpectedly');
      this.counters.consecutiveFailures++;
    }
    if (!this.isEmpty()) {
      // A follow-up flush for more ready states is already due (flushOnce): an earlier timer wins.
      this.schedule(this.counters.consecutiveFailures > 0 ? this.backoffMs() : this.flushIntervalMs);
    } else {
      this.resolveIdle();
    }
  }

  private backoffMs(): number {
    return Math.max(1, fullJitterDelay(this.counters.consecutiveFailures, this.retryBaseMs, this.retryMaxMs, this.random));
  }

  private async flushOnce(writeHeld: boolean): Promise<void> {
    // Watermarks first: a change's generation cannot be decided before its watermark is stored, and
    // they are few (one per changed object and lineage) while a fleet-wide push queues a state per
    // Envoy. Behind 1,000 state writes a watermark waited ~29 s (docs/bench/README.md). No
    // ordering is owed the other way: a state ahead of its watermark just waits to be evaluated.
    let failed = !(await this.flushObjectWrites());
    failed = !(await this.flushEnvoys(writeHeld)) || failed;
    failed = !(await this.flushLineageStates()) || failed;
    if (failed) {
      this.counters.consecutiveFailures++;
      this.counters.failedAttempts++;
    } else {
      this.counters.consecutiveFailures = 0;
    }
    this.checkPressure();
    this.forgetRetiredLineages();
    if (this.isEmpty()) this.resolveIdle();
    else if (this.moreReady && !failed) this.schedule(0);
  }

  /** Takes a node's queued events, dropping (with a log line) any that cannot be stored. */
  private takeEvents(nodeId: string): { events: EnvoyEvent[]; carried: CarriedEvent[] } {
    const queued = this.nodeEvents.get(nodeId) ?? [];
    this.nodeEvents.delete(nodeId);
    const events: EnvoyEvent[] = [];
    const carried: CarriedEvent[] = [];
    for (const event of queued) {
      const compact = toCarriedEvent(event);
      const problem = event.nodeId === nodeId ? checkCarriedEvent(compact) : 'node id mismatch';
      if (problem !== undefined) {
        this.counters.eventsRejected++;
        this.unconfirmedEvents--;
        this.logger.error({ nodeId, typeUrl: event.typeUrl, outcome: event.outcome, seq: event.seq, error: problem }, 'refusing to store an invalid event; not retrying');
        continue;
      }
      events.push(event);
      carried.push(compact);
    }
    return { events, carried };
  }

  /**
   * The state we last stored for a node, to carry events that came without a state change (STUCK).
   * Only one on a lineage whose count includes the node: a state read back from another writer (another
   * gateway's lineage) is not ours to re-write.
   */
  private ownStoredState(nodeId: string): EnvoyState | undefined {
    const stored = this.envoyRevs.get(nodeId)?.stored;
    if (stored === undefined || this.recorded.get(stored.lineage)?.nodes.has(nodeId) !== true) return undefined;
    return stored;
  }

  /** Puts events back at the front of their node's queue (their write failed; nothing is dropped). */
  private requeueEvents(nodeId: string, events: readonly EnvoyEvent[]): void {
    if (events.length === 0) return;
    this.nodeEvents.set(nodeId, [...events, ...(this.nodeEvents.get(nodeId) ?? [])]);
  }

  private requeueState(state: EnvoyState): void {
    // A newer state queued meanwhile supersedes this one.
    if (!this.envoyStates.has(state.nodeId)) this.envoyStates.set(state.nodeId, state);
  }

  private confirmEvents(events: readonly EnvoyEvent[]): void {
    if (events.length === 0) return;
    this.unconfirmedEvents -= events.length;
    this.counters.eventsWritten += events.length;
    this.metrics?.eventsWritten(events);
  }

  /**
   * The nodes to write, urgent ones first, each group oldest-queued first (Map order is first-queued
   * order; a replaced state keeps its place). Urgent: a stream admission waits for the node's state
   * (whenStateWritten), its state reaches a recorded watermark, which is what convergence waits for
   * (the last ACK of a change), or it carries a NACK (a verdict of its own). During a fleet-wide push
   * the gateway writes far fewer states per second than Envoys ACK (at 1,000 Envoys × 1,000 objects a
   * few hundred per second while relaying: docs/bench/README.md, "The write path's ceiling"); these go ahead of
   * intermediate states (an ACK with other answers still due, a heartbeat), which a later state of the
   * same Envoy often replaces before their turn.
   */
  private flushOrder(): { order: string[]; urgent: Set<string> } {
    const urgent = new Set<string>();
    const rest: string[] = [];
    for (const nodeId of new Set([...this.envoyStates.keys(), ...this.nodeEvents.keys()])) {
      const queued = this.envoyStates.get(nodeId);
      if (queued !== undefined && (this.stateWaiters.has(nodeId) || this.reachesWatermark(nodeId, queued) || this.carriesBadNews(nodeId))) urgent.add(nodeId);
      else rest.push(nodeId);
    }
    return { order: [...urgent, ...rest], urgent };
  }

  /**
   * A NACK is queued for the node: a verdict of its own (Rejected), so it is never held. A STUCK is
   * not urgent: it is a judgement already an ACK timeout late, and at 5,000 Envoys on this machine,
   * where a push takes longer than the local 10 s timeout, writing it first made objects go
   * Pending → Stuck → Pending → Programmed (4 Kubernetes writes) where a later state of the same Envoy,
   * ACKed meanwhile, replaces it in the queue (docs/bench/README.md).
   */
  private carriesBadNews(nodeId: string): boolean {
    return this.nodeEvents.get(nodeId)?.some((event) => event.outcome === 'NACK') === true;
  }

  private reachesWatermark(nodeId: string, queued: EnvoyState): boolean {
    const stored = this.envoyRevs.get(nodeId)?.stored;
    const seqs = this.watermarkSeqs.get(queued.lineage);
    return seqs !== undefined && crossesWatermark(stored?.lineage === queued.lineage ? stored.programmedThrough : undefined, queued.programmedThrough, seqs);
  }

  /** Returns false if anything must be retried. */
  private async flushEnvoys(writeHeld: boolean): Promise<boolean> {
    if (this.envoyStates.size === 0 && this.nodeEvents.size === 0) return true;
    const now = this.clock.now();
    const ready: EnvoyState[] = [];
    const taken = new Map<string, { events: EnvoyEvent[]; carried: CarriedEvent[] }>();
    /** Events of Envoys with no state to carry them (never written by us): straight to event-log items. */
    const orphans = new Map<string, { events: EnvoyEvent[]; carried: CarriedEvent[] }>();
    /** Per node taken from the queue: its enqueue count then (whenStateWritten). */
    const enqueuedAt = new Map<string, number>();
    this.moreReady = false;
    const { order, urgent } = this.flushOrder();
    for (const nodeId of order) {
      if (!writeHeld && ready.length >= this.maxStatesPerFlush) {
        this.moreReady = true;
        break;
      }
      const queued = this.envoyStates.get(nodeId);
      const hasEvents = this.nodeEvents.has(nodeId);
      // Urgent states (flushOrder) are never held.
      if (queued !== undefined && !writeHeld && this.pendingStateHoldMs > 0 && !urgent.has(nodeId)) {
        const held = this.heldSince.get(nodeId);
        const onlySent = !hasEvents && (held?.state === queued || awaitsAnswerOnly(this.envoyRevs.get(nodeId)?.stored, queued));
        if (onlySent || answersDueSoon(queued, now, this.pendingStateHoldMs)) {
          const since = held?.since ?? now;
          this.heldSince.set(nodeId, { since, state: queued });
          if (now - since < this.pendingStateHoldMs) continue;
        }
      }
      this.heldSince.delete(nodeId);
      const state = queued ?? this.ownStoredState(nodeId);
      const events = this.takeEvents(nodeId);
      if (state === undefined) {
        if (events.events.length > 0) orphans.set(nodeId, events);
        continue;
      }
      this.envoyStates.delete(nodeId);
      // Checked before it is counted: a count must never cover a state that cannot be stored.
      if (this.forgottenLineages.has(state.lineage)) {
        // A late state of a retired lineage (its streams are gone; the Envoy may be live on another):
        // not written, nothing refused; its events go with the node's next write.
        this.logger.warn({ nodeId, lineage: state.lineage }, 'state of a retired lineage dropped');
        this.requeueEvents(nodeId, events.events);
        continue;
      }
      const problem = this.unrecordableLineages.has(state.lineage)
        ? `its lineage ${state.lineage} cannot be recorded: ${this.unrecordableLineages.get(state.lineage) ?? ''}`
        : envoyStateStorageProblem(state);
      if (problem !== undefined) {
        this.dropUnrecordable(nodeId, events.events, problem, 'envoyState');
        continue;
      }
      ready.push(state);
      taken.set(nodeId, events);
      if (queued !== undefined) enqueuedAt.set(nodeId, this.stateEnqueues.get(nodeId) ?? 0);
    }
    let ok = await this.countNewEnvoys(ready);
    const writes: EnvoyWrite[] = [];
    for (const state of ready) {
      const events = taken.get(state.nodeId) ?? { events: [], carried: [] };
      if (!this.isCounted(state)) {
        const refused = this.unrecordableLineages.get(state.lineage);
        if (refused !== undefined) {
          this.dropUnrecordable(state.nodeId, events.events, `its lineage ${state.lineage} cannot be recorded: ${refused}`, 'envoyState');
          continue;
        }
        // Its lineage's count could not be written: the state and its events wait (never ahead of the count).
        this.requeueState(state);
        this.requeueEvents(state.nodeId, events.events);
        continue;
      }
      const enqueued = enqueuedAt.get(state.nodeId);
      writes.push({ state, events: events.events, carried: events.carried, logged: new Set(), ...(enqueued === undefined ? {} : { enqueued }), ...(urgent.has(state.nodeId) ? { urgent: true } : {}) });
    }
    if (this.eventLogMode === 'items') {
      ok = (await this.writeEventItems(writes, orphans)) && ok;
      return ok;
    }
    ok = (await this.writeEventLogs(writes, orphans)) && ok;
    await runPool(writes, this.stateWriteConcurrency, async (write) => {
      const outcome = await this.writeEnvoyState(write);
      if (outcome === 'written') {
        this.confirmEvents(write.events);
        this.stateWritten(write.state.nodeId, write.enqueued);
      } else if (outcome.dropped !== undefined) {
        this.uncountUnstored(write.state, 'refused by the store');
        this.dropUnrecordable(write.state.nodeId, write.events, outcome.dropped, 'envoyState');
      } else {
        ok = false;
        this.requeueState(write.state);
        this.requeueEvents(write.state.nodeId, write.events);
      }
    });
    return ok;
  }

  /**
   * eventLogMode `items`: every event is its own item, written (putEvents) before the state that
   * reflects it; a node whose events fail keeps its state queued (never ahead of the log).
   */
  private async writeEventItems(writes: EnvoyWrite[], orphans: Map<string, { events: EnvoyEvent[]; carried: CarriedEvent[] }>): Promise<boolean> {
    const events = [...writes.flatMap((write) => write.events), ...[...orphans.values()].flatMap((orphan) => orphan.events)];
    let failedNodes = new Set<string>();
    let ok = true;
    if (events.length > 0) {
      const started = performanceSeconds();
      try {
        const result = await this.store.putEvents(events);
        this.metrics?.writeLatency('putEvents', performanceSeconds() - started);
        failedNodes = new Set(result.failed.map((failure) => failure.event.nodeId));
      } catch (error) {
        this.logger.warn({ err: describeError(error), events: events.length }, 'putEvents failed; re-queued for retry');
        failedNodes = new Set(events.map((event) => event.nodeId));
      }
      if (failedNodes.size > 0) {
        ok = false;
        this.metrics?.writeFailed('putEvents');
      }
    }
    for (const [nodeId, orphan] of orphans) {
      if (failedNodes.has(nodeId)) this.requeueEvents(nodeId, orphan.events);
      else this.confirmEvents(orphan.events);
    }
    const stateWrites: EnvoyWrite[] = [];
    for (const write of writes) {
      if (failedNodes.has(write.state.nodeId)) {
        this.requeueState(write.state);
        this.requeueEvents(write.state.nodeId, write.events);
      } else {
        this.confirmEvents(write.events);
        stateWrites.push({ ...write, events: [], carried: [] });
      }
    }
    await runPool(stateWrites, this.stateWriteConcurrency, async (write) => {
      const outcome = await this.writeEnvoyState(write);
      if (outcome === 'written') this.stateWritten(write.state.nodeId, write.enqueued);
      else if (outcome.dropped !== undefined) {
        this.uncountUnstored(write.state, 'refused by the store');
        this.dropUnrecordable(write.state.nodeId, [], outcome.dropped, 'envoyState');
      }
      else {
        ok = false;
        this.requeueState(write.state);
      }
    });
    return ok;
  }

  /**
   * Moves carried events to event-log items where a state would carry too many (planCarry), and writes
   * orphan events. A node whose log items fail keeps everything carried (its state write still goes
   * ahead, so no event waits on the log; the move is retried with its next write).
   */
  private async writeEventLogs(writes: EnvoyWrite[], orphans: Map<string, { events: EnvoyEvent[]; carried: CarriedEvent[] }>): Promise<boolean> {
    const batches: EventLogBatch[] = [];
    const batchesOf = new Map<string, { write?: EnvoyWrite; batches: EventLogBatch[] }>();
    for (const write of writes) {
      const stored = withoutExpired(this.envoyRevs.get(write.state.nodeId)?.stored?.unlogged ?? [], this.clock.now());
      const limits = write.urgent === true ? this.urgentCarryLimits : this.eventLogLimits;
      const plan = planCarry(stored, write.carried, limits);
      if (plan.log.length === 0) continue;
      const nodeBatches = eventLogBatches(write.state.nodeId, plan.log);
      batches.push(...nodeBatches);
      batchesOf.set(write.state.nodeId, { write, batches: nodeBatches });
    }
    for (const [nodeId, orphan] of orphans) {
      const nodeBatches = eventLogBatches(nodeId, orphan.carried);
      batches.push(...nodeBatches);
      batchesOf.set(nodeId, { batches: nodeBatches });
    }
    if (batches.length === 0) return true;
    const started = performanceSeconds();
    let failedBatches: Set<EventLogBatch>;
    try {
      const result = await this.store.putEventLogs(batches);
      this.metrics?.writeLatency('putEvents', performanceSeconds() - started);
      failedBatches = new Set(result.failed.map((failure) => failure.batch));
      for (const failure of result.failed) {
        this.logger.warn({ nodeId: failure.batch.nodeId, lineage: failure.batch.lineage, events: failure.batch.events.length, retryable: failure.retryable, error: failure.error }, 'event-log item not written; its events stay carried');
      }
    } catch (error) {
      this.logger.warn({ err: describeError(error), items: batches.length }, 'putEventLogs failed; events stay carried');
      failedBatches = new Set(batches);
    }
    if (failedBatches.size > 0) this.metrics?.writeFailed('putEvents');
    for (const [nodeId, entry] of batchesOf) {
      const allWritten = entry.batches.every((batch) => !failedBatches.has(batch));
      if (entry.write === undefined) {
        const orphan = orphans.get(nodeId);
        if (orphan === undefined) continue;
        if (allWritten) this.confirmEvents(orphan.events);
        else this.requeueEvents(nodeId, orphan.events);
        continue;
      }
      // All or nothing per node: dropping part of the carried set would need the rest logged anyway.
      if (allWritten) for (const batch of entry.batches) for (const event of batch.events) entry.write.logged.add(carriedEventIdentity(event));
    }
    return failedBatches.size === 0;
  }

  /**
   * Write-ahead of the denominator: stamps each state's incarnation; a new incarnation (first state on
   * the lineage, new connection, less programmed, or marked to renew) adds one to the lineage's count,
   * and the LINEAGE item carrying the new count is written before any of those states. Returns false if
   * a lineage write failed (the states it would count stay queued; the others are written).
   */
  private async countNewEnvoys(states: EnvoyState[]): Promise<boolean> {
    const grown = new Set<string>();
    states.forEach((state, index) => {
      const entry = this.recordedOf(state.lineage);
      const last = entry.nodes.get(state.nodeId);
      const programmedThrough = state.programmedThrough ?? -1;
      // A new connection, or a state less programmed than the last one (an Envoy restarted under the
      // same node id): a new incarnation, so an older member of this node cannot pass for it.
      const renewed = last !== undefined && (last.renew === true || last.connectedAt !== state.connectedAt || programmedThrough < last.programmedThrough);
      const incarnation = last === undefined ? 1 : renewed ? last.incarnation + 1 : last.incarnation;
      if (last === undefined || renewed) entry.wanted++;
      entry.nodes.set(state.nodeId, { incarnation, connectedAt: state.connectedAt, programmedThrough, countedAt: last === undefined || renewed ? entry.wanted : last.countedAt });
      states[index] = { ...state, incarnation };
      // Not yet covered by a stored count (new now, or an earlier count write failed): write one.
      if (!this.isCounted(states[index] as EnvoyState)) grown.add(state.lineage);
    });
    let ok = true;
    for (const lineage of grown) {
      const entry = this.recordedOf(lineage);
      if (entry.confirmed >= entry.wanted) continue;
      // Take the queued lineage state if there is one (this write is its write); else the latest
      // known; else a fresh one (a lineage whose tracker never reported it: tests, or a bug).
      const queued = this.lineageStates.get(lineage);
      const sample = states.find((state) => state.lineage === lineage);
      const base = queued ?? this.latestLineage.get(lineage) ?? lineageStateFor(lineage, sample?.group ?? '', this.clock.now());
      this.lineageStates.delete(lineage);
      if (!(await this.writeLineageState(base))) {
        ok = false;
        if (!this.lineageStates.has(lineage)) this.lineageStates.set(lineage, base);
      }
    }
    return ok;
  }

  /**
   * After a write: which incarnation of the node its lineage's table now holds. A write merged into
   * another lineage's state (mergeEnvoyState keeps another connection's live state over our
   * disconnect, e.g. after a node-id takeover) stored nothing on our lineage: if that incarnation was
   * never stored there, its count comes back out (uncountUnstored).
   */
  private noteStored(ours: EnvoyState, written: EnvoyState): void {
    const node = this.recorded.get(ours.lineage)?.nodes.get(ours.nodeId);
    if (node === undefined) return;
    if (written.lineage === ours.lineage) node.storedIncarnation = Math.max(node.storedIncarnation ?? 0, written.incarnation ?? 1);
    else this.uncountUnstored(ours, `merged into its state on ${written.lineage}`);
  }

  /**
   * `state` was counted on its lineage but will never be in the table there: the store refused it for
   * good (DynamoDB's own limits, which envoyStateStorageProblem can only estimate), or the write was
   * merged into another lineage's state. Left counted, convergence would wait for it for ever ("not
   * yet in the aggregates"). The count goes down by the incarnations never stored; no count kept for
   * another node may exceed the new total (capped, so their states still pass as counted once a
   * LINEAGE write carries it); the confirmed count may not exceed it either (a state counted from now
   * on needs a write that carries it); and a LINEAGE write with the lower count is queued. Until it is
   * stored, convergence only waits longer (the stored count is the higher one): never the unsafe way.
   */
  private uncountUnstored(state: EnvoyState, why: string): void {
    const entry = this.recorded.get(state.lineage);
    const node = entry?.nodes.get(state.nodeId);
    if (entry === undefined || node === undefined) return;
    const storedIncarnation = node.storedIncarnation ?? 0;
    // That incarnation is in the table on this lineage already: it stays counted.
    if (node.incarnation <= storedIncarnation) return;
    entry.wanted -= node.incarnation - storedIncarnation;
    if (storedIncarnation === 0) entry.nodes.delete(state.nodeId);
    else Object.assign(node, { incarnation: storedIncarnation, countedAt: 0, renew: false });
    for (const other of entry.nodes.values()) other.countedAt = Math.min(other.countedAt, entry.wanted);
    entry.confirmed = Math.min(entry.confirmed, entry.wanted);
    if (!this.lineageStates.has(state.lineage)) {
      this.lineageStates.set(state.lineage, this.latestLineage.get(state.lineage) ?? lineageStateFor(state.lineage, state.group, this.clock.now()));
    }
    this.logger.warn({ lineage: state.lineage, nodeId: state.nodeId, envoysRecorded: entry.wanted, why }, 'a counted state is not stored on its lineage; its count is taken back and written again');
  }

  private recordedOf(lineage: string): LineageCount {
    let entry = this.recorded.get(lineage);
    if (entry === undefined) {
      entry = { nodes: new Map(), wanted: 0, confirmed: 0 };
      this.recorded.set(lineage, entry);
    }
    return entry;
  }

  private isCounted(state: EnvoyState): boolean {
    const entry = this.recorded.get(state.lineage);
    const countedAt = entry?.nodes.get(state.nodeId)?.countedAt;
    return entry !== undefined && countedAt !== undefined && countedAt <= entry.confirmed;
  }

  private revivesExpired(ours: EnvoyState, stored: EnvoyState | undefined): boolean {
    return stored?.status === 'EXPIRED' && ours.status !== 'EXPIRED' && stored.lineage === ours.lineage && (stored.incarnation ?? 1) >= (ours.incarnation ?? 1);
  }

  /** 'written'; `{ dropped }` when the store refused the state for good (never retried); else `{}`: retry. */
  private async writeEnvoyState(write: EnvoyWrite): Promise<'written' | { dropped?: string }> {
    const ours = write.state;
    const known = this.envoyRevs.get(ours.nodeId) ?? { rev: undefined };
    let expectedRev = known.rev;
    let stored = known.stored;
    // A conflict means someone else wrote (another gateway, the expire function, our previous life):
    // merge with what is stored and retry with its rev (ports.ts: updateEnvoyState contract).
    for (let attempt = 0; attempt < 4; attempt++) {
      // Carried events: whatever the state we replace carries (ours or another writer's: the write is
      // conditional on its rev, so this is exactly what is stored), plus ours, minus what is logged now.
      const carry = withoutCarried(mergeCarried(withoutExpired(stored?.unlogged ?? [], this.clock.now()), write.carried), write.logged);
      const { unlogged: _replaced, ...merged } = this.merge(ours, stored);
      const state: EnvoyState = { ...merged, ...(carry.length === 0 ? {} : { unlogged: carry }), rev: (expectedRev ?? -1) + 1 };
      const started = performanceSeconds();
      try {
        const result = await this.store.updateEnvoyState(state, expectedRev);
        this.metrics?.writeLatency('envoyState', performanceSeconds() - started);
        if (result.ok) {
          this.envoyRevs.set(ours.nodeId, { rev: state.rev, stored: state });
          this.noteStored(ours, state);
          return 'written';
        }
        const current = readToRev(result.current);
        expectedRev = current.rev;
        stored = current.stored;
        if (this.revivesExpired(ours, stored)) {
          // The expire function marked this Envoy EXPIRED meanwhile (its member is not live) and we
          // are about to make it live again: that is a new incarnation, so it needs a count first.
          const node = this.recorded.get(ours.lineage)?.nodes.get(ours.nodeId);
          if (node !== undefined) node.renew = true;
          this.envoyRevs.set(ours.nodeId, { rev: expectedRev, ...(stored === undefined ? {} : { stored }) });
          return {};
        }
      } catch (error) {
        if (isPermanentStoreError(error)) return { dropped: describeError(error) };
        this.metrics?.writeFailed('envoyState');
        this.logger.warn({ nodeId: ours.nodeId, err: describeError(error) }, 'envoy state write failed; will retry');
        return {};
      }
    }
    this.envoyRevs.set(ours.nodeId, { rev: expectedRev, ...(stored === undefined ? {} : { stored }) });
    this.logger.warn({ nodeId: ours.nodeId }, 'envoy state kept conflicting; will retry');
    return {};
  }

  private async flushLineageStates(): Promise<boolean> {
    if (this.lineageStates.size === 0) return true;
    const ready = [...this.lineageStates.values()];
    this.lineageStates.clear();
    let ok = true;
    for (const ours of ready) {
      const written = await this.writeLineageState(ours);
      if (!written) {
        ok = false;
        if (!this.lineageStates.has(ours.lineage)) this.lineageStates.set(ours.lineage, ours);
      }
    }
    return ok;
  }

  private async writeLineageState(ours: LineageState): Promise<boolean> {
    // Refused for good (refuseLineage): nothing to write, nothing to retry.
    if (this.unrecordableLineages.has(ours.lineage)) return true;
    if (this.registerLineage !== undefined && !this.registeredLineages.has(ours.lineage)) {
      try {
        await this.registerLineage(ours.lineage, ours.heartbeatAt);
        this.registeredLineages.add(ours.lineage);
      } catch (error) {
        if (isPermanentStoreError(error)) {
          this.refuseLineage(ours.lineage, describeError(error));
          return true;
        }
        this.metrics?.writeFailed('lineageState');
        this.logger.warn({ lineage: ours.lineage, err: describeError(error) }, 'lineage registration failed; will retry');
        return false;
      }
    }
    let expectedRev = this.lineageRevs.get(ours.lineage)?.rev;
    // The lineage item is ours alone (one process lifetime); a conflict can only be our own earlier
    // write whose answer was lost, so we overwrite with the stored rev + 1.
    // Every lineage write carries the count of nodes known so far (never less than a stored one:
    // the set only grows and our writes are sequential).
    const envoysRecorded = this.recordedOf(ours.lineage).wanted;
    for (let attempt = 0; attempt < 3; attempt++) {
      const state = { ...ours, envoysRecorded, rev: (expectedRev ?? -1) + 1 };
      const started = performanceSeconds();
      try {
        const result = await this.store.putLineageState(state, expectedRev);
        this.metrics?.writeLatency('lineageState', performanceSeconds() - started);
        if (result.ok) {
          this.lineageRevs.set(ours.lineage, { rev: state.rev });
          const entry = this.recordedOf(ours.lineage);
          entry.confirmed = Math.max(entry.confirmed, envoysRecorded);
          return true;
        }
        expectedRev = readToRev(result.current).rev;
      } catch (error) {
        if (isPermanentStoreError(error)) {
          this.refuseLineage(ours.lineage, describeError(error));
          return true;
        }
        this.metrics?.writeFailed('lineageState');
        this.logger.warn({ lineage: ours.lineage, err: describeError(error) }, 'lineage state write failed; will retry');
        return false;
      }
    }
    this.lineageRevs.set(ours.lineage, { rev: expectedRev });
    return false;
  }

  /**
   * The store refused the lineage's item for good (the edge's node bounds make this a bug, not an
   * Envoy's doing). Its write is dropped, not retried (retrying kept the gateway not-ready and every
   * state queued behind it); states on the lineage are dropped from now on, their Envoys told.
   */
  private refuseLineage(lineage: string, reason: string): void {
    if (this.unrecordableLineages.has(lineage)) return;
    this.unrecordableLineages.set(lineage, reason);
    this.metrics?.writeDropped?.('lineageState');
    this.logger.error({ lineage, reason }, 'lineage state can never be stored; dropped, not retried, its Envoys are refused');
  }

  private async flushObjectWrites(): Promise<boolean> {
    if (this.objectWrites.length === 0) return true;
    const batch = this.objectWrites;
    this.objectWrites = [];
    const retry: ObjectWrite[] = [];
    // Writes of one object generation stay in order (a watermark and a not-observable mark may both be
    // queued for it); different generations are independent items, written in parallel.
    const perGeneration = new Map<string, ObjectWrite[]>();
    for (const write of batch) {
      const key = `${formatObjectRef(write.ref)}#${write.generation}`;
      const list = perGeneration.get(key);
      if (list === undefined) perGeneration.set(key, [write]);
      else list.push(write);
    }
    await runPool([...perGeneration.values()], this.stateWriteConcurrency, async (writes) => {
      for (const write of writes) {
        if (!(await this.writeObjectWrite(write))) {
          // Keep this generation's later writes behind the failed one.
          retry.push(...writes.slice(writes.indexOf(write)));
          return;
        }
      }
    });
    this.objectWrites = [...retry, ...this.objectWrites];
    return retry.length === 0;
  }

  /** One watermark or not-observable write; false (logged) when it must be retried. */
  private async writeObjectWrite(write: ObjectWrite): Promise<boolean> {
    const started = performanceSeconds();
    try {
      if (write.kind === 'watermark') {
        const outcome = await this.store.putWatermark(write.ref, write.generation, write.lineage, write.watermark);
        this.logger.info(
          { object: formatObjectRef(write.ref), generation: write.generation, lineage: write.lineage, seq: write.watermark.seq, outcome },
          'watermark recorded',
        );
      } else if (write.kind === 'notObservable') {
        await this.store.markNotObservable(write.ref, write.generation, write.reason, write.at);
      } else {
        await this.store.markRejectedByController(write.ref, write.generation, write.message, write.at);
        this.logger.info({ object: formatObjectRef(write.ref), generation: write.generation }, 'controller rejection recorded');
      }
      this.metrics?.writeLatency('watermark', performanceSeconds() - started);
      return true;
    } catch (error) {
      if (isPermanentStoreError(error)) {
        this.metrics?.writeDropped?.('watermark');
        this.logger.error({ object: formatObjectRef(write.ref), generation: write.generation, err: describeError(error) }, 'watermark can never be stored; dropped, not retried');
        return true;
      }
      this.metrics?.writeFailed('watermark');
      this.logger.warn({ object: formatObjectRef(write.ref), generation: write.generation, err: describeError(error) }, 'watermark write failed; will retry');
      return false;
    }
  }

  private checkPressure(): void {
    const pressure = this.pressure();
    if (pressure === this.lastPressure) return;
    this.lastPressure = pressure;
    this.logger.warn({ queuedEvents: this.unconfirmedEvents, highWater: this.highWaterEvents, pressure }, 'recorder backpressure changed');
    for (const listener of this.pressureListeners) listener(pressure);
  }

  private resolveIdle(): void {
    if (!this.isEmpty() || this.flushing !== undefined) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}

function readToRev<T extends { rev: number }>(read: ItemRead<T>): KnownRev<T> {
  switch (read.status) {
    case 'found':
      return { rev: read.value.rev, stored: read.value };
    case 'missing':
      return { rev: undefined };
    case 'corrupt':
      // Replace the corrupt item (the store logged it with its key).
      return { rev: read.rev };
  }
}

async function runPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  await Promise.all(workers);
}

function performanceSeconds(): number {
  return performance.now() / 1000;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
