// The truth checker's command: `npx tsx test/truth/run.ts --schedules 50 --seed N`.
// Exit code 0 when no invariant was violated, 1 otherwise; a failure prints each failing seed, its
// event trace and the violations, so `--seed <seed> --schedules 1` replays that schedule.
import { Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import { runTruth, type ScheduleResult } from './runner';
import { runContourTruth } from './contour-runner';
import { DEFAULT_FLEET_MIX_TEXT, parseFleetMix, type FleetMix } from './fleet-mix';

function fleetMix(value: string): FleetMix {
  try {
    return parseFleetMix(value);
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
  }
}

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError(`expected a non-negative integer, got "${value}"`);
  return parsed;
}

function controlPlaneMode(value: string): 'reference' | 'contour' {
  if (value !== 'reference' && value !== 'contour') throw new InvalidArgumentError(`expected reference or contour, got "${value}"`);
  return value;
}

function printFailure(result: ScheduleResult, extraArgs = ''): void {
  process.stdout.write(`\nFAILED schedule seed=${result.seed} (replay: npx tsx test/truth/run.ts --seed ${result.seed} --schedules 1${extraArgs})\n`);
  process.stdout.write(`trace:\n${result.steps.map((step) => `  ${step}`).join('\n')}\n`);
  process.stdout.write(`violations:\n${result.violations.map((v) => `  [${v.invariant}] ${v.detail}`).join('\n')}\n`);
}

