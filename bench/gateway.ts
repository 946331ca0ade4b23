// Gateway relay bench: N simulated Envoys through the relay vs straight to the reference control
// plane, in one process. Per mode: config delivery (change applied at the control plane → each Envoy
// accepted the new cluster and its endpoints) p50/p99, memory per Envoy stream, and the number of
// streams the control plane serves; in relay mode, the relay's CPU per ACK (the floor under the gateway's).
//
//   npx tsx bench/gateway.ts [--envoys 1000] [--changes 5] [--channels 8] [--objects 1]   (or npm run bench -- gateway)
//
// Memory: in relay mode the relay runs in a child process (this file with --relay-child), so its RSS
// and heap per downstream stream are its own, measured before and after the fleet connects.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { Command } from 'commander';
import pino from 'pino';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../common/xds';
import { startControlPlane } from '../infra/local/control-plane/control-plane';
import { localStreamsPerPeer } from '../infra/local/system/gateway';
import { InMemoryRouteSource } from '../infra/local/control-plane/route-source';
import { Fleet, type SimEnvoy } from '../infra/local/envoys';
import { startRelay, NOOP_RELAY_OBSERVER } from '../xds-gateway/relay';
import { positiveInteger } from './support/args';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

export interface GatewayBenchOptions {
  envoys: number;
  changes: number;
  channels: number;
  /** HTTPProxies served (each with its Service's endpoints); one of them changes. Responses and EDS requests name them all. */
  objects: number;
}

export interface ModeResult {
  mode: 'direct' | 'relay';
  envoys: number;
  connectMs: number;
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  deliveryMaxMs: number;
  /** Relay mode only: the relay process's RSS / heap growth per downstream stream. */
  relayRssPerStreamKiB: number | undefined;
  relayHeapPerStreamKiB: number | undefined;
  /** Streams the control plane saw opened. */
  controlPlaneStreams: number;
  /** Versions the fleet accepted during the changes (each one a response and its ACK through the relay). */
  acksDuringChanges: number;
  /**
   * Relay mode only: the relay process's CPU during the changes per accepted version (a response in,
   * fanned out, and its ACK back) and per Envoy per change. The relay runs with no observer: this is
   * what gRPC and the relay cost before the gateway tracks anything (the floor under
   * `e2e.gateway.cpuMsPerEnvoyChange`).
   */
  relayCpuUsPerAck: number | undefined;
  relayCpuMsPerEnvoyChange: number | undefined;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function gc(): void {
  // Only with node --expose-gc; without it memory numbers include garbage.
  (globalThis as { gc?: () => void }).gc?.();
}

function source(port: number, objects: number): InMemoryRouteSource {
  const routes = new InMemoryRouteSource();
  for (let index = 1; index < objects; index++) {
    const name = `static-${index}`;
    routes.applyEndpoints({ metadata: { name, namespace: 'default' }, subsets: [{ addresses: [{ ip: `10.0.1.${(index % 250) + 1}` }], ports: [{ port: 9000 }] }] });
    routes.applyProxy({
      apiVersion: 'projectcontour.io/v1',
      kind: 'HTTPProxy',
      metadata: { name, namespace: 'default' },
      spec: { virtualhost: { fqdn: `${name}.example.com` }, routes: [{ services: [{ name, port: 9000 }] }] },
    });
  }
  setBackend(routes, port);
  return routes;
}

function setBackend(routes: InMemoryRouteSource, port: number): void {
  routes.applyEndpoints({ metadata: { name: 'app', namespace: 'default' }, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port }] }] });
  routes.applyProxy({
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name: 'app', namespace: 'default' },
    spec: { virtualhost: { fqdn: 'app.example.com' }, routes: [{ services: [{ name: 'app', port }] }] },
  });
}

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** When the Envoy first accepted a version of `typeUrl` holding resource `name`. */
function acceptedWith(fleet: Fleet, envoy: SimEnvoy, typeUrl: string, name: string): number | undefined {
  return fleet.truth.acceptedVersions(envoy.id, typeUrl).find((a) => a.resources.some((r) => r.name === name))?.acceptedAt;
}

