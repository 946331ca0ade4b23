// Invariant 1 across upstream changes (docs/PROVENANCE.md, "Switching upstreams"): a watermark W(X, G)
// is only sound while every later seq of its lineage still reflects X at G or later. When the
// gateway's upstream moves to a control-plane replica that is behind (a leader change it follows, or a
// reconnect that lands on another or a restarted replica), that replica's older content must not be
// relayed on the same lineage: the group starts a new lineage whose watermarks come from its own
// content, and its Envoys reconnect to it. Deterministic: two reference control planes, the "behind"
// one serving app at generation 1 while the "ahead" one serves generation 2.
import { CDS_TYPE_URL, type ObjectRef } from '../../../common/core';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet, SimEnvoy } from '../../../infra/local/envoys';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { adsSpec, endpoints, eventually, newFleet, proxy, startTestGateway, testLogger } from './helpers';

const APP: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'app' };
// The cluster name carries the service port, so what an Envoy holds tells which generation it runs.
const GEN1_CLUSTER = 'default/app/8080';
const GEN2_CLUSTER = 'default/app/8081';

let dynamo: LocalDynamo;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: testLogger });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await dynamo.close();
});

async function controlPlaneAt(replicaId: string, generation: 1 | 2, port = 0): Promise<ControlPlane> {
  const source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1', 8080));
  source.applyEndpoints(endpoints('app', '10.0.0.1', 8081));
  source.applyProxy(proxy('app', 'app.example.com', 'app', 8080));
  if (generation === 2) source.applyProxy(proxy('app', 'app.example.com', 'app', 8081));
  const controlPlane = await startControlPlane({ port, replicaId, source, versionScheme: 'counter', provenance: true, logger: testLogger, holdoffMs: 5, holdoffMaxMs: 20 });
  await controlPlane.rebuildNow();
  let closed = false;
  const close = controlPlane.close.bind(controlPlane);
  controlPlane.close = async () => {
    if (closed) return;
    closed = true;
    await close();
    await source.close();
  };
  cleanups.push(() => controlPlane.close());
  return controlPlane;
}

interface Converged {
  gateway: Gateway;
  envoys: SimEnvoy[];
  /** The edge group's first lineage, on which W(app, 2) was recorded. */
  first: string;
  /** Its seq once generation 2 was served. */
  seqAtSwitch: number;
  /** Upstream responses applied on `first` from the moment the test returned (the switch). */
  appliedOnFirstAfterSwitch: Array<{ typeUrl: string; seq: number }>;
}

const holds = (envoy: SimEnvoy, cluster: string): boolean => envoy.heldResources(CDS_TYPE_URL).has(cluster) && envoy.heldResources(CDS_TYPE_URL).size === 1;
const edgeGroup = (gateway: Gateway): { lineage: string; currentSeq: number } | undefined => gateway.relay.control.groups().find((group) => group.group === 'edge');

/** A gateway fed by `upstream` (serving app@2) with two Envoys that run generation 2. */
async function convergedOnGeneration2(upstream: ControlPlane, table: string): Promise<Converged> {
  const gateway = await startTestGateway({ upstream: upstream.address, table, 'dynamodb-endpoint': dynamo.endpoint, watermarks: 'provenance' });
  cleanups.push(() => gateway.close());
  const fleet: Fleet = newFleet(gateway.xdsPort);
  cleanups.push(() => fleet.close());
  const envoys = fleet.addMany(2, adsSpec({ node: (i) => ({ id: `${table}-${i}`, cluster: 'edge' }) }), 0);
  fleet.connectAll();
  const first = await eventually(() => {
    const lineage = edgeGroup(gateway)?.lineage;
    return lineage !== undefined && gateway.provenance?.recordedGeneration(lineage, APP) === 2 && envoys.every((envoy) => holds(envoy, GEN2_CLUSTER)) ? lineage : undefined;
  }, 'W(app, 2) recorded and both Envoys run generation 2');
  // Every Envoy ACKed everything: the state the violation needs (programmedThrough ≥ W(app, 2).seq).
  await eventually(() => envoys.every((envoy) => gateway.tracker.envoyState(envoy.id)?.programmedThrough === edgeGroup(gateway)?.currentSeq), 'Envoys programmed through the current seq');
  const appliedOnFirstAfterSwitch: Converged['appliedOnFirstAfterSwitch'] = [];
  gateway.tracker.onUpstreamApplied((e) => {
    if (e.lineage === first && e.changed) appliedOnFirstAfterSwitch.push({ typeUrl: e.typeUrl, seq: e.seq });
  });
  return { gateway, envoys, first, seqAtSwitch: edgeGroup(gateway)?.currentSeq ?? -1, appliedOnFirstAfterSwitch };
}

