// The recorder's Envoy STATE writes, one flush at a time: take the ready states (envoy-state-queue.ts:
// urgent first, the rest unless held, at most maxStatesPerFlush), check each before it is counted (a
// count must never cover a state that cannot be stored), count them (denominator.ts) and write their
// lineages' counts first (write-ahead), move carried events to the event log where due, then write the
// states in parallel, each carrying its node's new events. A state that can never be stored is
// dropped with its events, its waiters refused and the gateway told (onUnrecordable), so the Envoy's
// streams end instead of waiting for a write that never comes.
import type { Logger } from 'pino';
import { envoyStateStorageProblem, type Clock, type EnvoyEvent, type EnvoyState } from '../../../common/core';
import { forEachConcurrently } from '../../../common/worker-pool';
import type { EnvoyCounts } from './denominator';
import type { EnvoyStateQueue } from './envoy-state-queue';
import type { EnvoyStateWriter, EnvoyWrite } from './envoy-state-writer';
import type { EventLogPipeline } from './event-log-pipeline';
import type { EventQueue, TakenEvents } from './event-queue';
import type { LineagePipeline } from './lineage-pipeline';
import type { RetiredLineages } from './retired-lineages';
import type { RecorderMetrics } from './options';
import type { StateAdmission } from './state-admission';
import type { VersionLogPipeline } from './version-log-pipeline';

export interface EnvoyStatePipelineOptions {
  logger: Logger;
  clock: Clock;
  metrics: RecorderMetrics | undefined;
  eventLogMode: 'carried' | 'items';
  /** RecorderOptions.carryEventsInStoredState. */
  carryEventsInStoredState: boolean;
  /** RecorderOptions.orphanEventHoldMs. */
  orphanEventHoldMs: number;
  /** Events one item carries before it is written without waiting (EventLogLimits.maxCarriedEvents). */
  maxCarriedEvents: number;
  stateWriteConcurrency: number;
  maxStatesPerFlush: number;
  onUnrecordable: ((nodeId: string, reason: string) => void) | undefined;
  states: EnvoyStateQueue;
  events: EventQueue;
  admission: StateAdmission;
  counts: EnvoyCounts;
  lineages: LineagePipeline;
  retired: RetiredLineages;
  writer: EnvoyStateWriter;
  eventLog: EventLogPipeline;
  /** RecorderOptions.versionLog: orphans' answers go to chunks. */
  versionLog: VersionLogPipeline | undefined;
}

/** The states one flush takes: ready to count, their events, and events with no state to carry them. */
interface TakenStates {
  ready: EnvoyState[];
  taken: Map<string, TakenEvents>;
  /** Events of Envoys with no state to carry them (never written by us, or carryEventsInStoredState off): straight to event-log items. */
  orphans: Map<string, TakenEvents>;
  /** Per node taken from the queue: its enqueue count then (whenStateWritten). */
  enqueuedAt: Map<string, number>;
  urgent: Set<string>;
  /** Stopped at maxStatesPerFlush with states still ready. */
  moreReady: boolean;
}

export class EnvoyStatePipeline {
  constructor(private readonly options: EnvoyStatePipelineOptions) {}

  /** One flush of Envoy states; `ok` false if anything must be retried. */
  async flush(writeHeld: boolean): Promise<{ ok: boolean; moreReady: boolean }> {
    const { states, events, counts, lineages, eventLogMode, versionLog, clock } = this.options;
    if (states.size === 0 && events.nodeCount === 0 && (versionLog?.isEmpty() ?? true)) return { ok: true, moreReady: false };
    const taken = this.takeReady(writeHeld);
    const { stamped, uncovered } = counts.count(taken.ready);
    let ok = await lineages.writeCounts(uncovered, stamped);
    const writes = this.countedWrites(stamped, taken);
    if (eventLogMode === 'items') {
      ok = (await this.writeWithEventItems(writes, taken.orphans)) && ok;
      return { ok, moreReady: taken.moreReady };
    }
    let orphans = taken.orphans;
    let ready = writes;
    if (versionLog !== undefined) {
      // Answers first (chunks), and the open chunks of the nodes whose states go now cut and written
      // before those states: no stored state gets ahead of the log. A node whose chunk could not be
      // stored keeps its state queued for the next flush, as in items mode.
      const now = clock.now();
      orphans = versionLog.gather(taken.orphans, now);
      versionLog.cutFor(writes.map((write) => write.state.nodeId));
      ok = (await versionLog.write(now, writeHeld)) && ok;
      const behind = versionLog.nodesWithUnwrittenAnswers();
      if (behind.size > 0) {
        ready = [];
        for (const write of writes) {
          if (!behind.has(write.state.nodeId)) {
            ready.push(write);
            continue;
          }
          states.requeue(write.state);
          events.requeue(write.state.nodeId, write.events);
          ok = false;
        }
      }
    }
    ok = (await this.options.eventLog.moveCarried(ready, orphans)) && ok;
    ok = (await this.writeStates(ready)) && ok;
    return { ok, moreReady: taken.moreReady };
  }

