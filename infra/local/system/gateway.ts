// The xDS gateway, in-process through its own start function (xds-gateway/ops/gateway.ts) with a
// configuration parsed by its own parser, so npm start exercises exactly the flags a deployment uses.
// Readiness: the gateway's /readyz checks (control plane reachable, store answered).
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { startGateway, type Gateway } from '../../../xds-gateway/ops/gateway';
import { DEFAULT_RELAY_LIMITS } from '../../../xds-gateway/relay';
import { waitUntilReady, watchStderr } from '../child-process';
import type { Component } from './component';
import type { GatewayProcess } from './options';

export interface GatewayComponent extends Component {
  /** The in-process gateway (absent when it runs as a child process). */
  gateway?: Gateway;
  /** The child's pid (child mode only; a restart changes it). */
  readonly pid?: number | undefined;
  /** The running child's bootId, the middle part of its lineages (child mode only; a restart changes it). */
  readonly bootId?: string;
  /**
   * Child mode only: stops the process — SIGTERM (it flushes, then exits: a rolling restart's old pod)
   * or SIGKILL (a crash: no flush) — and starts a new one on the same ports, with a new bootId and so
   * new lineages (docs/ARCHITECTURE.md, "Lineage"). Resolves once the new one is ready.
   */
  restart?(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  xdsAddress: string;
  opsUrl: string;
  metricsUrl: string;
}

export interface GatewayComponentOptions {
  upstream: string;
  /** `--instance-id` (default `gw-local`): distinct per replica, so each has lineages of its own. */
  instanceId?: string;
  /** The component's name in start-up steps and logs (default `gateway`). */
  name?: string;
  xdsPort: number;
  opsPort: number;
  tableName: string;
  dynamodbEndpoint: string;
  region: string;
  ackTimeoutMs: number;
  /** Collect process metrics (off when several systems share a process, e.g. tests). */
  defaultMetrics: boolean;
  /**
   * Where the gateway runs: in this process (default), or as its own Node process with the same
   * flags, as it is deployed (the e2e bench: docs/bench/README.md): 'child' runs xds-gateway/main.ts
   * through tsx; 'bundle' runs the esbuild bundle the image runs (dist/xds-gateway/main.js, built by
   * `npm run build`).
   */
  process?: GatewayProcess;
  /**
   * Observed-generation barrier watermarks instead of provenance, for an upstream that stamps no
   * generations (unmodified Contour): the gateway reads the tracked objects' status from
   * `kubeconfigPath` and follows the holder of `leaderLease` (`namespace/name`), mapped to an xDS
   * address by `leaderTargets` (Contour's Lease carries no address; docs/GATEWAY.md, "Leader").
   */
  barrier?: { kubeconfigPath: string; leaderLease: string; leaderTargets: Record<string, string>; leaderSettleMs?: number; trackedKinds?: string };
  /** Idle Envoy `lastSeenAt` refresh (default 30 s); must stay below the functions' Envoy TTL. */
  envoyHeartbeatMs?: number;
  /** LINEAGE heartbeat (default 5 s). */
  lineageHeartbeatMs?: number;
  /** `--queue-high-water` (default: the gateway's own). */
  queueHighWater?: number;
  /** Envoys and real xDS clients the system connects: sizes `--max-streams-per-peer` (localStreamsPerPeer). */
  clients: number;
  /**
   * PROGRESS with demoted Envoy states (--progress, --state-writes class-changes) whose answers go to
   * the version log (--event-log-mode chunks), judged by the
   * functions' TTL and REQUIRED_TYPE_URLS (given here, as the functions component has them).
   */
  progress?: { envoyTtlMs: number; requiredTypeUrls: readonly string[] };
  logger: Logger;
}

/**
 * The gateway's `--max-streams-per-peer` for a local system of `clients` Envoys and real xDS clients.
 *
 * Why: every local client connects from 127.0.0.1, while the cap (256 by default) is sized for one
 * pod's address in a cluster. Left at the default, a local fleet of more than 256 would have 256
 * streams served and the rest refused and retried for ever: the denominator, every figure of the
 * e2e bench and the soak would then be of 256 Envoys plus a reconnection storm. Each client holds
 * one ADS stream; the factor 2 covers a reconnection whose old stream the gateway has not yet seen
 * close, so a client is never refused for its own earlier stream.
 */
export function localStreamsPerPeer(clients: number): number {
  return Math.max(DEFAULT_RELAY_LIMITS.maxStreamsPerPeer, 2 * clients + 16);
}

export async function startGatewayComponent(opts: GatewayComponentOptions): Promise<GatewayComponent> {
  const args: Record<string, string> = {
    // The local demo is plaintext on loopback, and says so: both opt-ins are explicit (a deployment
    // without them refuses to start) and the gateway logs a warning for each at start-up.
    'insecure-plaintext': 'true',
    'upstream-insecure-plaintext': 'true',
    'listen-host': '127.0.0.1',
    'listen-port': String(opts.xdsPort),
    'ops-host': '127.0.0.1',
    'ops-port': String(opts.opsPort),
    upstream: opts.upstream,
    'instance-id': opts.instanceId ?? 'gw-local',
    table: opts.tableName,
    'dynamodb-endpoint': opts.dynamodbEndpoint,
    region: opts.region,
    'ack-timeout-ms': String(opts.ackTimeoutMs),
    // Provenance watermarks are exact with any control-plane replica (docs/PROVENANCE.md); the
    // barrier needs the gateway to follow the status-writing leader, so it comes with a Lease.
    ...(opts.barrier === undefined
      ? { watermarks: 'provenance' }
      : {
          watermarks: 'barrier',
          kubeconfig: opts.barrier.kubeconfigPath,
          'tracked-kinds': opts.barrier.trackedKinds ?? 'httpproxy',
          'leader-lease': opts.barrier.leaderLease,
          'leader-targets': JSON.stringify(opts.barrier.leaderTargets),
          ...(opts.barrier.leaderSettleMs === undefined ? {} : { 'leader-settle-ms': String(opts.barrier.leaderSettleMs) }),
        }),
    'max-streams-per-peer': String(localStreamsPerPeer(opts.clients)),
    'flush-interval-ms': '50',
    'lineage-heartbeat-ms': String(opts.lineageHeartbeatMs ?? 5000),
    'envoy-heartbeat-ms': String(opts.envoyHeartbeatMs ?? 30_000),
    'shutdown-grace-ms': '200',
    'flush-timeout-ms': '5000',
    ...(opts.queueHighWater === undefined ? {} : { 'queue-high-water': String(opts.queueHighWater) }),
    ...(opts.progress === undefined
      ? { progress: 'false' }
      : { progress: 'true', 'state-writes': 'class-changes', 'event-log-mode': 'chunks', 'envoy-ttl-ms': String(opts.progress.envoyTtlMs), 'required-type-urls': opts.progress.requiredTypeUrls.join(',') }),
  };
  const argv = Object.entries(args).flatMap(([key, value]) => [`--${key}`, value]);
  const name = opts.name ?? 'gateway';
  if (opts.process === 'child' || opts.process === 'bundle') return startGatewayChild(name, gatewayEntry(opts.process), argv, opts.logger.child({ component: name }));
  const parsed = parseGatewayConfig(argv, {});
  if (parsed.kind !== 'ok') throw new Error(`gateway configuration: ${parsed.kind === 'error' ? parsed.message : 'help requested'}`);
  const gateway = await startGateway(parsed.config, opts.logger.child({ component: name }), { defaultMetrics: opts.defaultMetrics });
  const opsUrl = `http://127.0.0.1:${gateway.opsPort}`;
  try {
    const deadline = Date.now() + 20_000;
    while (!gateway.ready()) {
      if (Date.now() > deadline) {
        const readyz = await fetch(`${opsUrl}/readyz`).then((r) => r.text(), (e: unknown) => String(e));
        throw new Error(`gateway not ready after 20 s: ${readyz}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await gateway.close();
    throw error;
  }
  return {
    name,
    gateway,
    xdsAddress: `127.0.0.1:${gateway.xdsPort}`,
    opsUrl,
    metricsUrl: `${opsUrl}/metrics`,
    close: () => gateway.close(),
  };
}

const ROOT = join(__dirname, '..', '..', '..');
const MAIN = join(ROOT, 'xds-gateway', 'main.ts');
/** scripts/build.mjs writes it; the gateway image runs it (Dockerfile). */
export const GATEWAY_BUNDLE = join(ROOT, 'dist', 'xds-gateway', 'main.js');

/** The script a gateway child runs, and the Node flags it needs (tsx for the source). */
interface GatewayEntry {
  script: string;
  execArgv: string[];
}

function gatewayEntry(process: 'child' | 'bundle'): GatewayEntry {
  if (process === 'child') return { script: MAIN, execArgv: ['--import', 'tsx'] };
  if (!existsSync(GATEWAY_BUNDLE)) throw new Error(`gateway bundle ${GATEWAY_BUNDLE} missing: run \`npm run build\` first`);
  return { script: GATEWAY_BUNDLE, execArgv: ['--enable-source-maps'] };
}
const portsLine = z.object({ xdsPort: z.number().int().positive(), opsPort: z.number().int().positive(), bootId: z.string() });

/** One running gateway child process. */
interface GatewayChildRun {
  child: ChildProcess;
  ports: z.infer<typeof portsLine>;
  /** Sends `signal` (SIGTERM: flush, then exit; SIGKILL after 10 s) and resolves once it exited. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

/** Forks the gateway (source or bundle) with `argv`; resolves once it printed its ports and /readyz answers 200. */
async function forkGatewayChild(entry: GatewayEntry, argv: string[], logger: Logger): Promise<GatewayChildRun> {
  const level = logger.level === 'silent' ? 'error' : logger.level;
  const child = fork(entry.script, [...argv, '--log-level', level], {
    execArgv: [...entry.execArgv, ...(process.env['LOCAL_GATEWAY_EXEC_ARGV']?.split(' ').filter((arg) => arg !== '') ?? [])],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const stderrTail = watchStderr(child, { logger, child: 'gateway' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = await waitUntilReady<z.infer<typeof portsLine>>(child, {
    what: 'gateway child process',
    toDo: 'print its ports',
    before: 'printing its ports',
    timeoutMs: 60_000,
    stderrTail,
    listen: (ready, fail) => {
      let stdout = '';
      const onData = (chunk: Buffer): void => {
        stdout += chunk.toString('utf8');
        const newline = stdout.indexOf('\n');
        if (newline < 0) return;
        const line = stdout.slice(0, newline);
        const parsed = portsLine.safeParse(parseJson(line));
        if (parsed.success) ready(parsed.data);
        else fail(`printed an unexpected first line: ${line.slice(0, 200)}`);
      };
      child.stdout?.on('data', onData);
      return () => child.stdout?.off('data', onData);
    },
  });
  const opsUrl = `http://127.0.0.1:${ports.opsPort}`;
  const stop = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ready = await fetch(`${opsUrl}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      const readyz = await fetch(`${opsUrl}/readyz`).then((r) => r.text(), (e: unknown) => String(e));
      await stop('SIGTERM');
      throw new Error(`gateway child not ready after 20 s: ${readyz}\n${stderrTail()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  logger.info({ pid: child.pid, xdsPort: ports.xdsPort, opsPort: ports.opsPort, bootId: ports.bootId }, 'gateway child process started');
  return { child, ports, stop };
}

/** `argv` with `--<flag> <value>` set (replaced where present). */
function withFlag(argv: readonly string[], flag: string, value: string): string[] {
  const index = argv.indexOf(`--${flag}`);
  if (index < 0) return [...argv, `--${flag}`, value];
  const copy = [...argv];
  copy[index + 1] = value;
  return copy;
}

/**
 * The gateway as its own process: `node --import tsx xds-gateway/main.ts <flags>` with an IPC channel
 * (main.ts shuts down when it closes, so the child never outlives this process). Ready once it printed
 * its ports (first stdout line) and /readyz answers 200; its JSON log lines (stderr) are re-emitted on
 * `logger` at their level; close() is SIGTERM (flush, then exit), SIGKILL after 10 s. restart() runs
 * a new process on the ports the first one printed, so Envoys reconnect to the same address.
 */
async function startGatewayChild(name: string, entry: GatewayEntry, argv: string[], logger: Logger): Promise<GatewayComponent> {
  let current = await forkGatewayChild(entry, argv, logger);
  const samePorts = withFlag(withFlag(argv, 'listen-port', String(current.ports.xdsPort)), 'ops-port', String(current.ports.opsPort));
  let closed = false;
  const opsUrl = `http://127.0.0.1:${current.ports.opsPort}`;
  return {
    name,
    get pid() {
      return current.child.pid;
    },
    get bootId() {
      return current.ports.bootId;
    },
    xdsAddress: `127.0.0.1:${current.ports.xdsPort}`,
    opsUrl,
    metricsUrl: `${opsUrl}/metrics`,
    async restart(signal) {
      if (closed) throw new Error('gateway closed');
      await current.stop(signal);
      current = await forkGatewayChild(entry, samePorts, logger);
      // Closed while the new one started: it must not outlive the system.
      if (closed) await current.stop('SIGTERM');
    },
    close: async () => {
      closed = true;
      await current.stop('SIGTERM');
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
