// Convergence of object X at generation G over the fleet (docs/ARCHITECTURE.md, "Core model").
// Safety (invariant 1): Programmed only when every live Envoy reached the watermark on its own
// lineage(s). No NACK laundering (invariant 2): an unresolved NACK on any subscribed type blocks the
// Envoy and its message is carried in the result. Liveness (invariant 3): expired Envoys and Envoys
// not seen for the TTL leave the denominator.
import { isNackBlocker, stuckBlocker, type Blocker, type BlockingNack, type NackBlocker } from './blocker';
import type { ConvergenceState } from './convergence-state';
import { formatObjectRef, type ObjectRef } from './identity';
import { isUnresolvedNack, type EnvoyState } from './envoy-record';
import { isLive, stuckTypesAsStored, waitingSince } from './staleness';
import type { TableClockView } from './table-clock';
import { watermarkProgress, type Watermark } from './watermark';

export interface ConvergencePolicy {
  /** An Envoy not seen for this long is out of the denominator. */
  ttlMs: number;
  /** A response unanswered for this long makes the Envoy stuck. */
  ackTimeoutMs: number;
  /** Types every Envoy must have subscribed before it can count as programmed. */
  requiredTypeUrls?: readonly string[];
}

export interface Convergence {
  object: ObjectRef;
  generation: number;
  state: ConvergenceState;
  /** Live Envoys that reached the watermark with no unresolved NACK. */
  programmed: number;
  /** Live Envoys (the denominator). */
  total: number;
  /** One per live Envoy not programmed, sorted by reason severity then nodeId (but see blockersOmitted). */
  blockers: Blocker[];
  /**
   * Live Envoys not programmed and not named in `blockers`: evaluation from PROGRESS names at most the
   * listed members of each lineage and counts the rest here (lineage-progress.ts). Absent: none.
   */
  blockersOmitted?: number;
  /** GenerationNotObservable: why. */
  notObservableReason?: string;
  /** Invalid: the controller's own message (untrusted text, sanitised when shown). */
  controllerMessage?: string;
}

/** The result for a generation the watermark says cannot be decided from Envoys (not observable, or rejected). */
export function unobservableConvergence(object: ObjectRef, generation: number, watermark: Extract<Watermark, { observable: false }>, total: number): Convergence {
  if (watermark.rejectedByController === true) return { object, generation, state: 'Invalid', programmed: 0, total, blockers: [], controllerMessage: watermark.reason };
  return { object, generation, state: 'GenerationNotObservable', programmed: 0, total, blockers: [], notObservableReason: watermark.reason };
}

export interface ConvergenceInput {
  object: ObjectRef;
  generation: number;
  watermark: Watermark;
  envoys: readonly EnvoyState[];
  now: number;
  policy: ConvergencePolicy;
  /** The table clock Envoys' ages are judged on (table-clock.ts), as in evaluateFromAggregates; absent: wall time. */
  tableClock?: TableClockView;
  /**
   * Per lineage, its LINEAGE item's heartbeat: it vouches for the lineage's CONNECTED Envoys (isLive,
   * staleness.ts lastVouchedAt), as each LineageAggregate's `heartbeatAt` does in evaluateFromAggregates.
   * A lineage not listed: its Envoys are judged on their own lastSeenAt.
   */
  lineageHeartbeats?: ReadonlyMap<string, number>;
}

/**
 * What each blocker reason makes of a generation, most severe first (docs/CONVERGENCE.md,
 * "Evaluation": Rejected > Blocked > Stuck > Pending). The one statement of the order: blockers sort
 * by it (BLOCKER_SEVERITY, sortBlockers) and the most severe one decides the state (convergenceState).
 */
export const BLOCKER_VERDICT = {
  nacked: 'Rejected',
  blocked: 'Blocked',
  stuck: 'Stuck',
  noWatermark: 'Pending',
  pending: 'Pending',
} as const satisfies Record<Blocker['reason'], ConvergenceState>;

/** Blocker order, most severe first (the order of BLOCKER_VERDICT). */
export const BLOCKER_SEVERITY = Object.fromEntries(Object.keys(BLOCKER_VERDICT).map((reason, rank) => [reason, rank])) as Record<Blocker['reason'], number>;

/** The state a set of blockers gives, the same for every evaluator (reference and aggregates). */
export function convergenceState(blockers: readonly Blocker[], undecided: boolean): ConvergenceState {
  return stateOfReasons(blockers.map((blocker) => blocker.reason), undecided);
}

/**
 * convergenceState over the reasons alone: the PROGRESS evaluator (lineage-progress.ts) knows how many
 * blockers of each reason there are without holding every blocker.
 */
export function stateOfReasons(reasons: Iterable<Blocker['reason']>, undecided: boolean): ConvergenceState {
  let worst: Blocker['reason'] | undefined;
  for (const reason of reasons) if (worst === undefined || BLOCKER_SEVERITY[reason] < BLOCKER_SEVERITY[worst]) worst = reason;
  if (worst === undefined) return undecided ? 'Pending' : 'Programmed';
  return BLOCKER_VERDICT[worst];
}

/** The result when no live Envoy is left to decide by (never Programmed: nothing can be claimed). */
export function noEnvoysConvergence(object: ObjectRef, generation: number): Convergence {
  return { object, generation, state: 'NoEnvoys', programmed: 0, total: 0, blockers: [] };
}

