// Real gRPC C-core xDS clients with nodes the gateway must refuse — the reported one, a legal but
// 1,103-character node.cluster, and a node id carrying a terminal escape sequence — connect to the
// gateway of the whole system (local DynamoDB, Kubernetes API server, two control-plane replicas, the
// functions) next to simulated Envoys and one ordinary C-core client. Before, the long cluster made
// the lineage write fail for ever: the gateway stayed not-ready and no object went True again. Now the
// edge refuses such a stream (INVALID_ARGUMENT naming the field), nothing of it is written, the gateway
// stays ready, and a change to another object becomes True counting exactly the legitimate Envoys.
import pino from 'pino';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, applySamples, sampleCanaryService, sampleFqdn, sampleName } from '../../../infra/local/system/samples';
import { startXdsPeers, type XdsPeer } from '../../support/xds-peers';
import { ConditionObserver } from '../../truth/observer';
import { CONDITION_TYPE, startTruthSystem, type TruthSystem } from '../../truth/system';

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
const LONG_CLUSTER = `ingress-${'x'.repeat(1095)}`;
const ESCAPE_ID = 'core-\u001b[2J\u001b[31mfirst';

let system: TruthSystem;
let observer: ConditionObserver;
let peers: XdsPeer[] = [];

const trueAt = (index: number, generation: number) => (): boolean => {
  const current = observer.current(sampleName(index));
  return current?.condition.status === 'True' && current.condition.observedGeneration === generation;
};

beforeAll(async () => {
  system = await startTruthSystem({ objects: 2, envoys: 2, logger });
  observer = new ConditionObserver(system.kube.url, CONDITION_TYPE);
  observer.start();
  await applySamples(system.kube.url, 2);
  await observer.waitFor(() => trueAt(0, 1)() && trueAt(1, 1)(), 30_000, 'both samples True at generation 1');
}, 120_000);

afterAll(async () => {
  await Promise.all(peers.map((peer) => peer.close()));
  await observer?.stop();
  await system?.close();
});

test('refused nodes write nothing and stop nothing: the gateway stays ready and another object goes True', async () => {
  expect(LONG_CLUSTER).toHaveLength(1103);
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('the truth system runs its gateway in this process');
  const common = { kind: 'grpc-core' as const, xdsServer: system.gatewayAddress, target: sampleFqdn(1), rpcIntervalMs: 200, logger };
  peers = await startXdsPeers([
    { ...common, nodeId: 'core-long-cluster', nodeCluster: LONG_CLUSTER },
    { ...common, nodeId: ESCAPE_ID, nodeCluster: 'ingress' },
    { ...common, nodeId: 'core-ok', nodeCluster: 'ingress' },
  ]);
  const [longCluster, escapeId, ok] = peers as [XdsPeer, XdsPeer, XdsPeer];
  // The ordinary client is served: it routes to sample-1.
  await ok.waitFor((peer) => (peer.rpcsSince(0).some((rpc) => rpc.ok) ? true : undefined), 30_000, 'core-ok routing');
  // Let the refused clients retry a few times (C-core reconnects with backoff), as the reported one
  // did for 15 s: a write that could never succeed would by now have been retried and failed.
  await new Promise((resolve) => setTimeout(resolve, 4000));
  expect(gateway.ready()).toBe(true);

  const patch = { spec: { routes: [{ conditions: [{ prefix: '/' }], services: [{ name: sampleCanaryService(1), port: SAMPLE_SERVICE_PORT }] }] } };
  const response = await fetch(`${system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${sampleName(1)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(patch),
  });
  expect(response.ok).toBe(true);
  await observer.waitFor(trueAt(1, 2), 30_000, 'sample-1 True at generation 2');
  // Counted: the two simulated Envoys and core-ok; the refused clients are in no denominator.
  expect(observer.current(sampleName(1))?.condition.message).toBe('3/3 Envoys programmed at generation 2');
  expect(trueAt(0, 1)()).toBe(true);

  expect(gateway.ready()).toBe(true);
  expect(gateway.recorder.stats().consecutiveFailures).toBe(0);
  for (const refused of ['core-long-cluster', ESCAPE_ID]) expect((await gateway.store.getEnvoyState(refused)).status).toBe('missing');
  expect((await gateway.store.getEnvoyState('core-ok')).status).toBe('found');
  // The refused clients hold nothing from the gateway, by their own account, and never routed.
  for (const peer of [longCluster, escapeId]) {
    expect(peer.rpcsSince(0).filter((rpc) => rpc.ok)).toEqual([]);
    expect((peer.latest()?.resources ?? []).filter((resource) => resource.status === 'ACKED')).toEqual([]);
  }
}, 120_000);