export async function runMode(mode: 'direct' | 'relay', options: GatewayBenchOptions): Promise<ModeResult> {
  const routes = source(8000, options.objects);
  const controlPlane = await startControlPlane({ port: 0, replicaId: `bench-${mode}`, source: routes, holdoffMs: 10, holdoffMaxMs: 50, logger });
  const relay = mode === 'relay' ? await startRelayChild(controlPlane.address, options.envoys) : undefined;
  const target = relay === undefined ? controlPlane.address : `127.0.0.1:${relay.port}`;
  const fleet = new Fleet({ target, channels: options.channels, logger });
  try {
    const before = await relay?.memory();
    const connectStart = Date.now();
    const envoys = fleet.addMany(options.envoys, { transport: 'ads', protocol: 'sotw', subscriptions: TYPES.map((typeUrl) => ({ typeUrl })) });
    fleet.connectAll();
    await waitFor(() => envoys.every((e) => acceptedWith(fleet, e, CLUSTER_TYPE_URL, 'default/app/8000') !== undefined), 120_000, 'initial config');
    await waitFor(() => envoys.every((e) => TYPES.every((t) => e.acceptedVersion(t) !== undefined)), 120_000, 'all types');
    const connectMs = Date.now() - connectStart;
    const after = await relay?.memory();
    // Counted now: the control plane's event log is bounded and the changes below add many events.
    const streams = new Set(controlPlane.xdsEvents.all().flatMap((e) => (e.event === 'stream-open' ? [e.stream.streamId] : []))).size;

    const accepted = (): number => envoys.reduce((sum, e) => sum + TYPES.reduce((n, t) => n + fleet.truth.acceptedVersions(e.id, t).length, 0), 0);
    const acceptedBefore = accepted();
    const cpuBefore = await relay?.cpuMicros();
    const samples: number[] = [];
    for (let change = 1; change <= options.changes; change++) {
      const port = 8000 + change;
      const name = `default/app/${port}`;
      const appliedAt = Date.now();
      setBackend(routes, port);
      await controlPlane.rebuildNow();
      await waitFor(
        () => envoys.every((e) => acceptedWith(fleet, e, CLUSTER_TYPE_URL, name) !== undefined && acceptedWith(fleet, e, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, name) !== undefined),
        120_000,
        `change ${change}`,
      );
      for (const envoy of envoys) {
        const at = Math.max(acceptedWith(fleet, envoy, CLUSTER_TYPE_URL, name) ?? Number.NaN, acceptedWith(fleet, envoy, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, name) ?? Number.NaN);
        samples.push(at - appliedAt);
      }
    }
    const cpuAfter = await relay?.cpuMicros();
    const acks = accepted() - acceptedBefore;
    const relayCpuUs = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore;
    samples.sort((a, b) => a - b);
    return {
      mode,
      envoys: options.envoys,
      connectMs,
      deliveryP50Ms: percentile(samples, 50),
      deliveryP99Ms: percentile(samples, 99),
      deliveryMaxMs: samples.at(-1) ?? Number.NaN,
      relayRssPerStreamKiB: before && after ? Math.round((after.rss - before.rss) / options.envoys / 102.4) / 10 : undefined,
      relayHeapPerStreamKiB: before && after ? Math.round((after.heapUsed - before.heapUsed) / options.envoys / 102.4) / 10 : undefined,
      controlPlaneStreams: streams,
      acksDuringChanges: acks,
      relayCpuUsPerAck: relayCpuUs === undefined ? undefined : Math.round(relayCpuUs / Math.max(1, acks)),
      relayCpuMsPerEnvoyChange: relayCpuUs === undefined ? undefined : Math.round(relayCpuUs / (options.envoys * options.changes)) / 1000,
    };
  } finally {
    fleet.close();
    await relay?.stop();
    await controlPlane.close();
  }
}

