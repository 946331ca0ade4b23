// The churn soak: the whole local system (startLocalSystem, as bench/e2e.ts runs it: the gateway, the
// simulated fleet and dynalite each in a child process) for N minutes under continuous endpoint churn
// (EDS changing every second, as a scaling Knative or HPA fleet does), periodic spec changes of the
// tracked objects, gateway restarts (SIGTERM) and crashes (SIGKILL), and DynamoDB throttling windows.
// Then faults stop, the objects must converge, the churn stops, and the aggregates are recounted.
//
// Violations (judged from ground truth outside the product; docs/RELIABILITY.md, "Soak"):
//   - true-while-not-held: a True condition at generation G written while an Envoy the system had to
//     count (test/truth/checker.ts liveAt) did not hold G: the truth checker's checkTrueWrites, run in
//     the fleet child over the provenance stamps of what each Envoy accepted (bench/support/soak-true-check.ts);
//   - checker-gap: a response the fleet received could not be decoded (a True it would have vouched for is unjudged);
//   - not-true-within-budget: an object not True at its latest generation within TTL + 5 s + the time
//     faults were on since its spec change (bench/support/soak-convergence.ts);
//   - aggregate-drift: at the end, settled, the convergence aggregates differ from a recount of the
//     ENVOY STATE items (test/truth/recount.ts): an event lost or counted twice;
//   - lost-stream-records: writes whose stream records the local DynamoDB front could not build.
// Reported too: RSS of every process over time with its slope over the second half, item writes per
// minute, condition writes per object per generation.
//
//   npm run soak -- [--minutes 30] [--envoys 2000] [--objects 20] [--out file.json]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Command } from 'commander';
import pino from 'pino';
import type { ObjectRef } from '../common/core';
import { openTableFromEnv } from '../common/store';
import { buildFunctionContext } from '../functions/lib/context';
import { HTTPPROXY_TRACKED_KIND, localEnvoyHeartbeatMs, startLocalSystem, type LocalSystem } from '../infra/local/system';
import { SAMPLE_NAMESPACE } from '../infra/local/system/samples';
import { typesReflecting } from '../test/truth/checker';
import { ConditionObserver } from '../test/truth/observer';
import { SUBSCRIBED_TYPES } from '../test/truth/system';
import { checkAggregatesMatchRecount, recountEnv } from '../test/truth/recount';
import { nonNegativeInteger, positiveInteger } from './support/args';
import { countConditionWrites, type ConditionWriteCounts } from './support/soak-condition-writes';
import { convergenceTracker } from './support/soak-convergence';
import { startSoakFaults, type FaultWindow } from './support/soak-faults';
import { startEdsChurn, startSpecChanges, type SpecChange } from './support/soak-load';
import { sampleRss, summarizeRss, type ProcessRssSummary, type RssSample, type SoakProcessName } from './support/soak-rss';
import { trueWriteJudge, type SoakViolation, type TrueChecks } from './support/soak-true-check';
import { round, summarize, type Summary } from './support/stats';
import { requireWholeFleet } from './support/whole-fleet';

export interface SoakOptions {
  minutes: number;
  envoys: number;
  objects: number;
  edsIntervalMs: number;
  specIntervalMs: number;
  /** Objects whose route moves per spec tick (round robin). */
  specPerTick: number;
  /** 0: never. */
  gatewayRestartEveryMs: number;
  gatewayKillEveryMs: number;
  throttleEveryMs: number;
  throttleMs: number;
  throttleRate: number;
  sampleMs: number;
  /** The resync function's schedule (default 15 min, as deployed): it repairs drift, so a shorter one hides it from the recount. */
  resyncEveryMs: number;
  /** Upper bound for the initial convergence (every object True at generation 1). */
  startTimeoutMs: number;
  /** The fleet-size path (the local system's `progressPath`): PROGRESS decides, Envoy states on class changes only. */
  progressPath: boolean;
  out?: string;
}

