// The bench report (docs/bench/README.md): runs, per size, the end-to-end bench (ours), the gateway-vs-direct
// bench (baseline a), the Knative-style prober (b) and the Istio-style reporter (c), plus the
// convergence per-batch bench; merges the rows into docs/bench/results.json (a size run again
// replaces its row) and regenerates docs/bench/README.md and the SVG plots from the whole file.
//
//   npm run bench -- report --quick                 100 Envoys × 100 objects (a few minutes)
//   npm run bench -- report --sizes 1000x500        one or more sizes, comma-separated
//   npm run bench -- report --render-only           README and plots from results.json as it is
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { z } from 'zod';
import { runIstioBaseline, runKnativeBaseline, type BaselineOptions } from './baselines';
import { runConvergenceBench } from './convergence';
import { defaultRecorderWritesOptions, runRecorderWrites } from './recorder-writes';
import { runE2e } from './e2e';
import { runMode } from './gateway';
import { renderReadme } from './support/readme';
import { mergeRuns, sizeKey, withMachine, type BenchResults, type GatewayModeSummary, type SizeRun } from './support/results';
import { renderLineChart } from './support/svg';
import { positiveInteger } from './support/args';

export const DOCS_BENCH_DIR = join(__dirname, '..', 'docs', 'bench');

export interface Size {
  envoys: number;
  objects: number;
}