interface RelayChild {
  port: number;
  memory(): Promise<{ rss: number; heapUsed: number }>;
  /** The child's CPU (user + system) so far, µs. */
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts the relay in a child process (this file with --relay-child) so its memory is its own. */
async function startRelayChild(upstream: string, envoys: number): Promise<RelayChild> {
  const child: ChildProcess = spawn(process.execPath, ['--expose-gc', ...(process.env['RELAY_CHILD_EXEC_ARGV']?.split(' ').filter((arg) => arg !== '') ?? []), '--import', 'tsx', __filename, '--relay-child', upstream, String(envoys)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: Interface = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const pending: ((line: string) => void)[] = [];
  lines.on('line', (line) => pending.shift()?.(line));
  const nextLine = (): Promise<string> => new Promise((resolve) => pending.push(resolve));
  const ready = JSON.parse(await nextLine()) as { port: number };
  return {
    port: ready.port,
    memory: async () => {
      const reply = nextLine();
      child.stdin?.write('mem\n');
      return JSON.parse(await reply) as { rss: number; heapUsed: number };
    },
    cpuMicros: async () => {
      const reply = nextLine();
      child.stdin?.write('cpu\n');
      return (JSON.parse(await reply) as { cpuMicros: number }).cpuMicros;
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin?.end('exit\n');
      await exited;
      lines.close();
    },
  };
}

async function relayChildMain(upstream: string, envoys: number): Promise<void> {
  const relay = await startRelay({
    listen: { host: '127.0.0.1', port: 0 },
    upstream: { target: upstream, ads: true },
    instanceId: 'bench',
    bootId: 'b1',
    observer: NOOP_RELAY_OBSERVER,
    clock: { now: () => Date.now() },
    logger,
    // The whole fleet connects from 127.0.0.1: the per-address cap must admit all of it, as the
    // local system's does, or the bench measures 256 Envoys and a reconnection storm.
    limits: { maxMessageBytes: 4 * 1024 * 1024, maxStreamsPerPeer: localStreamsPerPeer(envoys) },
  });
  console.log(JSON.stringify({ port: relay.port }));
  const commands = createInterface({ input: process.stdin });
  for await (const command of commands) {
    if (command === 'mem') {
      gc();
      const usage = process.memoryUsage();
      console.log(JSON.stringify({ rss: usage.rss, heapUsed: usage.heapUsed }));
    } else if (command === 'cpu') {
      const usage = process.cpuUsage();
      console.log(JSON.stringify({ cpuMicros: usage.user + usage.system }));
    } else if (command === 'exit') break;
  }
  commands.close();
  await relay.control.close();
}

export async function run(argv: string[]): Promise<void> {
  if (argv[0] === '--relay-child' && argv[1] !== undefined) return relayChildMain(argv[1], positiveInteger(argv[2] ?? ''));
  const program = new Command()
    .name('bench gateway')
    .option('--envoys <n>', 'simulated Envoys', positiveInteger, 1000)
    .option('--changes <n>', 'config changes measured per mode', positiveInteger, 5)
    .option('--channels <n>', 'gRPC connections the fleet spreads over', positiveInteger, 8)
    .option('--objects <n>', 'HTTPProxies served (one of them changes)', positiveInteger, 1)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const options = program.opts<GatewayBenchOptions>();
  const direct = await runMode('direct', options);
  const relayed = await runMode('relay', options);
  console.table([direct, relayed]);
  console.log(
    JSON.stringify({
      envoys: options.envoys,
      p50Ratio: Math.round((relayed.deliveryP50Ms / Math.max(1, direct.deliveryP50Ms)) * 100) / 100,
      p99Ratio: Math.round((relayed.deliveryP99Ms / Math.max(1, direct.deliveryP99Ms)) * 100) / 100,
      relayRssPerStreamKiB: relayed.relayRssPerStreamKiB,
      relayHeapPerStreamKiB: relayed.relayHeapPerStreamKiB,
      upstreamStreams: { direct: direct.controlPlaneStreams, relay: relayed.controlPlaneStreams },
      relayCpuUsPerAck: relayed.relayCpuUsPerAck,
      relayCpuMsPerEnvoyChange: relayed.relayCpuMsPerEnvoyChange,
    }),
  );
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
