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
import { listHttpProxies, startLiveView, type BannerLine, type LiveView, type ObjectProgress } from './system/live-view';
// Types only: the system's modules (AWS SDK, Kubernetes client, gRPC) take over a second to load,
// so main() prints its first line and then imports them.
import type { ControlPlaneMode, LocalSystem, StartupStep } from './system';

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
  gateways: number;
  controlPlane: ControlPlaneMode;
  ui: boolean;
  portBase: number;
  stateDir?: string;
  logLevel: string;
  ackTimeoutMs: number;
  shardPath: boolean;
}

function program(): Command {
  return new Command('npm start')
    .description('Run xds-programmed locally: DynamoDB, Kubernetes, control plane, gateway, functions, Envoys')
    .option('--envoys <n>', 'simulated Envoys (beyond 5,000, with --gateways 2 or more)', integer(0, 10_000), 8)
    .option('--grpc-clients <n>', 'real @grpc/grpc-js-xds clients', integer(0, 50), 2)
    .option('--objects <n>', 'sample HTTPProxy objects', integer(0, 10_000), 3)
    .option('--nack-rate <r>', 'fraction of simulated Envoys that NACK sample-0\'s cluster', fraction, 0)
    .option('--slow-envoys <n>', 'simulated Envoys that ACK only after --slow-ack-ms (reported stuck first)', integer(0, 5000), 0)
    .option('--slow-ack-ms <ms>', 'ACK delay of the slow Envoys', integer(0, 3_600_000), 15_000)
    .option('--ack-timeout-ms <ms>', 'a response unanswered this long is STUCK', integer(1, 3_600_000), 10_000)
    .option('--replicas <n>', 'control-plane replicas', integer(1, 5), 2)
    .option('--gateways <n>', 'gateway replicas (each its own instance id and lineages), the simulated Envoys split evenly among them; the first takes the real clients', integer(1, 8), 1)
    .addOption(
      new Option('--control-plane <kind>', 'reference: the project\'s control plane (provenance); contour: unmodified Contour (npm run contour:install), the gateway in barrier mode')
        .choices(['reference', 'contour'])
        .default('reference'),
    )
    .option('--shard-path', 'the shard path: the gateway writes every Envoy state and the functions decide from the aggregate shards (default: the fleet-size path, PROGRESS decides; docs/GATEWAY.md, "PROGRESS")', false)
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
  // In its own process the reference control plane's electors are not here to ask.
  if ('process' in controlPlane) return undefined;
  return controlPlane.leader()?.controlPlane.replicaId;
}

/**
 * The start banner. Essential lines (how to reach the system: env.sh, the query URL and its token,
 * what is missing, where the logs are) stay in the live view when the terminal is too short for all.
 */
function banner(system: StartedSystem, leader: string | undefined, timings: { componentsMs: number; sinceProcessMs: number }, logFile: string | undefined): BannerLine[] {
  const e = system.endpoints;
  const contour = system.options.controlPlane === 'contour';
  const line = (text: string, essential = false): BannerLine => ({ text, essential });
  return [
    line(`xds-programmed is running (${system.options.envoys} simulated Envoys + ${system.fleet.roles.real.length} gRPC clients, ${system.objects.length} objects)`, true),
    ...(contour ? [line('  control plane: unmodified Contour; the gateway uses observed-generation barriers and follows its Lease (no gRPC clients: Contour serves no API listeners)')] : []),
    line(`  components ready in ${(timings.componentsMs / 1000).toFixed(2)} s (${(timings.sinceProcessMs / 1000).toFixed(2)} s since the command started)`),
    line(`  kubeconfig     ${e.kubeconfigPath}`),
    line(`  query URL      ${e.queryUrl ?? 'unavailable'}   (Authorization: Bearer ${e.queryToken})`, true),
    line(`  metrics URL    ${e.metricsUrl ?? 'unavailable'}`),
    line(`  gateway xDS    ${e.gatewayXds ?? 'unavailable'}`),
    line(`  control plane  ${e.controlPlanes.join(', ')} (leader: ${leader ?? 'none yet'})`),
    line(`  DynamoDB       ${e.dynamoEndpoint} table ${e.tableName}`),
    line(`  env for the CLI and kubectl: source ${join(e.stateDir, 'env.sh')}`, true),
    ...system.unavailable.map((part) => line(`  NOT AVAILABLE  ${part.component}: ${part.reason}`, true)),
    line(`  try: kubectl wait --for=condition=${e.conditionType} httpproxy/sample-0   |   node scripts/xds-programmed.cjs status httpproxy/sample-0`),
    ...(logFile === undefined ? [] : [line(`  logs: ${logFile}`, true)]),
    line('  Ctrl-C stops everything.', true),
  ];
}

