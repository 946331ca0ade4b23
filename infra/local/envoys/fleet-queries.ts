// What benches and tests ask of a fleet's ground truth, computed where the fleet lives (this process
// or the fleet child process) and returned as plain JSON, so both fleet modes answer identically.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { parseVersion } from '../../../common/core/version';
import type { ConnectionEvent, GroundTruth } from './groundTruth';
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

/**
 * An object generation to judge at one moment: per lineage the gateway stamped it on, the type seqs
 * from which that lineage's content reflects it (the OBJECT item's watermarks, as in WatermarkTarget).
 */
export interface HeldTarget {
  key: string;
  /** The moment to judge (ms since the epoch, this machine's clock): a condition's True write. */
  at: number;
  seqByTypeByLineage: Record<string, Record<string, number>>;
}

export interface FleetHeldAt {
  /**
   * Per target key, over the Envoys the system must count at `at` (liveAt below): how many did not
   * hold it at `at`, and a few of their node ids. `joinedRecently`: of those, the ones whose first
   * acceptance was within `joinRaceMs` before `at` (the known join race of the truth checker, reported apart).
   */
  missing: Record<string, { live: number; notHolding: number; joinedRecently: number; examples: string[] }>;
}

/**
 * Whether the system must count the Envoy at `at`, by the truth checker's rule (test/truth/checker.ts
 * liveAt): a connection counts once the Envoy heard from the server on it (here: accepted a response);
 * one that ended at g counts until g + `goneGraceMs` (the TTL less the gateway's heartbeat and slack),
 * since the system may lawfully expire an Envoy that stays away, e.g. one that cannot reconnect to a
 * restarted gateway.
 */
function liveAt(connections: readonly ConnectionEvent[], acceptedTimes: readonly number[], at: number, goneGraceMs: number): boolean {
  const established = (from: number, to: number): boolean => acceptedTimes.some((time) => time >= from && time <= to);
  let goneAt: number | undefined;
  let openSince: number | undefined;
  for (const event of connections) {
    if (event.at > at) break;
    if (event.kind === 'connected') openSince = event.at;
    else {
      if (openSince !== undefined && established(openSince, event.at)) goneAt = event.at;
      openSince = undefined;
    }
  }
  if (openSince !== undefined && established(openSince, at)) return true;
  return goneAt !== undefined && at - goneAt < goneGraceMs;
}

/** The last accepted response at or before `at` (the list is in acceptance order). */
function latestAcceptedAt(accepted: readonly { acceptedAt: number; versionInfo: string }[], at: number): { acceptedAt: number; versionInfo: string } | undefined {
  let low = 0;
  let high = accepted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((accepted[middle]?.acceptedAt ?? Number.POSITIVE_INFINITY) <= at) low = middle + 1;
    else high = middle;
  }
  return low === 0 ? undefined : accepted[low - 1];
}

/**
 * Whether each Envoy held each target at its moment, per type as the core counts it (docs/ARCHITECTURE.md,
 * "Per-type lineage"): the type's latest accepted response at `at` is on a lineage that has a watermark
 * for the target, at or past that lineage's seq for the type. A type the lineage's watermark does not
 * name is not judged; a type with nothing accepted, or accepted only from a lineage without a
 * watermark (e.g. content from before the change, held across a gateway restart), is not held. SotW
 * Envoys: the latest accepted response is the whole config of its type.
 */
export function heldAtFromTruth(truth: GroundTruth, nodeIds: Iterable<string>, targets: readonly HeldTarget[], joinRaceMs: number, goneGraceMs: number): FleetHeldAt {
  const missing: FleetHeldAt['missing'] = {};
  for (const target of targets) missing[target.key] = { live: 0, notHolding: 0, joinedRecently: 0, examples: [] };
  for (const nodeId of nodeIds) {
    const acceptedTimes = ALL_FOUR_TYPE_URLS.flatMap((typeUrl) => truth.acceptedVersions(nodeId, typeUrl).map((accepted) => accepted.acceptedAt));
    const firstAcceptedAt = acceptedTimes.reduce((earliest, time) => Math.min(earliest, time), Number.POSITIVE_INFINITY);
    const connections = truth.envoyTruth(nodeId)?.connections ?? [];
    for (const target of targets) {
      if (!liveAt(connections, acceptedTimes, target.at, goneGraceMs)) continue;
      const entry = missing[target.key] as FleetHeldAt['missing'][string];
      entry.live++;
      const typeUrls = new Set(Object.values(target.seqByTypeByLineage).flatMap((seqByType) => Object.keys(seqByType)));
      // No watermark at all: nothing shows the Envoy holds it.
      const holds = typeUrls.size > 0 && [...typeUrls].every((typeUrl) => {
        const latest = latestAcceptedAt(truth.acceptedVersions(nodeId, typeUrl), target.at);
        if (latest === undefined) return false;
        const parsed = parseVersion(latest.versionInfo);
        if (!parsed.ok) return false;
        const watermark = target.seqByTypeByLineage[parsed.value.lineage];
        if (watermark === undefined) return false;
        const seq = watermark[typeUrl];
        return seq === undefined || parsed.value.seq >= seq;
      });
      if (holds) continue;
      entry.notHolding++;
      if (target.at - firstAcceptedAt < joinRaceMs) entry.joinedRecently++;
      if (entry.examples.length < 5) entry.examples.push(nodeId);
    }
  }
  return { missing };
}
