// The barrier against a Lease watch that is behind (docs/GATEWAY.md, "Watermarks": the barrier). The
// Lease and an HTTPProxy's status reach the gateway on different watches, and kube-apiserver keeps one
// watch cache per resource, so a new leader's status write can arrive before the Lease change that
// made it leader. Meanwhile the gateway still points at the former leader, now a follower that may be
// behind. A barrier re-opened there would take W(web, 2) from content at generation 1: a false True
// for every Envoy on that lineage. Deterministic: the former leader's inputs are frozen at generation
// 1, and the local API server holds Lease watch events back by several seconds.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { LDS_TYPE_URL, type ObjectRef } from '../../../common/core';
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import type { RouteInputs } from '../../../infra/local/control-plane/model';
import type { RouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { KubeApiServer } from '../../../infra/local/kube/server';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import type { UpstreamAppliedEvent } from '../../../xds-gateway/relay/observer';
import { expectWatermarkNotEarly, startBarrierKube, startReplica, stopReplica, type BarrierReplica, type WatermarkSeen } from './barrier-support';
import { adsSpec, eventually, newFleet, proxy, startTestGateway, testLogger } from './helpers';

const PROXY_API = { group: 'projectcontour.io', version: 'v1', namespace: 'default', plural: 'httpproxies' };
const WEB: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
const WEB_SOURCE = 'projectcontour.io/HTTPProxy/default/web';
const LEASE_WATCH_LAG_MS = 5000;

/** A route source that can stop seeing changes: its replica keeps serving what it had (a follower that is behind). */
class FreezableSource implements RouteSource {
  private frozen: RouteInputs | undefined;
  constructor(private readonly inner: RouteSource) {}
  start(): Promise<void> {
    return this.inner.start();
  }
  list(): RouteInputs {
    return structuredClone(this.frozen ?? this.inner.list());
  }
  watch(onChange: () => void): () => void {
    return this.inner.watch(() => {
      if (this.frozen === undefined) onChange();
    });
  }
  freeze(): void {
    this.frozen = this.inner.list();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

type Replica = BarrierReplica<FreezableSource>;

let kube: KubeApiServer;
let custom: CustomObjectsApi;
let dynamo: LocalDynamo;
let gateway: Gateway | undefined;
let fleet: Fleet | undefined;
const replicas = new Map<string, Replica>();
const applied: UpstreamAppliedEvent[] = [];

beforeAll(async () => {
  const started = await startBarrierKube('gw-lease-lag-', [HTTPPROXY_CRD]);
  kube = started.kube;
  custom = started.custom;
  const { kubeConfig } = started;
  for (const replicaId of ['replica-a', 'replica-b']) {
    const startedReplica = await startReplica(kubeConfig, replicaId, { source: (kubeSource) => new FreezableSource(kubeSource) });
    replicas.set(replicaId, startedReplica);
    // replica-a leads: it starts competing first.
    if (replicaId === 'replica-a') await eventually(() => startedReplica.elector.isLeader(), 'replica-a leads');
  }
  dynamo = await startLocalDynamo({ logger: testLogger });
});

afterAll(async () => {
  fleet?.close();
  await gateway?.close();
  for (const replica of replicas.values()) await stopReplica(replica);
  await dynamo.close();
  await kube.close();
});

function replica(id: string): Replica {
  const found = replicas.get(id);
  if (found === undefined) throw new Error(`no replica ${id}`);
  return found;
}

/** Every watermark recorded for web@G, per lineage. */
async function watermarksOf(generation: number): Promise<WatermarkSeen[]> {
  const read = await gateway!.store.getObjectGeneration(WEB, generation);
  if (read.status !== 'found') return [];
  return Object.entries(read.value.watermarks).map(([lineage, mark]) => ({ lineage, types: mark.types }));
}

test('a new leader\'s status seen before its Lease: no watermark from the former leader\'s older content', async () => {
  const a = replica('replica-a');
  const b = replica('replica-b');
  const controlPlanes = [a.controlPlane, b.controlPlane];
  gateway = await startTestGateway({
    upstream: a.controlPlane.address,
    table: 'gw-lease-lag',
    'dynamodb-endpoint': dynamo.endpoint,
    watermarks: 'barrier',
    kubeconfig: kube.kubeconfigPath(mkdtempSync(path.join(os.tmpdir(), 'gw-lease-lag-gw-'))),
    'tracked-kinds': JSON.stringify([{ group: 'projectcontour.io', version: 'v1', kind: 'HTTPProxy', plural: 'httpproxies', signal: { type: 'condition', conditionType: 'Valid' } }]),
    'leader-lease': 'default/xds-control-plane',
    'leader-targets': JSON.stringify({ 'replica-a': a.controlPlane.address, 'replica-b': b.controlPlane.address }),
    'leader-settle-ms': '200',
  });
  const running = gateway;
  running.tracker.onUpstreamApplied((e) => applied.push(e));
  fleet = newFleet(running.xdsPort);
  fleet.addMany(2, adsSpec({ node: (i) => ({ id: `lag-${i}`, cluster: 'edge' }) }), 0);
  fleet.connectAll();
  await eventually(() => running.leader?.currentTarget() === a.controlPlane.address, 'the gateway follows replica-a');
  await fleet.waitFor(() => fleet!.envoys().every((e) => e.acceptedVersion(LDS_TYPE_URL) !== undefined), { timeoutMs: 30_000 });

  await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('web', 'web.example.com', 'app', 80) });
  const first = await eventually(async () => {
    const marks = await watermarksOf(1);
    return marks.length > 0 ? marks : undefined;
  }, 'a watermark of web@1');
  for (const mark of first) expectWatermarkNotEarly(controlPlanes, applied, mark, WEB_SOURCE, 1);

  // The Lease watch falls behind; replica-a stops seeing changes and steps down; replica-b leads.
  kube.setWatchLag('leases.coordination.k8s.io', LEASE_WATCH_LAG_MS);
  a.source.freeze();
  await a.elector.stop();
  await eventually(() => b.elector.isLeader(), 'replica-b leads');
  await custom.patchNamespacedCustomObject(
    { ...PROXY_API, name: 'web', body: { spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ conditions: [{ prefix: '/v2' }], services: [{ name: 'app', port: 80 }] }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  // replica-b writes web@2 processed at once; the gateway's Lease watch shows the change only later.
  await eventually(async () => {
    const current = (await custom.getNamespacedCustomObjectStatus({ ...PROXY_API, name: 'web' })) as { status?: { conditions?: Array<{ type: string; observedGeneration?: number }> } };
    return current.status?.conditions?.some((c) => c.type === 'Valid' && c.observedGeneration === 2) === true ? true : undefined;
  }, 'replica-b reports web@2 processed');

  // Wait past the lag: by then the watch has caught up, and any watermark taken in the window exists.
  await new Promise((resolve) => setTimeout(resolve, LEASE_WATCH_LAG_MS + 1000));
  const second = await eventually(async () => {
    const marks = await watermarksOf(2);
    return marks.length > 0 ? marks : undefined;
  }, 'a watermark of web@2');
  for (const mark of second) expectWatermarkNotEarly(controlPlanes, applied, mark, WEB_SOURCE, 2);
  expect(running.leader?.currentTarget()).toBe(b.controlPlane.address);
}, 90_000);
