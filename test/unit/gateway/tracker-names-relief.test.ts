// The tracker's names-hold relief (xds-gateway/tracking/name-owners.ts; docs/ARCHITECTURE.md, "A names
// hold is held against the objects that route to the names"). The scenario is the one that held a
// burst's first snapshot behind its second: X's change reaches an Envoy, then Y's moves Y's route to a
// new cluster; the Envoy ACKs the clusters, so its EDS subscription lacks the new cluster's endpoints
// (a reference hold), then asks for them (an added-names hold), then ACKs them. Throughout, the relief
// names Y alone, and its `t` is what the ACKs say, as long as everything on the way is stamped.
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, packAny, ROUTE_CONFIGURATION_TYPE_URL, type AnyResource } from '../../../common/xds';
import { provenanceMetadata } from '../../../common/xds/provenance';
import { grpcListener } from '../../../infra/local/envoys/grpcXdsResources';
import { oneEnvoyTracker } from './one-envoy-tracker';

const LINEAGE = 'gw-0.boot-1.edge';
const NODE = 'envoy-0';
const X = 'projectcontour.io/HTTPProxy/ns/x';
const Y = 'projectcontour.io/HTTPProxy/ns/y';

const stamp = (sources: readonly string[]) => (sources.length === 0 ? {} : { metadata: provenanceMetadata(sources) });
const cluster = (name: string, sources: readonly string[]): { name: string; resource: AnyResource } => ({
  name,
  resource: packAny(CLUSTER_TYPE_URL, { name, type: 'EDS', eds_cluster_config: { eds_config: { ads: {} }, service_name: name }, ...stamp(sources) }),
});
const endpoints = (name: string): { name: string; resource: AnyResource } => ({ name, resource: packAny(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { cluster_name: name, endpoints: [] }) });
/**
 * The route configuration `routes`: one virtual host per [host, cluster, sources]; the configuration
 * itself stamped with what owns it (here: X, as a CP might stamp it with its first or its owning object).
 */
const routes = (hosts: ReadonlyArray<readonly [string, string, readonly string[]]>): { name: string; resource: AnyResource } => ({
  name: 'routes',
  resource: packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name: 'routes',
    ...stamp([`${X}@1`]),
    virtual_hosts: hosts.map(([host, to, sources]) => ({ name: host, domains: [host], routes: [{ match: { prefix: '/' }, route: { cluster: to } }], ...stamp(sources) })),
  }),
});

function setup(namesHoldRelief = true) {
  return oneEnvoyTracker({ lineage: LINEAGE, group: 'edge', node: NODE, namesHoldRelief });
}

/**
 * An Envoy (LDS and CDS wildcard, RDS and EDS by name) programmed with X's host on cluster cx and Y's
 * on cy, then Y's change: a new cluster cy2 (CDS at `clusters`, EDS after) and Y's host moved to it
 * (RDS last), the Envoy ACKing the clusters before it asks for cy2's endpoints.
 */
function yMovesToANewCluster(options: { yHostSources?: readonly string[]; xAlsoRoutesToCy2?: boolean; namesHoldRelief?: boolean } = {}) {
  const t = setup(options.namesHoldRelief);
  const yHost = options.yHostSources ?? [`${Y}@1`];
  t.apply(LDS_TYPE_URL, [{ name: 'l', resource: grpcListener('l', 'routes') }]);
  t.apply(RDS_TYPE_URL, [routes([['x.example.com', 'cx', [`${X}@1`]], ['y.example.com', 'cy', yHost]])]);
  t.apply(CDS_TYPE_URL, [cluster('cx', [`${X}@1`]), cluster('cy', [`${Y}@1`])]);
  t.apply(EDS_TYPE_URL, [endpoints('cx'), endpoints('cy')]);
  t.request(LDS_TYPE_URL, { kind: 'initial', versionInfo: '' }, []);
  t.sendAndAck(LDS_TYPE_URL, []);
  t.request(RDS_TYPE_URL, { kind: 'initial', versionInfo: '' }, ['routes']);
  t.sendAndAck(RDS_TYPE_URL, ['routes']);
  t.request(CDS_TYPE_URL, { kind: 'initial', versionInfo: '' }, []);
  t.sendAndAck(CDS_TYPE_URL, []);
  t.request(EDS_TYPE_URL, { kind: 'initial', versionInfo: '' }, ['cx', 'cy']);
  t.sendAndAck(EDS_TYPE_URL, ['cx', 'cy']);
  expect(t.last().state.programmedThrough).toBe(4);
  // X's change (its host's route, at 5), then Y's: cy2 at 6, its endpoints at 7, Y's host moved at 8.
  const xChange = t.apply(RDS_TYPE_URL, [routes([['x.example.com', 'cx', [`${X}@2`]], ['y.example.com', 'cy', yHost]])]);
  t.sendAndAck(RDS_TYPE_URL, ['routes']);
  expect(t.last().state.programmedThrough).toBe(xChange);
  const clusters = t.apply(CDS_TYPE_URL, [cluster('cx', [`${X}@2`]), cluster('cy', [`${Y}@1`]), cluster('cy2', [`${Y}@2`])]);
  t.apply(EDS_TYPE_URL, [endpoints('cx'), endpoints('cy'), endpoints('cy2')]);
  const moved = t.apply(RDS_TYPE_URL, [routes([['x.example.com', options.xAlsoRoutesToCy2 === true ? 'cy2' : 'cx', [`${X}@2`]], ['y.example.com', 'cy2', yHost.map((source) => source.replace('@1', '@2'))]])]);
  t.sendAndAck(CDS_TYPE_URL, []);
  return { ...t, xChange, clusters, moved };
}

