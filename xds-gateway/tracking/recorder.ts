// The recorder: everything the gateway learns goes through here to the store port (DESIGN §3.4).
// Callers (the relay's synchronous observer callbacks) only enqueue; a flush loop writes:
//   1. events (ACK/NACK/STUCK) with putEvents (BatchWriteItem inside the store, 25 per request);
//   2. then Envoy states, coalesced per node (many ACKs of one Envoy within a flush → one write),
//      conditional on `rev`; a node whose events are still queued keeps its state queued, so a stored
//      state never claims an ACK the event log does not have yet;
//   3. lineage states (coalesced per lineage) and watermarks (first write wins in the store).
// The denominator (docs/CONVERGENCE.md, "The denominator"): every Envoy state is stamped with its
// `incarnation` on its lineage (1, +1 on a new connection, on a state less programmed than the last,
// or on reviving an EXPIRED state), and each LINEAGE item carries `envoysRecorded`, the sum of the
// nodes' incarnations. A state with a new incarnation is written only after a LINEAGE write that
// counts it has been confirmed (write-ahead), so every state in the table is counted by the stored
// item at any moment — which convergence relies on to tell whether its aggregates hold every Envoy.
// Failures: the SDK retries throttling itself; items the store still reports as failed, and whole
// calls that reject, are re-queued and retried after a full-jitter backoff. Nothing is dropped:
// writes are idempotent (deterministic event keys, conditional state writes, first-wins watermarks),
// so replaying them is harmless. Above the high-water mark `pressure()` turns true; the gateway
// reports not-ready and stops acknowledging work it cannot record (docs/GATEWAY.md, "Backpressure").
import type { Logger } from 'pino';
import {
  type Clock,
  type EnvoyEvent,
  type EnvoyState,
  type EventStore,
  type ItemRead,
  type LineageState,
  type LineageWatermark,
  type ObjectRef,
  formatObjectRef,
} from '../../common/core';
import { fullJitterDelay } from '../../common/store';
import { lineageStateFor } from './lineage-mirror';

export interface RecorderMetrics {
  /** Events durably written (the only point where an event counts as acknowledged). */
  eventsWritten(events: readonly EnvoyEvent[]): void;
  /** Seconds one store call took, by operation. */
  writeLatency(operation: 'putEvents' | 'envoyState' | 'lineageState' | 'watermark', seconds: number): void;
  writeFailed(operation: string): void;
}

export interface RecorderOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  random?: () => number;
  /** Pause between flushes when there is nothing to retry (coalescing window for state writes). */
  flushIntervalMs?: number;
  /** Queued events above which `pressure()` is true. Nothing is dropped above it. */
  highWaterEvents?: number;
  /** Events per putEvents call (the store splits it into BatchWriteItem requests of 25). */
  maxEventsPerFlush?: number;
  /** Parallel conditional writes of Envoy states per flush. */
  stateWriteConcurrency?: number;
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

type ObjectWrite = WatermarkWrite | NotObservableWrite;

interface KnownRev<T> {
  /** The rev stored by our last successful write or read; undefined: unknown (write as if absent). */
  rev: number | undefined;
  stored?: T;
}

const defaultMerge = (ours: EnvoyState): EnvoyState => ours;

/** The denominator of one lineage as this recorder counts it (docs/CONVERGENCE.md, "The denominator"). */
interface LineageCount {
  /** Per node: its incarnation, what it was stamped from, and the count that includes it. */
  nodes: Map<string, { incarnation: number; connectedAt: number; programmedThrough: number; countedAt: number; renew?: boolean }>;
  /** Sum of the nodes' incarnations: what the next LINEAGE write carries. */
  wanted: number;
  /** The largest count a stored LINEAGE item is confirmed to carry. */
  confirmed: number;
}