/** Start progress in place on a terminal (one line rewritten per step), a line per step otherwise. */
function startProgress(out: NodeJS.WritableStream & { isTTY?: boolean }, tty: boolean): { step(step: StartupStep): void; done(): void } {
  const ready: string[] = [];
  const startedAt = Date.now();
  const head = 'starting: dynamo → kubernetes → echo backend → control plane → gateway → functions → envoys → samples';
  if (!tty) {
    out.write(`${head}\n`);
    return { step: (step) => out.write(`  ${step.component} ready at ${step.readyAtMs} ms\n`), done: () => undefined };
  }
  const draw = (): void => {
    const text = `starting xds-programmed: ${ready.length === 0 ? 'loading' : `${ready.join(' ✓ ')} ✓`} (${((Date.now() - startedAt) / 1000).toFixed(1)} s)`;
    const columns = (out as { columns?: number }).columns ?? 80;
    out.write(`\r\u001b[2K${text.length >= columns ? `${text.slice(0, columns - 2)}…` : text}`);
  };
  draw();
  return {
    step(step) {
      ready.push(step.component);
      draw();
    },
    done() {
      out.write('\r\u001b[2K');
    },
  };
}

async function main(): Promise<void> {
  const flags = program().parse().opts<StartFlags>();
  const out = process.stdout;
  // A terminal gets the redrawn view; a pipe (`npm start | tee log`) plain progress lines.
  const tty = flags.ui && out.isTTY;
  // In the live view, component logs would tear the bars: they go to a file in the state dir.
  const stateDir = flags.stateDir ?? mkdtempSync(join(tmpdir(), 'xds-programmed-'));
  mkdirSync(stateDir, { recursive: true });
  const logFile = flags.ui ? join(stateDir, 'system.log') : undefined;
  const logger = logFile !== undefined ? pino({ level: flags.logLevel === 'warn' ? 'info' : flags.logLevel }, pino.destination({ dest: logFile, sync: false })) : pino({ level: flags.logLevel }, pino.destination(2));
  const progress = startProgress(out, tty);
  const { startLocalSystem } = await import('./system');
  // "Components ready" counts from here, as it did when the modules loaded before main().
  const componentsStartedAt = Date.now();
  const system: StartedSystem = await startLocalSystem<'inline', ControlPlaneMode>(
    {
      envoys: flags.envoys,
      grpcClients: flags.grpcClients,
      objects: flags.objects,
      nackRate: flags.nackRate,
      slowEnvoys: flags.slowEnvoys,
      slowAckMs: flags.slowAckMs,
      controlPlaneReplicas: flags.replicas,
      gatewayReplicas: flags.gateways,
      controlPlane: flags.controlPlane,
      portBase: flags.portBase,
      ackTimeoutMs: flags.ackTimeoutMs,
      progressPath: !flags.shardPath,
      stateDir,
    },
    { logger, processMetrics: true, onStep: (step) => progress.step(step) },
  );
  progress.done();
  const componentsMs = Date.now() - componentsStartedAt;
  const sinceProcessMs = Math.round(process.uptime() * 1000);
  const e = system.endpoints;
  writeFileSync(
    join(e.stateDir, 'env.sh'),
    [`export KUBECONFIG='${e.kubeconfigPath}'`, `export XDS_PROGRAMMED_URL='${e.queryUrl ?? ''}'`, `export XDS_PROGRAMMED_TOKEN='${e.queryToken}'`, ''].join('\n'),
    { mode: 0o600 },
  );
  const bannerLines = banner(system, await leaderName(system), { componentsMs, sinceProcessMs }, logFile);
  writeFileSync(join(e.stateDir, 'banner.txt'), `${bannerLines.map((line) => line.text).join('\n')}\n`, { mode: 0o600 });
  // On a terminal the live view draws the banner at the top of its region, so it stays visible.
  if (!tty) out.write(`${bannerLines.map((line) => line.text).join('\n')}\n`);
  if (!flags.ui) out.write(`READY ${JSON.stringify({ ...e, componentsMs, sinceProcessMs, unavailable: system.unavailable })}\n`);

  // "Programmed": every sample at its current generation is True in Kubernetes, measured once.
  let programmedReported = false;
  const onPoll = (objects: ObjectProgress[]): void => {
    if (programmedReported || objects.length === 0) return;
    if (objects.every((o) => o.view?.condition?.status === 'True' && o.view.generation === o.generation)) {
      programmedReported = true;
      const ms = Date.now() - componentsStartedAt;
      if (!flags.ui) out.write(`PROGRAMMED all ${objects.length} objects into every Envoy ${ms} ms after start (${Math.round(process.uptime() * 1000)} ms since the command started)\n`);
    }
  };
  let view: LiveView | undefined;
  if (e.queryUrl !== undefined) {
    view = startLiveView({
      queryUrl: e.queryUrl,
      queryToken: e.queryToken,
      namespace: 'default',
      listObjects: () => listHttpProxies(e.kubeUrl, 'default'),
      mode: flags.ui ? 'ui' : 'lines',
      out,
      pollMs: 1000,
      banner: bannerLines,
      colour: (process.env['NO_COLOR'] ?? '') === '',
      onPoll,
    });
  } else if (tty) {
    out.write(`${bannerLines.map((line) => line.text).join('\n')}\n`);
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

main().catch(async (error: unknown) => {
  // A missing Contour install is a usage problem, not a crash: say what to run, no stack.
  const { CONTOUR_INSTALL_HINT } = await import('./system/contour');
  if (error instanceof Error && error.message.includes(CONTOUR_INSTALL_HINT)) {
    process.stderr.write(`npm start: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`npm start failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