test('a reference hold, then an added-names hold, each relieved for every object but the one whose route leads to the names', () => {
  const t = yMovesToANewCluster();
  // CDS ACKed at 6: cy2 references endpoints the EDS subscription lacks (a reference hold).
  expect(t.last().state.programmedThrough).toBeUndefined();
  expect(t.last().state.types[EDS_TYPE_URL]?.namesChange?.reference).toBe(true);
  // The ACKs say 6 (EDS next changes at 7): for every object but Y.
  expect(t.last().relief).toEqual({ t: t.clusters, o: [Y] });
  // It asks for cy2's endpoints (an update request: nothing new ACKed): an added-names hold, same relief.
  t.request(EDS_TYPE_URL, { kind: 'update', nonce: t.nonce(EDS_TYPE_URL), reason: 'versionNotAccepted' }, ['cx', 'cy', 'cy2']);
  expect(t.last().state.types[EDS_TYPE_URL]?.namesChange).toMatchObject({ sent: false });
  expect(t.last().state.types[EDS_TYPE_URL]?.namesChange?.reference).toBeUndefined();
  expect(t.last().relief).toEqual({ t: t.clusters, o: [Y] });
  // Served and ACKed: no hold, no relief; RDS (ACKed at 5) still bounds it below the move.
  t.sendAndAck(EDS_TYPE_URL, ['cx', 'cy', 'cy2']);
  expect(t.last().state.programmedThrough).toBe(t.moved - 1);
  expect(t.last().relief).toBeUndefined();
});

test('names the objects of every host routing to the held names: X routing to Y\'s new cluster holds X too', () => {
  const t = yMovesToANewCluster({ xAlsoRoutesToCy2: true });
  expect(t.last().relief).toEqual({ t: t.clusters, o: [X, Y].sort() });
});

test('no relief when a host on the way carries no stamp of its own (its configuration\'s does not stand in), or with the option off', () => {
  const unstamped = yMovesToANewCluster({ yHostSources: [] });
  expect(unstamped.last().state.programmedThrough).toBeUndefined();
  expect(unstamped.last().relief).toBeUndefined();
  const off = yMovesToANewCluster({ namesHoldRelief: false });
  expect(off.last().state.programmedThrough).toBeUndefined();
  expect(off.last().relief).toBeUndefined();
});

