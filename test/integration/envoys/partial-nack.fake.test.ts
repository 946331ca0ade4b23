// Simulated Envoys against the fake xDS server (fakeXdsServer.ts), over real gRPC streams: a NACKed
// response is applied in part as Envoy does (docs/ENVOY-FLEET.md, "NACKs"), what goes on the wire is
// what Envoy sends, and what the Envoy reports as held, the ground truth and the subscription model
// all follow the partial application.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  packAny,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
} from '../../../common/xds';
import { DEFAULT_BEHAVIOUR, Fleet, parseBehaviour } from '../../../infra/local/envoys';
import { FakeXdsServer, type FakeResource } from './fakeXdsServer';

const clusters = (version: string, names: string[]): FakeResource[] =>
  names.map((name) => ({ name, version, any: packAny(CLUSTER_TYPE_URL, { name, type: 'EDS', connect_timeout: { seconds: 1 } }) }));
const assignments = (version: string, names: string[]): FakeResource[] =>
  names.map((name) => ({ name, version, any: packAny(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { cluster_name: name }) }));
const rejectCluster = (pattern: string) =>
  parseBehaviour({ nackRules: [{ typeUrl: CLUSTER_TYPE_URL, resourceName: pattern, message: 'simulated rejection: cluster failed validation' }] });

