// The gateway's synchronous work per ACK, without gRPC: the tracker's callbacks for fleet-wide
// changes (each Envoy is sent a response of each of the four types and ACKs it), alone and with what
// the fleet-size path adds on the same callbacks (records-tee.ts: the PROGRESS publisher's summary of
// every state and the state demotion's class key). `bench gateway` measures the floor under it (the
// relay with no observer); `e2e.gateway.cpuMsPerEnvoyChange` is the sum of both, plus the stores.
//
// Envoy-style subscriptions (LDS and CDS wildcard, RDS by name, EDS by every cluster's name), so each
// CDS and RDS ACK runs the reference check against the whole cluster list, as at the e2e bench's
// sizes. Per change every cluster's endpoints and the route list change: four responses per Envoy.
//
//   npm run bench -- ack-path [--envoys 1000] [--clusters 100] [--changes 5]
import { Command } from 'commander';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, encodeVersion, type EnvoyState, type LineageProgress, type ProgressStore, type RequestClass } from '../common/core';
import { packAny, ROUTE_CONFIGURATION_TYPE_URL, type AnyResource } from '../common/xds';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener } from '../infra/local/envoys/grpcXdsResources';
import { EnvoyTracker } from '../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../xds-gateway/tracking/recorder';
import { ProgressPublisher } from '../xds-gateway/tracking/progress/progress-publisher';
import { recordsWithProgress } from '../xds-gateway/tracking/progress/records-tee';
import { StateDemotion } from '../xds-gateway/tracking/progress/state-demotion';
import { positiveInteger } from './support/args';

const LINEAGE = 'gw-bench.boot-1.edge';
const ACK_TIMEOUT_MS = 30_000;

interface Options {
  envoys: number;
  clusters: number;
  changes: number;
}

type Mode = 'tracker' | 'fleet-size path';

/** The tracker's recorder port, counting what it is handed (the bench measures the synchronous path alone). */
class CountingRecorder {
  states = 0;
  enqueueEnvoyState(_state: EnvoyState): void {
    this.states++;
  }
  enqueueEvent(): void {}
  enqueueLineageState(): void {}
  enqueueWatermark(): void {}
  enqueueNotObservable(): void {}
  enqueueRejectedByController(): void {}
  hasQueuedEnvoyState(): boolean {
    return false;
  }
  forgetEnvoy(): boolean {
    return true;
  }
}

/** Reached only after a run (its callbacks are synchronous; builds wait for a timer): writes succeed, nothing is read. */
const IDLE_PROGRESS_STORE: ProgressStore = {
  putProgress: (_progress: LineageProgress) => Promise.resolve('written'),
  getProgress: () => Promise.reject(new Error('ack-path bench: no reads')),
  getProgresses: () => Promise.reject(new Error('ack-path bench: no reads')),
};

function routes(clusters: readonly string[], change: number): AnyResource {
  return packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name: 'routes',
    virtual_hosts: clusters.map((cluster, index) => ({ name: `host-${index}`, domains: [`host-${index}.example.com`], routes: [{ match: { prefix: `/v${change}` }, route: { cluster } }] })),
  });
}

interface RunResult {
  cpuUsPerAck: number;
  acks: number;
  recorderStatesPerAck: number;
  programmed: number;
}

