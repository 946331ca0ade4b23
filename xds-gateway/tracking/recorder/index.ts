// The recorder: everything the gateway learns goes through here to the store port (docs/GATEWAY.md,
// "What is written when"). Callers (the relay's synchronous observer callbacks) only enqueue; a flush
// loop (flush-scheduler.ts) writes, in this order:
//   1. object marks: watermarks, not-observable and controller-rejected generations
//      (watermark-pipeline.ts) — a generation cannot be decided before its watermark is stored;
//   2. Envoy states (envoy-state-pipeline.ts), coalesced per node and held for their answers where
//      that saves writes (envoy-state-queue.ts), conditional on `rev` (envoy-state-writer.ts), each
//      carrying the node's new ACK/NACK/STUCK events, with event-log items written first where a state
//      would carry too many (event-log-pipeline.ts); each state stamped with its incarnation and its
//      lineage's count written before it (denominator.ts, lineage-pipeline.ts `writeCounts`; the rule
//      is the core's, common/core/envoy-count.ts);
//   3. lineage states (lineage-pipeline.ts), coalesced per lineage.
// Events wait in a queue whose depth is the backpressure measure (event-queue.ts); stream admission
// waits for a node's state to be written (state-admission.ts); retired lineages are forgotten once
// nothing of them is queued (retired-lineages.ts).
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
import { DEFAULT_EVENT_LOG_LIMITS, type EnvoyEvent, type EnvoyState, type LineageState, type LineageWatermark, type NamesHoldRelief, type ObjectRef } from '../../../common/core';
import { EnvoyCounts } from './denominator';
import { EnvoyStatePipeline } from './envoy-state-pipeline';
import { EnvoyStateQueue } from './envoy-state-queue';
import { EnvoyStateWriter } from './envoy-state-writer';
import { EventLogPipeline } from './event-log-pipeline';
import { EventQueue } from './event-queue';
import { FlushScheduler, type FlushOutcome } from './flush-scheduler';
import { LineagePipeline } from './lineage-pipeline';
import { RetiredLineages } from './retired-lineages';
import type { RecorderOptions, RecorderStats } from './options';
import { StateAdmission } from './state-admission';
import { VersionLogPipeline } from './version-log-pipeline';
import { WatermarkPipeline } from './watermark-pipeline';

export type { RecorderMetrics, RecorderOptions, RecorderStats } from './options';
export { UnrecordableEnvoyError } from './state-admission';

/**
 * How soon a flush follows an urgent state (one reaching a watermark, or a NACK) instead of the flush
 * window (100 ms): a few milliseconds still let the states of one burst of ACKs share a flush.
 */
const URGENT_FLUSH_DELAY_MS = 5;

/** What the tracker hands the recorder (envoy-tracker.ts). */
export interface EnvoyRecords {
  enqueueEvent(event: EnvoyEvent): void;
  /**
   * `relief`: the state's names-hold relief (core NamesHoldRelief), for the PROGRESS publisher's
   * summary (records-tee.ts); nothing stored carries it, so the recorder itself ignores it.
   */
  enqueueEnvoyState(state: EnvoyState, relief?: NamesHoldRelief): void;
  enqueueLineageState(state: LineageState): void;
  /** False while anything of the node is queued, held or awaited: ask again later. */
  forgetEnvoy(nodeId: string): boolean;
}

/** What the watermark sources hand the recorder (provenance-watermarks.ts, barrier.ts). */
export interface ObjectRecords {
  enqueueWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): void;
  enqueueNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): void;
  enqueueRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): void;
}

export class Recorder implements EnvoyRecords, ObjectRecords {
  private readonly flushIntervalMs: number;
  private readonly events: EventQueue;
  private readonly admission = new StateAdmission();
  private readonly retired = new RetiredLineages();
  private readonly counts: EnvoyCounts;
  private readonly lineages: LineagePipeline;
  private readonly watermarks: WatermarkPipeline;
  private readonly writer: EnvoyStateWriter;
  private readonly states: EnvoyStateQueue;
  private readonly envoyStates: EnvoyStatePipeline;
  private readonly scheduler: FlushScheduler;
  private readonly versionLog: VersionLogPipeline | undefined;