export interface SoakResult {
  conditions: string;
  options: SoakOptions;
  startedAt: string;
  /** Start → every object True at generation 1, before the soak clock starts. */
  initialConvergenceMs: number;
  soakMs: number;
  /** Faults off → every change True or judged (the settle phase). */
  settleMs: number;
  violations: { total: number; byCheck: Partial<Record<SoakViolation['check'], number>>; details: SoakViolation[] };
  trueWrites: Omit<TrueChecks, 'violations'>;
  /** Spec changes (the initial generation is awaited before the soak clock starts, not judged here). */
  convergence: { changes: number; superseded: number; changeToTrueMs: Summary; baseBudgetMs: number; outcomes: Array<{ change: string; atMs: number; outcome: 'true' | 'superseded' | 'overdue'; afterMs: number }> };
  recount: { drift: number; details: string[] };
  lostStreamRecords: number;
  rss: Partial<Record<SoakProcessName, ProcessRssSummary>>;
  /** The slope is taken over samples at or after this (ms since the soak started). */
  rssSlopeFromMs: number;
  itemWritesPerMinute: { mean: number; max: number; perMinute: number[]; writeRequestsPerMinute: number[] };
  conditionWrites: ConditionWriteCounts;
  /** `acks`: responses the fleet accepted during the soak (its ground truth): the churn reached the Envoys. */
  load: { edsChanges: number; specChanges: number; specChangeFailures: string[]; acks: number | string };
  faults: { windows: FaultWindow[]; throttledRequests: number; gatewayRestarts: number; gatewayKills: number; failed: string[] };
  rssTimeline: RssSample[];
}

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
/** Judge True writes this long after the watch saw them, so their OBJECT item (and its programmedAt) is written. */
const JUDGE_LAG_MS = 3000;
const JUDGE_EVERY_MS = 5000;
/** The write bound per object generation the status writer keeps (test/truth: invariant 4). */
const VERDICT_WRITE_BOUND = 2;

