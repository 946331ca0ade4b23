// The gateway's rule for counting Envoys on a lineage: the `envoysRecorded` denominator
// (docs/CONVERGENCE.md, "The denominator"). Every Envoy state the gateway writes is stamped with its
// incarnation on its lineage; the LINEAGE item carries the sum of the nodes' incarnations, written
// before any state it covers (the recorder's write-ahead). An incarnation is 1 for a node's first
// state on the lineage and +1 on a new connection (`connectedAt` changed), on a state less programmed
// than the last one counted (an Envoy restarted under the same node id), or when the next state
// revives an EXPIRED one (the expire function took its member out of the live set). A count is taken
// back only when the counted incarnation can never be in the table on that lineage (the store refused
// the state for good, or the write was merged into another lineage's state after a node-id takeover).
// Pure: the recorder keeps one LineageEnvoyCount per lineage and calls these on every flush.
import type { EnvoyState } from './envoy-record';

/** What the gateway counted for one node on one lineage. */
export interface CountedEnvoy {
  /** The node's incarnation on the lineage (the `incarnation` its next write is stamped with). */
  incarnation: number;
  /** What the incarnation was stamped from: a later state with another connectedAt is a new one. */
  connectedAt: number;
  /** programmedThrough of the last state counted (-1: none); a state below it is a new incarnation. */
  programmedThrough: number;
  /** The lineage count that first included this incarnation: covered once a stored count reaches it. */
  countedAt: number;
  /** The next state is a new incarnation (it revives an EXPIRED state: reviveAsNewIncarnation). */
  renew?: boolean;
  /** The highest incarnation of the node confirmed stored on this lineage (0 or absent: none). */
  storedIncarnation?: number;
}

/** One lineage's denominator as the gateway counts it. */
export interface LineageEnvoyCount {
  nodes: ReadonlyMap<string, CountedEnvoy>;
  /** Sum of the nodes' incarnations: what the next LINEAGE write carries. */
  wanted: number;
  /** The largest count a stored LINEAGE item is confirmed to carry. */
  confirmed: number;
}

/** What counting one state gives: the node's new entry, the lineage's new `wanted`, the state's stamp. */
export interface CountedState {
  envoy: CountedEnvoy;
  wanted: number;
  incarnation: number;
}

/**
 * Counts one state of a node about to be written. `last` is what was counted for the node on the
 * state's lineage (undefined: its first state there); `wanted` is the lineage's count so far.
 */
export function countEnvoyState(last: CountedEnvoy | undefined, state: Pick<EnvoyState, 'connectedAt' | 'programmedThrough'>, wanted: number): CountedState {
  const programmedThrough = state.programmedThrough ?? -1;
  // The node's first state on the lineage: incarnation 1.
  if (last === undefined) return { envoy: { incarnation: 1, connectedAt: state.connectedAt, programmedThrough, countedAt: wanted + 1 }, wanted: wanted + 1, incarnation: 1 };
  // A new connection, or a state less programmed than the last one (an Envoy restarted under the
  // same node id): a new incarnation, so an older member of this node cannot pass for it.
  const renewed = last.renew === true || last.connectedAt !== state.connectedAt || programmedThrough < last.programmedThrough;
  const incarnation = renewed ? last.incarnation + 1 : last.incarnation;
  const nextWanted = renewed ? wanted + 1 : wanted;
  const countedAt = renewed ? nextWanted : last.countedAt;
  // What the table holds of the node stays known across counts: takeBackUnstored lowers the count by
  // the incarnations never stored, and without it would take back a stored one too (a count below the
  // members the aggregates hold lets a generation pass the denominator check early).
  const stored = last.storedIncarnation === undefined ? {} : { storedIncarnation: last.storedIncarnation };
  return { envoy: { incarnation, connectedAt: state.connectedAt, programmedThrough, countedAt, ...stored }, wanted: nextWanted, incarnation };
}

/** Whether the node's counted incarnation is covered by a stored count (its state may be written). */
export function isEnvoyCounted(envoy: CountedEnvoy | undefined, confirmed: number): boolean {
  return envoy !== undefined && envoy.countedAt <= confirmed;
}

/**
 * Whether writing `ours` over `stored` revives an EXPIRED state of the same lineage that carries the
 * incarnation ours would be written with (or a later one): the expire function took that member out
 * of the live set, so the write makes a new incarnation live and needs a count first.
 */
export function revivesExpired(ours: Pick<EnvoyState, 'status' | 'lineage' | 'incarnation'>, stored: Pick<EnvoyState, 'status' | 'lineage' | 'incarnation'> | undefined): boolean {
  return stored?.status === 'EXPIRED' && ours.status !== 'EXPIRED' && stored.lineage === ours.lineage && (stored.incarnation ?? 1) >= (ours.incarnation ?? 1);
}

/** Marks the node's next state as a new incarnation (revivesExpired). */
export function reviveAsNewIncarnation(envoy: CountedEnvoy): CountedEnvoy {
  return { ...envoy, renew: true };
}

/** After a write stored the node on this lineage with `incarnation` (absent: 1). */
export function withStoredIncarnation(envoy: CountedEnvoy, incarnation: number | undefined): CountedEnvoy {
  return { ...envoy, storedIncarnation: Math.max(envoy.storedIncarnation ?? 0, incarnation ?? 1) };
}

/**
 * Takes a node's count back: its counted incarnation will never be in the table on this lineage.
 * Undefined when there is nothing to take back (the node is not counted, or the incarnation counted
 * is stored already). Otherwise the count goes down by the incarnations never stored: the node goes
 * (nothing of it stored) or falls back to its stored incarnation, to be counted again with its next
 * state's write; no other node's countedAt may exceed the new total (so their states still pass as
 * counted once a LINEAGE write carries it); the confirmed count may not exceed it either (a state
 * counted from now on needs a write that carries it). Until the lower count is stored, convergence
 * only waits longer (the stored count is the higher one): never the unsafe way.
 */
export function takeBackUnstored(count: LineageEnvoyCount, nodeId: string): LineageEnvoyCount | undefined {
  const envoy = count.nodes.get(nodeId);
  if (envoy === undefined) return undefined;
  const storedIncarnation = envoy.storedIncarnation ?? 0;
  if (envoy.incarnation <= storedIncarnation) return undefined;
  const wanted = count.wanted - (envoy.incarnation - storedIncarnation);
  const nodes = new Map<string, CountedEnvoy>();
  for (const [id, other] of count.nodes) {
    if (id !== nodeId) nodes.set(id, other.countedAt > wanted ? { ...other, countedAt: wanted } : other);
    else if (storedIncarnation > 0) nodes.set(id, { ...other, incarnation: storedIncarnation, countedAt: 0, renew: false });
  }
  return { nodes, wanted, confirmed: Math.min(count.confirmed, wanted) };
}
