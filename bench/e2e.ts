// End-to-end bench, one process: reference control plane → gateway → simulated Envoys; local DynamoDB
// (dynalite behind the stream front) → stream delivery → convergence and status functions → local
// Kubernetes API server. Built on startLocalSystem (infra/local/system), so it measures exactly what
// `npm start` runs. Per object, from a Kubernetes watch and the fleet's ground truth:
//   - last ACK → condition True: the latest moment any Envoy ACKed a response carrying the object's
//     new cluster (CDS and EDS), to the watch event where EnvoyProgrammed=True names the new generation;
//   - spec change → True, next to spec change → last ACK (the control plane's own delivery time,
//     through the gateway);
// and counters: condition-changing Kubernetes writes per object per generation, DynamoDB requests
// (local front stats), stream-function invocations, ACKs/s, CPU seconds and RSS of the process.
//
//   npx tsx bench/e2e.ts [--envoys 100] [--objects 100]   (or npm run bench -- e2e)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import pino from 'pino';
import { startLocalSystem, type LocalSystem } from '../infra/local/system';
import { openTable, openTableFromEnv } from '../common/store';
import type { ObjectGeneration } from '../common/core';
import type { WatermarkTarget } from '../infra/local/envoys/fleet-queries';
import { CONVERGENCE_BATCH_SIZE } from '../infra/local/system/functions';
import { GATEWAY_PROCESSES, type GatewayProcess } from '../infra/local/system/options';
import { sampleName } from '../infra/local/system/samples';
import { forEachIndexConcurrently } from '../common/worker-pool';
import { canaryCluster, canaryRouteKey, canaryRouteWatches, HTTPPROXIES_PATH, patchToCanary } from './support/changes';
import { startConditionWatch } from './support/condition-watch';
import { counterByLabel, counterDelta, meanWriteLatencyMs, storeWriteTotals, type StoreWriteTotals } from './support/gateway-metrics';
import { CHILD_PROCESSES, cpuPercentBetween, cpuSecondsNow, processCpuSeconds, processesCpuSeconds, processesRssMiB, processRssMiB, type ChildPids, type ProcessCpuPercent } from './support/proc';
import { round, summarize, waitFor, type Summary } from './support/stats';
import { requireWholeFleet } from './support/whole-fleet';
import { measureWriteCeiling, type WriteCeilingResult } from './write-ceiling';
import { nonNegativeInteger, positiveInteger } from './support/args';
import { withScaleFigures } from './support/scale-figures';
import { DEFAULT_WARMUP_CHANGES, warmUp, type WarmupResult } from './support/warmup';

/** startLocalSystem's own limits (infra/local/system/options.ts). */
export const E2E_MAX_ENVOYS = 10_000;
/**
 * Envoys per gateway process by default: the runs go to ~5,000 Envoys on one gateway (round 7 of
 * docs/bench/README.md), and a larger fleet gets another gateway per 5,000, as a deployment scales out.
 */
export const E2E_ENVOYS_PER_GATEWAY = 5000;
export const E2E_MAX_OBJECTS = 10_000;
const HTTPPROXIES = HTTPPROXIES_PATH;

export interface E2eOptions {
  envoys: number;
  objects: number;
  /** Upper bound for each phase (initial convergence, change convergence). */
  phaseTimeoutMs: number;
  /** Spec patches sent concurrently (a burst of changes, as a deploy of many routes would be). */
  patchConcurrency: number;
  /** Objects patched (the first `changed` samples); default all of them. */
  changed?: number;
  /**
   * Settings of the functions under test (default: the local system's). The previous settings were
   * 200 / 200 / 0 (`--batch-window-ms 200 --status-batch-window-ms 200 --decision-refresh-ms 0`), for
   * before/after runs.
   */
  batchWindowMs?: number;
  statusBatchWindowMs?: number;
  decisionRefreshMs?: number;
  /** Where dynalite runs (default: the local system's, 'child'; docs/LOCAL-DYNAMO.md). */
  dynaliteProcess?: 'child' | 'inline';
  /** The convergence mapping's batchSize (default: the local system's). */
  convergenceBatchSize?: number;
  /**
   * Where the simulated Envoys run (default 'child': their own process, as Envoys are other machines
   * in production; 'inline' shares the system's event loop, as before; docs/ENVOY-FLEET.md).
   */
  fleetProcess?: 'child' | 'inline';
  /** Where the xDS gateway runs (default 'child': its own process, as deployed; 'inline' as before). */
  /** 'bundle': the gateway child runs the esbuild bundle the image runs (built first). */
  gatewayProcess?: GatewayProcess;
  /** Gateway processes, the fleet split evenly among them (default: one per E2E_ENVOYS_PER_GATEWAY Envoys). */
  gateways?: number;
  /** Measure the write path's ceiling after the change (default true; E2eResult.writeCeiling). */
  writeCeiling?: boolean;
  /** The fleet-size path: PROGRESS decides, Envoy states written on class changes only (the local system's `progressPath`). */
  progressPath?: boolean;
  /** The ACK timeout of the gateway and the functions (default: the local system's 10 s). */
  ackTimeoutMs?: number;
  /**
   * Where the API server and the control plane run (default 'child': a process of their own, as
   * deployed, the local system's controlPlane 'reference-child'; 'inline': in this process, as before).
   */
  clusterProcess?: 'child' | 'inline';
  /** The simulated Envoys' xDS variant (default 'sotw'; 'delta': responses carry only what changed). */
  fleetProtocol?: 'sotw' | 'delta';
  /** Warm-up changes of other objects before the measured one (default DEFAULT_WARMUP_CHANGES; bench/support/warmup.ts). */
  warmupChanges?: number;
}

