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
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, type LineageProgress, type ProgressStore } from '../common/core';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener } from '../infra/local/envoys/grpcXdsResources';
import { EnvoyTracker } from '../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../xds-gateway/tracking/recorder';
import { ProgressPublisher } from '../xds-gateway/tracking/progress/progress-publisher';
import { recordsWithProgress } from '../xds-gateway/tracking/progress/records-tee';
import { StateDemotion } from '../xds-gateway/tracking/progress/state-demotion';
import { positiveInteger } from './support/args';
import { CountingRecorder, namedResources, routesNaming, TrackerDriver } from './support/tracker-driver';

const LINEAGE = 'gw-bench.boot-1.edge';
const ACK_TIMEOUT_MS = 30_000;

interface Options {
  envoys: number;
  clusters: number;
  changes: number;
}

type Mode = 'tracker' | 'fleet-size path';

/** Reached only after a run (its callbacks are synchronous; builds wait for a timer): writes succeed, nothing is read. */
const IDLE_PROGRESS_STORE: ProgressStore = {
  putProgress: (_progress: LineageProgress) => Promise.resolve('written'),
  getProgress: () => Promise.reject(new Error('ack-path bench: no reads')),
  getProgresses: () => Promise.reject(new Error('ack-path bench: no reads')),
};

interface RunResult {
  cpuUsPerAck: number;
  acks: number;
  recorderStatesPerAck: number;
  programmed: number;
}

function runOnce(options: Options, mode: Mode): RunResult {
  const time = { now: 1_000_000 };
  const clock = { now: () => time.now };
  const logger = pino({ level: 'silent' });
  const recorder = new CountingRecorder();
  const publisher =
    mode === 'tracker' ? undefined : new ProgressPublisher({ store: IDLE_PROGRESS_STORE, logger, clock, policy: { ttlMs: 300_000, ackTimeoutMs: ACK_TIMEOUT_MS }, requiredTypeUrls: [] });
  const records =
    publisher === undefined
      ? recorder
      : recordsWithProgress(recorder as never, publisher, { filter: new StateDemotion({ refreshMs: 60_000, ackTimeoutMs: ACK_TIMEOUT_MS, requiredTypeUrls: [] }), now: clock.now });
  const tracker = new EnvoyTracker({ recorder: records as unknown as Recorder, logger, clock, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
  const driver = new TrackerDriver(tracker, LINEAGE, time);
  const clusterNames = Array.from({ length: options.clusters }, (_, index) => `default/app-${index}/8080`);
  const endpoints = (port: number) => namedResources(clusterNames, (name) => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port }]));
  const listener = () => [{ name: 'ingress_http', resource: grpcListener('ingress_http', 'routes') }];
  driver.apply(LDS_TYPE_URL, listener());
  driver.apply(RDS_TYPE_URL, [{ name: 'routes', resource: routesNaming(clusterNames) }]);
  driver.apply(CDS_TYPE_URL, namedResources(clusterNames, grpcCluster));
  driver.apply(EDS_TYPE_URL, endpoints(8080));

  const ids = Array.from({ length: options.envoys }, (_, index) => `envoy-${index}`);
  const lds: [string, readonly string[]] = [LDS_TYPE_URL, []];
  const rds: [string, readonly string[]] = [RDS_TYPE_URL, ['routes']];
  const cds: [string, readonly string[]] = [CDS_TYPE_URL, []];
  const eds: [string, readonly string[]] = [EDS_TYPE_URL, clusterNames];
  for (const id of ids) driver.open(id, [lds, rds, cds, eds]);

  const statesBefore = recorder.states;
  const acksBefore = driver.acks;
  const cpuBefore = process.cpuUsage();
  for (let change = 1; change <= options.changes; change++) {
    driver.apply(CDS_TYPE_URL, namedResources(clusterNames, grpcCluster));
    driver.apply(EDS_TYPE_URL, endpoints(8080 + change));
    driver.apply(RDS_TYPE_URL, [{ name: 'routes', resource: routesNaming(clusterNames, `/v${change}`) }]);
    driver.apply(LDS_TYPE_URL, listener());
    // As a control plane pushes: clusters, endpoints, listeners, routes, each to the whole fleet.
    for (const [typeUrl, names] of [cds, eds, lds, rds]) for (const id of ids) driver.sendAndAck(id, typeUrl, names);
  }
  const cpu = process.cpuUsage(cpuBefore);
  const measuredAcks = driver.acks - acksBefore;
  const programmed = ids.filter((id) => tracker.envoyState(id)?.programmedThrough === driver.latestSeq).length;
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
