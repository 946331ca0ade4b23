// Queued Envoy states, latest wins per node (many changes of one Envoy within a flush window become
// one write), and which of them a flush takes: urgent ones first, and the rule for holding the others
// (docs/GATEWAY.md, "The event log"). A state that only records a response being sent
// (`awaitsAnswerOnly`), or one whose Envoy still has other responses out (`answersDueSoon`: ADS sends
// CDS, EDS, LDS, RDS at once and the ACKs follow one by one), is held up to `holdMs` from its first
// hold: one write then records the whole change. Urgent states are never held: one that reaches a
// recorded watermark, carries a NACK, or is awaited by a stream admission.
import { answersDueSoon, awaitsAnswerOnly, crossesWatermark, type EnvoyState } from '../../../common/core';
import type { EnvoyStateWriter } from './envoy-state-writer';
import type { EventQueue } from './event-queue';
import type { StateAdmission } from './state-admission';
import type { WatermarkPipeline } from './watermark-pipeline';

export interface EnvoyStateQueueOptions {
  /** How long a state may be held for its answers (0: never held). */
  holdMs: number;
  events: EventQueue;
  admission: StateAdmission;
  watermarks: WatermarkPipeline;
  writer: EnvoyStateWriter;
}

export class EnvoyStateQueue {
  private readonly states = new Map<string, EnvoyState>();
  /**
   * Queued states that only await an answer (holdMs): since when held, and the state object last
   * found so (an unchanged queued state is not compared again at every flush).
   */
  private readonly heldSince = new Map<string, { since: number; state: EnvoyState }>();

  constructor(private readonly options: EnvoyStateQueueOptions) {}

  enqueue(state: EnvoyState): void {
    this.states.set(state.nodeId, state);
  }

  /** Puts a state back after its write failed, unless a newer state queued meanwhile supersedes it. */
  requeue(state: EnvoyState): void {
    if (!this.states.has(state.nodeId)) this.states.set(state.nodeId, state);
  }

  get(nodeId: string): EnvoyState | undefined {
    return this.states.get(nodeId);
  }

  has(nodeId: string): boolean {
    return this.states.has(nodeId);
  }

  /** Takes the node's state out of the queue (its write is under way). */
  remove(nodeId: string): void {
    this.states.delete(nodeId);
  }

  get size(): number {
    return this.states.size;
  }

  values(): IterableIterator<EnvoyState> {
    return this.states.values();
  }

  isHeld(nodeId: string): boolean {
    return this.heldSince.has(nodeId);
  }

  /** The node's state is no longer held (taken for a write, or dropped). */
  release(nodeId: string): void {
    this.heldSince.delete(nodeId);
  }

  /** The queued state reaches a watermark the recorder has recorded: convergence waits for it. */
  reachesWatermark(nodeId: string, queued: EnvoyState): boolean {
    const stored = this.options.writer.stored(nodeId);
    const seqs = this.options.watermarks.seqsOf(queued.lineage);
    return seqs !== undefined && crossesWatermark(stored?.lineage === queued.lineage ? stored.programmedThrough : undefined, queued.programmedThrough, seqs);
  }

  /**
   * The nodes to write, urgent ones first, each group oldest-queued first (Map order is first-queued
   * order; a replaced state keeps its place). Urgent: a stream admission waits for the node's state
   * (whenStateWritten), its state reaches a recorded watermark, which is what convergence waits for
   * (the last ACK of a change), or it carries a NACK (a verdict of its own). During a fleet-wide push
   * the gateway writes far fewer states per second than Envoys ACK (at 1,000 Envoys × 1,000 objects a
   * few hundred per second while relaying: docs/bench/README.md, "The write path's ceiling"); these go ahead of
   * intermediate states (an ACK with other answers still due, a heartbeat), which a later state of the
   * same Envoy often replaces before their turn. A STUCK is not urgent: it is a judgement already an
   * ACK timeout late, and at 5,000 Envoys on this machine, where a push takes longer than the local
   * 10 s timeout, writing it first made objects go Pending → Stuck → Pending → Programmed (4
   * Kubernetes writes) where a later state of the same Envoy, ACKed meanwhile, replaces it in the
   * queue (docs/bench/README.md).
   */
  flushOrder(): { order: string[]; urgent: Set<string> } {
    const { events, admission } = this.options;
    const urgent = new Set<string>();
    const rest: string[] = [];
    for (const nodeId of new Set([...this.states.keys(), ...events.nodes()])) {
      const queued = this.states.get(nodeId);
      if (queued !== undefined && (admission.isAwaited(nodeId) || this.reachesWatermark(nodeId, queued) || events.hasNack(nodeId))) urgent.add(nodeId);
      else rest.push(nodeId);
    }
    return { order: [...urgent, ...rest], urgent };
  }

  /**
   * Whether the node's queued state waits for a later flush (the hold). Never for urgent states, nor
   * when the flush writes held states (close).
   */
  holdsBack(nodeId: string, queued: EnvoyState | undefined, flush: { now: number; writeHeld: boolean; urgent: ReadonlySet<string> }): boolean {
    const { holdMs, events, writer } = this.options;
    if (queued === undefined || flush.writeHeld || holdMs <= 0 || flush.urgent.has(nodeId)) return false;
    const held = this.heldSince.get(nodeId);
    const onlySent = !events.has(nodeId) && (held?.state === queued || awaitsAnswerOnly(writer.stored(nodeId), queued));
    if (onlySent || answersDueSoon(queued, flush.now, holdMs)) {
      const since = held?.since ?? flush.now;
      this.heldSince.set(nodeId, { since, state: queued });
      if (flush.now - since < holdMs) return true;
    }
    return false;
  }
}