export function parseSizes(text: string): Size[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(part);
    if (!match) throw new InvalidArgumentError(`not a size like 1000x500: "${part}"`);
    const size = { envoys: Number(match[1]), objects: Number(match[2]) };
    if (size.envoys < 1 || size.objects < 1) throw new InvalidArgumentError(`sizes must be positive: "${part}"`);
    return size;
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function modeSummary(mode: Awaited<ReturnType<typeof runMode>>): GatewayModeSummary {
  return {
    mode: mode.mode,
    envoys: mode.envoys,
    deliveryP50Ms: mode.deliveryP50Ms,
    deliveryP99Ms: mode.deliveryP99Ms,
    relayRssPerStreamKiB: mode.relayRssPerStreamKiB,
    relayHeapPerStreamKiB: mode.relayHeapPerStreamKiB,
  };
}

/** Runs every stage for one size; a stage that fails is recorded and the next one still runs. */
/** The stages of a size run; `--stages` picks some (e.g. only e2e and gateway at 5,000 Envoys, where the Knative prober alone takes hours). */
/**
 * `fleet-size` is the e2e bench on the fleet-size path alone (`--progress-path` adds it after `e2e`):
 * at 10,000 Envoys the shard path's run alone takes most of the phase timeout.
 */
export const SIZE_STAGES = ['e2e', 'fleet-size', 'gateway', 'knative', 'istio'] as const;
export type SizeStage = (typeof SIZE_STAGES)[number];
/** The stages run when `--stages` is not given. */
export const DEFAULT_SIZE_STAGES: readonly SizeStage[] = ['e2e', 'gateway', 'knative', 'istio'];

export async function runSize(
  size: Size,
  changed: number,
  log: (line: string) => void,
  burst = false,
  stages: readonly SizeStage[] = DEFAULT_SIZE_STAGES,
  timeoutMs = 600_000,
  progressPath = false,
  ackTimeoutMs?: number,
): Promise<SizeRun> {
  const ackTimeout = ackTimeoutMs === undefined ? {} : { ackTimeoutMs };
  // `--progress-path`: both paths of a size, back to back (the fleet-size row right after the shard row).
  const runStages: readonly SizeStage[] = progressPath && stages.includes('e2e') && !stages.includes('fleet-size') ? [...stages, 'fleet-size'] : stages;
  const started = Date.now();
  const run: SizeRun = { envoys: size.envoys, objects: size.objects, changed: Math.min(changed, size.objects), finishedAt: '', durationSeconds: 0, errors: [] };
  const stage = async (name: string, body: () => Promise<void>, which: SizeStage): Promise<void> => {
    if (!runStages.includes(which)) return;
    const at = Date.now();
    log(`[${sizeKey(size)}] ${name}…`);
    try {
      await body();
      log(`[${sizeKey(size)}] ${name} done in ${Math.round((Date.now() - at) / 1000)} s`);
    } catch (error) {
      run.errors.push(`${name}: ${describe(error)}`);
      log(`[${sizeKey(size)}] ${name} FAILED: ${describe(error)}`);
    }
  };
  await stage('e2e', async () => {
    run.e2e = await runE2e({ envoys: size.envoys, objects: size.objects, changed: run.changed, phaseTimeoutMs: timeoutMs, patchConcurrency: 16, ...ackTimeout });
  }, 'e2e');
  await stage('e2e on the fleet-size path', async () => {
    run.e2eProgressPath = await runE2e({ envoys: size.envoys, objects: size.objects, changed: run.changed, phaseTimeoutMs: timeoutMs, patchConcurrency: 16, progressPath: true, ...ackTimeout });
  }, 'fleet-size');
  if (burst) {
    await stage('e2e burst (every object changed)', async () => {
      run.e2eBurst = await runE2e({ envoys: size.envoys, objects: size.objects, phaseTimeoutMs: timeoutMs, patchConcurrency: 16, ...ackTimeout });
    }, 'e2e');
  }
  const changes = 3;
  await stage('gateway vs direct', async () => {
    const options = { envoys: size.envoys, changes, channels: Math.min(8, Math.max(1, Math.ceil(size.envoys / 250))), objects: 1 };
    const direct = await runMode('direct', options);
    const relay = await runMode('relay', options);
    run.gateway = { direct: modeSummary(direct), relay: modeSummary(relay), changes };
  }, 'gateway');
  const baseline: BaselineOptions = { envoys: size.envoys, objects: size.objects, changed: run.changed, timeoutMs };
  await stage('knative prober', async () => {
    run.knative = await runKnativeBaseline(baseline);
  }, 'knative');
  await stage('istio reporter', async () => {
    run.istio = await runIstioBaseline(baseline);
  }, 'istio');
  run.finishedAt = new Date().toISOString();
  run.durationSeconds = Math.round((Date.now() - started) / 1000);
  run.machine = machineDescription();
  return run;
}

const resultsFileSchema = z.object({ machine: z.string(), runs: z.array(z.unknown()), convergence: z.unknown().optional(), recorderWrites: z.unknown().optional() });

export function loadResults(dir: string): BenchResults | undefined {
  const file = join(dir, 'results.json');
  if (!existsSync(file)) return undefined;
  // Our own file, written by writeReport; checked only for its outline so a hand-broken file is a
  // clear error rather than a half-rendered README.
  const parsed = resultsFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  return parsed as BenchResults;
}

export function machineDescription(): string {
  const list = cpus();
  return `${list.length} × ${list[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/** Writes results.json, README.md and the three SVG plots into `dir`. */
export function writeReport(dir: string, results: BenchResults): string[] {
  mkdirSync(dir, { recursive: true });
  const runs = results.runs;
  const labels = runs.map(sizeKey);
  const e2e = (pick: (run: SizeRun) => number | undefined): Array<number | undefined> => runs.map(pick);
  const files: Record<string, string> = {
    'results.json': `${JSON.stringify(results, null, 2)}\n`,
    'README.md': renderReadme(results),
    'latency.svg': renderLineChart({
      title: 'Latency vs fleet size (p99)',
      xLabel: 'Envoys × objects',
      yLabel: 'milliseconds',
      xLabels: labels,
      target: { value: 250, label: 'target: last ACK → True 250 ms' },
      series: [
        { name: 'ours: last ACK → True', values: e2e((r) => r.e2e?.lastAckToTrueMs.p99) },
        { name: 'ours: change → True', values: e2e((r) => r.e2e?.changeToTrueMs.p99) },
        { name: 'ours, burst: last ACK → True', values: e2e((r) => r.e2eBurst?.lastAckToTrueMs.p99) },
        { name: 'control plane delivery (via gateway)', values: e2e((r) => r.e2e?.changeToLastAckMs.p99) },
        { name: 'direct delivery (baseline a)', values: e2e((r) => r.gateway?.direct.deliveryP99Ms), dashed: true },
        { name: 'Knative: change → Ready', values: e2e((r) => r.knative?.changeToReadyMs.p99), dashed: true },
        { name: 'Istio: change → Reconciled', values: e2e((r) => r.istio?.changeToReconciledMs.p99), dashed: true },
      ],
    }),
    'writes.svg': renderLineChart({
      title: 'Kubernetes writes per object per generation',
      xLabel: 'Envoys × objects',
      yLabel: 'writes',
      xLabels: labels,
      target: { value: 2, label: 'target ≤ 2' },
      series: [
        { name: 'ours (condition changes)', values: e2e((r) => r.e2e?.kubeConditionWritesPerObjectGeneration.generation2) },
        { name: 'Istio-style status writes', values: e2e((r) => r.istio?.statusWritesPerObjectGeneration), dashed: true },
      ],
    }),
    'requests.svg': renderLineChart({
      title: 'Requests per changed object',
      xLabel: 'Envoys × objects',
      yLabel: 'requests',
      xLabels: labels,
      series: [
        { name: 'ours: DynamoDB writes', values: e2e((r) => r.e2e?.dynamo.writesPerChange) },
        { name: 'ours: DynamoDB reads', values: e2e((r) => r.e2e?.dynamo.readsPerChange) },
        { name: 'ours: function invocations', values: e2e((r) => r.e2e?.functionInvocations.perChange) },
        { name: 'Knative: probe requests', values: e2e((r) => r.knative?.probesPerObject), dashed: true },
      ],
    }),
  };
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return Object.keys(files).map((name) => join(dir, name));
}

interface ReportArgs {
  quick: boolean;
  sizes: Size[] | undefined;
  changed: number;
  convergence: boolean;
  recorderWrites: boolean;
  renderOnly: boolean;
  burst: boolean;
  progressPath: boolean;
  convergenceOnly: boolean;
  out: string;
  stages: SizeStage[];
  phaseTimeoutMs: number;
  ackTimeoutMs?: number;
}

function parseStages(value: string): SizeStage[] {
  const stages = value.split(',').map((s) => s.trim());
  for (const stage of stages) if (!(SIZE_STAGES as readonly string[]).includes(stage)) throw new InvalidArgumentError(`unknown stage ${stage} (${SIZE_STAGES.join(', ')})`);
  return stages as SizeStage[];
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('bench report')
    .option('--quick', '100 Envoys × 100 objects only', false)
    .option('--sizes <list>', 'Envoys x objects, comma-separated (default: 100x100,1000x500,5000x500)', parseSizes)
    .option('--changed <n>', 'objects changed at once in the Knative/Istio baselines', positiveInteger, 10)
    .option('--no-recorder-writes', 'skip bench/recorder-writes.ts (gateway item writes per ACK, both event-log modes)')
    .option('--no-convergence', 'skip bench/convergence.ts (items read per batch at 1k vs 10k Envoys)')
    .option('--burst', 'also run the e2e bench with every object changed at once', false)
    .option('--progress-path', 'also run the e2e bench on the fleet-size path (PROGRESS decides, Envoy states on class changes only), right after the shard path\'s', false)
    .option('--convergence-only', 'run only bench/convergence.ts, keep the size runs as they are', false)
    .option('--render-only', 'only regenerate README and plots from results.json', false)
    .option('--out <dir>', 'output directory', DOCS_BENCH_DIR)
    .option('--phase-timeout-ms <n>', 'upper bound per e2e phase and baseline', positiveInteger, 600_000)
    .option('--ack-timeout-ms <n>', 'ACK timeout of the e2e runs\' gateway and functions (default: the local system\'s 10 s; the gateway\'s own default is 30 s)', positiveInteger)
    .option('--stages <list>', `stages per size, comma-separated, of ${SIZE_STAGES.join(', ')} (default: ${DEFAULT_SIZE_STAGES.join(',')})`, parseStages, [...DEFAULT_SIZE_STAGES])
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const args = program.opts<ReportArgs>();
  const previous = loadResults(args.out);
  // Rendering only measures nothing: the rows keep the machine they were measured on.
  const results: BenchResults = { machine: args.renderOnly && previous !== undefined ? previous.machine : machineDescription(), runs: previous === undefined ? [] : withMachine(previous.runs as SizeRun[], previous.machine), ...(previous?.convergence ? { convergence: previous.convergence } : {}), ...(previous?.recorderWrites ? { recorderWrites: previous.recorderWrites } : {}) };
  if (!args.renderOnly) {
    const sizes = args.convergenceOnly ? [] : (args.sizes ?? (args.quick ? [{ envoys: 100, objects: 100 }] : parseSizes('100x100,1000x500,5000x500')));
    const log = (line: string): void => console.log(`${new Date().toISOString()} ${line}`);
    for (const size of sizes) {
      const fresh = await runSize(size, args.changed, log, args.burst, args.stages, args.phaseTimeoutMs, args.progressPath, args.ackTimeoutMs);
      results.runs = mergeRuns(results.runs, [fresh]);
      // Written after every size: a long run interrupted later keeps what it measured.
      writeReport(args.out, results);
    }
    if (args.convergence) {
      log('convergence per batch (1,000 vs 10,000 Envoys)…');
      try {
        const rows = await runConvergenceBench({ fleets: [1000, 10000], batch: 100, pending: 20, shards: 16 });
        results.convergence = { rows, finishedAt: new Date().toISOString(), conditions: '100 Envoy STATE records per batch, 20 pending generations, 16 shards, dynalite' };
      } catch (error) {
        log(`convergence bench FAILED: ${describe(error)}`);
      }
    }
    if (args.recorderWrites) {
      log('gateway item writes per ACK, old vs new event log (100 and 1,000 Envoys)…');
      try {
        const rows = await runRecorderWrites(defaultRecorderWritesOptions);
        const { envoys, types, changes } = defaultRecorderWritesOptions;
        results.recorderWrites = { rows, finishedAt: new Date().toISOString(), conditions: `the gateway's Recorder against dynalite, ${envoys.join(' and ')} Envoys, ${changes} changes touching ${types.join(' or ')} types each, both event-log modes in the same run` };
      } catch (error) {
        log(`recorder-writes bench FAILED: ${describe(error)}`);
      }
    }
  }
  const written = writeReport(args.out, results);
  console.log(renderReadme(results).split('## End to end')[0]);
  console.log(`written: ${written.join(', ')}`);
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