export interface E2eResult {
  conditions: string;
  /** Run on the fleet-size path (E2eOptions.progressPath); absent: the shard path. */
  progressPath?: boolean;
  /** E2eOptions.ackTimeoutMs when set (absent: the local system's 10 s). */
  ackTimeoutMs?: number;
  envoys: number;
  objects: number;
  changed: number;
  /** Start → every object True at generation 1 (connect, first delivery, first convergence). */
  initialConvergenceMs: number;
  /** The warm-up changes run between the initial convergence and the measured change (absent in old results: none). */
  warmup?: WarmupResult;
  /**
   * From the moment the last Envoy had the object's new generation to the condition True@2 seen by a
   * watch. "Had it" (`lastAckDefinition` 'delivered', from round 17): every type of the gateway's
   * watermark for it ACKed at or past the watermark (invariant 1's ACK rule, by the fleet's ground
   * truth) *and* able to route it by content (`routableAt`), whichever came later; an object some
   * Envoy could not route is measured by the ACK rule alone. Rows without `lastAckDefinition` used
   * the ACK rule alone, which can come before an Envoy holds the endpoints of a cluster the change
   * added (an EDS ACK of the old names at the watermark's version satisfies it): the control plane's
   * delivery was not over then (docs/bench/README.md, round 17).
   */
  lastAckToTrueMs: Summary;
  /** How `lastAckToTrueMs` and `changeToLastAckMs` define the last ACK (absent: the ACK rule alone). */
  lastAckDefinition?: 'delivered';
  /** last ACK → True and change → last ACK by the ACK rule alone (the earlier definition; present with `lastAckDefinition`). */
  ackRuleLastAckToTrueMs?: Summary;
  ackRuleChangeToLastAckMs?: Summary;
  /** The same from the last ACK of the canary cluster on CDS and EDS only (the definition before; optional). */
  clusterAckToTrueMs?: Summary;
  /** Changed objects every Envoy had on every watermarked type (a check on the figure above; optional). */
  objectsProgrammedOnEveryEnvoy?: number;
  /**
   * last ACK → True in hops, per changed object, from the stored OBJECT generation item: last ACK (fleet
   * ground truth) → the Programmed decision's `decidedAt` (gateway recording, stream, convergence) →
   * `programmedAt` (the status writer's True write: handoff or status function) → True seen by a watch.
   * Optional: older results lack it.
   */
  lastAckToTrueHopsMs?: { ackToDecided: Summary; decidedToWritten: Summary; writtenToSeen: Summary };
  /**
   * Per changed object, ms after its change: its watermark seq on each lineage, the last Envoy's ACK of
   * it by the ACK rule alone (as `ackRuleLastAckToTrueMs`), the last Envoy able to route it by content (as `changeToRoutableMs`;
   * absent when some Envoy never could), the Programmed decision and True seen by a watch. Objects changed at once
   * can reach the control plane in several snapshots, and a percentile over them hides which group
   * waited for what (docs/bench/README.md, round 15). Optional: older results lack it.
   */
  objectTimingsMs?: Array<{ name: string; watermarkSeqs: Record<string, number>; lastAck?: number; routable?: number; decided?: number; trueSeen?: number }>;
  changeToTrueMs: Summary;
  /** Change → the last ACK (as `lastAckToTrueMs` defines it): the control plane's delivery through the gateway. */
  changeToLastAckMs: Summary;
  /**
   * Change → the last Envoy able to route it, judged by content (its accepted route sends the host to
   * the canary cluster, which it holds with endpoints: infra/local/envoys/route-watch.ts): what the
   * baselines wait for. Samples not routable on every Envoy are left out. Absent in rows before it.
   */
  changeToRoutableMs?: Summary;
  kubeConditionWritesPerObjectGeneration: { generation1: number; generation2: number; max: number };
  dynamo: { requests: number; writeRequests: number; itemWrites: number; readRequests: number; writesPerChange: number; readsPerChange: number; itemWritesPerAck: number; /** Writes whose stream records the local front could not build (must be 0; optional in old results). */ lostStreamRecords?: number; /** Item writes of the change phase by item kind (optional in old results). */ itemWritesByKind?: Record<string, number>; criticalPathItemWritesPerChange?: number; itemWritesPerEnvoyChange?: number };
  acks: number;
  ackEventsPerSecond: number;
  functionInvocations: { convergence: number; status: number; perChange: number };
  /** The system's process (control plane, gateway, functions, the DynamoDB front, API server; the fleet too when inline). */
  process: { cpuSecondsDuringChange: number; rssMiB: number; rssKiBPerEnvoy: number };
  /** Where the fleet ran; in child mode the child's own CPU during the change phase (from /proc). */
  fleet?: { process: 'child' | 'inline'; cpuSecondsDuringChange?: number; startupMs?: number; rssMiB?: number };
  /** The gateway's own process when it runs as a child (optional: older results lack it). */
  gateway?: { process: 'child' | 'inline'; /** Gateway processes when more than one (their CPU and RSS summed). */ replicas?: number; cpuSecondsDuringChange?: number; rssMiB?: number; cpuMsPerEnvoyChange?: number; /** PROGRESS writes during the change by what made each due (optional in old results). */ progressWritesBy?: Record<string, number>; /** Envoy requests during the change by class (initial/ack/nack/stale/unknownNonce): what the CPU per Envoy-change paid for. */ requestsBy?: Record<string, number> };
  /** dynalite's own process when it runs as a child: its CPU during the change (optional: older results lack it). */
  dynalite?: { cpuSecondsDuringChange: number };
  changePhaseMs: number;
  /**
   * How the signal's cost and latency scale with the fleet (bench/support/scale-figures.ts; with
   * `dynamo.criticalPathItemWritesPerChange`, `dynamo.itemWritesPerEnvoyChange` and
   * `gateway.cpuMsPerEnvoyChange`): responses per Envoy per type during the change, and change → True
   * p99 ÷ change → last ACK p99.
   */
  changeWaves?: number;
  signalOverheadRatio?: number;
  /** Whether the stream mappings had caught up before and after the change (optional: older results lack it). */
  idle?: { beforeChange: boolean; afterChange: boolean };
  /**
   * Per changed object, from the first to the last Envoy to have it (fleet ground truth, as last ACK):
   * the window in which the gateway gets one state to write per Envoy (optional: older results lack it).
   */
  crossingSpreadMs?: Summary;
  /**
   * The write path's ceiling, measured on the same system once the change is done and the stream
   * mappings are idle (bench/write-ceiling.ts: the gateway's store code in its own process, one
   * conditional put per state, through the local front into dynalite), and what it implies for last
   * ACK → True: `floorAfterLastAckMs` = max(0, envoys / writesPerSecond − crossingSpreadMs.p50), the
   * earliest the last of one state write per Envoy could land after the last ACK even if the path ran
   * at its idle ceiling from the first Envoy on, with no push and no functions sharing the cores.
   */
  writeCeiling?: WriteCeilingResult & { floorAfterLastAckMs: number };
  /** The condition changes the first changed object went through at generation 2 (status/reason@observedGeneration). */
  conditionSequenceExample: string[];
  /** Generation-2 condition sequences of objects written more than twice (at most 5), to see what the extra writes were. */
  extraWriteSequences?: Record<string, string[]>;
  /**
   * Sampled every 250 ms during the change: stream records appended by the front vs delivered to each
   * function, and objects True. A growing gap says which stage the time is spent queueing for.
   */
  timeline: Array<{ atMs: number; streamRecords: number; convergenceDelivered: number; statusDelivered: number; objectsTrue: number; convergenceIteratorAgeMs?: number; /** Per process, % of one core since the previous sample (optional: older results lack it). */ cpuPercent?: ProcessCpuPercent }>;
  /**
   * Mean CPU per process (% of one core) over the samples from the last changed object's last ACK to
   * its True: whether the backlog after the last ACK is a saturated process (optional).
   */
  busyAfterLastAck?: ProcessCpuPercent & { machine: number };
  /**
   * The gateway's Envoy state writes during the change and their mean latency (its store-write
   * histogram, /metrics), next to the idle figure implied by the ceiling (in flight ÷ writes/s): a
   * write path whose latency grows under load at a fixed number in flight carries fewer writes/s.
   */
  gatewayStateWrites?: { writes: number; meanLatencyMs: number };
}

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

