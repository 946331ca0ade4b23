// What the bench baselines wait for: an Envoy routes a host to a cluster only once it holds the route
// that sends the host there and the cluster with its endpoints; the cluster alone (the first
// make-before-break wave) is not the change.
import { CDS_TYPE_URL, EDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { packAny } from '../../../common/xds/protos';
import { GroundTruth, RouteWatch } from '../../../infra/local/envoys';

const NODE = 'sim-0';
const hostOf = (index: number): string => `sample-${index}.local`;
const canaryOf = (index: number): string => `default/app-${index}-canary/8080`;
const oldOf = (index: number): string => `default/app-${index}/8080`;

function routeTable(clusterFor: (index: number) => string, indexes: readonly number[]): ReturnType<typeof packAny> {
  return packAny(RDS_TYPE_URL, {
    name: 'ingress_http',
    virtual_hosts: indexes.map((index) => ({
      name: `sample-${index}`,
      domains: [hostOf(index)],
      routes: [{ match: { prefix: '/' }, route: { cluster: clusterFor(index) } }],
    })),
  });
}

function acceptCluster(truth: GroundTruth, index: number, at: number): void {
  for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL]) {
    truth.recordAccepted(NODE, typeUrl, { versionInfo: `v${at}`, nonce: `n${at}`, acceptedAt: at, resources: [{ name: canaryOf(index), version: `v${at}` }], removed: [] });
  }
}

function setup(): { truth: GroundTruth; watch: RouteWatch } {
  const truth = new GroundTruth();
  truth.registerEnvoy(NODE, 'sim');
  const watch = new RouteWatch(truth, [0, 1].map((index) => ({ key: `sample-${index}`, host: hostOf(index), cluster: canaryOf(index) })));
  return { truth, watch };
}

describe('RouteWatch', () => {
  it('is not routable with the cluster alone while the route still sends the host to the old service', () => {
    const { truth, watch } = setup();
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v1', at: 100, sotw: [routeTable(oldOf, [0, 1])] });
    acceptCluster(truth, 0, 200);
    expect(watch.routableAt(NODE, 'sample-0')).toBeUndefined();
    expect(watch.routable([NODE], ['sample-0'])).toEqual({ lastAt: {}, envoysWith: { 'sample-0': 0 } });
  });

  it('is routable from the later of the first route to the cluster and the cluster with its endpoints', () => {
    const { truth, watch } = setup();
    acceptCluster(truth, 0, 200);
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v2', at: 300, sotw: [routeTable((index) => (index === 0 ? canaryOf(0) : oldOf(index)), [0, 1])] });
    expect(watch.routableAt(NODE, 'sample-0')).toBe(300);
    expect(watch.routableAt(NODE, 'sample-1')).toBeUndefined();
    // The first acceptance counts; a later one carrying the same route does not move it.
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v3', at: 400, sotw: [routeTable(canaryOf, [0, 1])] });
    expect(watch.routableAt(NODE, 'sample-0')).toBe(300);
    // Sample 1's route moved before its cluster was held: routable once the cluster is.
    expect(watch.routableAt(NODE, 'sample-1')).toBeUndefined();
    acceptCluster(truth, 1, 500);
    expect(watch.routableAt(NODE, 'sample-1')).toBe(500);
    expect(watch.routable([NODE, 'sim-absent'], ['sample-0', 'sample-1'])).toEqual({ lastAt: { 'sample-0': 300, 'sample-1': 500 }, envoysWith: { 'sample-0': 1, 'sample-1': 1 } });
  });

  it('reads a Delta response\'s upserted route configurations, and not its NACKed ones', () => {
    const { truth, watch } = setup();
    acceptCluster(truth, 0, 200);
    acceptCluster(truth, 1, 200);
    const upsert = (resource: ReturnType<typeof packAny>) => ({ name: 'ingress_http', resource });
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v1', at: 250, delta: { upserts: [upsert(routeTable(canaryOf, [0]))], removed: [] }, nacked: true });
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v2', at: 300, delta: { upserts: [upsert(routeTable(oldOf, [0, 1]))], removed: [] } });
    expect(watch.routableAt(NODE, 'sample-0')).toBeUndefined();
    // A removal alone routes nothing; the upsert that moves sample 0 does, sample 1 stays on the old service.
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v3', at: 350, delta: { upserts: [], removed: ['other'] } });
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v4', at: 400, delta: { upserts: [upsert(routeTable((index) => (index === 0 ? canaryOf(0) : oldOf(index)), [0, 1]))], removed: [] } });
    expect(watch.routableAt(NODE, 'sample-0')).toBe(400);
    expect(watch.routableAt(NODE, 'sample-1')).toBeUndefined();
  });

  it('ignores what a NACKed response applied and responses of other types', () => {
    const { truth, watch } = setup();
    acceptCluster(truth, 0, 200);
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v2', at: 300, sotw: [routeTable(canaryOf, [0])], nacked: true });
    watch.onAccepted(NODE, { typeUrl: CDS_TYPE_URL, versionInfo: 'v2', at: 300, sotw: [routeTable(canaryOf, [0])] });
    expect(watch.routableAt(NODE, 'sample-0')).toBeUndefined();
  });

  it('answers every Envoy handed the same list of route tables, each at its own acceptance', () => {
    const { truth, watch } = setup();
    const other = 'sim-1';
    truth.registerEnvoy(other, 'sim');
    for (const node of [NODE, other]) {
      for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL]) {
        truth.recordAccepted(node, typeUrl, { versionInfo: 'v1', nonce: 'n1', acceptedAt: 50, resources: [{ name: canaryOf(0), version: 'v1' }], removed: [] });
      }
    }
    // One array per distinct list, as the fleet's decoder hands it to every Envoy that got those bytes.
    const before = [routeTable(oldOf, [0])];
    const after = [routeTable(canaryOf, [0])];
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v1', at: 100, sotw: before });
    watch.onAccepted(other, { typeUrl: RDS_TYPE_URL, versionInfo: 'v1', at: 110, sotw: before });
    watch.onAccepted(NODE, { typeUrl: RDS_TYPE_URL, versionInfo: 'v2', at: 200, sotw: after });
    expect(watch.routableAt(NODE, 'sample-0')).toBe(200);
    expect(watch.routableAt(other, 'sample-0')).toBeUndefined();
    watch.onAccepted(other, { typeUrl: RDS_TYPE_URL, versionInfo: 'v2', at: 250, sotw: after });
    expect(watch.routableAt(other, 'sample-0')).toBe(250);
    // A list with the same shape but another route is judged on its own.
    watch.onAccepted(other, { typeUrl: RDS_TYPE_URL, versionInfo: 'v3', at: 300, sotw: [routeTable(oldOf, [1])] });
    expect(watch.routableAt(other, 'sample-1')).toBeUndefined();
  });
});
