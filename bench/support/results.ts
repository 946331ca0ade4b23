// The shape of docs/bench/results.json, shared by the report writer, the README renderer and tests.
import type { IstioResult, KnativeResult } from '../baselines';
import type { E2eResult } from '../e2e';
import type { RecorderWritesRow } from '../recorder-writes';

/** The subset of bench/gateway.ts ModeResult the report uses (kept structural so old files load). */
export interface GatewayModeSummary {
  mode: 'direct' | 'relay';
  envoys: number;
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  relayRssPerStreamKiB: number | undefined;
  relayHeapPerStreamKiB: number | undefined;
}

export interface SizeRun {
  envoys: number;
  objects: number;
  /** Objects changed at once in the baselines (the e2e run changes all of them). */
  changed: number;
  /** ISO time the run finished and how long it took. */
  finishedAt: string;
  durationSeconds: number;
  /** Ours, with the same objects changed as the baselines. */
  e2e?: E2eResult;
  /** Ours, every object changed at once (`--burst`): the stress case. */
  e2eBurst?: E2eResult;
  /**
   * Ours on the fleet-size path (`--progress-path`: PROGRESS decides, Envoy states on class changes
   * only), the same objects changed as `e2e`, run right after it in the same size run.
   */
  e2eProgressPath?: E2eResult;
  knative?: KnativeResult;
  istio?: IstioResult;
  gateway?: { direct: GatewayModeSummary; relay: GatewayModeSummary; changes: number };
  /** A stage that failed (timeout, crash) is recorded here; the others still ran. */
  errors: string[];
  /**
   * Stages this run did not run (`--stages`) whose results come from an earlier run of the same size,
   * with when that run finished: the README says so next to the row.
   */
  carried?: Array<{ stage: CarriedStage; finishedAt: string; machine?: string }>;
  /** The machine the run's own stages were measured on (absent in runs before it was recorded: the file's). */
  machine?: string;
}

/** The result fields of a size run, one per stage (e2e and its burst row are separate). */
export const STAGE_FIELDS = ['e2e', 'e2eBurst', 'e2eProgressPath', 'knative', 'istio', 'gateway'] as const;
export type CarriedStage = (typeof STAGE_FIELDS)[number];

export interface ConvergenceRow {
  envoys: number;
  recordsPerBatch: number;
  itemsReadPerBatch: number;
  requestsPerBatch: number;
  batchMs: number;
  decisionLatencyMs: number;
}

export interface BenchResults {
  machine: string;
  runs: SizeRun[];
  convergence?: { rows: ConvergenceRow[]; finishedAt: string; conditions: string };
  /** bench/recorder-writes.ts: the gateway's item writes per ACK, old and new event log, one run. */
  recorderWrites?: { rows: RecorderWritesRow[]; finishedAt: string; conditions: string };
}

export function sizeKey(run: { envoys: number; objects: number }): string {
  return `${run.envoys}x${run.objects}`;
}

/**
 * A fresh run replaces the run of the same size, stage by stage: a stage it did not run (or that
 * failed) keeps the earlier result, listed in `carried` with when it was measured. Other sizes are
 * kept; sorted by fleet then objects.
 */
export function mergeRuns(existing: readonly SizeRun[], fresh: readonly SizeRun[]): SizeRun[] {
  const byKey = new Map(existing.map((run) => [sizeKey(run), run]));
  for (const run of fresh) {
    const earlier = byKey.get(sizeKey(run));
    byKey.set(sizeKey(run), earlier === undefined ? run : carryStages(earlier, run));
  }
  return [...byKey.values()].sort((a, b) => a.envoys - b.envoys || a.objects - b.objects);
}

function carryStages(earlier: SizeRun, fresh: SizeRun): SizeRun {
  const merged: SizeRun = { ...fresh };
  const carried = [...(fresh.carried ?? [])];
  for (const stage of STAGE_FIELDS) {
    if (fresh[stage] !== undefined || earlier[stage] === undefined) continue;
    // Only one field per stage: TypeScript cannot pair the key with its value type through the loop.
    Object.assign(merged, { [stage]: earlier[stage] });
    const entry = earlier.carried?.find((carriedEntry) => carriedEntry.stage === stage);
    const machine = entry === undefined ? earlier.machine : entry.machine;
    carried.push({ stage, finishedAt: entry?.finishedAt ?? earlier.finishedAt, ...(machine === undefined ? {} : { machine }) });
  }
  if (carried.length > 0) merged.carried = carried;
  return merged;
}

/**
 * Runs as loaded from a results file measured on `machine`: a run (or carried stage) without its own
 * machine was measured on the file's, so it keeps that name when a later run on another machine
 * renames the file's.
 */
export function withMachine(runs: readonly SizeRun[], machine: string): SizeRun[] {
  return runs.map((run) => ({
    ...run,
    machine: run.machine ?? machine,
    ...(run.carried === undefined ? {} : { carried: run.carried.map((entry) => ({ ...entry, machine: entry.machine ?? run.machine ?? machine })) }),
  }));
}