/** Blockers most severe first, then by node id: a stable order for messages and stored decisions. */
export function sortBlockers(blockers: Blocker[]): Blocker[] {
  return blockers.sort((a, b) => BLOCKER_SEVERITY[a.reason] - BLOCKER_SEVERITY[b.reason] || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
}

/** Unresolved NACKs on subscribed types (envoy-record.ts isUnresolvedNack), sorted by type. */
export function unresolvedNacks(envoy: EnvoyState): BlockingNack[] {
  const nacks: BlockingNack[] = [];
  for (const [typeUrl, type] of Object.entries(envoy.types)) {
    if (!type.subscribed || !isUnresolvedNack(type.nack, type.acked)) continue;
    const { blame, ...nack } = type.nack;
    nacks.push({ typeUrl, ...nack, ...(blame === undefined ? {} : { objects: blame.objects, resources: blame.resources }) });
  }
  return nacks.sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : a.typeUrl > b.typeUrl ? 1 : 0));
}

/**
 * The blocker an Envoy's unresolved NACKs make for `object` (docs/CONVERGENCE.md, "NACK attribution"):
 * `blocked` when every one of them blames other objects only, `nacked` otherwise (one blames this
 * object, or one has no blame: a rejection nobody can place counts against every object, as before
 * attribution existed). Never undefined for a non-empty list: a NACK always blocks (invariant 2).
 */
export function nackBlocker(nodeId: string, nacks: BlockingNack[], object: ObjectRef | undefined): Blocker {
  return { nodeId, reason: blamesOtherObjectsOnly(nacks, object) ? 'blocked' : 'nacked', nacks };
}

/**
 * nackBlocker's rule on the blames alone: every NACK names objects, none of them `object`. The
 * PROGRESS item (lineage-progress.ts) keeps NACK members as counts per blame, not their NACKs.
 */
export function blamesOtherObjectsOnly(nacks: readonly { objects?: readonly string[] | undefined }[], object: ObjectRef | undefined): boolean {
  const key = object === undefined ? undefined : formatObjectRef(object);
  return key !== undefined && nacks.every((nack) => nack.objects !== undefined && nack.objects.length > 0 && !nack.objects.includes(key));
}

/**
 * `convergence` (evaluated for some object at the same watermark) as it is for `object`: only NACK
 * attribution depends on the object, so its NACK blockers are re-attributed (nackBlocker) and the state
 * follows. Equal to evaluating for `object` directly; lets generations that share one watermark share
 * the O(fleet) evaluation (functions/lib/evaluate.ts AggregateSnapshot).
 */
export function attributedTo(convergence: Convergence, object: ObjectRef): Convergence {
  const base = { ...convergence, object };
  if (!convergence.blockers.some(isNackBlocker)) return base;
  // NACK blockers sort first (BLOCKER_SEVERITY); everything after them, denominator blockers
  // included, keeps its place.
  let lead = 0;
  while (lead < convergence.blockers.length && isNackBlocker(convergence.blockers[lead] as Blocker)) lead++;
  const head = sortBlockers(convergence.blockers.slice(0, lead).map((blocker) => nackBlocker(blocker.nodeId, (blocker as NackBlocker).nacks, object)));
  const blockers = [...head, ...convergence.blockers.slice(lead)];
  return { ...base, blockers, state: convergenceState(blockers, true) };
}

/** Why one live Envoy does not count as programmed for the watermark, or undefined if it does. */
export function blockerFor(envoy: EnvoyState, watermark: Watermark, now: number, policy: ConvergencePolicy, object?: ObjectRef): Blocker | undefined {
  const nacks = unresolvedNacks(envoy);
  if (nacks.length > 0) return nackBlocker(envoy.nodeId, nacks, object);
  const progress = watermarkProgress(envoy, watermark, { requiredTypeUrls: policy.requiredTypeUrls ?? [] });
  if (progress.reached) return undefined;
  const stuck = stuckTypesAsStored(envoy, now, policy.ackTimeoutMs).filter((typeUrl) => progress.behindTypes.includes(typeUrl));
  if (stuck.length > 0) {
    const since = Math.min(...stuck.map((typeUrl) => waitingSince(envoy, typeUrl) ?? now));
    return stuckBlocker(envoy.nodeId, stuck, since, stuck.filter((typeUrl) => envoy.types[typeUrl]?.namesChange?.reference === true));
  }
  if (progress.missingLineages.length > 0) return { nodeId: envoy.nodeId, reason: 'noWatermark', lineages: progress.missingLineages };
  return { nodeId: envoy.nodeId, reason: 'pending', typeUrls: progress.behindTypes };
}

/**
 * One state per nodeId: if a caller passes several (e.g. pages read at different moments), the one
 * with the highest rev wins, so an Envoy is never counted twice.
 */
export function latestPerNode(envoys: readonly EnvoyState[]): EnvoyState[] {
  const byNode = new Map<string, EnvoyState>();
  for (const envoy of envoys) {
    const seen = byNode.get(envoy.nodeId);
    if (seen === undefined || envoy.rev > seen.rev || (envoy.rev === seen.rev && envoy.lastSeenAt > seen.lastSeenAt)) byNode.set(envoy.nodeId, envoy);
  }
  return [...byNode.values()];
}

export function computeConvergence(input: ConvergenceInput): Convergence {
  const { object, generation, watermark, now, policy } = input;
  const live = latestPerNode(input.envoys).filter((envoy) => isLive(envoy, now, policy.ttlMs, input.tableClock, input.lineageHeartbeats?.get(envoy.lineage)));
  if (!watermark.observable) return unobservableConvergence(object, generation, watermark, live.length);
  if (live.length === 0) return noEnvoysConvergence(object, generation);
  const blockers: Blocker[] = [];
  for (const envoy of live) {
    const blocker = blockerFor(envoy, watermark, now, policy, object);
    if (blocker !== undefined) blockers.push(blocker);
  }
  sortBlockers(blockers);
  return { object, generation, state: convergenceState(blockers, false), programmed: live.length - blockers.length, total: live.length, blockers };
}