function refOf(name: string): ObjectRef {
  return { group: HTTPPROXY_TRACKED_KIND.group, kind: HTTPPROXY_TRACKED_KIND.kind, namespace: SAMPLE_NAMESPACE, name };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Item writes (stream records) and write requests per whole minute of the soak, from the local front's counters. */
function perMinute(samples: ReadonlyArray<{ atMs: number; value: number }>): number[] {
  const result: number[] = [];
  let start = samples[0];
  for (const sample of samples) {
    if (start === undefined) break;
    if (sample.atMs - start.atMs >= 60_000) {
      result.push(Math.round(((sample.value - start.value) * 60_000) / (sample.atMs - start.atMs)));
      start = sample;
    }
  }
  return result;
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`soak: timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const startedAt = Date.now();
  const system: LocalSystem<'child'> = await startLocalSystem(
    {
      envoys: options.envoys,
      objects: options.objects,
      grpcClients: 0,
      controlPlaneReplicas: 1,
      resyncEveryMs: options.resyncEveryMs,
      fleetProcess: 'child',
      // Invariant 1 is judged in the fleet child against the stamps its Envoys received.
      fleetContentTap: true,
      gatewayProcess: 'child',
      progressPath: options.progressPath,
    },
    { logger, processMetrics: false },
  );
  const observer = new ConditionObserver(system.kube.url, system.options.conditionType);
  const table = openTableFromEnv(system.dynamo.storeEnv, logger);
  const recountContext = buildFunctionContext(
    recountEnv({ storeEnv: system.dynamo.storeEnv, envoyTtlMs: system.options.envoyTtlMs, ackTimeoutMs: system.options.ackTimeoutMs, conditionType: system.options.conditionType, kubeconfigPath: system.kube.kubeconfigPath }),
    logger.child({ component: 'soak-recount' }),
  );
  const timers: NodeJS.Timeout[] = [];
  try {
    if (system.unavailable.length > 0) throw new Error(`local system incomplete: ${JSON.stringify(system.unavailable)}`);
    const gateway = system.gateway;
    const functions = system.functions;
    if (gateway === undefined || functions === undefined) throw new Error('gateway or functions unavailable');
    observer.start();
    const names = system.objects;
    const isTrueAt = (name: string, generation: number): boolean => {
      const current = observer.current(name);
      return current !== undefined && current.condition.status === 'True' && current.condition.observedGeneration >= generation;
    };
    await waitUntil(() => names.every((name) => isTrueAt(name, 1)), options.startTimeoutMs, 'every object True at generation 1');
    await requireWholeFleet(system, options.envoys, options.startTimeoutMs);
    const initialConvergenceMs = Date.now() - startedAt;

    const soakStart = Date.now();
    const pids = (): Partial<Record<'gateway' | 'fleet' | 'dynalite', number>> => ({
      ...(gateway.pid === undefined ? {} : { gateway: gateway.pid }),
      fleet: system.fleet.pid,
      ...(system.dynamo.local.dynalite.pid === undefined ? {} : { dynalite: system.dynamo.local.dynalite.pid }),
    });
    const rssTimeline: RssSample[] = [];
    const frontSamples: Array<{ atMs: number; records: number; writeRequests: number }> = [];
    const sample = (): void => {
      const atMs = Date.now() - soakStart;
      rssTimeline.push(sampleRss(atMs, pids(), gateway.bootId));
      frontSamples.push({ atMs, records: system.dynamo.local.stats.records, writeRequests: system.dynamo.local.stats.capturedWrites });
    };
    sample();
    timers.push(setInterval(sample, options.sampleMs));

    // The types reflecting an object do not change during a soak (the samples' shape is fixed): once
    // a rebuild shows them, they are kept, so the rebuild log's capacity cannot lose them.
    const reflecting = new Map<string, readonly string[]>();
    const typesOf = (object: string): readonly string[] => {
      const known = reflecting.get(object);
      if (known !== undefined) return known;
      const found = typesReflecting(object, { subscribedTypes: SUBSCRIBED_TYPES, rebuildLogs: system.controlPlane.replicas.map((replica) => replica.controlPlane.rebuildLog) });
      if (found.length > 0) reflecting.set(object, found);
      return found;
    };
    const judge = trueWriteJudge(system.fleet.queries, table.store, refOf, {
      typesOf,
      sourcePrefix: `${HTTPPROXY_TRACKED_KIND.group}/${HTTPPROXY_TRACKED_KIND.kind}/${SAMPLE_NAMESPACE}/`,
      envoyTtlMs: system.options.envoyTtlMs,
      envoyHeartbeatMs: localEnvoyHeartbeatMs(system.options.envoyTtlMs),
    });
    const baseBudgetMs = system.options.envoyTtlMs + 5000;
    const convergence = convergenceTracker(baseBudgetMs);
    const eds = startEdsChurn(system.controlPlane, options.objects, options.edsIntervalMs);
    const specs = startSpecChanges(system.kube.url, options.objects, options.specIntervalMs, options.specPerTick);
    const faults = startSoakFaults(gateway, system.dynamo.local.faults, options);
    const allChanges = (): readonly SpecChange[] => specs.changes;
    let judging: Promise<void> = Promise.resolve();
    const judgeNow = (until: number): Promise<void> => {
      judging = judging.then(() => judge.judgeUntil(observer.writes, until)).catch((error: unknown) => logger.error({ err: error }, 'judging True writes failed'));
      return judging;
    };
    timers.push(
      setInterval(() => {
        void judgeNow(Date.now() - JUDGE_LAG_MS);
        convergence.update(allChanges(), observer.writes, faults.windows, Date.now());
      }, JUDGE_EVERY_MS),
    );
    let printed = 0;
    const progress = setInterval(() => {
      const minutes = round((Date.now() - soakStart) / 60_000, 1);
      // Each violation as it is found, so a run that dies before its report still says what it saw.
      const found = [...judge.result.violations, ...convergence.violations];
      for (const violation of found.slice(printed)) process.stderr.write(`soak: violation ${violation.check}: ${violation.detail}\n`);
      printed = found.length;
      process.stderr.write(`soak: ${minutes} min, ${specs.changes.length} spec changes, ${eds.changes} endpoint changes, ${faults.windows.length} faults, ${judge.result.violations.length + convergence.violations.length} violations so far\n`);
    }, 60_000);
    timers.push(progress);

    await sleep(options.minutes * 60_000);
    const soakMs = Date.now() - soakStart;

    // Faults off, no more spec changes; the endpoints keep churning while the objects converge.
    await faults.stop();
    await specs.stop();
    const settleStart = Date.now();
    for (;;) {
      convergence.update(allChanges(), observer.writes, faults.windows, Date.now());
      if (convergence.open === 0) break;
      await sleep(500);
    }
    const settleMs = Date.now() - settleStart;
    eds.stop();
    // Settled: stream mappings caught up (heartbeats may keep them busy: then the recount's own settle window copes).
    await Promise.all([functions.deliveries.convergence.idle(60_000), functions.deliveries.status.idle(60_000)]).catch(() => undefined);
    await sleep(JUDGE_LAG_MS);
    await judgeNow(Number.POSITIVE_INFINITY);
    const drift = await checkAggregatesMatchRecount(recountContext.deps);
    // The fleet child answers from every response it kept; after a long run at 2,000 Envoys it did not
    // answer within its 60 s (the first 30-minute run lost its whole report to that): say so instead.
    const acks = await system.fleet.queries.ackCount(soakStart).catch((error: unknown) => `unavailable (${error instanceof Error ? error.message : String(error)})`);
    for (const timer of timers) clearInterval(timer);
    sample();

    const lostStreamRecords = system.dynamo.local.stats.lostRecords;
    const violations: SoakViolation[] = [
      ...judge.result.violations,
      ...convergence.violations,
      ...drift.map((finding) => ({ check: 'aggregate-drift' as const, detail: finding.detail })),
      ...(lostStreamRecords > 0 ? [{ check: 'lost-stream-records' as const, detail: `${lostStreamRecords} writes without a stream record (local front)` }] : []),
    ];
    const byCheck: SoakResult['violations']['byCheck'] = {};
    for (const violation of violations) byCheck[violation.check] = (byCheck[violation.check] ?? 0) + 1;
    const items = perMinute(frontSamples.map((s) => ({ atMs: s.atMs, value: s.records })));
    const rssSlopeFromMs = Math.floor(soakMs / 2);
    const { violations: _judged, ...trueWrites } = judge.result;
    return {
      conditions: `the local system on this machine (${system.options.dynaliteProcess === 'child' ? 'dynalite, ' : ''}the gateway and ${options.envoys} simulated Envoys (ADS SotW, 4 types) each in a child process; one reference control-plane replica); ${options.objects} HTTPProxies; Envoy TTL ${system.options.envoyTtlMs} ms; resync every ${options.resyncEveryMs} ms; ${options.progressPath ? 'fleet-size path (PROGRESS decides, Envoy states on class changes only)' : 'shard path'}`,
      options,
      startedAt: new Date(startedAt).toISOString(),
      initialConvergenceMs,
      soakMs,
      settleMs,
      violations: { total: violations.length, byCheck, details: violations.slice(0, 50) },
      trueWrites,
      convergence: {
        changes: allChanges().length,
        superseded: convergence.superseded,
        changeToTrueMs: summarize(convergence.changeToTrueMs),
        baseBudgetMs,
        outcomes: convergence.outcomes.map(({ at, ...outcome }) => ({ ...outcome, atMs: at - soakStart })),
      },
      recount: { drift: drift.length, details: drift.slice(0, 20).map((finding) => finding.detail) },
      lostStreamRecords,
      rss: summarizeRss(rssTimeline, rssSlopeFromMs),
      rssSlopeFromMs,
      itemWritesPerMinute: {
        mean: items.length === 0 ? Number.NaN : Math.round(items.reduce((sum, n) => sum + n, 0) / items.length),
        max: Math.max(0, ...items),
        perMinute: items,
        writeRequestsPerMinute: perMinute(frontSamples.map((s) => ({ atMs: s.atMs, value: s.writeRequests }))),
      },
      conditionWrites: countConditionWrites(observer.writes, VERDICT_WRITE_BOUND),
      load: { edsChanges: eds.changes, specChanges: specs.changes.length, specChangeFailures: specs.failures.slice(0, 20), acks },
      faults: {
        windows: faults.windows.map((window) => ({ ...window })),
        throttledRequests: system.dynamo.local.faults.counts.throttled,
        gatewayRestarts: faults.windows.filter((window) => window.kind === 'gateway-restart').length,
        gatewayKills: faults.windows.filter((window) => window.kind === 'gateway-kill').length,
        failed: faults.windows.flatMap((window) => (window.error === undefined ? [] : [`${window.kind} at ${new Date(window.startedAt).toISOString()}: ${window.error}`])),
      },
      rssTimeline,
    };
  } finally {
    for (const timer of timers) clearInterval(timer);
    await observer.stop();
    table.close();
    recountContext.close();
    await system.close();
  }
}

export function formatSoakSummary(result: SoakResult): string {
  const lines: string[] = [];
  const o = result.options;
  lines.push(`soak: ${round(result.soakMs / 60_000, 1)} min, ${o.envoys} Envoys, ${o.objects} objects (initial convergence ${round(result.initialConvergenceMs / 1000, 1)} s, settle ${round(result.settleMs / 1000, 1)} s)`);
  lines.push(`  load: ${result.load.edsChanges} endpoint changes (every ${o.edsIntervalMs} ms), ${result.load.acks} responses ACKed by the fleet, ${result.load.specChanges} spec changes${result.load.specChangeFailures.length > 0 ? ` (${result.load.specChangeFailures.length} failed)` : ''}`);
  lines.push(`  faults: ${result.faults.gatewayRestarts} gateway restarts, ${result.faults.gatewayKills} gateway SIGKILLs, ${result.faults.windows.filter((w) => w.kind === 'dynamo-throttle').length} throttle windows (${result.faults.throttledRequests} requests throttled)${result.faults.failed.length > 0 ? `; failed: ${result.faults.failed.join('; ')}` : ''}`);
  lines.push(`  VIOLATIONS: ${result.violations.total} ${JSON.stringify(result.violations.byCheck)}`);
  for (const violation of result.violations.details.slice(0, 10)) lines.push(`    - ${violation.check}: ${violation.detail}`);
  lines.push(`  True writes judged against the fleet: ${result.trueWrites.judged} (unjudged ${result.trueWrites.unjudged.length}, join race ${result.trueWrites.joinRace})`);
  const c = result.convergence.changeToTrueMs;
  lines.push(`  spec changes → True: ${c.count} of ${result.convergence.changes} (superseded ${result.convergence.superseded}); p50 ${c.p50} ms, p99 ${c.p99} ms, max ${c.max} ms; budget ${result.convergence.baseBudgetMs} ms + fault time`);
  lines.push(`  lost or double-counted (recount drift): ${result.recount.drift}; lost stream records: ${result.lostStreamRecords}`);
  lines.push(`  RSS (MiB; slope over t ≥ ${round(result.rssSlopeFromMs / 60_000, 1)} min):`);
  for (const [name, summary] of Object.entries(result.rss)) {
    lines.push(`    ${name.padEnd(8)} first ${summary.firstMiB}  last ${summary.lastMiB}  max ${summary.maxMiB}  slope ${summary.slopeMiBPerHour} MiB/h${summary.slopeOver ? ` (over boot ${summary.slopeOver.bootId}, ${round(summary.slopeOver.fromMs / 1000, 0)}–${round(summary.slopeOver.toMs / 1000, 0)} s)` : ''}`);
  }
  const w = result.itemWritesPerMinute;
  lines.push(`  item writes per minute: mean ${w.mean}, max ${w.max} [${w.perMinute.join(', ')}]; write requests per minute [${w.writeRequestsPerMinute.join(', ')}]`);
  const cw = result.conditionWrites;
  lines.push(`  condition writes per object per generation (status/reason changes): mean ${cw.verdictWritesPerGeneration.mean}, max ${cw.verdictWritesPerGeneration.max} over ${cw.generations} generations; message refreshes ${cw.messageRefreshes}; over the bound ${cw.bound}: ${cw.boundExceeded.length}`);
  for (const detail of cw.boundExceeded.slice(0, 5)) lines.push(`    - ${detail}`);
  return lines.join('\n');
}

export function parseSoakArgs(argv: string[]): SoakOptions {
  const program = new Command()
    .name('soak')
    .option('--minutes <n>', 'soak duration (faults and spec changes), before the settle phase', positiveInteger, 30)
    .option('--envoys <n>', 'simulated Envoys (≤ 5000)', positiveInteger, 2000)
    .option('--objects <n>', 'HTTPProxy objects', positiveInteger, 20)
    .option('--eds-interval-ms <n>', 'an endpoint change every this often', positiveInteger, 1000)
    .option('--spec-interval-ms <n>', 'a spec change tick every this often', positiveInteger, 20_000)
    .option('--spec-per-tick <n>', 'objects whose route moves per spec tick (round robin)', positiveInteger, 1)
    .option('--gateway-restart-every-ms <n>', 'gateway SIGTERM + new process every this often (0: never)', nonNegativeInteger, 300_000)
    .option('--gateway-kill-every-ms <n>', 'gateway SIGKILL + new process every this often (0: never)', nonNegativeInteger, 420_000)
    .option('--throttle-every-ms <n>', 'a DynamoDB throttling window every this often (0: never)', nonNegativeInteger, 180_000)
    .option('--throttle-ms <n>', 'length of a throttling window', nonNegativeInteger, 20_000)
    .option('--throttle-rate <x>', 'fraction of requests throttled during a window', (value: string) => {
      const rate = Number(value);
      if (!(rate >= 0 && rate <= 1)) throw new Error(`not a fraction: ${value}`);
      return rate;
    }, 0.5)
    .option('--sample-ms <n>', 'RSS and write-counter sampling period', positiveInteger, 5000)
    .option('--resync-every-ms <n>', "the resync function's schedule (it repairs drift the recount should see)", positiveInteger, 900_000)
    .option('--start-timeout-ms <n>', 'upper bound for the initial convergence', positiveInteger, 600_000)
    .option('--out <file>', 'JSON result (default .cache/soak/soak-<timestamp>.json)')
    .option('--shard-path', 'the shard path: every Envoy state written, the shards decide (default: the fleet-size path, PROGRESS decides)', false)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const { shardPath, ...opts } = program.opts<Omit<SoakOptions, 'out' | 'progressPath'> & { out?: string; shardPath: boolean }>();
  return { ...opts, progressPath: !shardPath, ...(opts.out === undefined ? {} : { out: opts.out }) };
}

export async function run(argv: string[]): Promise<void> {
  const options = parseSoakArgs(argv);
  const result = await runSoak(options);
  const out = options.out ?? join(__dirname, '..', '.cache', 'soak', `soak-${result.startedAt.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(formatSoakSummary(result));
  console.log(`  result: ${out}`);
  if (result.violations.total > 0) process.exitCode = 1;
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