const MAX_EVENT_CHUNKS_PER_FLUSH = 10;

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
  private readonly maxEventsPerFlush: number;
  private readonly stateWriteConcurrency: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly merge: (ours: EnvoyState, stored: EnvoyState | undefined) => EnvoyState;
  private readonly metrics: RecorderMetrics | undefined;

  private events: EnvoyEvent[] = [];
  /** Events handed to the store and not yet confirmed (still ours to re-queue). */
  private inFlightEvents = 0;
  private readonly queuedEventsByNode = new Map<string, number>();
  private readonly envoyStates = new Map<string, EnvoyState>();
  private readonly lineageStates = new Map<string, LineageState>();
  private objectWrites: ObjectWrite[] = [];
  private readonly envoyRevs = new Map<string, KnownRev<EnvoyState>>();
  private readonly lineageRevs = new Map<string, KnownRev<LineageState>>();
  /** Latest lineage state handed to us, per lineage (what a write-ahead count is written with). */
  private readonly latestLineage = new Map<string, LineageState>();
  /** Per lineage: the denominator count wanted and confirmed by a stored item, and each node's incarnation. */
  private readonly recorded = new Map<string, LineageCount>();

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
    this.maxEventsPerFlush = options.maxEventsPerFlush ?? 1000;
    this.stateWriteConcurrency = options.stateWriteConcurrency ?? 64;
    this.retryBaseMs = options.retryBaseMs ?? 100;
    this.retryMaxMs = options.retryMaxMs ?? 10_000;
    this.merge = options.mergeEnvoyState ?? defaultMerge;
    this.metrics = options.metrics;
  }

  // -------------------------------------------------------------------------------------------
  // Enqueueing: synchronous, never awaits I/O.

  enqueueEvent(event: EnvoyEvent): void {
    this.events.push(event);
    this.queuedEventsByNode.set(event.nodeId, (this.queuedEventsByNode.get(event.nodeId) ?? 0) + 1);
    this.checkPressure();
    this.schedule();
  }

  /** Latest wins per node: states queued within one flush window become one write. */
  enqueueEnvoyState(state: EnvoyState): void {
    this.envoyStates.set(state.nodeId, state);
    this.schedule();
  }

  enqueueLineageState(state: LineageState): void {
    this.lineageStates.set(state.lineage, state);
    this.latestLineage.set(state.lineage, state);
    this.schedule();
  }

  enqueueWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): void {
    this.objectWrites.push({ kind: 'watermark', ref, generation, lineage, watermark });
    this.schedule();
  }

  enqueueNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): void {
    this.objectWrites.push({ kind: 'notObservable', ref, generation, reason, at });
    this.schedule();
  }

  /** True while more events are queued than the high-water mark. */
  pressure(): boolean {
    return this.events.length + this.inFlightEvents >= this.highWaterEvents;
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
      queuedEvents: this.events.length + this.inFlightEvents,
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
    return this.events.length === 0 && this.envoyStates.size === 0 && this.lineageStates.size === 0 && this.objectWrites.length === 0;
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
      await this.flushNow();
      if (!this.isEmpty() && this.counters.consecutiveFailures > 0) {
        await sleep(Math.min(this.backoffMs(), Math.max(0, deadline - Date.now())));
      }
    }
    if (this.flushing !== undefined) await this.flushing;
    this.resolveIdle();
    return this.stats();
  }

  /** Runs one flush now (waits for a running one first). */
  async flushNow(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    this.flushing = this.flushOnce().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  // -------------------------------------------------------------------------------------------
  // Flush loop

  private schedule(delayMs = this.flushIntervalMs): void {
    if (this.closed || this.timer !== undefined) return;
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
      this.schedule(this.counters.consecutiveFailures > 0 ? this.backoffMs() : this.flushIntervalMs);
    } else {
      this.resolveIdle();
    }
  }

  private backoffMs(): number {
    return Math.max(1, fullJitterDelay(this.counters.consecutiveFailures, this.retryBaseMs, this.retryMaxMs, this.random));
  }

  private async flushOnce(): Promise<void> {
    let failed = false;
    // Drain a backlog in several calls before the states (which wait for their Envoy's events), so
    // state writes are not starved under sustained load; bounded so one flush cannot run forever.
    for (let chunk = 0; chunk < MAX_EVENT_CHUNKS_PER_FLUSH && this.events.length > 0 && !failed; chunk++) {
      failed = !(await this.flushEvents());
    }
    failed = !(await this.flushEnvoyStates()) || failed;
    failed = !(await this.flushLineageStates()) || failed;
    failed = !(await this.flushObjectWrites()) || failed;
    if (failed) {
      this.counters.consecutiveFailures++;
      this.counters.failedAttempts++;
    } else {
      this.counters.consecutiveFailures = 0;
    }
    this.checkPressure();
    if (this.isEmpty()) this.resolveIdle();
  }

  /** Returns false if anything must be retried. */
  private async flushEvents(): Promise<boolean> {
    if (this.events.length === 0) return true;
    const batch = this.events.splice(0, this.maxEventsPerFlush);
    const started = performanceSeconds();
    this.inFlightEvents = batch.length;
    try {
      const result = await this.store.putEvents(batch);
      this.metrics?.writeLatency('putEvents', performanceSeconds() - started);
      const retry: EnvoyEvent[] = [];
      const failedEvents = new Set<EnvoyEvent>();
      for (const failure of result.failed) {
        failedEvents.add(failure.event);
        const retryable = (failure as { retryable?: boolean }).retryable !== false;
        if (retryable) {
          retry.push(failure.event);
        } else {
          this.counters.eventsRejected++;
          this.logger.error(
            { nodeId: failure.event.nodeId, typeUrl: failure.event.typeUrl, outcome: failure.event.outcome, seq: failure.event.seq, error: failure.error },
            'store refused an invalid event; not retrying',
          );
        }
      }
      const written = batch.filter((event) => !failedEvents.has(event));
      const retrySet = new Set(retry);
      for (const event of batch) if (!retrySet.has(event)) this.decrementNode(event.nodeId);
      this.counters.eventsWritten += written.length;
      if (written.length > 0) this.metrics?.eventsWritten(written);
      if (retry.length > 0) {
        this.metrics?.writeFailed('putEvents');
        this.logger.warn({ unwritten: retry.length }, 'some events were not written; re-queued');
        this.events = [...retry, ...this.events];
        return false;
      }
      return true;
    } catch (error) {
      this.metrics?.writeFailed('putEvents');
      this.logger.warn({ err: describeError(error), events: batch.length }, 'putEvents failed; re-queued for retry');
      this.events = [...batch, ...this.events];
      return false;
    } finally {
      this.inFlightEvents = 0;
    }
  }

  private decrementNode(nodeId: string): void {
    const left = (this.queuedEventsByNode.get(nodeId) ?? 1) - 1;
    if (left <= 0) this.queuedEventsByNode.delete(nodeId);
    else this.queuedEventsByNode.set(nodeId, left);
  }

  private async flushEnvoyStates(): Promise<boolean> {
    if (this.envoyStates.size === 0) return true;
    const ready: EnvoyState[] = [];
    for (const [nodeId, state] of this.envoyStates) {
      // Events first: the state must never be ahead of the event log.
      if (this.queuedEventsByNode.has(nodeId)) continue;
      ready.push(state);
      this.envoyStates.delete(nodeId);
    }
    let ok = await this.countNewEnvoys(ready);
    const counted = ready.filter((state) => {
      if (this.isCounted(state)) return true;
      // Its lineage's count could not be written: the state waits (never ahead of the count).
      if (!this.envoyStates.has(state.nodeId)) this.envoyStates.set(state.nodeId, state);
      return false;
    });
    await runPool(counted, this.stateWriteConcurrency, async (state) => {
      const written = await this.writeEnvoyState(state);
      if (!written) {
        ok = false;
        // A newer state queued meanwhile supersedes this one; otherwise retry this one.
        if (!this.envoyStates.has(state.nodeId)) this.envoyStates.set(state.nodeId, state);
      }
    });
    return ok;
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

  private async writeEnvoyState(ours: EnvoyState): Promise<boolean> {
    const known = this.envoyRevs.get(ours.nodeId) ?? { rev: undefined };
    let expectedRev = known.rev;
    let stored = known.stored;
    // A conflict means someone else wrote (another gateway, the expire function, our previous life):
    // merge with what is stored and retry with its rev (ports.ts: updateEnvoyState contract).
    for (let attempt = 0; attempt < 4; attempt++) {
      const state = { ...this.merge(ours, stored), rev: (expectedRev ?? -1) + 1 };
      const started = performanceSeconds();
      try {
        const result = await this.store.updateEnvoyState(state, expectedRev);
        this.metrics?.writeLatency('envoyState', performanceSeconds() - started);
        if (result.ok) {
          this.envoyRevs.set(ours.nodeId, { rev: state.rev, stored: state });
          return true;
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
          return false;
        }
      } catch (error) {
        this.metrics?.writeFailed('envoyState');
        this.logger.warn({ nodeId: ours.nodeId, err: describeError(error) }, 'envoy state write failed; will retry');
        return false;
      }
    }
    this.envoyRevs.set(ours.nodeId, { rev: expectedRev, ...(stored === undefined ? {} : { stored }) });
    this.logger.warn({ nodeId: ours.nodeId }, 'envoy state kept conflicting; will retry');
    return false;
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
    if (this.registerLineage !== undefined && !this.registeredLineages.has(ours.lineage)) {
      try {
        await this.registerLineage(ours.lineage, ours.heartbeatAt);
        this.registeredLineages.add(ours.lineage);
      } catch (error) {
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
        this.metrics?.writeFailed('lineageState');
        this.logger.warn({ lineage: ours.lineage, err: describeError(error) }, 'lineage state write failed; will retry');
        return false;
      }
    }
    this.lineageRevs.set(ours.lineage, { rev: expectedRev });
    return false;
  }

  private async flushObjectWrites(): Promise<boolean> {
    if (this.objectWrites.length === 0) return true;
    const batch = this.objectWrites;
    this.objectWrites = [];
    const retry: ObjectWrite[] = [];
    for (const write of batch) {
      const started = performanceSeconds();
      try {
        if (write.kind === 'watermark') {
          const outcome = await this.store.putWatermark(write.ref, write.generation, write.lineage, write.watermark);
          this.logger.info(
            { object: formatObjectRef(write.ref), generation: write.generation, lineage: write.lineage, seq: write.watermark.seq, outcome },
            'watermark recorded',
          );
        } else {
          await this.store.markNotObservable(write.ref, write.generation, write.reason, write.at);
        }
        this.metrics?.writeLatency('watermark', performanceSeconds() - started);
      } catch (error) {
        this.metrics?.writeFailed('watermark');
        this.logger.warn({ object: formatObjectRef(write.ref), generation: write.generation, err: describeError(error) }, 'watermark write failed; will retry');
        retry.push(write);
      }
    }
    this.objectWrites = [...retry, ...this.objectWrites];
    return retry.length === 0;
  }

  private checkPressure(): void {
    const pressure = this.pressure();
    if (pressure === this.lastPressure) return;
    this.lastPressure = pressure;
    this.logger.warn({ queuedEvents: this.events.length + this.inFlightEvents, highWater: this.highWaterEvents, pressure }, 'recorder backpressure changed');
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