  /**
   * Drops a node's state that can never be stored, and the events queued with it (events of an Envoy
   * we refuse are not valid work: counted in eventsRejected). Its waiters are rejected and the gateway
   * is told, so the Envoy's streams end with the reason instead of waiting for a write that never comes.
   */
  private dropUnrecordable(nodeId: string, dropped: readonly EnvoyEvent[], reason: string, operation: 'envoyState' | 'lineageState'): void {
    const { events, states, admission, metrics, logger, onUnrecordable } = this.options;
    events.reject(dropped);
    states.release(nodeId);
    metrics?.writeDropped?.(operation);
    logger.error({ nodeId, events: dropped.length, reason }, 'envoy state can never be stored; dropped, not retried, its streams end');
    admission.refuse(nodeId, reason);
    try {
      onUnrecordable?.(nodeId, reason);
    } catch (error) {
      logger.error({ err: error, nodeId }, 'recorder: onUnrecordable threw');
    }
  }

  /**
   * The state we last stored for a node, to carry events that came without a state change (STUCK).
   * Only one on a lineage whose count includes the node: a state read back from another writer (another
   * gateway's lineage) is not ours to re-write.
   */
  private ownStoredState(nodeId: string): EnvoyState | undefined {
    const stored = this.options.writer.stored(nodeId);
    if (stored === undefined || !this.options.counts.hasNode(stored.lineage, nodeId)) return undefined;
    return stored;
  }

  /** Events with no state to ride in wait to share an event-log item (RecorderOptions.orphanEventHoldMs). */
  private holdsOrphanEvents(nodeId: string, now: number, writeHeld: boolean): boolean {
    const { events, orphanEventHoldMs, carryEventsInStoredState, maxCarriedEvents, versionLog } = this.options;
    if (writeHeld || carryEventsInStoredState || orphanEventHoldMs <= 0 || versionLog !== undefined) return false;
    const first = events.firstQueuedAt(nodeId);
    if (first === undefined || now - first >= orphanEventHoldMs) return false;
    return events.countOf(nodeId) < maxCarriedEvents && !events.hasNack(nodeId);
  }

  /** Takes the states (and events) this flush writes, checking each before it is counted. */
  private takeReady(writeHeld: boolean): TakenStates {
    const { states, events, admission, lineages, retired, logger, clock, maxStatesPerFlush } = this.options;
    const now = clock.now();
    const result: TakenStates = { ready: [], taken: new Map(), orphans: new Map(), enqueuedAt: new Map(), urgent: new Set(), moreReady: false };
    const { order, urgent } = states.flushOrder();
    result.urgent = urgent;
    for (const nodeId of order) {
      if (!writeHeld && result.ready.length >= maxStatesPerFlush) {
        result.moreReady = true;
        break;
      }
      const queued = states.get(nodeId);
      // Urgent states (flushOrder) are never held.
      if (states.holdsBack(nodeId, queued, { now, writeHeld, urgent })) continue;
      if (queued === undefined && this.holdsOrphanEvents(nodeId, now, writeHeld)) continue;
      states.release(nodeId);
      const state = queued ?? (this.options.carryEventsInStoredState ? this.ownStoredState(nodeId) : undefined);
      const taken = events.take(nodeId);
      if (state === undefined) {
        if (taken.events.length > 0) result.orphans.set(nodeId, taken);
        continue;
      }
      states.remove(nodeId);
      // Checked before it is counted: a count must never cover a state that cannot be stored.
      if (retired.isForgotten(state.lineage)) {
        // A late state of a retired lineage (its streams are gone; the Envoy may be live on another):
        // not written, nothing refused; its events go with the node's next write.
        logger.warn({ nodeId, lineage: state.lineage }, 'state of a retired lineage dropped');
        events.requeue(nodeId, taken.events);
        continue;
      }
      const refused = lineages.refusal(state.lineage);
      const problem = refused !== undefined ? `its lineage ${state.lineage} cannot be recorded: ${refused}` : envoyStateStorageProblem(state);
      if (problem !== undefined) {
        this.dropUnrecordable(nodeId, taken.events, problem, 'envoyState');
        continue;
      }
      result.ready.push(state);
      result.taken.set(nodeId, taken);
      if (queued !== undefined) result.enqueuedAt.set(nodeId, admission.enqueueCount(nodeId));
    }
    return result;
  }

