// The recorder's event queue and its backpressure (docs/GATEWAY.md, "Backpressure"): new ACK/NACK/STUCK
// events per node, in arrival order, until the store confirms the write carrying them. Queued plus
// in-flight events are the pressure measure: at the high-water mark `pressure()` turns true and the
// listeners hear it (the relay pauses, /readyz answers 503). Nothing is dropped: a failed write puts
// its events back at the front of their node's queue. Only events that can never be stored (invalid:
// checkCarriedEvent) leave unwritten, counted as rejected.
import type { Logger } from 'pino';
import { checkCarriedEvent, toCarriedEvent, type CarriedEvent, type EnvoyEvent } from '../../../common/core';
import type { RecorderMetrics } from './options';

/** A node's events taken for one write: as queued, and in the compact form a STATE carries. */
export interface TakenEvents {
  events: EnvoyEvent[];
  carried: CarriedEvent[];
}

export class EventQueue {
  /** New events per node, in arrival order, not yet confirmed by the store. */
  private readonly nodeEvents = new Map<string, EnvoyEvent[]>();
  /** Events queued or in flight (the backpressure measure). */
  private unconfirmed = 0;
  private written = 0;
  private rejected = 0;
  private readonly listeners: Array<(pressure: boolean) => void> = [];
  private lastPressure = false;

  constructor(
    private readonly options: { logger: Logger; highWaterEvents: number; metrics: RecorderMetrics | undefined },
  ) {}

  enqueue(event: EnvoyEvent): void {
    const queue = this.nodeEvents.get(event.nodeId);
    if (queue === undefined) this.nodeEvents.set(event.nodeId, [event]);
    else queue.push(event);
    this.unconfirmed++;
    this.checkPressure();
  }

  /** Takes a node's queued events, dropping (with a log line) any that cannot be stored. */
  take(nodeId: string): TakenEvents {
    const queued = this.nodeEvents.get(nodeId) ?? [];
    this.nodeEvents.delete(nodeId);
    const events: EnvoyEvent[] = [];
    const carried: CarriedEvent[] = [];
    for (const event of queued) {
      const compact = toCarriedEvent(event);
      const problem = event.nodeId === nodeId ? checkCarriedEvent(compact) : 'node id mismatch';
      if (problem !== undefined) {
        this.rejected++;
        this.unconfirmed--;
        this.options.logger.error({ nodeId, typeUrl: event.typeUrl, outcome: event.outcome, seq: event.seq, error: problem }, 'refusing to store an invalid event; not retrying');
        continue;
      }
      events.push(event);
      carried.push(compact);
    }
    return { events, carried };
  }

  /** Puts events back at the front of their node's queue (their write failed; nothing is dropped). */
  requeue(nodeId: string, events: readonly EnvoyEvent[]): void {
    if (events.length === 0) return;
    this.nodeEvents.set(nodeId, [...events, ...(this.nodeEvents.get(nodeId) ?? [])]);
  }

  /** The store confirmed the write carrying `events`: they count as acknowledged now. */
  confirm(events: readonly EnvoyEvent[]): void {
    if (events.length === 0) return;
    this.unconfirmed -= events.length;
    this.written += events.length;
    this.options.metrics?.eventsWritten(events);
  }

  /** Events taken for a node whose state can never be stored: not valid work, counted as rejected. */
  reject(events: readonly EnvoyEvent[]): void {
    this.rejected += events.length;
    this.unconfirmed -= events.length;
  }

  has(nodeId: string): boolean {
    return this.nodeEvents.has(nodeId);
  }

  /** When the node's first queued event happened (its `at`), or undefined with none queued. */
  firstQueuedAt(nodeId: string): number | undefined {
    return this.nodeEvents.get(nodeId)?.[0]?.at;
  }

  /** Events queued for the node. */
  countOf(nodeId: string): number {
    return this.nodeEvents.get(nodeId)?.length ?? 0;
  }

  /** Nodes with queued events, first-queued first. */
  nodes(): IterableIterator<string> {
    return this.nodeEvents.keys();
  }

  get nodeCount(): number {
    return this.nodeEvents.size;
  }

  /** A NACK is queued for the node (a verdict of its own: its state is urgent). */
  hasNack(nodeId: string): boolean {
    return this.nodeEvents.get(nodeId)?.some((event) => event.outcome === 'NACK') === true;
  }

  /** Events queued or in flight. */
  get queued(): number {
    return this.unconfirmed;
  }

  get eventsWritten(): number {
    return this.written;
  }

  get eventsRejected(): number {
    return this.rejected;
  }

  /** True while more events are queued than the high-water mark. */
  pressure(): boolean {
    return this.unconfirmed >= this.options.highWaterEvents;
  }

  onPressureChange(listener: (pressure: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Tells the listeners when pressure() changed since the last check. */
  checkPressure(): void {
    const pressure = this.pressure();
    if (pressure === this.lastPressure) return;
    this.lastPressure = pressure;
    this.options.logger.warn({ queuedEvents: this.unconfirmed, highWater: this.options.highWaterEvents, pressure }, 'recorder backpressure changed');
    for (const listener of this.listeners) listener(pressure);
  }
}
