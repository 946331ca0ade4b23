// What benches and tests ask of a fleet's ground truth, computed where the fleet lives (this process
// or the fleet child process) and returned as plain JSON, so both fleet modes answer identically.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { parseVersion } from '../../../common/core/version';
import type { GroundTruth } from './groundTruth';
import type { SimEnvoy } from './simEnvoy';

/** An object counts as programmed on an Envoy once both its cluster (CDS) and endpoints (EDS) are in. */
export const PROGRAMMED_TYPE_URLS: readonly string[] = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];
export const ALL_FOUR_TYPE_URLS: readonly string[] = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];

export interface FleetLastAcks {
  /**
   * Per resource name asked for: the latest, over Envoys, of the moment the Envoy first accepted (at or
   * after `since`) a response of each programmed type carrying that name. Names no Envoy accepted are absent.
   */
  lastAck: Record<string, number>;
  /** Per resource name asked for: how many Envoys accepted it (since `since`) on every programmed type. */
  envoysWith: Record<string, number>;
  /** Responses accepted at or after `since`, over every Envoy and all four types. */
  acks: number;
}

export function lastAcksFromTruth(truth: GroundTruth, nodeIds: Iterable<string>, names: readonly string[], since: number): FleetLastAcks {
  const wanted = new Set(names);
  const lastAck = new Map<string, number>();
  const envoysWith = new Map<string, number>();
  let acks = 0;
  for (const nodeId of nodeIds) {
    const firstSeen = new Map<string, number>();
    const typesSeenByName = new Map<string, number>();
    for (const typeUrl of PROGRAMMED_TYPE_URLS) {
      const seenThisType = new Map<string, number>();
      for (const accepted of truth.acceptedVersions(nodeId, typeUrl)) {
        if (accepted.acceptedAt < since) continue;
        for (const resource of accepted.resources) {
          if (wanted.has(resource.name) && !seenThisType.has(resource.name)) seenThisType.set(resource.name, accepted.acceptedAt);
        }
      }
      for (const [name, at] of seenThisType) {
        firstSeen.set(name, Math.max(firstSeen.get(name) ?? 0, at));
        typesSeenByName.set(name, (typesSeenByName.get(name) ?? 0) + 1);
      }
    }
    for (const [name, types] of typesSeenByName) if (types === PROGRAMMED_TYPE_URLS.length) envoysWith.set(name, (envoysWith.get(name) ?? 0) + 1);
    for (const [name, at] of firstSeen) lastAck.set(name, Math.max(lastAck.get(name) ?? 0, at));
    acks += ackCountOf(truth, nodeId, since);
  }
  return { lastAck: Object.fromEntries(lastAck), envoysWith: Object.fromEntries(envoysWith), acks };
}

function ackCountOf(truth: GroundTruth, nodeId: string, since: number): number {
  let count = 0;
  for (const typeUrl of ALL_FOUR_TYPE_URLS) {
    for (const accepted of truth.acceptedVersions(nodeId, typeUrl)) if (accepted.acceptedAt >= since) count++;
  }
  return count;
}

/** Responses accepted at or after `since`, over the given Envoys and all four types. */
export function ackCountFromTruth(truth: GroundTruth, nodeIds: Iterable<string>, since: number): number {
  let count = 0;
  for (const nodeId of nodeIds) count += ackCountOf(truth, nodeId, since);
  return count;
}

/**
 * An object generation as the gateway stamped it: per type, the gateway seq (on `lineage`) from which
 * that type's content reflects it (the OBJECT item's watermark, docs/ARCHITECTURE.md, "Data: one DynamoDB table").
 */
export interface WatermarkTarget {
  key: string;
  lineage: string;
  seqByType: Record<string, number>;
}

export interface FleetProgrammedAt {
  /** Per target key: the latest, over Envoys, of the moment the Envoy had it on every watermarked type. */
  lastAck: Record<string, number>;
  /**
   * Per target key: the earliest of those moments. lastAck − firstAck is how long the fleet took to
   * reach the change, the window in which the gateway has one state to write per Envoy (bench/e2e.ts).
   */
  firstAck: Record<string, number>;
  /** Per target key: Envoys that had it on every watermarked type (since `since`). */
  envoysWith: Record<string, number>;
}

/**
 * When each Envoy had each target, by invariant 1's own definition: for every type of the watermark,
 * an accepted response (at or after `since`) whose gateway version is on the target's lineage at or
 * past the watermark's seq; the Envoy had it at the latest of those first acceptances. Unlike
 * `lastAcksFromTruth` (cluster and endpoints only), this counts every type the change touched, e.g. the
 * route that points at the new cluster, which a SotW control plane may send after CDS/EDS.
 */
export function programmedAtFromTruth(truth: GroundTruth, nodeIds: Iterable<string>, targets: readonly WatermarkTarget[], since: number): FleetProgrammedAt {
  const lastAck = new Map<string, number>();
  const firstAck = new Map<string, number>();
  const envoysWith = new Map<string, number>();
  for (const nodeId of nodeIds) {
    // Per type: the accepted (lineage, seq) in order, parsed once for all targets.
    const acceptedByType = new Map<string, Array<{ lineage: string; seq: number; at: number }>>();
    const accepted = (typeUrl: string): Array<{ lineage: string; seq: number; at: number }> => {
      let list = acceptedByType.get(typeUrl);
      if (list === undefined) {
        list = [];
        for (const entry of truth.acceptedVersions(nodeId, typeUrl)) {
          if (entry.acceptedAt < since) continue;
          const parsed = parseVersion(entry.versionInfo);
          if (parsed.ok) list.push({ lineage: parsed.value.lineage, seq: parsed.value.seq, at: entry.acceptedAt });
        }
        acceptedByType.set(typeUrl, list);
      }
      return list;
    };
    for (const target of targets) {
      let at = 0;
      let complete = true;
      for (const [typeUrl, seq] of Object.entries(target.seqByType)) {
        const first = accepted(typeUrl).find((entry) => entry.lineage === target.lineage && entry.seq >= seq);
        if (first === undefined) {
          complete = false;
          break;
        }
        at = Math.max(at, first.at);
      }
      if (!complete) continue;
      envoysWith.set(target.key, (envoysWith.get(target.key) ?? 0) + 1);
      lastAck.set(target.key, Math.max(lastAck.get(target.key) ?? 0, at));
      firstAck.set(target.key, Math.min(firstAck.get(target.key) ?? Number.POSITIVE_INFINITY, at));
    }
  }
  return { lastAck: Object.fromEntries(lastAck), firstAck: Object.fromEntries(firstAck), envoysWith: Object.fromEntries(envoysWith) };
}

/** Envoys whose streams are up (SimEnvoy status 'connected'). */
export function connectedCountOf(envoys: Iterable<SimEnvoy>): number {
  let count = 0;
  for (const envoy of envoys) if (envoy.status === 'connected') count++;
  return count;
}

/** Envoys that accepted at least one response of every one of `typeUrls` (default: all four). */
export function configuredCountOf(truth: GroundTruth, nodeIds: Iterable<string>, typeUrls: readonly string[] = ALL_FOUR_TYPE_URLS): number {
  let count = 0;
  for (const nodeId of nodeIds) if (typeUrls.every((typeUrl) => truth.latestAccepted(nodeId, typeUrl) !== undefined)) count++;
  return count;
}