test('a name is served by the ACK of a response sent after it was added, while names added later stay held', () => {
  const t = yMovesToANewCluster();
  t.request(EDS_TYPE_URL, { kind: 'update', nonce: t.nonce(EDS_TYPE_URL), reason: 'versionNotAccepted' }, ['cx', 'cy', 'cy2']);
  expect(t.last().relief?.o).toEqual([Y]);
  // X's next change moves X's host to a new cluster cx2; the Envoy ACKs its clusters before the EDS
  // response carrying cy2 is answered: cx2's endpoints are missing too, so the hold matters to X and Y.
  const xClusters = t.apply(CDS_TYPE_URL, [cluster('cx', [`${X}@2`]), cluster('cy2', [`${Y}@2`]), cluster('cx2', [`${X}@3`])]);
  t.apply(EDS_TYPE_URL, [endpoints('cx'), endpoints('cy2'), endpoints('cx2')]);
  t.apply(RDS_TYPE_URL, [routes([['x.example.com', 'cx2', [`${X}@3`]], ['y.example.com', 'cy2', [`${Y}@2`]]])]);
  t.sendAndAck(CDS_TYPE_URL, []);
  expect(t.last().state.types[CDS_TYPE_URL]?.acked).toBe(xClusters);
  expect(t.last().relief?.o).toEqual([X, Y].sort());
  // The EDS response sent now carries cy2 (and cx2 is not yet asked for); its ACK adds cx2: cy2 is served, cx2 is not.
  t.sendAndAck(EDS_TYPE_URL, ['cx', 'cy', 'cy2', 'cx2']);
  expect(t.last().state.types[EDS_TYPE_URL]?.namesChange).toMatchObject({ sent: false });
  expect(t.last().relief?.o).toEqual([X]);
});

test('a gRPC-style client (clusters by name): a route\'s new cluster it has not asked for holds the objects routing to it', () => {
  const t = setup();
  // It routes for its target y.example.com (the listener it names), as a gRPC client does.
  t.apply(LDS_TYPE_URL, [{ name: 'y.example.com', resource: grpcListener('y.example.com', 'routes') }]);
  t.apply(RDS_TYPE_URL, [routes([['x.example.com', 'cx', [`${X}@1`]], ['y.example.com', 'cy', [`${Y}@1`]]])]);
  t.apply(CDS_TYPE_URL, [cluster('cx', [`${X}@1`]), cluster('cy', [`${Y}@1`])]);
  t.apply(EDS_TYPE_URL, [endpoints('cx'), endpoints('cy')]);
  for (const [typeUrl, names] of [[LDS_TYPE_URL, ['y.example.com']], [RDS_TYPE_URL, ['routes']], [CDS_TYPE_URL, ['cx', 'cy']], [EDS_TYPE_URL, ['cx', 'cy']]] as const) {
    t.request(typeUrl, { kind: 'initial', versionInfo: '' }, [...names]);
    t.sendAndAck(typeUrl, [...names]);
  }
  expect(t.last().state.programmedThrough).toBe(4);
  // Y's change: cluster cy2 (and its endpoints) first, then Y's host moved to it.
  t.apply(CDS_TYPE_URL, [cluster('cx', [`${X}@1`]), cluster('cy', [`${Y}@1`]), cluster('cy2', [`${Y}@2`])]);
  t.apply(EDS_TYPE_URL, [endpoints('cx'), endpoints('cy'), endpoints('cy2')]);
  const moved = t.apply(RDS_TYPE_URL, [routes([['x.example.com', 'cx', [`${X}@1`]], ['y.example.com', 'cy2', [`${Y}@2`]]])]);
  t.sendAndAck(CDS_TYPE_URL, ['cx', 'cy']);
  t.sendAndAck(EDS_TYPE_URL, ['cx', 'cy']);
  t.sendAndAck(RDS_TYPE_URL, ['routes']);
  // The ACKed route leads to cy2, which the CDS subscription lacks: held, relieved for all but Y.
  expect(t.last().state.programmedThrough).toBeUndefined();
  expect(t.last().relief).toEqual({ t: moved, o: [Y] });
  // It asks for cy2 (and, once that is ACKed, for its endpoints): held for Y until both are served.
  t.request(CDS_TYPE_URL, { kind: 'update', nonce: t.nonce(CDS_TYPE_URL), reason: 'versionNotAccepted' }, ['cx', 'cy', 'cy2']);
  expect(t.last().relief).toEqual({ t: moved, o: [Y] });
  t.sendAndAck(CDS_TYPE_URL, ['cx', 'cy', 'cy2']);
  expect(t.last().relief).toEqual({ t: moved, o: [Y] });
  t.request(EDS_TYPE_URL, { kind: 'update', nonce: t.nonce(EDS_TYPE_URL), reason: 'versionNotAccepted' }, ['cx', 'cy', 'cy2']);
  t.sendAndAck(EDS_TYPE_URL, ['cx', 'cy', 'cy2']);
  expect(t.last().state.programmedThrough).toBe(moved);
  expect(t.last().relief).toBeUndefined();
});
