// Baselines, each implemented from its published parameters and run on the same local pieces as the
// end-to-end bench (local Kubernetes API server, the reference control plane reading HTTPProxies
// from it, simulated Envoys connected straight to the control plane: no gateway, no DynamoDB):
//
// (b) Knative-style prober (knative.dev/networking pkg/status): after a change, every (object, Envoy)
//     pair is probed over real HTTP on a per-Envoy probe endpoint (127.0.0.1), first after 200 ms,
//     each probe with a 1 s timeout, retries paced by max(per-item backoff 50 ms→30 s, global 50 qps
//     bucket, burst 100), 15 workers. An object is Ready when every Envoy answered with the hash of
//     the new config. Measures probe requests and change → Ready.
// (c) Istio-style distribution reporting (istio pilot/pkg/status/distribution): a reporter snapshots
//     every Envoy's ACKed config every 500 ms into a report; a leader ticks every 200 ms and writes
//     the status of every object still in progress (one write per object per tick) to the API
//     server, until every Envoy has it (Reconciled). Measures Kubernetes writes and change → Reconciled.
//
// (a) Envoys straight to the control plane is bench/gateway.ts runMode('direct'), used by the report.
//
//   npx tsx bench/baselines.ts [--envoys 100] [--objects 100] [--changed 10]
import { mkdtempSync } from 'node:fs';
import { createServer, request, Agent, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../common/core';
import { startFleetProcess, type FleetProcess } from '../infra/local/envoys/fleet-process';
import { startControlPlaneComponent, type ControlPlaneComponent } from '../infra/local/system/control-plane';
import { startKubeComponent, type KubeComponent } from '../infra/local/system/kube';
import { applySamples, SAMPLE_NAMESPACE, sampleCanaryService, sampleFqdn, sampleService } from '../infra/local/system/samples';
import { forEachIndexConcurrently } from '../common/worker-pool';
import { canaryCluster, canaryRouteKey, canaryRouteWatches, HTTPPROXIES_PATH, patchToCanary } from './support/changes';
import { KNATIVE_PROBER, KnativeRetryLimiter } from './support/knative-queue';
import { round, summarize, waitFor, type Summary } from './support/stats';
import { nonNegativeInteger, positiveInteger } from './support/args';
import { DEFAULT_WARMUP_CHANGES, warmUp, type WarmupResult } from './support/warmup';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const ALL_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].map((typeUrl) => ({ typeUrl }));

export interface BaselineOptions {
  envoys: number;
  objects: number;
  /** Objects whose spec is changed at once (the probes/writes scale with it). */
  changed: number;
  timeoutMs: number;
  /** Warm-up changes of other objects before the measured one (default DEFAULT_WARMUP_CHANGES; bench/support/warmup.ts). */
  warmupChanges?: number;
}

export const ISTIO_REPORTER = { reportIntervalMs: 500, leaderTickMs: 200 } as const;

/** Spec patches in flight, as the e2e bench's default --patch-concurrency. */
const CHANGE_CONCURRENCY = 16;

interface Rig {
  kube: KubeComponent;
  controlPlane: ControlPlaneComponent;
  /**
   * The simulated Envoys in a process of their own, as in the e2e bench, so the control plane's
   * delivery is not a share of one event loop with 1,000 Envoys decoding it.
   */
  fleet: FleetProcess;
  /** Node ids of the fleet's Envoys. */
  envoyIds: string[];
  /** The warm-up changes run once every Envoy held the initial config. */
  warmup: WarmupResult;
  close(): Promise<void>;
}

/** Node ids of the baselines' Envoys (the fleet spec's template). */
const ENVOY_ID_PREFIX = 'sim-';

