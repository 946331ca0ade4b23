// What the tracker's "names not yet asked for" check costs (xds-gateway/tracking/subscription-references.ts):
// the tracker's synchronous callbacks for a fleet-wide change, with the check on (the relay reports
// the served resources, so references are known) and off (the same events with no resources reported:
// nothing is known to reference anything, the check has nothing to do), in one run.
//
// The fleet is the expensive case for the check: Envoy-style subscriptions (LDS and CDS wildcard, RDS
// and EDS by name), every Envoy subscribing to the EDS of every cluster, so each CDS ACK compares the
// whole cluster list's endpoint names against the Envoy's EDS subscription. Per change: a cluster is
// added (CDS, EDS) and one route moves to it (RDS); each Envoy is sent and ACKs CDS, then RDS, asks
// for the new cluster's endpoints, is sent and ACKs EDS.
//
//   npm run bench -- tracker-references [--envoys 1000] [--clusters 1000] [--changes 5]
import { Command } from 'commander';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../common/core';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener } from '../infra/local/envoys/grpcXdsResources';
import { EnvoyTracker } from '../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../xds-gateway/tracking/recorder';
import { positiveInteger } from './support/args';
import { CountingRecorder, namedResources, routesNaming, TrackerDriver } from './support/tracker-driver';

const LINEAGE = 'gw-bench.boot-1.edge';

interface Options {
  envoys: number;
  clusters: number;
  changes: number;
}

interface RunResult {
  cpuMsPerChange: number;
  statesPerChange: number;
  programmed: number;
}

function runOnce(options: Options, withReferences: boolean): RunResult {
  const time = { now: 1_000_000 };
  const recorder = new CountingRecorder();
  const tracker = new EnvoyTracker({ recorder: recorder as unknown as Recorder, logger: pino({ level: 'silent' }), clock: { now: () => time.now }, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
  const driver = new TrackerDriver(tracker, LINEAGE, time);
  const clusterNames = Array.from({ length: options.clusters }, (_, index) => `default/app-${index}/8080`);
  const endpoints = () => namedResources(clusterNames, (name) => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port: 8080 }]));
  driver.apply(LDS_TYPE_URL, [{ name: 'ingress_http', resource: grpcListener('ingress_http', 'routes') }], withReferences);
  driver.apply(RDS_TYPE_URL, [{ name: 'routes', resource: routesNaming(clusterNames) }], withReferences);
  driver.apply(CDS_TYPE_URL, namedResources(clusterNames, grpcCluster), withReferences);
  driver.apply(EDS_TYPE_URL, endpoints(), withReferences);

  const ids = Array.from({ length: options.envoys }, (_, index) => `envoy-${index}`);
  const subscriptions = (names: readonly string[]): Array<[string, readonly string[]]> => [
    [LDS_TYPE_URL, []],
    [RDS_TYPE_URL, ['routes']],
    [CDS_TYPE_URL, []],
    [EDS_TYPE_URL, names],
  ];
  for (const id of ids) driver.open(id, subscriptions([...clusterNames]));

  const statesBefore = recorder.states;
  const cpuBefore = process.cpuUsage();
  for (let change = 0; change < options.changes; change++) {
    const added = `default/new-${change}/8080`;
    clusterNames.push(added);
    driver.apply(CDS_TYPE_URL, namedResources(clusterNames, grpcCluster), withReferences);
    driver.apply(EDS_TYPE_URL, endpoints(), withReferences);
    driver.apply(RDS_TYPE_URL, [{ name: 'routes', resource: routesNaming(clusterNames) }], withReferences);
    for (const id of ids) {
      driver.sendAndAck(id, CDS_TYPE_URL, []);
      driver.sendAndAck(id, RDS_TYPE_URL, ['routes']);
      // Envoy asks for the new cluster's endpoints once it accepted the cluster.
      // A copy per request, as a decoded request is: the tracker keeps the subscription it is handed.
      const names = [...clusterNames];
      driver.request(id, EDS_TYPE_URL, { kind: 'update', nonce: driver.lastNonce(id, EDS_TYPE_URL), reason: 'versionNotAccepted' }, names);
      driver.sendAndAck(id, EDS_TYPE_URL, names);
    }
  }
  const cpu = process.cpuUsage(cpuBefore);
  const programmed = ids.filter((id) => tracker.envoyState(id)?.programmedThrough === driver.latestSeq).length;
  tracker.stop();
  return { cpuMsPerChange: (cpu.user + cpu.system) / 1000 / options.changes, statesPerChange: (recorder.states - statesBefore) / options.changes, programmed };
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('tracker-references')
    .option('--envoys <n>', 'Envoys', positiveInteger, 1000)
    .option('--clusters <n>', 'clusters (each with its endpoints, all subscribed by every Envoy)', positiveInteger, 1000)
    .option('--changes <n>', 'fleet-wide changes measured', positiveInteger, 5)
    .parse(['node', 'tracker-references', ...argv]);
  const options = program.opts<Options>();
  // Warm-up (JIT, protobuf decoders), then the two modes alternately, twice each.
  runOnce({ ...options, envoys: Math.min(options.envoys, 50), changes: 1 }, true);
  const off = [runOnce(options, false), runOnce(options, false)];
  const on = [runOnce(options, true), runOnce(options, true)];
  const best = (results: RunResult[]): RunResult => results.reduce((a, b) => (a.cpuMsPerChange <= b.cpuMsPerChange ? a : b));
  const [withoutCheck, withCheck] = [best(off), best(on)];
  console.log(`tracker callbacks per fleet-wide change: ${options.envoys} Envoys, ${options.clusters} clusters (+1 per change), ${options.changes} changes (best of 2)`);
  console.table({
    'references unknown (check idle)': { 'CPU ms / change': Math.round(withoutCheck.cpuMsPerChange), 'µs / Envoy': Math.round((withoutCheck.cpuMsPerChange * 1000) / options.envoys), 'states / change': withoutCheck.statesPerChange, 'programmed at the end': withoutCheck.programmed },
    'references known (check on)': { 'CPU ms / change': Math.round(withCheck.cpuMsPerChange), 'µs / Envoy': Math.round((withCheck.cpuMsPerChange * 1000) / options.envoys), 'states / change': withCheck.statesPerChange, 'programmed at the end': withCheck.programmed },
  });
  console.log(`ratio check on / idle: ${(withCheck.cpuMsPerChange / withoutCheck.cpuMsPerChange).toFixed(2)}`);
}
