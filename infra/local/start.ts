// `npm start`: the whole system locally, in one process, on embedded defaults (docs/OPERATIONS.md):
// local DynamoDB with streams, a Kubernetes API server, two control-plane replicas, the gateway, the
// functions, an Envoy fleet, sample HTTPProxies, and a live view. Ctrl-C shuts everything down.
// `--control-plane contour` runs unmodified Contour instead of the reference control plane
// (docs/CONTOUR.md).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { listHttpProxies, startLiveView, type LiveView, type ObjectProgress } from './system/live-view';
import { CONTOUR_INSTALL_HINT } from './system/contour';
import { startLocalSystem, type ControlPlaneMode, type LocalSystem } from './system';

function integer(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max) throw new InvalidArgumentError(`must be an integer in ${min}..${max}`);
    return value;
  };
}

function fraction(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new InvalidArgumentError('must be a number in 0..1');
  return value;
}

interface StartFlags {
  envoys: number;
  grpcClients: number;
  objects: number;
  nackRate: number;
  slowEnvoys: number;
  slowAckMs: number;
  replicas: number;
  controlPlane: ControlPlaneMode;
  ui: boolean;
  portBase: number;
  stateDir?: string;
  logLevel: string;
  ackTimeoutMs: number;
}

function program(): Command {
  return new Command('npm start')
    .description('Run xds-programmed locally: DynamoDB, Kubernetes, control plane, gateway, functions, Envoys')
    .option('--envoys <n>', 'simulated Envoys', integer(0, 5000), 8)
    .option('--grpc-clients <n>', 'real @grpc/grpc-js-xds clients', integer(0, 50), 2)
    .option('--objects <n>', 'sample HTTPProxy objects', integer(0, 10_000), 3)
    .option('--nack-rate <r>', 'fraction of simulated Envoys that NACK sample-0\'s cluster', fraction, 0)
    .option('--slow-envoys <n>', 'simulated Envoys that ACK only after --slow-ack-ms (reported stuck first)', integer(0, 5000), 0)
    .option('--slow-ack-ms <ms>', 'ACK delay of the slow Envoys', integer(0, 3_600_000), 15_000)
    .option('--ack-timeout-ms <ms>', 'a response unanswered this long is STUCK', integer(1, 3_600_000), 10_000)
    .option('--replicas <n>', 'control-plane replicas', integer(1, 5), 2)
    .addOption(
      new Option('--control-plane <kind>', 'reference: the project\'s control plane (provenance); contour: unmodified Contour (npm run contour:install), the gateway in barrier mode')
        .choices(['reference', 'contour'])
        .default('reference'),
    )
    .option('--no-ui', 'plain log lines instead of the live view (CI)')
    .option('--port-base <port>', 'fixed ports from here (kube +0, dynamo +1, query +2, gateway xDS +3, ops +4, control planes +11..); 0 = random', integer(0, 65_000), 0)
    .option('--state-dir <dir>', 'where the kubeconfig, env.sh and logs go (default: a new temporary directory)')
    .addOption(new Option('--log-level <level>', 'component log level').choices(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('warn'));
}

type StartedSystem = LocalSystem<'inline', ControlPlaneMode>;

/** The control plane's current status writer, by its replica name. */
async function leaderName(system: StartedSystem): Promise<string | undefined> {
  const controlPlane = system.controlPlane;
  if ('kind' in controlPlane) return (await controlPlane.leader().catch(() => undefined))?.name;
  return controlPlane.leader()?.controlPlane.replicaId;
}

function printEndpoints(system: StartedSystem, leader: string | undefined, out: NodeJS.WritableStream, timings: { componentsMs: number; sinceProcessMs: number }): void {
  const e = system.endpoints;
  const contour = system.options.controlPlane === 'contour';
  const lines = [
    `xds-programmed is running (${system.options.envoys} simulated Envoys + ${system.fleet.roles.real.length} gRPC clients, ${system.objects.length} objects)`,
    ...(contour ? ['  control plane: unmodified Contour; the gateway uses observed-generation barriers and follows its Lease (no gRPC clients: Contour serves no API listeners)'] : []),
    `  components ready in ${(timings.componentsMs / 1000).toFixed(2)} s (${(timings.sinceProcessMs / 1000).toFixed(2)} s since the command started)`,
    `  kubeconfig     ${e.kubeconfigPath}`,
    `  query URL      ${e.queryUrl ?? 'unavailable'}   (Authorization: Bearer ${e.queryToken})`,
    `  metrics URL    ${e.metricsUrl ?? 'unavailable'}`,
    `  gateway xDS    ${e.gatewayXds ?? 'unavailable'}`,
    `  control plane  ${e.controlPlanes.join(', ')} (leader: ${leader ?? 'none yet'})`,
    `  DynamoDB       ${e.dynamoEndpoint} table ${e.tableName}`,
    `  env for the CLI and kubectl: source ${join(e.stateDir, 'env.sh')}`,
    ...system.unavailable.map((part) => `  NOT AVAILABLE  ${part.component}: ${part.reason}`),
    `  try: kubectl wait --for=condition=${e.conditionType} httpproxy/sample-0   |   node scripts/xds-programmed.cjs status httpproxy/sample-0`,
    '  Ctrl-C stops everything.',
  ];
  out.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const flags = program().parse().opts<StartFlags>();
  const out = process.stdout;
  const systemStartedAt = Date.now();
  // In the live view, component logs would tear the bars: they go to a file in the state dir.
  const stateDir = flags.stateDir ?? mkdtempSync(join(tmpdir(), 'xds-programmed-'));
  mkdirSync(stateDir, { recursive: true });
  const logFile = flags.ui ? join(stateDir, 'system.log') : undefined;
  const logger = logFile !== undefined ? pino({ level: flags.logLevel === 'warn' ? 'info' : flags.logLevel }, pino.destination({ dest: logFile, sync: false })) : pino({ level: flags.logLevel }, pino.destination(2));
  if (!flags.ui) out.write('starting: dynamo → kubernetes → echo backend → control plane → gateway → functions → envoys → samples\n');
  const system: StartedSystem = await startLocalSystem<'inline', ControlPlaneMode>(
    {
      envoys: flags.envoys,
      grpcClients: flags.grpcClients,
      objects: flags.objects,
      nackRate: flags.nackRate,
      slowEnvoys: flags.slowEnvoys,
      slowAckMs: flags.slowAckMs,
      controlPlaneReplicas: flags.replicas,
      controlPlane: flags.controlPlane,
      portBase: flags.portBase,
      ackTimeoutMs: flags.ackTimeoutMs,
      stateDir,
    },
    { logger, processMetrics: true, onStep: flags.ui ? undefined : (step) => out.write(`  ${step.component} ready at ${step.readyAtMs} ms\n`) },
  );
  const componentsMs = Date.now() - systemStartedAt;
  const sinceProcessMs = Math.round(process.uptime() * 1000);
  const e = system.endpoints;
  writeFileSync(
    join(e.stateDir, 'env.sh'),
    [`export KUBECONFIG='${e.kubeconfigPath}'`, `export XDS_PROGRAMMED_URL='${e.queryUrl ?? ''}'`, `export XDS_PROGRAMMED_TOKEN='${e.queryToken}'`, ''].join('\n'),
    { mode: 0o600 },
  );
  printEndpoints(system, await leaderName(system), out, { componentsMs, sinceProcessMs });
  if (logFile !== undefined) out.write(`  logs: ${logFile}\n`);
  if (!flags.ui) out.write(`READY ${JSON.stringify({ ...e, componentsMs, sinceProcessMs, unavailable: system.unavailable })}\n`);

  // "Programmed": every sample at its current generation is True in Kubernetes, measured once.
  let programmedReported = false;
  const onPoll = (objects: ObjectProgress[]): void => {
    if (programmedReported || objects.length === 0) return;
    if (objects.every((o) => o.view?.condition?.status === 'True' && o.view.generation === o.generation)) {
      programmedReported = true;
      const ms = Date.now() - systemStartedAt;
      if (!flags.ui) out.write(`PROGRAMMED all ${objects.length} objects into every Envoy ${ms} ms after start (${Math.round(process.uptime() * 1000)} ms since the command started)\n`);
    }
  };
  let view: LiveView | undefined;
  if (e.queryUrl !== undefined) {
    view = startLiveView({
      queryUrl: e.queryUrl,
      queryToken: e.queryToken,
      kubeUrl: e.kubeUrl,
      namespace: 'default',
      listObjects: () => listHttpProxies(e.kubeUrl, 'default'),
      mode: flags.ui ? 'ui' : 'lines',
      out,
      pollMs: 1000,
      onPoll,
    });
  }

  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals): void => {
    if (stoppingSince !== undefined) {
      // Ctrl-C under `npm start` reaches this process more than once: the terminal signals the whole
      // process group (npm, its shell, tsx and us) and npm and tsx each relay it too. Copies within a
      // second are that one keypress; a later signal is the user insisting.
      if (Date.now() - stoppingSince < 1000) return;
      process.stderr.write(`second ${signal}: exiting without waiting\n`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    void (async () => {
      const startedAt = Date.now();
      await view?.stop();
      out.write(`\n${signal}: shutting down (fleet → functions → gateway → control plane → kubernetes → dynamo)\n`);
      await system.close();
      logger.flush();
      out.write(`stopped cleanly in ${Date.now() - startedAt} ms\n`);
      process.exit(0);
    })().catch((error: unknown) => {
      process.stderr.write(`shutdown failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // One bad message must not take the local system down; log it and keep running.
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection'));
}

main().catch((error: unknown) => {
  // A missing Contour install is a usage problem, not a crash: say what to run, no stack.
  if (error instanceof Error && error.message.includes(CONTOUR_INSTALL_HINT)) {
    process.stderr.write(`npm start: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`npm start failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