  /** The writes of the states a stored count covers; the others wait (never ahead of the count). */
  private countedWrites(stamped: readonly EnvoyState[], taken: TakenStates): EnvoyWrite[] {
    const { counts, lineages, states, events } = this.options;
    const writes: EnvoyWrite[] = [];
    for (const state of stamped) {
      const nodeEvents = taken.taken.get(state.nodeId) ?? { events: [], carried: [] };
      if (!counts.isCounted(state)) {
        const refused = lineages.refusal(state.lineage);
        if (refused !== undefined) {
          this.dropUnrecordable(state.nodeId, nodeEvents.events, `its lineage ${state.lineage} cannot be recorded: ${refused}`, 'envoyState');
          continue;
        }
        // Its lineage's count could not be written: the state and its events wait (never ahead of the count).
        states.requeue(state);
        events.requeue(state.nodeId, nodeEvents.events);
        continue;
      }
      const enqueued = taken.enqueuedAt.get(state.nodeId);
      writes.push({ state, events: nodeEvents.events, carried: nodeEvents.carried, logged: new Set(), ...(enqueued === undefined ? {} : { enqueued }), ...(taken.urgent.has(state.nodeId) ? { urgent: true } : {}) });
    }
    return writes;
  }

  /**
   * Writes the states in parallel, each carrying its events: confirmed when it lands, re-queued when it
   * must be retried (items mode wrote them as their own items first: its writes carry none).
   */
  private async writeStates(writes: readonly EnvoyWrite[]): Promise<boolean> {
    const { writer, counts, events, states, admission, stateWriteConcurrency } = this.options;
    let ok = true;
    await forEachConcurrently(writes, stateWriteConcurrency, async (write) => {
      const outcome = await writer.write(write);
      if (outcome === 'written') {
        events.confirm(write.events);
        admission.noteWritten(write.state.nodeId, write.enqueued);
      } else if (outcome.dropped !== undefined) {
        counts.takeBack(write.state, 'refused by the store');
        this.dropUnrecordable(write.state.nodeId, write.events, outcome.dropped, 'envoyState');
      } else {
        ok = false;
        states.requeue(write.state);
        events.requeue(write.state.nodeId, write.events);
      }
    });
    return ok;
  }

  /**
   * eventLogMode `items`: every event is its own item, written (putEvents) before the state that
   * reflects it; a node whose events fail keeps its state queued (never ahead of the log).
   */
  private async writeWithEventItems(writes: readonly EnvoyWrite[], orphans: ReadonlyMap<string, TakenEvents>): Promise<boolean> {
    const { eventLog, events, states } = this.options;
    const failedNodes = await eventLog.writeItems(writes, orphans);
    let ok = failedNodes.size === 0;
    for (const [nodeId, orphan] of orphans) {
      if (failedNodes.has(nodeId)) events.requeue(nodeId, orphan.events);
      else events.confirm(orphan.events);
    }
    const stateWrites: EnvoyWrite[] = [];
    for (const write of writes) {
      if (failedNodes.has(write.state.nodeId)) {
        states.requeue(write.state);
        events.requeue(write.state.nodeId, write.events);
      } else {
        events.confirm(write.events);
        stateWrites.push({ ...write, events: [], carried: [] });
      }
    }
    ok = (await this.writeStates(stateWrites)) && ok;
    return ok;
  }
}