describe('partial application of NACKed responses, over the wire', () => {
  let server: FakeXdsServer;
  let fleet: Fleet;

  beforeEach(async () => {
    server = new FakeXdsServer();
    const target = await server.start();
    fleet = new Fleet({ target, channels: 1 });
  });

  afterEach(async () => {
    fleet.close();
    await server.stop();
  });

  const nacksOnWire = <T extends DiscoveryRequest | DeltaDiscoveryRequest>(): T[] => server.requests.map((r) => r.request as T).filter((r) => r.error_detail !== undefined);

  test('SotW CDS, three clusters, one rejected: named in the NACK, the others held at the new version, version_info the previous one', async () => {
    server.setResources(CLUSTER_TYPE_URL, 'c1', clusters('c1', ['a', 'b', 'c']));
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }] });
    if (envoy === undefined) throw new Error('no envoy');
    envoy.connect();
    await fleet.waitFor(() => envoy.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });

    envoy.setBehaviour(rejectCluster('^b$'));
    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a', 'b', 'c']));
    await fleet.waitFor(() => nacksOnWire().length === 1, { timeoutMs: 10_000 });
    const nack = nacksOnWire<DiscoveryRequest>()[0];
    expect(nack).toMatchObject({ version_info: 'c1', error_detail: { code: 3, message: 'simulated rejection: cluster failed validation (resource b)' } });
    expect(Object.fromEntries(envoy.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c2', b: 'c1', c: 'c2' });
    expect(envoy.acceptedVersion(CLUSTER_TYPE_URL)).toBe('c1');
    // The ground truth: no acceptance of c2, a NACK that says what it applied.
    expect(fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL).map((a) => a.versionInfo)).toEqual(['c1']);
    expect(fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL)[0]).toMatchObject({
      versionInfo: 'c2',
      rejected: ['b'],
      applied: [
        { name: 'a', version: 'c2' },
        { name: 'c', version: 'c2' },
      ],
      appliedRemoved: [],
    });

    // A new rejected cluster is absent; the held one the response leaves out goes.
    envoy.setBehaviour(rejectCluster('^bad'));
    server.setResources(CLUSTER_TYPE_URL, 'c3', clusters('c3', ['a', 'bad-new']));
    await fleet.waitFor(() => nacksOnWire().length === 2, { timeoutMs: 10_000 });
    expect(nacksOnWire<DiscoveryRequest>()[1]).toMatchObject({ version_info: 'c1', error_detail: { message: 'simulated rejection: cluster failed validation (resource bad-new)' } });
    expect(Object.fromEntries(envoy.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c3' });
    expect(fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL)[1]).toMatchObject({ applied: [{ name: 'a', version: 'c3' }], appliedRemoved: ['b', 'c'] });

    // A response the Envoy cannot decode applies nothing.
    envoy.setBehaviour(DEFAULT_BEHAVIOUR);
    server.pushRawSotw({ version_info: 'c4', nonce: 'raw', type_url: CLUSTER_TYPE_URL, resources: [clusters('c4', ['z'])[0]!.any, { type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 0x7f]) }] });
    await fleet.waitFor(() => nacksOnWire().length === 3, { timeoutMs: 10_000 });
    expect(nacksOnWire<DiscoveryRequest>()[2]).toMatchObject({ version_info: 'c1', response_nonce: 'raw' });
    expect(Object.fromEntries(envoy.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c3' });
    expect(fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL)[2]?.applied).toBeUndefined();
  });

  test('Delta CDS: the valid upserts held, the rejected cluster at its previous version, no versions claimed from the NACK on reconnect', async () => {
    server.setResources(CLUSTER_TYPE_URL, 's1', clusters('h1', ['a', 'b', 'c']));
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'delta', subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }], reconnectDelayMs: 20 });
    if (envoy === undefined) throw new Error('no envoy');
    envoy.connect();
    await fleet.waitFor(() => envoy.acceptedVersion(CLUSTER_TYPE_URL) === 's1', { timeoutMs: 10_000 });

    envoy.setBehaviour(rejectCluster('^b$'));
    server.setResources(CLUSTER_TYPE_URL, 's2', clusters('h2', ['a', 'b', 'c']));
    await fleet.waitFor(() => nacksOnWire().length === 1, { timeoutMs: 10_000 });
    expect(nacksOnWire<DeltaDiscoveryRequest>()[0]).toMatchObject({ type_url: CLUSTER_TYPE_URL, error_detail: { code: 3, message: 'simulated rejection: cluster failed validation (resource b)' } });
    expect(Object.fromEntries(envoy.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'h2', b: 'h1', c: 'h2' });
    expect(envoy.acceptedVersion(CLUSTER_TYPE_URL)).toBe('s1');

    const before = server.requests.length;
    server.dropAllStreams();
    await fleet.waitFor(() => server.requests.slice(before).some((r) => (r.request as DeltaDiscoveryRequest).initial_resource_versions !== undefined), { timeoutMs: 10_000 });
    const reconnect = server.requests.slice(before).map((r) => r.request as DeltaDiscoveryRequest).find((r) => r.initial_resource_versions !== undefined);
    expect(reconnect?.initial_resource_versions).toEqual({ a: 'h1', b: 'h1', c: 'h1' });
  });

  test('Envoy model: a cluster a NACKed CDS response applied warms and gets its endpoints asked for; the rejected one does not', async () => {
    server.setResources(CLUSTER_TYPE_URL, 'c1', clusters('c1', ['a']));
    server.setResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'e1', assignments('e1', ['a', 'b', 'bad']));
    server.setResources(LISTENER_TYPE_URL, 'l1', []);
    server.setResources(ROUTE_CONFIGURATION_TYPE_URL, 'r1', []);
    const types = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: types.map((typeUrl) => ({ typeUrl })), behaviour: rejectCluster('^bad$') });
    if (envoy === undefined) throw new Error('no envoy');
    expect(envoy.subscriptionModel).toBe('envoy');
    envoy.connect();
    await fleet.waitFor(() => envoy.acceptedVersion(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL) === 'e1', { timeoutMs: 10_000 });
    expect(envoy.subscribedNames(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual(['a']);

    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a', 'b', 'bad']));
    await fleet.waitFor(() => fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL).length === 1, { timeoutMs: 10_000 });
    expect(Object.fromEntries(envoy.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c2', b: 'c2' });
    expect([...(envoy.subscribedNames(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL) ?? [])].sort()).toEqual(['a', 'b']);
    await fleet.waitFor(() => envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).has('b'), { timeoutMs: 10_000 });
    expect(envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).has('bad')).toBe(false);
    await fleet.waitFor(() => envoy.warming(CLUSTER_TYPE_URL).length === 0, { timeoutMs: 10_000 });
  });
});