/** The mean of the timeline's CPU samples in [fromMs, toMs] (ms since the change), per process and summed. */
export function meanCpuBetween(timeline: E2eResult['timeline'], fromMs: number, toMs: number): (ProcessCpuPercent & { machine: number }) | undefined {
  const samples = timeline.filter((entry) => entry.atMs >= fromMs && entry.atMs <= toMs && entry.cpuPercent !== undefined).map((entry) => entry.cpuPercent as ProcessCpuPercent);
  if (samples.length === 0) return undefined;
  const mean = (pick: (sample: ProcessCpuPercent) => number | undefined): number | undefined => {
    const values = samples.map(pick).filter((value): value is number => value !== undefined);
    return values.length === 0 ? undefined : round(values.reduce((sum, value) => sum + value, 0) / values.length, 0);
  };
  const result: ProcessCpuPercent & { machine: number } = { system: mean((sample) => sample.system) ?? 0, machine: 0 };
  for (const name of CHILD_PROCESSES) {
    const value = mean((sample) => sample[name]);
    if (value !== undefined) result[name] = value;
  }
  result.machine = result.system + CHILD_PROCESSES.reduce((sum, name) => sum + (result[name] ?? 0), 0);
  return result;
}

/**
 * Per canary cluster name: the latest first-acceptance across Envoys of CDS and EDS carrying it
 * (infra/local/envoys/fleet-queries.ts), computed where the fleet runs. Both processes stamp with
 * Date.now() on this machine, so the times compare directly with the parent's.
 */
async function lastAcks(system: LocalSystem<'child' | 'inline'>, names: ReadonlySet<string>, since: number): Promise<{ lastAck: Map<string, number>; acks: number }> {
  const { lastAck, acks } = await system.fleet.queries.lastAcks([...names], since);
  return { lastAck: new Map(Object.entries(lastAck)), acks };
}

/**
 * The gateways' state-write totals and PROGRESS writes by reason, from their /metrics, summed over the
 * replicas; undefined (and logged) if one cannot be read.
 */
async function gatewayStoreWrites(system: LocalSystem<'inline' | 'child'>): Promise<(StoreWriteTotals & { progressWrites: Record<string, number>; requests: Record<string, number> }) | undefined> {
  if (system.gateways.length === 0) return undefined;
  const sum: StoreWriteTotals & { progressWrites: Record<string, number>; requests: Record<string, number> } = { count: 0, sumSeconds: 0, progressWrites: {}, requests: {} };
  for (const gateway of system.gateways) {
    try {
      const response = await fetch(gateway.metricsUrl);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const text = await response.text();
      const writes = storeWriteTotals(text, 'envoyState');
      sum.count += writes.count;
      sum.sumSeconds += writes.sumSeconds;
      for (const [why, n] of Object.entries(counterByLabel(text, 'xds_programmed_gateway_progress_writes_total', 'why'))) sum.progressWrites[why] = (sum.progressWrites[why] ?? 0) + n;
      for (const [kind, n] of Object.entries(counterByLabel(text, 'xds_programmed_gateway_requests_total', 'class'))) sum.requests[kind] = (sum.requests[kind] ?? 0) + n;
    } catch (error) {
      logger.warn({ err: error, url: gateway.metricsUrl }, 'gateway metrics unreadable; state-write latency not reported');
      return undefined;
    }
  }
  return sum;
}

/**
 * The write-ceiling measurement (bench/write-ceiling.ts) against this system's own local DynamoDB, one
 * state per Envoy, into a table of its own (no stream mapping reads it: nothing else is woken).
 */
async function measureCeilingOn(system: LocalSystem<'inline' | 'child'>, envoys: number, dynalitePid: number | undefined): Promise<WriteCeilingResult> {
  const table = openTable({ tableName: WRITE_CEILING_TABLE, client: { region: system.dynamo.local.region, endpoint: system.dynamo.local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }, logger });
  try {
    await table.ensureTable();
  } finally {
    table.close();
  }
  return measureWriteCeiling({ endpoint: system.dynamo.local.endpoint, tableName: WRITE_CEILING_TABLE, writes: envoys, frontInThisProcess: true, ...(dynalitePid === undefined ? {} : { dynalitePid }) });
}
const WRITE_CEILING_TABLE = 'bench-write-ceiling';

/** The changed objects' OBJECT#…/GEN#2 items, read once the change is True everywhere. */
async function readGenerations(system: LocalSystem<'inline' | 'child'>, names: readonly string[]): Promise<Map<string, ObjectGeneration>> {
  const table = openTableFromEnv(system.dynamo.storeEnv, logger);
  const { store } = table;
  const found = new Map<string, ObjectGeneration>();
  try {
    for (const name of names) {
      const read = await store.getObjectGeneration({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name }, 2);
      if (read.status === 'found') found.set(name, read.value);
    }
  } finally {
    table.close();
  }
  return found;
}