async function main(): Promise<void> {
  const program = new Command()
    .name('truth')
    .description('Seeded randomized fault injection against the in-process system; checks the issue-8 invariants against the fleet ground truth.')
    .option('--schedules <n>', 'number of schedules', positiveInt, 50)
    .option('--seed <n>', 'seed of the first schedule (schedule i uses seed + i)', positiveInt, Date.now() % 1_000_000)
    .option('--envoys <n>', 'simulated Envoys', positiveInt, 6)
    .option('--objects <n>', 'HTTPProxy objects', positiveInt, 3)
    .option('--steps <n>', 'fault steps per schedule', positiveInt, 12)
    .option('--duration-ms <n>', 'window over which a schedule\'s steps are spread', positiveInt, 2500)
    .option('--write-bound <n>', 'invariant 4: max condition writes per object per generation', positiveInt, 6)
    .option('--recovery-budget-ms <n>', 'invariant 3: heal → every object True (default: TTL + 5 s = 9000)', positiveInt)
    .option('--gateway-kill', 'run the gateway as a child process and SIGKILL + restart it in schedules', false)
    .option('--shard-path', 'the shard path: the gateway writes every Envoy state (--progress false) and the functions decide from the aggregate shards (default: the fleet-size path, as the product: PROGRESS, states on class changes only, PROGRESS_EVALUATION)', false)
    .option('--progress-evaluation', 'the fleet-size path (the default; kept so that recorded commands run unchanged)', false)
    .option('--fleet-sizes <list>', 'fleet sizes to cycle through on the one system, e.g. "6,12,24" (the fleet scales before each block of schedules)', (value: string) => value.split(',').map((part) => positiveInt(part)))
    .option('--fleet-size-every <n>', 'schedules per fleet size (with --fleet-sizes)', positiveInt, 10)
    .option('--no-leader-change', 'leave control-plane leader changes (leaderKill, leaderStepDown) out of the schedules')
    .option('--real-clients <n>', 'real @grpc/grpc-js-xds clients among the Envoys (ground truth from a tap on their xDS stream)', positiveInt, 1)
    .option('--core-clients <n>', 'real gRPC C-core clients (grpcio; judged by their own CSDS dumps too)', positiveInt, 2)
    .option('--go-clients <n>', 'real grpc-go clients (judged by their own CSDS dumps too)', positiveInt, 1)
    .option('--fleet-mix <mix>', 'Envoy modes and weights: ads-sotw, ads-delta, per-type-sotw, per-type-delta (e.g. "ads-sotw" alone)', fleetMix, parseFleetMix(DEFAULT_FLEET_MIX_TEXT))
    .option('--log-level <level>', 'pino level for the system under test', 'silent')
    .option('--gateway-log <file>', 'with --gateway-kill: append the gateway process\'s warnings and errors to this file')
    .option('--control-plane <mode>', 'reference, or unmodified Contour (content ground truth from route prefixes; no real gRPC clients, no tamper, no gateway kill)', controlPlaneMode, 'reference')
    .parse();
  const opts = program.opts<{ schedules: number; seed: number; envoys: number; objects: number; steps: number; durationMs: number; writeBound: number; recoveryBudgetMs?: number; gatewayKill: boolean; shardPath: boolean; leaderChange: boolean; fleetMix: FleetMix; realClients: number; coreClients: number; goClients: number; logLevel: string; controlPlane: 'reference' | 'contour'; fleetSizes?: number[]; fleetSizeEvery: number; gatewayLog?: string }>();
  process.stdout.write(`truth: ${opts.schedules} schedules from seed ${opts.seed}, ${opts.envoys} Envoys, ${opts.objects} objects, ${opts.steps} steps each\n`);
  const started = Date.now();
  const progressEvaluation = !opts.shardPath;
  const onSchedule = (result: ScheduleResult): void => {
    process.stdout.write(
      `${result.seed < 0 ? 'NACK probe' : `seed ${result.seed}`}${result.resized === undefined ? '' : ` (fleet ${result.resized.change > 0 ? '+' : ''}${result.resized.change} → ${result.resized.envoys})`}: ${result.faultsInjected} faults, ${result.nacksSeen} NACKs, ${result.trueWritesChecked} True writes checked (${result.clientContentChecked} ${opts.controlPlane === 'contour' ? "× Envoys by held content" : "against real clients' CSDS"}), ` +
        `recovery ${result.recoveryMs} ms, max writes/gen ${result.maxWritesPerGeneration}, known races ${result.knownRaces.length}, violations ${result.violations.length}\n`,
    );
    if (result.violations.length > 0) printFailure(result, `${opts.controlPlane === 'contour' ? ' --control-plane contour' : ''}${progressEvaluation ? '' : ' --shard-path'}`);
  };
  const logger = pino({ level: opts.logLevel });
  const shape = { schedules: opts.schedules, seed: opts.seed, envoys: opts.envoys, objects: opts.objects, stepsPerSchedule: opts.steps, scheduleDurationMs: opts.durationMs, writeBound: opts.writeBound };
  const budget = opts.recoveryBudgetMs === undefined ? {} : { recoveryBudgetMs: opts.recoveryBudgetMs };
  const report = opts.controlPlane === 'contour'
    ? await runContourTruth({ ...shape, ...budget, leaderChange: opts.leaderChange, fleetMix: opts.fleetMix, progressPath: progressEvaluation, logger, onSchedule })
    : await runTruth({
    schedules: opts.schedules,
    seed: opts.seed,
    envoys: opts.envoys,
    objects: opts.objects,
    stepsPerSchedule: opts.steps,
    scheduleDurationMs: opts.durationMs,
    writeBound: opts.writeBound,
    gatewayKill: opts.gatewayKill,
    ...(opts.gatewayLog === undefined ? {} : { gatewayLogFile: opts.gatewayLog }),
    progressEvaluation,
    leaderChange: opts.leaderChange,
    fleetMix: opts.fleetMix,
    realClients: opts.realClients,
    peers: { core: opts.coreClients, go: opts.goClients },
    ...(opts.fleetSizes === undefined ? {} : { fleetSizes: opts.fleetSizes, fleetSizeEvery: opts.fleetSizeEvery }),
    ...(opts.recoveryBudgetMs === undefined ? {} : { recoveryBudgetMs: opts.recoveryBudgetMs }),
    logger,
    onSchedule,
  });
  process.stdout.write(
    `\nschedules ${report.schedules.length}, faults injected ${report.faultsInjected}, True writes checked ${report.trueWritesChecked} (× ${opts.controlPlane === 'contour' ? 'Envoys by held content' : 'real clients by content'}: ${report.clientContentChecked}), ` +
      `violations ${report.violations}, known races ${report.knownRaces}, max recovery ${report.maxRecoveryMs} ms, ` +
      `max writes per object per generation ${report.maxWritesPerGeneration}, competing-writer 409s ${report.stormConflicts}, elapsed ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  process.stdout.write(`fleet: ${report.fleet}\n`);
  process.stdout.write(
    `control-plane Lease transitions ${report.leaseTransitions}; tampering competitor: ${report.competitorWrites} writes, ${report.repairs} repaired by us, max repair ${report.maxRepairMs} ms (post-recovery tamper + one resync condition pass)\n`,
  );
  const stream = report.streamFaults;
  process.stdout.write(`stream delivery faults applied: ${stream.duplicatedBatches} batches (${stream.duplicatedRecords} records) delivered again, ${stream.reorderedBatches} batches (${stream.reorderedRecords} records moved) reordered across items\n`);
  process.stdout.write(`faults by kind: ${Object.entries(report.faultsByKind).sort().map(([kind, count]) => `${kind} ${count}`).join(', ')}\n`);
  if (report.failedSeeds.length > 0) process.stdout.write(`failing seeds: ${report.failedSeeds.join(', ')}\n`);
  process.exitCode = report.violations > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  process.stderr.write(`truth checker error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 2;
});