  constructor(options: RecorderOptions) {
    const { store, logger, clock, metrics } = options;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    const eventLogMode = options.eventLogMode ?? 'carried';
    const stateWriteConcurrency = options.stateWriteConcurrency ?? 64;
    this.events = new EventQueue({ logger, highWaterEvents: options.highWaterEvents ?? 50_000, metrics });
    this.counts = new EnvoyCounts({ logger, requestLineageWrite: (lineage, group) => this.lineages.requestWrite(lineage, group) });
    this.lineages = new LineagePipeline({ store, logger, clock, metrics, counts: this.counts, registerLineage: options.registerLineage });
    this.watermarks = new WatermarkPipeline({ store, logger, metrics, concurrency: stateWriteConcurrency });
    this.writer = new EnvoyStateWriter({ store, logger, clock, metrics, counts: this.counts, merge: options.mergeEnvoyState ?? ((ours) => ours) });
    this.states = new EnvoyStateQueue({
      holdMs: eventLogMode === 'items' ? 0 : (options.pendingStateHoldMs ?? 1000),
      events: this.events,
      admission: this.admission,
      watermarks: this.watermarks,
      writer: this.writer,
    });
    this.versionLog = options.versionLog === undefined ? undefined : new VersionLogPipeline({ ...options.versionLog, logger, metrics, events: this.events, isForgotten: (lineage) => this.retired.isForgotten(lineage) });
    this.envoyStates = new EnvoyStatePipeline({
      logger,
      clock,
      metrics,
      eventLogMode,
      carryEventsInStoredState: options.carryEventsInStoredState ?? true,
      orphanEventHoldMs: options.orphanEventHoldMs ?? 0,
      maxCarriedEvents: (options.eventLog ?? DEFAULT_EVENT_LOG_LIMITS).maxCarriedEvents,
      stateWriteConcurrency,
      maxStatesPerFlush: Math.max(1, options.maxStatesPerFlush ?? 2 * stateWriteConcurrency),
      onUnrecordable: options.onUnrecordable,
      states: this.states,
      events: this.events,
      admission: this.admission,
      counts: this.counts,
      lineages: this.lineages,
      retired: this.retired,
      writer: this.writer,
      versionLog: this.versionLog,
      eventLog: new EventLogPipeline({ store, logger, clock, metrics, limits: options.eventLog ?? DEFAULT_EVENT_LOG_LIMITS, events: this.events, writer: this.writer }),
    });
    this.scheduler = new FlushScheduler({
      logger,
      flushIntervalMs: this.flushIntervalMs,
      retryBaseMs: options.retryBaseMs ?? 100,
      retryMaxMs: options.retryMaxMs ?? 2_000,
      random: options.random ?? Math.random,
      work: { flush: (writeHeld) => this.flushOnce(writeHeld), afterFlush: () => this.afterFlush(), isEmpty: () => this.isEmpty() },
    });
  }

  // -------------------------------------------------------------------------------------------
  // Enqueueing: synchronous, never awaits I/O.

  enqueueEvent(event: EnvoyEvent): void {
    this.events.enqueue(event);
    this.scheduler.schedule(event.outcome === 'NACK' ? URGENT_FLUSH_DELAY_MS : this.flushIntervalMs);
  }

  /**
   * Latest wins per node: states queued within one flush window become one write. A state that
   * reaches a recorded watermark does not wait for the window: convergence waits for it.
   */
  enqueueEnvoyState(state: EnvoyState): void {
    this.versionLog?.noteMember(state.nodeId, state.lineage, state.lastSeenAt);
    this.states.enqueue(state);
    this.admission.noteEnqueued(state.nodeId);
    this.scheduler.schedule(this.states.reachesWatermark(state.nodeId, state) ? URGENT_FLUSH_DELAY_MS : this.flushIntervalMs);
  }

  enqueueLineageState(state: LineageState): void {
    if (this.retired.isForgotten(state.lineage)) return;
    this.lineages.enqueue(state);
    this.scheduler.schedule();
  }

  enqueueWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): void {
    this.watermarks.enqueueWatermark(ref, generation, lineage, watermark);
    this.scheduler.schedule();
  }

  enqueueNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): void {
    this.watermarks.enqueueNotObservable(ref, generation, reason, at);
    this.scheduler.schedule();
  }

  enqueueRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): void {
    this.watermarks.enqueueRejectedByController(ref, generation, message, at);
    this.scheduler.schedule();
  }

  /** A state of the node is queued (or held) and not yet written: a newer one would share its write. */
  hasQueuedEnvoyState(nodeId: string): boolean {
    return this.states.get(nodeId) !== undefined;
  }

  /**
   * Resolves once a state of `nodeId` enqueued no earlier than this call is durably written
   * (state-admission.ts). The relay's stream admission waits on this before a new stream's first
   * response (docs/GATEWAY.md, "Stream admission"). Rejects only with UnrecordableEnvoyError.
   */
  whenStateWritten(nodeId: string): Promise<void> {
    return this.admission.whenWritten(nodeId);
  }

  /**
   * Drops what the recorder keeps of an Envoy the tracker has forgotten (disconnected long ago): its
   * known rev and stored state (~1-2 KB each) and its write counters, so a gateway that sees Envoys
   * come and go (new node ids on every rollout) does not grow without bound. Refused (false) while
   * anything of the node is still queued, held or awaited: the caller asks again later. Forgetting
   * is safe: the next write of the node conflicts, re-reads the stored state (its carried events
   * included) and goes on, as after a gateway restart. Its lineage counts are kept (denominator.ts): a
   * node that comes back on the same lineage must not be counted twice.
   */
  forgetEnvoy(nodeId: string): boolean {
    if (this.states.has(nodeId) || this.events.has(nodeId) || this.admission.isAwaited(nodeId) || this.states.isHeld(nodeId)) return false;
    this.writer.forget(nodeId);
    this.admission.forget(nodeId);
    return true;
  }

  /**
   * The relay serves nothing more on `lineage` (a group moved, or was freed when idle). What is kept
   * per lineage (its count, revs, registration, watermark seqs: a few hundred bytes to a few KB) goes
   * once nothing of the lineage is queued, so a gateway whose groups come and go (Envoys inventing
   * node clusters, rollouts) does not grow without bound.
   */
  retireLineage(lineage: string): void {
    this.retired.retire(lineage);
    // A running flush holds states it took out of the queue: forgotten now, their lineage's count
    // would be gone when a failed write re-queues them, and the next flush would drop them as late
    // (an Envoy's disconnect never stored). afterFlush forgets it once they are queued or written.
    if (!this.scheduler.isFlushing()) this.forgetRetiredLineages();
  }

  // -------------------------------------------------------------------------------------------
  // Pressure, stats, diagnostics

  /** True while more events are queued than the high-water mark. */
  pressure(): boolean {
    return this.events.pressure();
  }

  onPressureChange(listener: (pressure: boolean) => void): void {
    this.events.onPressureChange(listener);
  }

  /** `lineage` is in the convergence registry (written ahead of its LINEAGE item), or needs no registration. */
  lineageRegistered(lineage: string): boolean {
    return this.lineages.isRegistered(lineage);
  }

  /** envoysRecorded confirmed by the stored LINEAGE item of `lineage` (tests and diagnostics). */
  envoysRecorded(lineage: string): number {
    return this.counts.confirmed(lineage);
  }

  /** The Envoy's state as we last stored or read it (for tests and diagnostics). */
  storedEnvoyRev(nodeId: string): number | undefined {
    return this.writer.rev(nodeId);
  }

  /** Lineages whose per-lineage state this recorder keeps (tests and diagnostics). */
  lineagesKept(): number {
    return new Set([...this.counts.lineages(), ...this.lineages.keptLineages()]).size;
  }

  stats(): RecorderStats {
    return {
      queuedEvents: this.events.queued,
      queuedEnvoyStates: this.states.size,
      queuedLineageStates: this.lineages.queued,
      queuedWatermarks: this.watermarks.queued,
      eventsWritten: this.events.eventsWritten,
      eventsRejected: this.events.eventsRejected,
      dropped: 0,
      failedAttempts: this.scheduler.failedAttempts,
      consecutiveFailures: this.scheduler.consecutiveFailures,
      ...(this.versionLog === undefined ? {} : { versionLog: this.versionLog.stats() }),
    };
  }

  isEmpty(): boolean {
    return this.events.nodeCount === 0 && this.states.size === 0 && this.lineages.queued === 0 && this.watermarks.queued === 0 && (this.versionLog?.isEmpty() ?? true);
  }

  // -------------------------------------------------------------------------------------------
  // Flushing

  /** Resolves when every queue is empty and no flush is running. */
  whenIdle(): Promise<void> {
    return this.scheduler.whenIdle();
  }

  /**
   * Stops the timer and flushes until everything is written or `timeoutMs` passed (SIGTERM path).
   * Returns what could not be written (logged by the caller; with a healthy store: all zeros).
   */
  async close(timeoutMs = 10_000): Promise<RecorderStats> {
    await this.scheduler.close(timeoutMs);
    return this.stats();
  }

  /** Runs one flush now (waits for a running one first); `writeHeld` also writes states being held. */
  flushNow(writeHeld = false): Promise<void> {
    return this.scheduler.flushNow(writeHeld);
  }

  private async flushOnce(writeHeld: boolean): Promise<FlushOutcome> {
    // Watermarks first: a change's generation cannot be decided before its watermark is stored, and
    // they are few (one per changed object and lineage) while a fleet-wide push queues a state per
    // Envoy. Behind 1,000 state writes a watermark waited ~29 s (docs/bench/README.md). No
    // ordering is owed the other way: a state ahead of its watermark just waits to be evaluated.
    let failed = !(await this.watermarks.flush());
    const envoys = await this.envoyStates.flush(writeHeld);
    failed = !envoys.ok || failed;
    failed = !(await this.lineages.flush()) || failed;
    return { failed, moreReady: envoys.moreReady };
  }

  private afterFlush(): void {
    this.events.checkPressure();
    this.forgetRetiredLineages();
  }

  private forgetRetiredLineages(): void {
    this.retired.forgetIdle(
      () => {
        const busy = new Set<string>(this.lineages.queuedLineages());
        for (const state of this.states.values()) busy.add(state.lineage);
        for (const lineage of this.versionLog?.busyLineages() ?? []) busy.add(lineage);
        return busy;
      },
      (lineage) => {
        this.counts.forgetLineage(lineage);
        this.lineages.forgetLineage(lineage);
        this.watermarks.forgetLineage(lineage);
        this.versionLog?.forgetLineage(lineage);
      },
    );
  }
}