/** Per object, its watermark on each lineage that served it (one gateway here: one lineage). */
function watermarkTargets(generations: ReadonlyMap<string, ObjectGeneration>): WatermarkTarget[] {
  return [...generations].flatMap(([name, record]) =>
    Object.entries(record.watermarks).map(([lineage, watermark]) => ({ key: name, lineage, seqByType: { ...watermark.types } })),
  );
}

/** When the generation's stored decision became Programmed (undefined: it is not Programmed). */
function programmedDecidedAt(record: ObjectGeneration): number | undefined {
  return record.decision?.state === 'Programmed' ? record.decision.decidedAt : undefined;
}

/**
 * Per object, when the last Envoy had it (E2eResult.lastAckToTrueMs, 'delivered'): the later of the
 * ACK rule's moment and the moment the last Envoy could route it by content; the ACK rule's alone when
 * some Envoy never could (the max over Envoys of each is the max over Envoys of their per-Envoy max).
 */
export function deliveredAt(names: readonly string[], ackRule: ReadonlyMap<string, number>, routableOnEvery: (name: string) => number | undefined): Map<string, number> {
  const delivered = new Map<string, number>();
  for (const name of names) {
    const acked = ackRule.get(name);
    if (acked === undefined) continue;
    delivered.set(name, Math.max(acked, routableOnEvery(name) ?? acked));
  }
  return delivered;
}

/** E2eResult.objectTimingsMs: each changed object's moments after its change, from the OBJECT#…/GEN#2 items and the fleet. */
function objectTimings(
  names: readonly string[],
  changedAt: ReadonlyMap<string, number>,
  generations: ReadonlyMap<string, ObjectGeneration>,
  lastAck: ReadonlyMap<string, number>,
  routableAt: (name: string) => number | undefined,
  trueAt: (name: string) => number | undefined,
): NonNullable<E2eResult['objectTimingsMs']> {
  return names.flatMap((name) => {
    const changed = changedAt.get(name);
    const record = generations.get(name);
    if (changed === undefined || record === undefined) return [];
    const after = (at: number | undefined): number | undefined => (at === undefined ? undefined : at - changed);
    const acked = after(lastAck.get(name));
    const routable = after(routableAt(name));
    const decided = after(programmedDecidedAt(record));
    const trueSeen = after(trueAt(name));
    return [
      {
        name,
        watermarkSeqs: Object.fromEntries(Object.entries(record.watermarks).map(([lineage, watermark]) => [lineage, watermark.seq])),
        ...(acked === undefined ? {} : { lastAck: acked }),
        ...(routable === undefined ? {} : { routable }),
        ...(decided === undefined ? {} : { decided }),
        ...(trueSeen === undefined ? {} : { trueSeen }),
      },
    ];
  });
}

/** The hops of last ACK → True (E2eResult.lastAckToTrueHopsMs) from the OBJECT#…/GEN#2 items. */
function lastAckHops(
  generations: ReadonlyMap<string, ObjectGeneration>,
  lastAck: ReadonlyMap<string, number>,
  trueAt: (name: string) => number | undefined,
): E2eResult['lastAckToTrueHopsMs'] {
  const ackToDecided: number[] = [];
  const decidedToWritten: number[] = [];
  const writtenToSeen: number[] = [];
  for (const [name, record] of generations) {
    const acked = lastAck.get(name);
    const seen = trueAt(name);
    const decided = programmedDecidedAt(record);
    const written = record.programmedAt;
    if (acked === undefined || seen === undefined || decided === undefined || written === undefined) continue;
    ackToDecided.push(decided - acked);
    decidedToWritten.push(written - decided);
    writtenToSeen.push(seen - written);
  }
  return ackToDecided.length === 0 ? undefined : { ackToDecided: summarize(ackToDecided), decidedToWritten: summarize(decidedToWritten), writtenToSeen: summarize(writtenToSeen) };
}

/**
 * Waits (up to `timeoutMs`) until both stream mappings have delivered everything appended. With
 * thousands of Envoys, heartbeats keep records flowing, so "idle" may never come: then the bench goes
 * on and says so (`idle` in the result) rather than failing: every figure is a delta over the phase.
 */
async function settled(functions: NonNullable<LocalSystem['functions']>, timeoutMs: number): Promise<boolean> {
  try {
    await Promise.all([functions.deliveries.convergence.idle(timeoutMs), functions.deliveries.status.idle(timeoutMs)]);
    return true;
  } catch {
    return false;
  }
}

function maxOf(values: Iterable<number>): number {
  let max = 0;
  for (const value of values) max = Math.max(max, value);
  return max;
}

