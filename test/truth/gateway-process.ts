// The gateway as a real child process (`node --import tsx xds-gateway/main.ts`), so a "gateway crash"
// fault is a real SIGKILL: no flush, no graceful stream close; the recorder's queue is lost with the
// process, Envoys see their streams reset and reconnect to the new process (same port, new bootId,
// so a new lineage: docs/ARCHITECTURE.md, "Lineage").
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import type { StateWrites } from '../../xds-gateway/tracking/progress/state-demotion';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { XDS_ADDRESS_ANNOTATION } from '../../infra/local/control-plane/kube-lease-elector';
import { LEASE_NAME, LEASE_NAMESPACE } from '../../infra/local/system/control-plane';
import type { DynamoComponent } from '../../infra/local/system/dynamo';
import { DEFAULT_REQUIRED_TYPE_URLS } from '../../infra/local/system/functions';
import type { TruthTimings } from './timings';

const REPO_ROOT = join(__dirname, '..', '..');

export interface GatewayProcess {
  /** `127.0.0.1:<port>`, stable across restarts. */
  address: string;
  /** SIGKILLs the running process (if any) and starts a new one; resolves when it is ready. */
  killAndRestart(): Promise<void>;
  kills: number;
  close(): Promise<void>;
}

/** The gateway flags the truth checker runs with, in-process (`system.ts`) or as a child process (here). */
export function truthGatewayArgs(opts: { listenPort: number; opsPort: number; upstream: string; dynamo: DynamoComponent; timings: TruthTimings; kubeconfigPath?: string; progress?: boolean; stateWrites?: StateWrites }): Record<string, string> {
  // With a kubeconfig the gateway follows the control plane's Lease (the holder advertises its xDS
  // address in an annotation), so a leader change (killed or stepped-down replica) moves its upstream.
  const follow: Record<string, string> =
    opts.kubeconfigPath === undefined ? {} : { kubeconfig: opts.kubeconfigPath, 'leader-lease': `${LEASE_NAMESPACE}/${LEASE_NAME}`, 'leader-target-annotation': XDS_ADDRESS_ANNOTATION };
  return {
    ...follow,
    // Plaintext on loopback, asked for explicitly as a deployment must.
    'insecure-plaintext': 'true',
    'upstream-insecure-plaintext': 'true',
    'listen-host': '127.0.0.1',
    'listen-port': String(opts.listenPort),
    'ops-host': '127.0.0.1',
    'ops-port': String(opts.opsPort),
    upstream: opts.upstream,
    'instance-id': 'gw-truth',
    table: opts.dynamo.tableName,
    'dynamodb-endpoint': opts.dynamo.local.endpoint,
    region: opts.dynamo.local.region,
    'ack-timeout-ms': String(opts.timings.ackTimeoutMs),
    watermarks: 'provenance',
    'flush-interval-ms': '20',
    'lineage-heartbeat-ms': String(opts.timings.envoyHeartbeatMs),
    'envoy-heartbeat-ms': String(opts.timings.envoyHeartbeatMs),
    'shutdown-grace-ms': '100',
    'flush-timeout-ms': '3000',
    // PROGRESS beside the shards (docs/GATEWAY.md, "PROGRESS").
    // Judged as the functions judge members: their TTL and REQUIRED_TYPE_URLS (the local system's default).
    ...(opts.progress === true ? { progress: 'true', 'envoy-ttl-ms': String(opts.timings.envoyTtlMs), 'required-type-urls': DEFAULT_REQUIRED_TYPE_URLS.join(',') } : { progress: 'false' }),
    // Demoted Envoy states (docs/GATEWAY.md, "PROGRESS"), their answers in the version log as on the
    // local fleet-size path ("The version log"); refreshed every two heartbeats so that schedules see
    // refresh writes too, not only class changes.
    ...(opts.stateWrites === 'class-changes' ? { 'state-writes': 'class-changes', 'event-log-mode': 'chunks', 'state-refresh-ms': String(2 * opts.timings.envoyHeartbeatMs) } : { 'state-writes': 'every', 'event-log-mode': 'carried' }),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startGatewayProcess(opts: { upstream: string; dynamo: DynamoComponent; timings: TruthTimings; kubeconfigPath?: string; progress?: boolean; stateWrites?: StateWrites; logFile?: string; logger: Logger }): Promise<GatewayProcess> {
  const [xdsPort, opsPort] = [await freePort(), await freePort()];
  const args = { ...truthGatewayArgs({ ...opts, listenPort: xdsPort, opsPort }), 'log-level': 'warn' };
  let child: ChildProcess | undefined;
  let kills = 0;
  const start = async (): Promise<void> => {
    const spawned = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'xds-gateway', 'main.ts'), ...Object.entries(args).flatMap(([k, v]) => [`--${k}`, v])], {
      cwd: REPO_ROOT,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child = spawned;
    spawned.stderr?.on('data', (chunk: Buffer) => {
      opts.logger.debug({ component: 'gateway-process', line: chunk.toString().slice(0, 500) }, 'gateway stderr');
      if (opts.logFile !== undefined) appendFileSync(opts.logFile, chunk);
    });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (spawned.exitCode !== null) throw new Error(`gateway process exited with ${spawned.exitCode} before it was ready`);
      const ready = await fetch(`http://127.0.0.1:${opsPort}/readyz`).then((r) => r.ok, () => false);
      if (ready) return;
      if (Date.now() > deadline) throw new Error('gateway process not ready after 60 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const kill = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  await start();
  return {
    address: `127.0.0.1:${xdsPort}`,
    get kills() {
      return kills;
    },
    async killAndRestart() {
      await kill();
      kills++;
      await start();
    },
    close: kill,
  };
}