function runOnce(options: Options, mode: Mode): RunResult {
  let now = 1_000_000;
  const clock = { now: () => now };
  const logger = pino({ level: 'silent' });
  const recorder = new CountingRecorder();
  const publisher =
    mode === 'tracker' ? undefined : new ProgressPublisher({ store: IDLE_PROGRESS_STORE, logger, clock, policy: { ttlMs: 300_000, ackTimeoutMs: ACK_TIMEOUT_MS }, requiredTypeUrls: [] });
  const records =
    publisher === undefined
      ? recorder
      : recordsWithProgress(recorder as never, publisher, { filter: new StateDemotion({ refreshMs: 60_000, ackTimeoutMs: ACK_TIMEOUT_MS, requiredTypeUrls: [] }), now: clock.now });
  const tracker = new EnvoyTracker({ recorder: records as unknown as Recorder, logger, clock, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
  let seq = 0;
  const versions = new Map<string, number>();
  const clusterNames = Array.from({ length: options.clusters }, (_, index) => `default/app-${index}/8080`);
  const apply = (typeUrl: string, resources: Array<{ name: string; resource: AnyResource }>): void => {
    seq += 1;
    versions.set(typeUrl, seq);
    const reported = resources.map(({ name, resource }) => ({ name, value: resource.value as Buffer }));
    tracker.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl, seq, changed: true, upstreamVersion: `u${seq}`, upstreamEpoch: 1, resources: reported, at: now++ });
  };
  const named = (names: readonly string[], make: (name: string) => AnyResource) => names.map((name) => ({ name, resource: make(name) }));
  const endpoints = (port: number) => named(clusterNames, (name) => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port }]));
  apply(LDS_TYPE_URL, [{ name: 'ingress_http', resource: grpcListener('ingress_http', 'routes') }]);
  apply(RDS_TYPE_URL, [{ name: 'routes', resource: routes(clusterNames, 0) }]);
  apply(CDS_TYPE_URL, named(clusterNames, grpcCluster));
  apply(EDS_TYPE_URL, endpoints(8080));

  const nonces = new Map<string, number>();
  const ids = Array.from({ length: options.envoys }, (_, index) => `envoy-${index}`);
  let acks = 0;
  const request = (id: string, typeUrl: string, classification: RequestClass, names: readonly string[]): void =>
    tracker.requestClassified({ streamId: id, nodeId: id, typeUrl, lineage: LINEAGE, classification, resourceNames: names, at: now++ });
  const sendAndAck = (id: string, typeUrl: string, names: readonly string[]): void => {
    const key = `${id}|${typeUrl}`;
    const nonce = String((nonces.get(key) ?? 0) + 1);
    nonces.set(key, Number(nonce));
    const version = { lineage: LINEAGE, seq: versions.get(typeUrl) ?? 0 };
    tracker.responseSent({ streamId: id, nodeId: id, typeUrl, version, nonce, resourceCount: 1, at: now++ });
    request(id, typeUrl, { kind: 'ack', nonce, version: encodeVersion(version) }, names);
    acks++;
  };
  const subscriptions: Array<[string, readonly string[]]> = [
    [LDS_TYPE_URL, []],
    [RDS_TYPE_URL, ['routes']],
    [CDS_TYPE_URL, []],
    [EDS_TYPE_URL, clusterNames],
  ];
  for (const id of ids) {
    tracker.streamOpened({ streamId: id, node: { nodeId: id, cluster: 'edge', metadata: {}, locality: {} } as never, group: 'edge', lineage: LINEAGE, protocol: 'sotw', service: 'ads', at: now++ });
    for (const [typeUrl, names] of subscriptions) {
      request(id, typeUrl, { kind: 'initial', versionInfo: '' }, names);
      sendAndAck(id, typeUrl, names);
    }
  }

  const statesBefore = recorder.states;
  const acksBefore = acks;
  const cpuBefore = process.cpuUsage();
  for (let change = 1; change <= options.changes; change++) {
    apply(CDS_TYPE_URL, named(clusterNames, grpcCluster));
    apply(EDS_TYPE_URL, endpoints(8080 + change));
    apply(RDS_TYPE_URL, [{ name: 'routes', resource: routes(clusterNames, change) }]);
    apply(LDS_TYPE_URL, [{ name: 'ingress_http', resource: grpcListener('ingress_http', 'routes') }]);
    for (const [typeUrl, names] of [subscriptions[2], subscriptions[3], subscriptions[0], subscriptions[1]] as Array<[string, readonly string[]]>) {
      for (const id of ids) sendAndAck(id, typeUrl, names);
    }
  }
  const cpu = process.cpuUsage(cpuBefore);
  const measuredAcks = acks - acksBefore;
  const programmed = ids.filter((id) => tracker.envoyState(id)?.programmedThrough === seq).length;
  tracker.stop();
  void publisher?.close(0);
  return { cpuUsPerAck: (cpu.user + cpu.system) / measuredAcks, acks: measuredAcks, recorderStatesPerAck: (recorder.states - statesBefore) / measuredAcks, programmed };
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('ack-path')
    .option('--envoys <n>', 'Envoys', positiveInteger, 1000)
    .option('--clusters <n>', 'clusters (each with its endpoints, all subscribed by every Envoy)', positiveInteger, 100)
    .option('--changes <n>', 'fleet-wide changes measured (four responses and ACKs per Envoy each)', positiveInteger, 5)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const options = program.opts<Options>();
  // Warm-up (JIT, protobuf decoders), then the modes alternately, three times each, best of three.
  runOnce({ ...options, envoys: Math.min(options.envoys, 50), changes: 2 }, 'fleet-size path');
  const modes: Mode[] = ['tracker', 'fleet-size path'];
  const results = new Map<Mode, RunResult[]>(modes.map((mode) => [mode, []]));
  for (let round = 0; round < 3; round++) for (const mode of modes) results.get(mode)?.push(runOnce(options, mode));
  const best = (mode: Mode): RunResult => (results.get(mode) ?? []).reduce((a, b) => (a.cpuUsPerAck <= b.cpuUsPerAck ? a : b));
  console.log(`the gateway's synchronous work per ACK: ${options.envoys} Envoys, ${options.clusters} clusters, ${options.changes} changes × 4 types (best of 3)`);
  const row = (result: RunResult) => ({
    'CPU µs / ACK': Math.round(result.cpuUsPerAck),
    'CPU ms / Envoy-change (4 ACKs)': Math.round(result.cpuUsPerAck * 4) / 1000,
    'recorder states / ACK': Math.round(result.recorderStatesPerAck * 100) / 100,
    'programmed at the end': result.programmed,
  });
  console.table(Object.fromEntries(modes.map((mode) => [mode, row(best(mode))])));
  const tracker = best('tracker');
  const fleetSize = best('fleet-size path');
  console.log(
    JSON.stringify({
      envoys: options.envoys,
      clusters: options.clusters,
      trackerUsPerAck: Math.round(tracker.cpuUsPerAck),
      fleetSizePathUsPerAck: Math.round(fleetSize.cpuUsPerAck),
      publisherAndDemotionShare: Math.round(((fleetSize.cpuUsPerAck - tracker.cpuUsPerAck) / fleetSize.cpuUsPerAck) * 100) / 100,
    }),
  );
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