function meanOf(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/** `npm run build` (scripts/build.mjs): the gateway bundle a 'bundle' gateway child runs is the current source's. */
function buildBundles(): void {
  const built = spawnSync(process.execPath, [join(__dirname, '..', 'scripts', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) throw new Error(`scripts/build.mjs failed (exit ${String(built.status)}): the gateway bundle was not built`);
}

export async function runE2e(options: E2eOptions): Promise<E2eResult> {
  if (options.objects > E2E_MAX_OBJECTS || options.envoys > E2E_MAX_ENVOYS) {
    throw new Error(`the local system runs at most ${E2E_MAX_ENVOYS} Envoys and ${E2E_MAX_OBJECTS} objects (asked ${options.envoys} × ${options.objects})`);
  }
  const startedAt = Date.now();
  if (options.gatewayProcess === 'bundle') buildBundles();
  const system = await startLocalSystem(
    // One control-plane replica and no real gRPC clients: the bench measures the simulated fleet.
    {
      envoys: options.envoys,
      objects: options.objects,
      grpcClients: 0,
      controlPlaneReplicas: 1,
      ...(options.batchWindowMs === undefined ? {} : { batchWindowMs: options.batchWindowMs }),
      ...(options.statusBatchWindowMs === undefined ? {} : { statusBatchWindowMs: options.statusBatchWindowMs }),
      ...(options.decisionRefreshMs === undefined ? {} : { decisionRefreshMs: options.decisionRefreshMs }),
      ...(options.dynaliteProcess === undefined ? {} : { dynaliteProcess: options.dynaliteProcess }),
      ...(options.convergenceBatchSize === undefined ? {} : { convergenceBatchSize: options.convergenceBatchSize }),
      fleetProcess: options.fleetProcess ?? 'child',
      ...(options.fleetProtocol === undefined ? {} : { fleetProtocol: options.fleetProtocol }),
      gatewayProcess: options.gatewayProcess ?? 'child',
      gatewayReplicas: options.gateways ?? Math.ceil(options.envoys / E2E_ENVOYS_PER_GATEWAY),
      progressPath: options.progressPath === true,
      ...(options.ackTimeoutMs === undefined ? {} : { ackTimeoutMs: options.ackTimeoutMs }),
      controlPlane: options.clusterProcess === 'inline' ? 'reference' : 'reference-child',
      // The changed samples are the first `changed` (below): when each Envoy could route them, by content.
      fleetRouteWatches: canaryRouteWatches(Array.from({ length: Math.min(options.changed ?? options.objects, options.objects) }, (_, index) => index)),
    },
    { logger, processMetrics: false },
  );
  const watch = startConditionWatch({ collectionUrl: `${system.kube.url}${HTTPPROXIES}`, conditionType: system.options.conditionType });
  try {
    if (system.unavailable.length > 0) throw new Error(`local system incomplete: ${JSON.stringify(system.unavailable)}`);
    const allNames = system.objects;
    const changedCount = Math.min(options.changed ?? allNames.length, allNames.length);
    const names = allNames.slice(0, changedCount);
    try {
      await waitFor(() => watch.allTrueAt(allNames, () => 1), options.phaseTimeoutMs, 'every object True at generation 1', 50);
    } catch (error) {
      // Say how far it got: a size that cannot finish here is reported with its progress.
      const trueCount = allNames.filter((name) => watch.objects.get(name)?.trueAt.has(1) === true).length;
      const delivered = system.functions?.deliveries.convergence.stats.deliveredRecords ?? 0;
      throw new Error(`${error instanceof Error ? error.message : String(error)}: ${trueCount} of ${allNames.length} objects True at generation 1 after ${Math.round((Date.now() - startedAt) / 1000)} s; stream records appended ${system.dynamo.local.stats.records}, delivered to convergence ${delivered}`);
    }
    // The conditions' denominator is the Envoys the gateway serves; the row is of `options.envoys`
    // only if the fleet itself says every one of them holds all four types (a capped or refused
    // stream would leave the rest out of every figure below).
    await requireWholeFleet(system, options.envoys, options.phaseTimeoutMs);
    const initialConvergenceMs = Date.now() - startedAt;
    const functions = system.functions;
    if (!functions) throw new Error('functions unavailable');
    // Each warm-up change is done once its objects are True at generation 2 on every Envoy's behalf.
    const warmup = await warmUp(
      { changes: options.warmupChanges ?? DEFAULT_WARMUP_CHANGES, measured: changedCount, objects: allNames.length },
      {
        patch: (index) => patchToCanary(system.kube.url, index),
        done: (indexes) => waitFor(() => watch.allTrueAt(indexes.map(sampleName), () => 2), options.phaseTimeoutMs, 'every warm-up object True at generation 2', 20),
        settle: async () => {
          await settled(functions, 60_000);
        },
      },
      options.patchConcurrency,
    );
    const idleBeforeChange = await settled(functions, 60_000);

    const dynamoBefore = { ...system.dynamo.local.stats, recordsByKind: { ...system.dynamo.local.stats.recordsByKind } };
    const invocationsBefore = {
      convergence: functions.deliveries.convergence.stats.invocations,
      status: functions.deliveries.status.stats.invocations,
      convergenceDelivered: functions.deliveries.convergence.stats.deliveredRecords,
      statusDelivered: functions.deliveries.status.stats.deliveredRecords,
    };
    const cpuBefore = process.cpuUsage();
    const fleetPid = system.fleet.process === 'child' ? system.fleet.pid : undefined;
    const fleetCpuBefore = fleetPid === undefined ? undefined : processCpuSeconds(fleetPid);
    // Every gateway replica's process, summed (a 10,000-Envoy row runs two of 5,000); none when inline.
    const gatewayPids = system.gateways.flatMap((gateway) => (gateway.pid === undefined ? [] : [gateway.pid]));
    const gatewayPid = gatewayPids.length === 0 || gatewayPids.length !== system.gateways.length ? undefined : gatewayPids;
    const gatewayCpuBefore = gatewayPid === undefined ? undefined : processesCpuSeconds(gatewayPid);
    const dynalitePid = system.dynamo.local.dynalite.pid;
    const dynaliteCpuBefore = dynalitePid === undefined ? undefined : processCpuSeconds(dynalitePid);
    const gatewayWritesBefore = await gatewayStoreWrites(system);
    const changeStart = Date.now();
    const timeline: E2eResult['timeline'] = [];
    const cpuPids: ChildPids = {};
    if (gatewayPid !== undefined) cpuPids.gateway = gatewayPid;
    if (fleetPid !== undefined) cpuPids.fleet = fleetPid;
    if (dynalitePid !== undefined) cpuPids.dynalite = dynalitePid;
    const clusterPid = 'process' in system.controlPlane ? system.controlPlane.pid : undefined;
    if (clusterPid !== undefined) cpuPids.cluster = clusterPid;
    let lastCpu = cpuSecondsNow(cpuPids);
    const sample = (): void => {
      const cpuAt = cpuSecondsNow(cpuPids);
      const cpuPercent = cpuPercentBetween(lastCpu, cpuAt);
      lastCpu = cpuAt;
      timeline.push({
        atMs: Date.now() - changeStart,
        streamRecords: system.dynamo.local.stats.records - dynamoBefore.records,
        convergenceDelivered: functions.deliveries.convergence.stats.deliveredRecords - invocationsBefore.convergenceDelivered,
        statusDelivered: functions.deliveries.status.stats.deliveredRecords - invocationsBefore.statusDelivered,
        objectsTrue: names.filter((name) => watch.objects.get(name)?.trueAt.has(2) === true).length,
        // Lambda's IteratorAge of the convergence mapping's latest call: how stale its newest record was.
        convergenceIteratorAgeMs: functions.deliveries.convergence.stats.iteratorAgeMs.last,
        cpuPercent,
      });
    };
    const sampler = setInterval(sample, 250);
    const changedAt = new Map<string, number>();
    await forEachIndexConcurrently(names.length, options.patchConcurrency, async (index) => {
      changedAt.set(sampleName(index), Date.now());
      await patchToCanary(system.kube.url, index);
    });
    try {
      await waitFor(() => watch.allTrueAt(names, () => 2), options.phaseTimeoutMs, 'every object True at generation 2', 20);
    } finally {
      clearInterval(sampler);
    }
    sample();
    const allTrueAt = Date.now();
    const idleAfterChange = await settled(functions, 60_000);
    const gatewayWritesAfter = await gatewayStoreWrites(system);
    const gatewayStateWrites = gatewayWritesBefore === undefined || gatewayWritesAfter === undefined ? undefined : meanWriteLatencyMs(gatewayWritesBefore, gatewayWritesAfter);
    const cpu = process.cpuUsage(cpuBefore);
    const fleetCpuAfter = fleetPid === undefined ? undefined : processCpuSeconds(fleetPid);
    const fleetRssMiB = fleetPid === undefined ? undefined : processRssMiB(fleetPid);
    const gatewayCpuAfter = gatewayPid === undefined ? undefined : processesCpuSeconds(gatewayPid);
    const dynaliteCpuAfter = dynalitePid === undefined ? undefined : processCpuSeconds(dynalitePid);
    const gatewayRssMiB = gatewayPid === undefined ? undefined : processesRssMiB(gatewayPid);
    // A copy: the live counters go on counting (the write-ceiling measurement below writes through the same front).
    const dynamoAfter = { ...system.dynamo.local.stats, recordsByKind: { ...system.dynamo.local.stats.recordsByKind } };

    const canaryNames = new Map(names.map((name, index) => [canaryCluster(index), name]));
    const { lastAck: clusterLastAck, acks } = await lastAcks(system, new Set(canaryNames.keys()), changeStart);
    const generations = await readGenerations(system, names);
    // The last ACK by invariant 1's definition: every watermarked type at or past the watermark.
    const programmed = await system.fleet.queries.programmedAt(watermarkTargets(generations), changeStart);
    const ackRuleLastAck = new Map(Object.entries(programmed.lastAck));
    // By content: when the last Envoy could route the change (its route and the canary cluster), one
    // make-before-break wave before the watermark's removal of the old cluster (docs/bench/README.md).
    const routable = await system.fleet.queries.routable(names.map((_, index) => canaryRouteKey(index)));
    const routableOnEvery = (name: string): number | undefined => {
      const key = canaryRouteKey(names.indexOf(name));
      return routable.envoysWith[key] === options.envoys ? routable.lastAt[key] : undefined;
    };
    const changeToRoutable = names.flatMap((name) => {
      const at = routableOnEvery(name);
      const changed = changedAt.get(name);
      return at === undefined || changed === undefined ? [] : [at - changed];
    });
    const lastAck = deliveredAt(names, ackRuleLastAck, routableOnEvery);
    const trueSeenAt = (name: string): number | undefined => watch.objects.get(name)?.trueAt.get(2);
    const ackToTrue: number[] = [];
    const ackRuleAckToTrue: number[] = [];
    const clusterAckToTrue: number[] = [];
    const changeToTrue: number[] = [];
    const changeToLastAck: number[] = [];
    const ackRuleChangeToLastAck: number[] = [];
    for (const [cluster, name] of canaryNames) {
      const trueAt = trueSeenAt(name);
      const changed = changedAt.get(name);
      if (trueAt === undefined || changed === undefined) continue;
      changeToTrue.push(trueAt - changed);
      const clusterAcked = clusterLastAck.get(cluster);
      if (clusterAcked !== undefined) clusterAckToTrue.push(trueAt - clusterAcked);
      const acked = lastAck.get(name);
      if (acked !== undefined) {
        ackToTrue.push(trueAt - acked);
        changeToLastAck.push(acked - changed);
      }
      const ackedByRule = ackRuleLastAck.get(name);
      if (ackedByRule !== undefined) {
        ackRuleAckToTrue.push(trueAt - ackedByRule);
        ackRuleChangeToLastAck.push(ackedByRule - changed);
      }
    }
    const hops = lastAckHops(generations, lastAck, trueSeenAt);
    const objectTimingsMs = objectTimings(names, changedAt, generations, ackRuleLastAck, routableOnEvery, trueSeenAt);
    const crossingSpread = names.flatMap((name) => {
      const first = programmed.firstAck[name];
      const last = programmed.lastAck[name];
      return first === undefined || last === undefined ? [] : [last - first];
    });
    const crossingSpreadMs = summarize(crossingSpread);
    const lastAckOfAll = Math.max(...names.map((name) => lastAck.get(name) ?? Number.NaN).filter((at) => Number.isFinite(at)));
    const trueOfAll = Math.max(...names.map((name) => watch.objects.get(name)?.trueAt.get(2) ?? Number.NaN).filter((at) => Number.isFinite(at)));
    const busyAfterLastAck = Number.isFinite(lastAckOfAll) && Number.isFinite(trueOfAll) ? meanCpuBetween(timeline, lastAckOfAll - changeStart, trueOfAll - changeStart + 250) : undefined;
    const ceiling = options.writeCeiling === false ? undefined : await measureCeilingOn(system, options.envoys, dynalitePid);
    const writesGen = (generation: number): number[] => (generation === 1 ? allNames : names).map((name) => watch.objects.get(name)?.conditionWrites.get(generation) ?? 0);
    const requests = dynamoAfter.requests - dynamoBefore.requests;
    const writeRequests = dynamoAfter.capturedWrites - dynamoBefore.capturedWrites;
    const itemWrites = dynamoAfter.records - dynamoBefore.records;
    const convergenceInvocations = functions.deliveries.convergence.stats.invocations - invocationsBefore.convergence;
    const statusInvocations = functions.deliveries.status.stats.invocations - invocationsBefore.status;
    const rss = process.memoryUsage().rss;
    const changePhaseMs = allTrueAt - changeStart;
    const sequenceOf = (name: string): string[] => watch.objects.get(name)?.history.filter((h) => h.generation === 2).map((h) => `${h.status}/${h.reason ?? ''}@${h.observedGeneration ?? '?'}`) ?? [];
    const extraWrites = names.filter((name) => (watch.objects.get(name)?.conditionWrites.get(2) ?? 0) > 2);
    const result: E2eResult = {
      conditions: `the system on this machine (2 shared cores; ${system.gateways.length === 1 ? `the gateway ${system.gateway?.pid === undefined ? 'in-process' : system.options.gatewayProcess === 'bundle' ? 'in a child process running its esbuild bundle' : 'in a child process'}` : `${system.gateways.length} gateway processes, the Envoys split evenly among them, their CPU summed`}); ${options.envoys} simulated Envoys (ADS ${system.options.fleetProtocol === 'delta' ? 'Delta' : 'SotW'}, 4 types) via the gateway; ${names.length} of ${allNames.length} HTTPProxies patched at once (concurrency ${options.patchConcurrency}); dynalite; stream batch windows ${system.options.batchWindowMs} ms (convergence) / ${system.options.statusBatchWindowMs} ms (status); decision refresh ${system.options.decisionRefreshMs} ms; dynalite ${system.options.dynaliteProcess === 'child' ? 'in a child process' : 'in-process'}; simulated Envoys ${system.fleet.process === 'child' ? 'in a child process' : 'in-process'}; the API server and the control plane ${'process' in system.controlPlane ? 'in a child process of their own' : 'in-process'}; convergence batch size ${system.options.convergenceBatchSize ?? CONVERGENCE_BATCH_SIZE}; ${system.options.progressPath ? 'fleet-size path (PROGRESS decides, Envoy states on class changes only, answers in the version log)' : 'shard path (every Envoy state written)'}; ACK timeout ${system.options.ackTimeoutMs / 1000} s; ${warmup.changes === 0 ? 'no warm-up change' : `after ${warmup.changes} warm-up change${warmup.changes === 1 ? '' : 's'} of ${warmup.objectsPerChange} other objects each`}`,
      envoys: options.envoys,
      objects: allNames.length,
      changed: names.length,
      initialConvergenceMs,
      warmup,
      lastAckToTrueMs: summarize(ackToTrue),
      lastAckDefinition: 'delivered',
      ackRuleLastAckToTrueMs: summarize(ackRuleAckToTrue),
      ackRuleChangeToLastAckMs: summarize(ackRuleChangeToLastAck),
      clusterAckToTrueMs: summarize(clusterAckToTrue),
      objectsProgrammedOnEveryEnvoy: Object.values(programmed.envoysWith).filter((count) => count >= options.envoys).length,
      ...(hops === undefined ? {} : { lastAckToTrueHopsMs: hops }),
      objectTimingsMs,
      changeToTrueMs: summarize(changeToTrue),
      changeToLastAckMs: summarize(changeToLastAck),
      changeToRoutableMs: summarize(changeToRoutable),
      kubeConditionWritesPerObjectGeneration: { generation1: round(meanOf(writesGen(1)), 2), generation2: round(meanOf(writesGen(2)), 2), max: maxOf([...writesGen(1), ...writesGen(2)]) },
      dynamo: {
        requests,
        writeRequests,
        itemWrites,
        readRequests: requests - writeRequests,
        writesPerChange: round(writeRequests / names.length, 2),
        readsPerChange: round((requests - writeRequests) / names.length, 2),
        itemWritesPerAck: round(itemWrites / Math.max(1, acks), 3),
        lostStreamRecords: dynamoAfter.lostRecords - dynamoBefore.lostRecords,
        itemWritesByKind: Object.fromEntries(
          Object.entries(dynamoAfter.recordsByKind)
            .map(([kind, n]) => [kind, n - (dynamoBefore.recordsByKind[kind] ?? 0)] as const)
            .filter(([, n]) => n > 0),
        ),
      },
      acks,
      ackEventsPerSecond: round(acks / Math.max(0.001, changePhaseMs / 1000), 0),
      functionInvocations: { convergence: convergenceInvocations, status: statusInvocations, perChange: round((convergenceInvocations + statusInvocations) / names.length, 2) },
      process: { cpuSecondsDuringChange: round((cpu.user + cpu.system) / 1e6, 2), rssMiB: round(rss / 1048576, 0), rssKiBPerEnvoy: round(rss / 1024 / Math.max(1, options.envoys), 1) },
      fleet: {
        process: system.fleet.process,
        ...(fleetCpuBefore === undefined || fleetCpuAfter === undefined ? {} : { cpuSecondsDuringChange: round(fleetCpuAfter - fleetCpuBefore, 2) }),
        ...(system.fleet.process === 'child' ? { startupMs: system.fleet.startupMs } : {}),
        ...(fleetRssMiB === undefined ? {} : { rssMiB: round(fleetRssMiB, 0) }),
      },
      gateway: {
        process: gatewayPid === undefined ? 'inline' : 'child',
        ...(system.gateways.length === 1 ? {} : { replicas: system.gateways.length }),
        ...(gatewayCpuBefore === undefined || gatewayCpuAfter === undefined ? {} : { cpuSecondsDuringChange: round(gatewayCpuAfter - gatewayCpuBefore, 2) }),
        ...(gatewayRssMiB === undefined ? {} : { rssMiB: round(gatewayRssMiB, 0) }),
        ...(gatewayWritesBefore === undefined || gatewayWritesAfter === undefined || Object.keys(gatewayWritesAfter.progressWrites).length === 0
          ? {}
          : { progressWritesBy: counterDelta(gatewayWritesBefore.progressWrites, gatewayWritesAfter.progressWrites) }),
        ...(gatewayWritesBefore === undefined || gatewayWritesAfter === undefined ? {} : { requestsBy: counterDelta(gatewayWritesBefore.requests, gatewayWritesAfter.requests) }),
      },
      ...(dynaliteCpuBefore === undefined || dynaliteCpuAfter === undefined ? {} : { dynalite: { cpuSecondsDuringChange: round(dynaliteCpuAfter - dynaliteCpuBefore, 2) } }),
      changePhaseMs,
      ...(options.progressPath === true ? { progressPath: true } : {}),
      ...(options.ackTimeoutMs === undefined ? {} : { ackTimeoutMs: options.ackTimeoutMs }),
      idle: { beforeChange: idleBeforeChange, afterChange: idleAfterChange },
      timeline,
      ...(crossingSpread.length === 0 ? {} : { crossingSpreadMs }),
      ...(busyAfterLastAck === undefined ? {} : { busyAfterLastAck }),
      ...(gatewayStateWrites === undefined ? {} : { gatewayStateWrites }),
      ...(ceiling === undefined ? {} : { writeCeiling: { ...ceiling, floorAfterLastAckMs: Math.max(0, Math.round((options.envoys / ceiling.writesPerSecond) * 1000 - (crossingSpread.length === 0 ? 0 : crossingSpreadMs.p50))) } }),
      conditionSequenceExample: sequenceOf(names[0] ?? ''),
      ...(extraWrites.length === 0 ? {} : { extraWriteSequences: Object.fromEntries(extraWrites.slice(0, 5).map((name) => [name, sequenceOf(name)])) }),
    };
    return withScaleFigures(result);
  } finally {
    watch.close();
    await system.close();
  }
}

export function parseE2eArgs(argv: string[]): E2eOptions {
  const program = new Command()
    .name('bench e2e')
    .option('--envoys <n>', `simulated Envoys (≤ ${E2E_MAX_ENVOYS})`, positiveInteger, 100)
    .option('--gateways <n>', `gateway processes, the fleet split among them (default: one per ${E2E_ENVOYS_PER_GATEWAY} Envoys)`, positiveInteger)
    .option('--objects <n>', `HTTPProxy objects (≤ ${E2E_MAX_OBJECTS})`, positiveInteger, 100)
    .option('--phase-timeout-ms <n>', 'upper bound per phase', positiveInteger, 600_000)
    .option('--patch-concurrency <n>', 'spec patches in flight', positiveInteger, 16)
    .option('--changed <n>', 'objects patched (default: all)', positiveInteger)
    .option('--batch-window-ms <n>', 'convergence stream batching window (default: the local system\'s)', nonNegativeInteger)
    .option('--status-batch-window-ms <n>', 'status stream batching window', nonNegativeInteger)
    .option('--decision-refresh-ms <n>', 'convergence DECISION_REFRESH_MS (0: rewrite on every change)', nonNegativeInteger)
    .addOption(new Option('--dynalite-process <mode>', 'dynalite in a child process (default) or inline in the bench process').choices(['child', 'inline']))
    .option('--convergence-batch-size <n>', 'the convergence stream mapping\'s batchSize (default: the local system\'s)', positiveInteger)
    .addOption(new Option('--fleet-process <mode>', 'simulated Envoys in a child process (default) or inline in the bench process').choices(['child', 'inline']))
    .addOption(new Option('--gateway-process <mode>', 'the xDS gateway in a child process (default, as deployed, through tsx), a child running its esbuild bundle as the image does (built first), or inline in the bench process').choices([...GATEWAY_PROCESSES]))
    .option('--no-write-ceiling', 'skip the write-path ceiling measured after the change')
    .option('--warmup-changes <n>', `warm-up changes of other objects before the measured one (bench/support/warmup.ts)`, nonNegativeInteger, DEFAULT_WARMUP_CHANGES)
    .option('--progress-path', 'the fleet-size path: the gateway publishes PROGRESS and writes Envoy states on class changes only; the functions decide from PROGRESS')
    .option('--ack-timeout-ms <n>', 'ACK timeout of the gateway and the functions (default: the local system\'s 10 s; the gateway\'s own default is 30 s)', positiveInteger)
    .addOption(new Option('--fleet-protocol <variant>', 'the simulated Envoys\' xDS variant: sotw (Contour\'s Envoys) or delta (incremental, Envoy Gateway\'s default)').choices(['sotw', 'delta']).default('sotw'))
    .addOption(new Option('--cluster-process <where>', 'where the API server and the control plane run: child (their own process, as deployed) or inline (this process, as before)').choices(['child', 'inline']).default('child'))
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const opts = program.opts<{ envoys: number; objects: number; phaseTimeoutMs: number; patchConcurrency: number; changed?: number; batchWindowMs?: number; statusBatchWindowMs?: number; decisionRefreshMs?: number; dynaliteProcess?: 'child' | 'inline'; convergenceBatchSize?: number; fleetProcess?: 'child' | 'inline'; gatewayProcess?: GatewayProcess; gateways?: number; writeCeiling: boolean; progressPath?: boolean; ackTimeoutMs?: number; clusterProcess: 'child' | 'inline'; fleetProtocol: 'sotw' | 'delta'; warmupChanges: number }>();
  return {
    envoys: opts.envoys,
    objects: opts.objects,
    phaseTimeoutMs: opts.phaseTimeoutMs,
    patchConcurrency: opts.patchConcurrency,
    ...(opts.changed ? { changed: opts.changed } : {}),
    ...(opts.batchWindowMs === undefined ? {} : { batchWindowMs: opts.batchWindowMs }),
    ...(opts.statusBatchWindowMs === undefined ? {} : { statusBatchWindowMs: opts.statusBatchWindowMs }),
    ...(opts.decisionRefreshMs === undefined ? {} : { decisionRefreshMs: opts.decisionRefreshMs }),
    ...(opts.dynaliteProcess === undefined ? {} : { dynaliteProcess: opts.dynaliteProcess }),
    ...(opts.convergenceBatchSize === undefined ? {} : { convergenceBatchSize: opts.convergenceBatchSize }),
    ...(opts.fleetProcess === undefined ? {} : { fleetProcess: opts.fleetProcess }),
    ...(opts.gatewayProcess === undefined ? {} : { gatewayProcess: opts.gatewayProcess }),
    ...(opts.gateways === undefined ? {} : { gateways: opts.gateways }),
    ...(opts.writeCeiling ? {} : { writeCeiling: false }),
    ...(opts.progressPath === true ? { progressPath: true } : {}),
    ...(opts.ackTimeoutMs === undefined ? {} : { ackTimeoutMs: opts.ackTimeoutMs }),
    clusterProcess: opts.clusterProcess,
    ...(opts.fleetProtocol === 'delta' ? { fleetProtocol: 'delta' as const } : {}),
    warmupChanges: opts.warmupChanges,
  };
}

export async function run(argv: string[]): Promise<void> {
  const result = await runE2e(parseE2eArgs(argv));
  console.log(JSON.stringify(result, null, 2));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
