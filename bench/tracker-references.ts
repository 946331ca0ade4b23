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
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, encodeVersion, type EnvoyState, type RequestClass } from '../common/core';
import { packAny, ROUTE_CONFIGURATION_TYPE_URL, type AnyResource } from '../common/xds';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener } from '../infra/local/envoys/grpcXdsResources';
import { EnvoyTracker } from '../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../xds-gateway/tracking/recorder';
import { positiveInteger } from './support/args';

const LINEAGE = 'gw-bench.boot-1.edge';

interface Options {
  envoys: number;
  clusters: number;
  changes: number;
}

/** The tracker's recorder port, counting what it is handed (the bench measures the tracker alone). */
class CountingRecorder {
  states = 0;
  enqueueEnvoyState(_state: EnvoyState): void {
    this.states++;
  }
  enqueueEvent(): void {}
  enqueueLineageState(): void {}
  forgetEnvoy(): boolean {
    return true;
  }
}

function routes(clusters: readonly string[]): AnyResource {
  return packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name: 'routes',
    virtual_hosts: clusters.map((cluster, index) => ({ name: `host-${index}`, domains: [`host-${index}.example.com`], routes: [{ match: { prefix: '/' }, route: { cluster } }] })),
  });
}

interface RunResult {
  cpuMsPerChange: number;
  statesPerChange: number;
  programmed: number;
}

function runOnce(options: Options, withReferences: boolean): RunResult {
  let now = 1_000_000;
  const recorder = new CountingRecorder();
  const tracker = new EnvoyTracker({ recorder: recorder as unknown as Recorder, logger: pino({ level: 'silent' }), clock: { now: () => now }, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
  let seq = 0;
  const versions = new Map<string, number>();
  const clusterNames = Array.from({ length: options.clusters }, (_, index) => `default/app-${index}/8080`);
  const apply = (typeUrl: string, resources: Array<{ name: string; resource: AnyResource }>): void => {
    seq += 1;
    versions.set(typeUrl, seq);
    const reported = withReferences ? resources.map(({ name, resource }) => ({ name, value: resource.value as Buffer })) : [];
    tracker.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl, seq, changed: true, upstreamVersion: `u${seq}`, upstreamEpoch: 1, resources: reported, at: now++ });
  };
  const named = (names: readonly string[], make: (name: string) => AnyResource) => names.map((name) => ({ name, resource: make(name) }));
  apply(LDS_TYPE_URL, [{ name: 'ingress_http', resource: grpcListener('ingress_http', 'routes') }]);
  apply(RDS_TYPE_URL, [{ name: 'routes', resource: routes(clusterNames) }]);
  apply(CDS_TYPE_URL, named(clusterNames, grpcCluster));
  apply(EDS_TYPE_URL, named(clusterNames, (name) => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port: 8080 }])));

  const nonces = new Map<string, number>();
  const ids = Array.from({ length: options.envoys }, (_, index) => `envoy-${index}`);
  const request = (id: string, typeUrl: string, classification: RequestClass, names: readonly string[]): void =>
    tracker.requestClassified({ streamId: id, nodeId: id, typeUrl, lineage: LINEAGE, classification, resourceNames: names, at: now++ });
  const sendAndAck = (id: string, typeUrl: string, names: readonly string[]): void => {
    const key = `${id}|${typeUrl}`;
    const nonce = String((nonces.get(key) ?? 0) + 1);
    nonces.set(key, Number(nonce));
    const version = { lineage: LINEAGE, seq: versions.get(typeUrl) ?? 0 };
    tracker.responseSent({ streamId: id, nodeId: id, typeUrl, version, nonce, resourceCount: 1, at: now++ });
    request(id, typeUrl, { kind: 'ack', nonce, version: encodeVersion(version) }, names);
  };
  const subscriptions = (names: readonly string[]): Array<[string, readonly string[]]> => [
    [LDS_TYPE_URL, []],
    [RDS_TYPE_URL, ['routes']],
    [CDS_TYPE_URL, []],
    [EDS_TYPE_URL, names],
  ];
  for (const id of ids) {
    tracker.streamOpened({ streamId: id, node: { nodeId: id, cluster: 'edge', metadata: {}, locality: {} } as never, group: 'edge', lineage: LINEAGE, protocol: 'sotw', service: 'ads', at: now++ });
    for (const [typeUrl, names] of subscriptions(clusterNames)) {
      request(id, typeUrl, { kind: 'initial', versionInfo: '' }, names);
      sendAndAck(id, typeUrl, names);
    }
  }

  const statesBefore = recorder.states;
  const cpuBefore = process.cpuUsage();
  for (let change = 0; change < options.changes; change++) {
    const added = `default/new-${change}/8080`;
    clusterNames.push(added);
    apply(CDS_TYPE_URL, named(clusterNames, grpcCluster));
    apply(EDS_TYPE_URL, named(clusterNames, (name) => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port: 8080 }])));
    apply(RDS_TYPE_URL, [{ name: 'routes', resource: routes(clusterNames) }]);
    for (const id of ids) {
      sendAndAck(id, CDS_TYPE_URL, []);
      sendAndAck(id, RDS_TYPE_URL, ['routes']);
      // Envoy asks for the new cluster's endpoints once it accepted the cluster.
      request(id, EDS_TYPE_URL, { kind: 'update', nonce: String(nonces.get(`${id}|${EDS_TYPE_URL}`) ?? 0), reason: 'versionNotAccepted' }, clusterNames);
      sendAndAck(id, EDS_TYPE_URL, clusterNames);
    }
  }
  const cpu = process.cpuUsage(cpuBefore);
  const programmed = ids.filter((id) => tracker.envoyState(id)?.programmedThrough === seq).length;
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
