// The recorder's event-log writes (docs/GATEWAY.md, "The event log"). Carried mode (the default):
// where a state would carry more events than the bounds (core `planCarry`), they move to event-log
// items (BatchWriteItem) before the state write, which then drops them; events of a node with no state
// to carry them (orphans) go straight to items. Items mode (`eventLogMode: 'items'`): every event is its
// own item, written before the state that reflects it.
import type { Logger } from 'pino';
import { carriedEventIdentity, eventLogBatches, planCarry, withoutExpired, type Clock, type EventLogBatch, type EventLogLimits, type EventStore } from '../../../common/core';
import { describeError } from '../../../common/describe-error';
import type { EnvoyStateWriter, EnvoyWrite } from './envoy-state-writer';
import type { EventQueue, TakenEvents } from './event-queue';
import type { RecorderMetrics } from './options';
import { performanceSeconds } from './write-latency';

/**
 * How much more an urgent state may carry than the usual bounds before its events move to an
 * event-log item. Moving them means an event-log write *before* the state write, ~40% of a flush's
 * time at 1,000 Envoys (docs/bench/README.md); the events are as durable in the STATE, and move with a later write
 * of the Envoy, more of them per log item. 4 × 8 compact events is ~3 KB, far below the 256-event
 * schema bound and the 400 KB item limit.
 */
const URGENT_CARRY_FACTOR = 4;

export interface EventLogPipelineOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  metrics: RecorderMetrics | undefined;
  limits: EventLogLimits;
  events: EventQueue;
  writer: EnvoyStateWriter;
}

export class EventLogPipeline {
  private readonly urgentLimits: EventLogLimits;

  constructor(private readonly options: EventLogPipelineOptions) {
    this.urgentLimits = {
      maxCarriedEvents: options.limits.maxCarriedEvents * URGENT_CARRY_FACTOR,
      maxCarriedChars: options.limits.maxCarriedChars * URGENT_CARRY_FACTOR,
    };
  }

  /**
   * Carried mode: moves carried events to event-log items where a state would carry too many
   * (planCarry; marked in each write's `logged`), and writes orphan events (confirmed or re-queued
   * here). A node whose log items fail keeps everything carried (its state write still goes ahead, so
   * no event waits on the log; the move is retried with its next write). False if any item failed.
   */
  async moveCarried(writes: readonly EnvoyWrite[], orphans: ReadonlyMap<string, TakenEvents>): Promise<boolean> {
    const { store, logger, clock, metrics, events, writer } = this.options;
    const batches: EventLogBatch[] = [];
    const batchesOf = new Map<string, { write?: EnvoyWrite; batches: EventLogBatch[] }>();
    for (const write of writes) {
      const stored = withoutExpired(writer.stored(write.state.nodeId)?.unlogged ?? [], clock.now());
      const limits = write.urgent === true ? this.urgentLimits : this.options.limits;
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
      const result = await store.putEventLogs(batches);
      metrics?.writeLatency('putEvents', performanceSeconds() - started);
      failedBatches = new Set(result.failed.map((failure) => failure.batch));
      for (const failure of result.failed) {
        logger.warn({ nodeId: failure.batch.nodeId, lineage: failure.batch.lineage, events: failure.batch.events.length, retryable: failure.retryable, error: failure.error }, 'event-log item not written; its events stay carried');
      }
    } catch (error) {
      logger.warn({ err: describeError(error), items: batches.length }, 'putEventLogs failed; events stay carried');
      failedBatches = new Set(batches);
    }
    if (failedBatches.size > 0) metrics?.writeFailed('putEvents');
    for (const [nodeId, entry] of batchesOf) {
      const allWritten = entry.batches.every((batch) => !failedBatches.has(batch));
      if (entry.write === undefined) {
        const orphan = orphans.get(nodeId);
        if (orphan === undefined) continue;
        if (allWritten) events.confirm(orphan.events);
        else events.requeue(nodeId, orphan.events);
        continue;
      }
      // All or nothing per node: dropping part of the carried set would need the rest logged anyway.
      if (allWritten) for (const batch of entry.batches) for (const event of batch.events) entry.write.logged.add(carriedEventIdentity(event));
    }
    return failedBatches.size === 0;
  }

  /**
   * Items mode: writes every event of the flush as its own item (putEvents). Returns the nodes whose
   * events failed (their states must stay queued: never ahead of the log).
   */
  async writeItems(writes: readonly EnvoyWrite[], orphans: ReadonlyMap<string, TakenEvents>): Promise<Set<string>> {
    const { store, logger, metrics } = this.options;
    const events = [...writes.flatMap((write) => write.events), ...[...orphans.values()].flatMap((orphan) => orphan.events)];
    let failedNodes = new Set<string>();
    if (events.length === 0) return failedNodes;
    const started = performanceSeconds();
    try {
      const result = await store.putEvents(events);
      metrics?.writeLatency('putEvents', performanceSeconds() - started);
      failedNodes = new Set(result.failed.map((failure) => failure.event.nodeId));
    } catch (error) {
      logger.warn({ err: describeError(error), events: events.length }, 'putEvents failed; re-queued for retry');
      failedNodes = new Set(events.map((event) => event.nodeId));
    }
    if (failedNodes.size > 0) metrics?.writeFailed('putEvents');
    return failedNodes;
  }
}
