// Observed-generation barrier against a Contour-like upstream: two control-plane replicas (UUID
// versions, no provenance), HTTPProxies in the local Kubernetes API server, one status writer
// elected on a Lease, and a leader change. Every watermark must be at or after the generation's
// real first version: the content at each watermark type version (mapped through the gateway's seqs
// to the replica's rebuild log) reflects the generation.
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { LDS_TYPE_URL, type ObjectRef } from '../../../common/core';
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import type { KubeRouteSource } from '../../../infra/local/control-plane/kube-route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { KubeApiServer } from '../../../infra/local/kube/server';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import type { UpstreamAppliedEvent } from '../../../xds-gateway/relay/observer';
import { expectWatermarkNotEarly, startBarrierKube, startReplica, stopReplica, type BarrierReplica } from './barrier-support';
import { adsSpec, eventually, newFleet, proxy, startDelayProxy, startTestGateway, testLogger } from './helpers';

const PROXY_API = { group: 'projectcontour.io', version: 'v1', namespace: 'default', plural: 'httpproxies' };
const WEB: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    scope: 'Namespaced',
    versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } }],
  },
};

type Replica = BarrierReplica<KubeRouteSource>;

let kube: KubeApiServer;
let custom: CustomObjectsApi;
let dynamo: LocalDynamo;
let gateway: Gateway;
let fleet: Fleet;
const replicas: Replica[] = [];
/** Per replica, a proxy delaying its xDS pushes (the gateway reaches the replicas only through these). */
const delayed = new Map<string, { address: string; close: () => Promise<void> }>();
const applied: UpstreamAppliedEvent[] = [];

beforeAll(async () => {
  const started = await startBarrierKube('gw-barrier-', [HTTPPROXY_CRD, WIDGET_CRD]);
  kube = started.kube;
  custom = started.custom;
  const { kubeConfig, kubeconfigPath } = started;
  for (const replicaId of ['replica-a', 'replica-b']) {
    // Contour's rebuilds are not instant; the follower is slower, so it can be behind the leader.
    const replica = await startReplica(kubeConfig, replicaId, { source: (kubeSource) => kubeSource, extraRebuildDelayMs: replicaId === 'replica-a' ? 0 : 150 });
    replicas.push(replica);
    delayed.set(replicaId, await startDelayProxy(replica.controlPlane.address, 300));
  }
  const leader = await eventually(() => replicas.find((r) => r.elector.isLeader()), 'a leader');
  const follower = replicas.find((r) => r !== leader) as Replica;
  dynamo = await startLocalDynamo({ logger: testLogger });
  // Deliberately start on the follower: the gateway must move to the status writer by itself.
  gateway = await startTestGateway({
    upstream: delayed.get(follower.controlPlane.replicaId)!.address,
    table: 'gw-barrier',
    'dynamodb-endpoint': dynamo.endpoint,
    watermarks: 'barrier',
    kubeconfig: kubeconfigPath,
    'tracked-kinds': JSON.stringify([
      { group: 'projectcontour.io', version: 'v1', kind: 'HTTPProxy', plural: 'httpproxies', signal: { type: 'condition', conditionType: 'Valid' } },
      { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', signal: { type: 'none', reason: 'widgets report no observedGeneration' } },
    ]),
    'leader-lease': 'default/xds-control-plane',
    'leader-targets': JSON.stringify(Object.fromEntries([...delayed].map(([id, proxyServer]) => [id, proxyServer.address]))),
    'leader-settle-ms': '200',
  });
  gateway.tracker.onUpstreamApplied((e) => applied.push(e));
  fleet = newFleet(gateway.xdsPort);
  fleet.addMany(2, adsSpec({ node: (i) => ({ id: `bar-${i}`, cluster: 'edge' }) }), 0);
  fleet.connectAll();
});

afterAll(async () => {
  fleet.close();
  await gateway.close();
  for (const replica of replicas) await stopReplica(replica);
  for (const proxyServer of delayed.values()) await proxyServer.close();
  await dynamo.close();
  await kube.close();
});

function leaderReplica(): Replica | undefined {
  return replicas.find((r) => r.elector.isLeader());
}

async function watermarkOf(generation: number): Promise<{ lineage: string; seq: number; types: Record<string, number> }> {
  return eventually(async () => {
    const read = await gateway.store.getObjectGeneration(WEB, generation);
    if (read.status !== 'found') return undefined;
    const [lineage, mark] = Object.entries(read.value.watermarks)[0] ?? [];
    return lineage === undefined || mark === undefined ? undefined : { lineage, seq: mark.seq, types: mark.types };
  }, `watermark of web@${generation}`, 45_000);
}

function expectNotEarly(mark: { lineage: string; types: Record<string, number> }, generation: number): void {
  expectWatermarkNotEarly(replicas.map((r) => r.controlPlane), applied, mark, 'projectcontour.io/HTTPProxy/default/web', generation);
}

async function setSpec(prefix: string): Promise<void> {
  await custom.patchNamespacedCustomObject(
    { ...PROXY_API, name: 'web', body: { spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ conditions: [{ prefix }], services: [{ name: 'app', port: 80 }] }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

test('barrier watermarks are never earlier than the generation, across a leader change', async () => {
  // The gateway follows the Lease to the status writer.
  const leader = leaderReplica() as Replica;
  await eventually(() => gateway.leader?.currentTarget() === delayed.get(leader.controlPlane.replicaId)!.address, 'gateway targets the leader');
  await fleet.waitFor(() => fleet.envoys().every((e) => e.acceptedVersion(LDS_TYPE_URL) !== undefined), { timeoutMs: 30_000 });

  await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('web', 'web.example.com', 'app', 80) });
  expectNotEarly(await watermarkOf(1), 1);
  await setSpec('/v2');
  expectNotEarly(await watermarkOf(2), 2);

  // Leader change: the status writer steps down; the other replica takes the Lease.
  await leader.elector.stop();
  const next = await eventually(() => replicas.find((r) => r !== leader && r.elector.isLeader()), 'the other replica leads');
  await eventually(() => gateway.leader?.currentTarget() === delayed.get(next.controlPlane.replicaId)!.address, 'gateway re-targets to the new leader');
  for (const [generation, prefix] of [[3, '/v3'], [4, '/v4']] as const) {
    await setSpec(prefix);
    const mark = await watermarkOf(generation);
    expectNotEarly(mark, generation);
  }
  // Every re-open after the change went to the new leader.
  expect(gateway.tracker.snapshot().upstream.every((u) => u.target === delayed.get(next.controlPlane.replicaId)!.address)).toBe(true);
});

test('a kind with no "processed" signal: every generation is marked not observable, never watermarked', async () => {
  const api = { group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets' };
  const ref: ObjectRef = { group: 'example.com', kind: 'Widget', namespace: 'default', name: 'w' };
  await custom.createNamespacedCustomObject({ ...api, body: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 1 } } });
  await custom.patchNamespacedCustomObject({ ...api, name: 'w', body: { spec: { size: 2 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  for (const generation of [1, 2]) {
    const stored = await eventually(async () => {
      const read = await gateway.store.getObjectGeneration(ref, generation);
      return read.status === 'found' && read.value.notObservable !== undefined ? read.value : undefined;
    }, `widget@${generation} marked not observable`);
    expect(stored.notObservable).toBe('widgets report no observedGeneration');
    expect(stored.watermarks).toEqual({});
  }
});
