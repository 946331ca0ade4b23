// The denominator as this recorder counts it (docs/CONVERGENCE.md, "The denominator"): per lineage,
// each node's incarnation, the count the next LINEAGE write carries (`wanted`) and the count a stored
// LINEAGE item is confirmed to carry. The rule itself (when a state is a new incarnation, when a count
// comes back out) is the core's (common/core/envoy-count.ts); this keeps its results per lineage,
// stamps the states a flush writes, and asks for a LINEAGE write when a count was taken back. The
// write-ahead (the count is stored before the states it covers) is lineage-pipeline.ts `writeCounts`.
import type { Logger } from 'pino';
import {
  countEnvoyState,
  isEnvoyCounted,
  reviveAsNewIncarnation,
  takeBackUnstored,
  withStoredIncarnation,
  type CountedEnvoy,
  type EnvoyState,
} from '../../../common/core';

interface LineageCount {
  nodes: Map<string, CountedEnvoy>;
  wanted: number;
  confirmed: number;
}

export interface EnvoyCountsOptions {
  logger: Logger;
  /** A count was taken back: its lineage needs a LINEAGE write carrying the lower count. */
  requestLineageWrite: (lineage: string, group: string) => void;
}

export class EnvoyCounts {
  private readonly recorded = new Map<string, LineageCount>();

  constructor(private readonly options: EnvoyCountsOptions) {}

  /**
   * Stamps each state with its incarnation on its lineage, counting new incarnations. Returns the
   * stamped states and the lineages whose stored count does not cover them yet (a LINEAGE write is due
   * before any of those states: write-ahead).
   */
  count(states: readonly EnvoyState[]): { stamped: EnvoyState[]; uncovered: Set<string> } {
    const uncovered = new Set<string>();
    const stamped = states.map((state) => {
      const entry = this.entryOf(state.lineage);
      const counted = countEnvoyState(entry.nodes.get(state.nodeId), state, entry.wanted);
      entry.wanted = counted.wanted;
      entry.nodes.set(state.nodeId, counted.envoy);
      const next: EnvoyState = { ...state, incarnation: counted.incarnation };
      // Not yet covered by a stored count (new now, or an earlier count write failed): write one.
      if (!this.isCounted(next)) uncovered.add(state.lineage);
      return next;
    });
    return { stamped, uncovered };
  }

  /** The state's incarnation is covered by a stored count: it may be written. */
  isCounted(state: EnvoyState): boolean {
    const entry = this.recorded.get(state.lineage);
    return entry !== undefined && isEnvoyCounted(entry.nodes.get(state.nodeId), entry.confirmed);
  }

  /** The node has a count on the lineage (a state of it there is ours to re-write). */
  hasNode(lineage: string, nodeId: string): boolean {
    return this.recorded.get(lineage)?.nodes.has(nodeId) === true;
  }

  /** What the next LINEAGE write of `lineage` carries. */
  wanted(lineage: string): number {
    return this.entryOf(lineage).wanted;
  }

  /** The distinct nodes the lineage's count covers (LINEAGE `envoyNodesRecorded`). */
  nodes(lineage: string): number {
    return this.entryOf(lineage).nodes.size;
  }

  /** A LINEAGE item carrying `count` is stored. */
  confirm(lineage: string, count: number): void {
    const entry = this.entryOf(lineage);
    entry.confirmed = Math.max(entry.confirmed, count);
  }

  /** envoysRecorded confirmed by the stored LINEAGE item of `lineage`. */
  confirmed(lineage: string): number {
    return this.recorded.get(lineage)?.confirmed ?? 0;
  }

  /** A stored count is below the wanted one (a write-ahead is still due). */
  isBehind(lineage: string): boolean {
    const entry = this.entryOf(lineage);
    return entry.confirmed < entry.wanted;
  }

  /**
   * After a write: which incarnation of the node its lineage's table now holds. A write merged into
   * another lineage's state (mergeEnvoyState keeps another connection's live state over our
   * disconnect, e.g. after a node-id takeover) stored nothing on our lineage: if that incarnation was
   * never stored there, its count comes back out (takeBack).
   */
  noteStored(ours: EnvoyState, written: EnvoyState): void {
    const entry = this.recorded.get(ours.lineage);
    const node = entry?.nodes.get(ours.nodeId);
    if (entry === undefined || node === undefined) return;
    if (written.lineage === ours.lineage) entry.nodes.set(ours.nodeId, withStoredIncarnation(node, written.incarnation));
    else this.takeBack(ours, `merged into its state on ${written.lineage}`);
  }

  /** The store holds an EXPIRED state ours would revive: the node's next state is a new incarnation. */
  reviveNext(ours: EnvoyState): void {
    const entry = this.recorded.get(ours.lineage);
    const node = entry?.nodes.get(ours.nodeId);
    if (entry !== undefined && node !== undefined) entry.nodes.set(ours.nodeId, reviveAsNewIncarnation(node));
  }

  /**
   * `state` was counted on its lineage but will never be in the table there: the store refused it for
   * good (DynamoDB's own limits, which envoyStateStorageProblem can only estimate), or the write was
   * merged into another lineage's state. Left counted, convergence would wait for it for ever ("not
   * yet in the aggregates"). The core's takeBackUnstored lowers the count; a LINEAGE write with the
   * lower count is asked for.
   */
  takeBack(state: EnvoyState, why: string): void {
    const entry = this.recorded.get(state.lineage);
    if (entry === undefined) return;
    const lowered = takeBackUnstored(entry, state.nodeId);
    if (lowered === undefined) return;
    this.recorded.set(state.lineage, { nodes: new Map(lowered.nodes), wanted: lowered.wanted, confirmed: lowered.confirmed });
    this.options.requestLineageWrite(state.lineage, state.group);
    this.options.logger.warn({ lineage: state.lineage, nodeId: state.nodeId, envoysRecorded: lowered.wanted, why }, 'a counted state is not stored on its lineage; its count is taken back and written again');
  }

  forgetLineage(lineage: string): void {
    this.recorded.delete(lineage);
  }

  lineages(): IterableIterator<string> {
    return this.recorded.keys();
  }

  private entryOf(lineage: string): LineageCount {
    let entry = this.recorded.get(lineage);
    if (entry === undefined) {
      entry = { nodes: new Map(), wanted: 0, confirmed: 0 };
      this.recorded.set(lineage, entry);
    }
    return entry;
  }
}