async function startRig(options: BaselineOptions): Promise<Rig> {
  const kube = await startKubeComponent({ port: 0, stateDir: mkdtempSync(join(tmpdir(), 'xds-bench-baseline-')), logger });
  let controlPlane: ControlPlaneComponent | undefined;
  let fleet: FleetProcess | undefined;
  try {
    // No traffic flows: Endpoints only need to exist so clusters get their load assignments.
    const endpoints = Array.from({ length: options.objects }, (_, index) =>
      [sampleService(index), sampleCanaryService(index)].map((service) => ({ service, namespace: SAMPLE_NAMESPACE, ip: '127.0.0.1', port: 9 })),
    ).flat();
    controlPlane = await startControlPlaneComponent({ replicas: 1, port: () => 0, kubeConfig: kube.kubeConfig, endpoints, logger });
    const target = controlPlane.addresses[0];
    if (target === undefined) throw new Error('control plane has no address');
    await applySamples(kube.url, options.objects);
    fleet = await startFleetProcess({
      spec: {
        target,
        channels: Math.min(8, Math.max(1, Math.ceil(options.envoys / 250))),
        groups: [{ role: 'normal', count: options.envoys, firstIndex: 0, transport: 'ads', protocol: 'sotw', subscriptions: ALL_TYPES, node: { idPrefix: ENVOY_ID_PREFIX, cluster: 'sim' } }],
        // changeObjects changes samples 0 .. changed - 1.
        routeWatches: canaryRouteWatches(Array.from({ length: Math.min(options.changed, options.objects) }, (_, index) => index)),
      },
      logger,
    });
    const lastCluster = `default/app-${options.objects - 1}/8080`;
    const started = fleet;
    await waitFor(async () => ((await started.lastAcks([lastCluster], 0)).envoysWith[lastCluster] ?? 0) === options.envoys, options.timeoutMs, 'initial config on every Envoy', 100);
    const rig = { kube, controlPlane, fleet };
    // A warm-up change is done once every Envoy ACKed each of its canary clusters (the route watches
    // are the measured objects' only; no status writer runs yet).
    const warmup = await warmUp(
      { changes: options.warmupChanges ?? DEFAULT_WARMUP_CHANGES, measured: Math.min(options.changed, options.objects), objects: options.objects },
      {
        patch: (index) => patchToCanary(kube.url, index),
        done: (indexes) =>
          waitFor(
            async () => {
              const clusters = indexes.map(canaryCluster);
              const acked = await started.lastAcks(clusters, 0);
              return clusters.every((cluster) => acked.envoysWith[cluster] === options.envoys);
            },
            options.timeoutMs,
            'every warm-up canary cluster on every Envoy',
            50,
          ),
      },
      CHANGE_CONCURRENCY,
    );
    return {
      ...rig,
      warmup,
      envoyIds: Array.from({ length: options.envoys }, (_, index) => `${ENVOY_ID_PREFIX}${index}`),
      async close() {
        await rig.fleet.close();
        await rig.controlPlane.close();
        await rig.kube.close();
      },
    };
  } catch (error) {
    await fleet?.close();
    await controlPlane?.close();
    await kube.close();
    throw error;
  }
}

async function changeObjects(rig: Rig, count: number): Promise<Map<number, number>> {
  const changedAt = new Map<number, number>();
  await forEachIndexConcurrently(count, CHANGE_CONCURRENCY, async (index) => {
    changedAt.set(index, Date.now());
    await patchToCanary(rig.kube.url, index);
  });
  return changedAt;
}

// ---------------------------------------------------------------- (b) Knative-style prober

export interface KnativeResult {
  baseline: 'knative-prober';
  /** The warm-up changes before the measured one (absent in old results: none). */
  warmup?: WarmupResult;
  parameters: typeof KNATIVE_PROBER;
  envoys: number;
  changedObjects: number;
  probeRequests: number;
  probesPerObject: number;
  probeFailures: number;
  changeToReadyMs: Summary;
  /** What the 50 qps bucket alone allows for every object of the run changed at once (N × M / 50). */
  floorAllObjectsSeconds: number;
}

const HASH_HEADER = 'k-network-hash';

