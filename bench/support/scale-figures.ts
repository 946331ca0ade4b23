// The figures by which the e2e bench judges whether the signal's cost and latency grow with the fleet
// (docs/ARCHITECTURE.md, "Design: work per change proportional to gateways, not Envoys"). Computed from
// a row's own recorded fields, so rows recorded before these figures existed get them too.
import type { Summary } from './stats';

/** xDS types every simulated Envoy of the e2e bench subscribes to (ADS SotW: CDS, EDS, LDS, RDS). */
export const TYPES_PER_ENVOY = 4;

export interface ScaleFigures {
  /** Responses each Envoy ACKed per type during the change: how many waves of config reached it. */
  changeWaves: number;
  /** change → True p99 ÷ change → last ACK p99: what the signal adds to the control plane's own delivery. */
  signalOverheadRatio?: number;
  /**
   * Item writes between the change and the last True, per changed object. On the shard path every
   * item written in that window is on the path to the True (each Envoy's STATE, its shard update, and
   * the event-log items a STATE write waits for). On the fleet-size path (`progressPath`) the
   * event-log items and version-log items are batched off it (BatchWriteItem; no state waits for them
   * and no function reads their stream records), so they are left out; PROGRESS, watermarks, decisions
   * and any STATE are in.
   */
  criticalPathItemWritesPerChange: number;
  /** All item writes ÷ (Envoys × change waves). */
  itemWritesPerEnvoyChange: number;
  /** The gateway process's CPU during the change ÷ (Envoys × change waves), in ms. */
  cpuMsPerEnvoyChange?: number;
}

/** What the figures are computed from: fields of an e2e row (bench/e2e.ts E2eResult; structural, so this file does not import the bench it serves). */
export interface ScaleMeasured {
  envoys: number;
  objects: number;
  changed?: number;
  acks: number;
  changeToTrueMs: Summary;
  changeToLastAckMs: Summary;
  dynamo: { itemWrites: number; itemWritesByKind?: Record<string, number> };
  progressPath?: boolean;
  gateway?: { cpuSecondsDuringChange?: number };
}

export function scaleFigures(e2e: ScaleMeasured): ScaleFigures {
  const changeWaves = Math.max(1, e2e.acks / Math.max(1, e2e.envoys * TYPES_PER_ENVOY));
  const envoyChanges = e2e.envoys * changeWaves;
  const overhead = e2e.changeToTrueMs.p99 / e2e.changeToLastAckMs.p99;
  const gatewayCpu = e2e.gateway?.cpuSecondsDuringChange;
  return {
    changeWaves: round(changeWaves, 2),
    ...(Number.isFinite(overhead) && e2e.changeToLastAckMs.p99 > 0 ? { signalOverheadRatio: round(overhead, 2) } : {}),
    criticalPathItemWritesPerChange: round((e2e.dynamo.itemWrites - (e2e.progressPath === true ? offPathItemWrites(e2e.dynamo.itemWritesByKind) : 0)) / Math.max(1, e2e.changed ?? e2e.objects), 1),
    itemWritesPerEnvoyChange: round(e2e.dynamo.itemWrites / Math.max(1, envoyChanges), 3),
    ...(gatewayCpu === undefined ? {} : { cpuMsPerEnvoyChange: round((gatewayCpu * 1000) / Math.max(1, envoyChanges), 3) }),
  };
}

/**
 * Batched answer records nothing waits for: per-Envoy event-log items (common/store/table-layout.ts
 * ITEM_KIND.envoyEventLog), and the version log's chunks and memberships (ITEM_KIND.versionLogChunk,
 * ITEM_KIND.versionLogMember; docs/GATEWAY.md, "The version log").
 */
const OFF_PATH_KINDS = ['EnvoyEventLog', 'VersionLogChunk', 'VersionLogMember'];

function offPathItemWrites(byKind: Record<string, number> | undefined): number {
  if (byKind === undefined) return 0;
  return OFF_PATH_KINDS.reduce((sum, kind) => sum + (byKind[kind] ?? 0), 0);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** The row with its scale figures where the results file keeps them (E2eResult's fields). */
export function withScaleFigures<Row extends ScaleMeasured & { dynamo: object; gateway?: object }>(e2e: Row): Row & { changeWaves: number; signalOverheadRatio?: number } {
  const figures = scaleFigures(e2e);
  return {
    ...e2e,
    changeWaves: figures.changeWaves,
    ...(figures.signalOverheadRatio === undefined ? {} : { signalOverheadRatio: figures.signalOverheadRatio }),
    dynamo: { ...e2e.dynamo, criticalPathItemWritesPerChange: figures.criticalPathItemWritesPerChange, itemWritesPerEnvoyChange: figures.itemWritesPerEnvoyChange },
    ...(e2e.gateway === undefined ? {} : { gateway: { ...e2e.gateway, ...(figures.cpuMsPerEnvoyChange === undefined ? {} : { cpuMsPerEnvoyChange: figures.cpuMsPerEnvoyChange }) } }),
  };
}