/** After the switch: a second lineage serves generation 1 to both Envoys; the first got nothing more. */
async function expectNewLineageFromBehind(converged: Converged): Promise<void> {
  const { gateway, envoys, first } = converged;
  const second = await eventually(() => {
    const lineage = edgeGroup(gateway)?.lineage;
    if (lineage === undefined || lineage === first) return undefined;
    const moved = envoys.every((envoy) => gateway.tracker.envoyState(envoy.id)?.lineage === lineage && holds(envoy, GEN1_CLUSTER));
    return moved ? lineage : undefined;
  }, 'a new lineage serving generation 1, with both Envoys on it', 20_000);
  expect(second.split('.')[1]).toBe(`${gateway.bootId}-l1`);
  expect(gateway.relay.lineageEpochs()).toEqual({ edge: 1 });
  expect(await gateway.metrics.registry.getSingleMetricAsString('xds_programmed_gateway_lineage_moves_total')).toContain('xds_programmed_gateway_lineage_moves_total{group="edge"} 1');
  // The older content never got a seq on the lineage that holds W(app, 2).
  expect(converged.appliedOnFirstAfterSwitch).toEqual([]);
  // The retired lineage is no longer heartbeated (it leaves the live set after the TTL).
  expect(gateway.tracker.lineageState(first)).toBeUndefined();
  expect(gateway.tracker.snapshot().lineages.map((state) => state.lineage)).toEqual([second]);
  // The new lineage's watermarks come from its own content: generation 1 only.
  await eventually(() => gateway.provenance?.recordedGeneration(second, APP) === 1, 'W(app, 1) on the new lineage');
  expect(gateway.provenance?.recordedGeneration(second, APP)).toBe(1);
  for (const envoy of envoys) expect(gateway.tracker.envoyState(envoy.id)?.lineage).toBe(second);
}

test('a leader change to a replica that is behind starts a new lineage instead of relaying older content on the old one', async () => {
  const ahead = await controlPlaneAt('cp-ahead', 2);
  const behind = await controlPlaneAt('cp-behind', 1);
  const converged = await convergedOnGeneration2(ahead, 'gw-lagging-leader');
  converged.gateway.relay.control.setUpstreamTarget(behind.address);
  await expectNewLineageFromBehind(converged);
});

test('a reconnect that reaches a replica behind (same address) is refused by the provenance guard: new lineage', async () => {
  const ahead = await controlPlaneAt('cp-ahead', 2);
  const converged = await convergedOnGeneration2(ahead, 'gw-lagging-reconnect');
  const port = ahead.port;
  await ahead.close();
  // Another replica behind the same address (a Service, or the replica restarted with a stale cache).
  await controlPlaneAt('cp-behind', 1, port);
  await expectNewLineageFromBehind(converged);
});

test('a reconnect to a replica with the same content keeps the lineage (no churn)', async () => {
  const ahead = await controlPlaneAt('cp-ahead', 2);
  const { gateway, envoys, first, seqAtSwitch } = await convergedOnGeneration2(ahead, 'gw-same-reconnect');
  const port = ahead.port;
  const answeredAfterRestart = new Set<string>();
  let restarted = false;
  gateway.tracker.onUpstreamApplied((e) => {
    if (restarted) answeredAfterRestart.add(e.typeUrl);
  });
  await ahead.close();
  restarted = true;
  await controlPlaneAt('cp-ahead-again', 2, port);
  // Each type's replacement stream answered (its first response went through the guard).
  await eventually(() => answeredAfterRestart.size === 4, 'every upstream type answered again after the restart');
  expect(gateway.relay.lineageEpochs()).toEqual({});
  expect(edgeGroup(gateway)?.lineage).toBe(first);
  expect(edgeGroup(gateway)?.currentSeq).toBe(seqAtSwitch);
  for (const envoy of envoys) {
    expect(holds(envoy, GEN2_CLUSTER)).toBe(true);
    expect(gateway.tracker.envoyState(envoy.id)?.lineage).toBe(first);
  }
});
