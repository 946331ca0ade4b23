// Convergence of object X at generation G over the fleet (docs/ARCHITECTURE.md, "Core model").
// Safety (invariant 1): Programmed only when every live Envoy reached the watermark on its own
// lineage(s). No NACK laundering (invariant 2): an unresolved NACK on any subscribed type blocks the
// Envoy and its message is carried in the result. Liveness (invariant 3): expired Envoys and Envoys
// not seen for the TTL leave the denominator.
import type { ObjectRef } from './identity';
import type { EnvoyState } from './schema';
import { isLive, stuckTypesAsStored, waitingSince } from './staleness';
import { watermarkProgress, type Watermark } from './watermark';
import type { Lineage } from './version';

export interface ConvergencePolicy {
  /** An Envoy not seen for this long is out of the denominator. */
  ttlMs: number;
  /** A response unanswered for this long makes the Envoy stuck. */
  ackTimeoutMs: number;
  /** Types every Envoy must have subscribed before it can count as programmed. */
  requiredTypeUrls?: readonly string[];
}

export type Blocker =
  | { nodeId: string; reason: 'nacked'; nacks: { typeUrl: string; seq: number; message: string; at: number }[] }
  | { nodeId: string; reason: 'stuck'; typeUrls: string[]; since: number }
  | { nodeId: string; reason: 'noWatermark'; lineages: Lineage[] }
  | { nodeId: string; reason: 'pending'; typeUrls: string[] };

/** Invalid: the controller rejected the generation (its status says so), so no Envoy can program it. */
export type ConvergenceState = 'Programmed' | 'Pending' | 'Rejected' | 'Stuck' | 'NoEnvoys' | 'GenerationNotObservable' | 'Invalid';

export interface Convergence {
  object: ObjectRef;
  generation: number;
  state: ConvergenceState;
  /** Live Envoys that reached the watermark with no unresolved NACK. */
  programmed: number;
  /** Live Envoys (the denominator). */
  total: number;
  /** One per live Envoy not programmed, sorted by reason severity then nodeId. */
  blockers: Blocker[];
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
}

const SEVERITY: Record<Blocker['reason'], number> = { nacked: 0, stuck: 1, noWatermark: 2, pending: 3 };

/** Unresolved NACKs: a NACK newer than the last ACK on a subscribed type (ACK >= nack.seq clears it). */
export function unresolvedNacks(envoy: EnvoyState): { typeUrl: string; seq: number; message: string; at: number }[] {
  const nacks = [];
  for (const [typeUrl, type] of Object.entries(envoy.types)) {
    if (!type.subscribed || type.nack === undefined) continue;
    if (type.acked === undefined || type.acked < type.nack.seq) nacks.push({ typeUrl, ...type.nack });
  }
  return nacks.sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : a.typeUrl > b.typeUrl ? 1 : 0));
}

/** Why one live Envoy does not count as programmed for the watermark, or undefined if it does. */
export function blockerFor(envoy: EnvoyState, watermark: Watermark, now: number, policy: ConvergencePolicy): Blocker | undefined {
  const nacks = unresolvedNacks(envoy);
  if (nacks.length > 0) return { nodeId: envoy.nodeId, reason: 'nacked', nacks };
  const progress = watermarkProgress(envoy, watermark, { requiredTypeUrls: policy.requiredTypeUrls ?? [] });
  if (progress.reached) return undefined;
  const stuck = stuckTypesAsStored(envoy, now, policy.ackTimeoutMs).filter((typeUrl) => progress.behindTypes.includes(typeUrl));
  if (stuck.length > 0) {
    const since = Math.min(...stuck.map((typeUrl) => waitingSince(envoy, typeUrl) ?? now));
    return { nodeId: envoy.nodeId, reason: 'stuck', typeUrls: stuck, since };
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
  const live = latestPerNode(input.envoys).filter((envoy) => isLive(envoy, now, policy.ttlMs));
  if (!watermark.observable) return unobservableConvergence(object, generation, watermark, live.length);
  if (live.length === 0) return { object, generation, state: 'NoEnvoys', programmed: 0, total: 0, blockers: [] };
  const blockers: Blocker[] = [];
  for (const envoy of live) {
    const blocker = blockerFor(envoy, watermark, now, policy);
    if (blocker !== undefined) blockers.push(blocker);
  }
  blockers.sort((a, b) => SEVERITY[a.reason] - SEVERITY[b.reason] || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  const has = (reason: Blocker['reason']): boolean => blockers.some((blocker) => blocker.reason === reason);
  const state: ConvergenceState = blockers.length === 0 ? 'Programmed' : has('nacked') ? 'Rejected' : has('stuck') ? 'Stuck' : 'Pending';
  return { object, generation, state, programmed: live.length - blockers.length, total: live.length, blockers };
}
