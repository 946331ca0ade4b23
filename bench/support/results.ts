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
  knative?: KnativeResult;
  istio?: IstioResult;
  gateway?: { direct: GatewayModeSummary; relay: GatewayModeSummary; changes: number };
  /** A stage that failed (timeout, crash) is recorded here; the others still ran. */
  errors: string[];
}

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

/** Replaces runs of the same size, keeps the others, sorted by fleet then objects. */
export function mergeRuns(existing: readonly SizeRun[], fresh: readonly SizeRun[]): SizeRun[] {
  const byKey = new Map(existing.map((run) => [sizeKey(run), run]));
  for (const run of fresh) byKey.set(sizeKey(run), run);
  return [...byKey.values()].sort((a, b) => a.envoys - b.envoys || a.objects - b.objects);
}