/** One probe endpoint per Envoy: answers the hash of the config it has for the Host asked. */
async function startProbeEndpoints(rig: Rig): Promise<{ ports: Map<string, number>; servers: Server[] }> {
  const ports = new Map<string, number>();
  const servers: Server[] = [];
  for (const envoyId of rig.envoyIds) {
    const programmed = new Set<number>();
    const server = createServer((req, res) => {
      const match = /^sample-(\d+)\.local$/.exec((req.headers.host ?? '').split(':')[0] ?? '');
      if (match === null) {
        res.writeHead(404).end();
        return;
      }
      const index = Number(match[1]);
      // Knative's probe goes through the Envoy's routes and is answered by the config they lead to:
      // here "new" once the Envoy's accepted routes send the host to the canary cluster it holds
      // with its endpoints, "old" until then.
      const key = canaryRouteKey(index);
      const answer = (): void => void res.writeHead(200, { [HASH_HEADER]: programmed.has(index) ? `new-${index}` : `old-${index}` }).end();
      if (programmed.has(index)) return answer();
      rig.fleet.routable([key], [envoyId]).then(
        (routable) => {
          if ((routable.envoysWith[key] ?? 0) > 0) programmed.add(index);
          answer();
        },
        (error: unknown) => {
          logger.error({ err: error, envoyId, index }, 'knative baseline: routable query failed');
          res.writeHead(503).end();
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('probe endpoint has no port');
    ports.set(envoyId, address.port);
    servers.push(server);
  }
  return { ports, servers };
}

function probe(agent: Agent, port: number, host: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', headers: { host, 'k-network-probe': 'probe' }, agent, timeout: timeoutMs }, (res) => {
      const hash = res.headers[HASH_HEADER];
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 && typeof hash === 'string' ? hash : undefined));
    });
    req.on('timeout', () => req.destroy(new Error('probe timeout')));
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

export async function runKnativeBaseline(options: BaselineOptions): Promise<KnativeResult> {
  const rig = await startRig(options);
  const { ports, servers } = await startProbeEndpoints(rig);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const limiter = new KnativeRetryLimiter<string>(Date.now());
    const ready: string[] = [];
    const waiting: Array<() => void> = [];
    const pendingPerObject = new Map<number, number>();
    const readyAt = new Map<number, number>();
    let probeRequests = 0;
    let probeFailures = 0;
    let timers = 0;
    const enqueueAfter = (item: string, delayMs: number): void => {
      timers++;
      setTimeout(() => {
        timers--;
        ready.push(item);
        waiting.shift()?.();
      }, delayMs);
    };
    const nextItem = async (): Promise<string | undefined> => {
      while (ready.length === 0) {
        if (timers === 0 && readyAt.size === options.changed) return undefined;
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
      return ready.shift();
    };
    const worker = async (): Promise<void> => {
      for (;;) {
        const item = await nextItem();
        if (item === undefined) return;
        const [indexText, envoyId] = item.split('|') as [string, string];
        const index = Number(indexText);
        probeRequests++;
        const hash = await probe(agent, ports.get(envoyId) ?? 0, sampleFqdn(index), KNATIVE_PROBER.probeTimeoutMs);
        if (hash === `new-${index}`) {
          limiter.forget(item);
          const left = (pendingPerObject.get(index) ?? 1) - 1;
          pendingPerObject.set(index, left);
          if (left === 0) readyAt.set(index, Date.now());
        } else {
          probeFailures++;
          enqueueAfter(item, limiter.when(item, Date.now()));
        }
        if (readyAt.size === options.changed) waiting.splice(0).forEach((wake) => wake());
      }
    };
    const changedAt = await changeObjects(rig, options.changed);
    for (const index of changedAt.keys()) {
      pendingPerObject.set(index, rig.envoyIds.length);
      for (const envoyId of rig.envoyIds) enqueueAfter(`${index}|${envoyId}`, KNATIVE_PROBER.initialDelayMs);
    }
    const workers = Array.from({ length: KNATIVE_PROBER.workers }, worker);
    await Promise.race([
      Promise.all(workers),
      new Promise((_, reject) => setTimeout(() => reject(new Error('knative baseline timed out')), options.timeoutMs).unref()),
    ]);
    const samples = [...readyAt].map(([index, at]) => at - (changedAt.get(index) ?? at));
    return {
      baseline: 'knative-prober',
      warmup: rig.warmup,
      parameters: KNATIVE_PROBER,
      envoys: options.envoys,
      changedObjects: options.changed,
      probeRequests,
      probesPerObject: round(probeRequests / options.changed, 1),
      probeFailures,
      changeToReadyMs: summarize(samples),
      floorAllObjectsSeconds: round((options.envoys * options.objects) / KNATIVE_PROBER.globalQps, 2),
    };
  } finally {
    agent.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await rig.close();
  }
}

// ---------------------------------------------------------------- (c) Istio-style reporter

export interface IstioResult {
  baseline: 'istio-distribution';
  /** The warm-up changes before the measured one (absent in old results: none). */
  warmup?: WarmupResult;
  parameters: typeof ISTIO_REPORTER;
  envoys: number;
  changedObjects: number;
  statusWrites: number;
  statusWritesPerObjectGeneration: number;
  /** Reports the reporter produced (Istio writes each to a ConfigMap; the local API server has none, so counted only). */
  reportWrites: number;
  changeToReconciledMs: Summary;
  /**
   * Change → the last Envoy able to route it (route and canary cluster, by content): the control
   * plane's delivery straight to the Envoys, without the reporter's intervals. Absent in rows before it.
   */
  changeToRoutableMs?: Summary;
}

export async function runIstioBaseline(options: BaselineOptions): Promise<IstioResult> {
  const rig = await startRig(options);
  const timers: NodeJS.Timeout[] = [];
  try {
    const inProgress = new Set<number>();
    const reconciledAt = new Map<number, number>();
    let report = new Map<number, number>();
    let reportWrites = 0;
    let statusWrites = 0;
    // Reporter: per object in progress, how many Envoys have ACKed the config carrying it: the route
    // to the canary as well as its cluster (Istio counts a VirtualService at the ACK of the routes
    // that carry it; a cluster alone is not the change).
    let reporting = false;
    const buildReport = async (): Promise<void> => {
      if (reporting) return;
      reporting = true;
      try {
        const indexes = [...inProgress];
        const routable = await rig.fleet.routable(indexes.map(canaryRouteKey));
        report = new Map(indexes.map((index) => [index, routable.envoysWith[canaryRouteKey(index)] ?? 0]));
        reportWrites++;
      } finally {
        reporting = false;
      }
    };
    let ticking = false;
    const writeStatus = async (index: number, reconciled: number): Promise<void> => {
      const done = reconciled === rig.envoyIds.length;
      const response = await fetch(`${rig.kube.url}${HTTPPROXIES_PATH}/sample-${index}/status`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({
          status: { distribution: { reconciled, total: rig.envoyIds.length, state: done ? 'Reconciled' : 'InProgress' } },
        }),
      });
      statusWrites++;
      if (!response.ok) throw new Error(`status write for sample-${index} failed: HTTP ${response.status}`);
      if (done) {
        inProgress.delete(index);
        reconciledAt.set(index, Date.now());
      }
    };
    // Leader: one status write per object in progress per tick (a tick still writing skips the next).
    const tick = async (): Promise<void> => {
      if (ticking) return;
      ticking = true;
      try {
        await Promise.all([...inProgress].map((index) => writeStatus(index, report.get(index) ?? 0)));
      } finally {
        ticking = false;
      }
    };
    let tickError: unknown;
    const changedAt = await changeObjects(rig, options.changed);
    for (const index of changedAt.keys()) inProgress.add(index);
    timers.push(setInterval(() => void buildReport().catch((error: unknown) => (tickError = error)), ISTIO_REPORTER.reportIntervalMs));
    timers.push(setInterval(() => void tick().catch((error: unknown) => (tickError = error)), ISTIO_REPORTER.leaderTickMs));
    await waitFor(
      () => {
        if (tickError !== undefined) throw tickError instanceof Error ? tickError : new Error(String(tickError));
        return reconciledAt.size === options.changed;
      },
      options.timeoutMs,
      'every changed object Reconciled',
      20,
    );
    const samples = [...reconciledAt].map(([index, at]) => at - (changedAt.get(index) ?? at));
    const routable = await rig.fleet.routable([...changedAt.keys()].map(canaryRouteKey));
    const delivery = [...changedAt].flatMap(([index, at]) => {
      const routedAt = routable.lastAt[canaryRouteKey(index)];
      return routedAt === undefined ? [] : [routedAt - at];
    });
    return {
      baseline: 'istio-distribution',
      warmup: rig.warmup,
      parameters: ISTIO_REPORTER,
      envoys: options.envoys,
      changedObjects: options.changed,
      statusWrites,
      statusWritesPerObjectGeneration: round(statusWrites / options.changed, 2),
      reportWrites,
      changeToReconciledMs: summarize(samples),
      changeToRoutableMs: summarize(delivery),
    };
  } finally {
    timers.forEach((timer) => clearInterval(timer));
    await rig.close();
  }
}

export function parseBaselineArgs(argv: string[]): BaselineOptions {
  const program = new Command()
    .name('bench baselines')
    .option('--envoys <n>', 'simulated Envoys', positiveInteger, 100)
    .option('--objects <n>', 'HTTPProxy objects', positiveInteger, 100)
    .option('--changed <n>', 'objects changed at once', positiveInteger, 10)
    .option('--timeout-ms <n>', 'upper bound per phase', positiveInteger, 600_000)
    .option('--warmup-changes <n>', 'warm-up changes of other objects before the measured one (bench/support/warmup.ts)', nonNegativeInteger, DEFAULT_WARMUP_CHANGES)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const opts = program.opts<BaselineOptions>();
  if (opts.changed > opts.objects) throw new InvalidArgumentError('--changed cannot exceed --objects');
  return opts;
}

export async function run(argv: string[]): Promise<void> {
  const options = parseBaselineArgs(argv);
  console.log(JSON.stringify(await runKnativeBaseline(options), null, 2));
  console.log(JSON.stringify(await runIstioBaseline(options), null, 2));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
