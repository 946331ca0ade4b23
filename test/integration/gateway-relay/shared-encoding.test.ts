// The relay encodes each SotW resource once, and each resource list (wildcard, or the same names)
// once per version, not once per stream (xds-gateway/relay/response-encoding.ts), and the bytes it
// sends are exactly what the loader's own serializer produces.
import { ADS_SERVICE, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, serviceDefinition, type DiscoveryResponse } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { Fleet, type SimEnvoy } from '../../../infra/local/envoys';
import type { Relay } from '../../../xds-gateway/relay';
import { SotwResponseEncoder } from '../../../xds-gateway/relay/response-encoding';
import { endpointsOf, eventually, httpProxy, newSource, RecordingObserver, startTestControlPlane, startTestRelay, testLogger } from './helpers';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
/** Stands in for the extension list a real Envoy's node carries (~2 KB here). */
const EXTENSION_LIST = Array.from({ length: 60 }, (_, index) => `envoy.filters.http.extension_${index}`).join(',');

/** Every Envoy has accepted every type, all at the same versions. */
function allAtOneVersion(envoys: readonly SimEnvoy[]): boolean {
  const versions = new Set(envoys.map((envoy) => TYPES.map((typeUrl) => envoy.acceptedVersion(typeUrl) ?? '').join('|')));
  return versions.size === 1 && !envoys.some((envoy) => TYPES.some((typeUrl) => envoy.acceptedVersion(typeUrl) === undefined));
}

describe('SotwResponseEncoder (pure)', () => {
  const loaderSerialize = (serviceDefinition(ADS_SERVICE).StreamAggregatedResources as { responseSerialize: (value: DiscoveryResponse) => Buffer }).responseSerialize;
  const resources = Array.from({ length: 5 }, (_, index) => ({ type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 2, 0x61, 0x30 + index]) }));

  it.each<[string, DiscoveryResponse]>([
    ['every field', { version_info: 'xp1:a.b.c:7', resources, type_url: CLUSTER_TYPE_URL, nonce: '12', canary: true, control_plane: { identifier: 'cp-1' } }],
    ['no resources', { version_info: 'v', resources: [], type_url: CLUSTER_TYPE_URL, nonce: '1' }],
    ['resources only', { resources }],
    ['nothing', {}],
  ])('produces the loader serializer\'s bytes: %s', (_name, response) => {
    const encoder = new SotwResponseEncoder();
    expect(encoder.encode(response).equals(loaderSerialize(response))).toBe(true);
  });

  it('encodes a shared list once and a different list again', () => {
    const encoder = new SotwResponseEncoder();
    for (let nonce = 1; nonce <= 10; nonce++) encoder.encode({ version_info: 'v1', resources, type_url: CLUSTER_TYPE_URL, nonce: String(nonce) });
    expect(encoder.stats()).toEqual({ responses: 10, resourceListEncodings: 1, resourceEncodings: 5, responsesReused: 0 });
    // Equal content in another array is another list (the relay shares by identity, per cache version),
    // assembled from the resources already encoded.
    encoder.encode({ version_info: 'v2', resources: [...resources], type_url: CLUSTER_TYPE_URL, nonce: '11' });
    expect(encoder.stats()).toEqual({ responses: 11, resourceListEncodings: 2, resourceEncodings: 5, responsesReused: 0 });
  });

  it('encodes each resource once, whatever subsets carry it, with the loader\'s bytes', () => {
    const encoder = new SotwResponseEncoder();
    const subsets = [[0, 1, 2], [2, 3], [4], [0, 1, 2, 3, 4], [3, 1], []];
    for (const [index, subset] of subsets.entries()) {
      const response: DiscoveryResponse = { version_info: 'v1', resources: subset.flatMap((k) => resources.slice(k, k + 1)), type_url: CLUSTER_TYPE_URL, nonce: String(index) };
      expect(encoder.encode(response).equals(loaderSerialize(response))).toBe(true);
    }
    expect(encoder.stats()).toMatchObject({ responses: 6, resourceListEncodings: 5, resourceEncodings: 5 });
  });

  it('reuses a whole response for streams at the same nonce, and only then', () => {
    const encoder = new SotwResponseEncoder();
    const response = (nonce: string, version = 'v1'): DiscoveryResponse => ({ version_info: version, resources, type_url: CLUSTER_TYPE_URL, nonce });
    const first = encoder.encode(response('3'));
    for (let stream = 0; stream < 9; stream++) expect(encoder.encode(response('3'))).toBe(first);
    expect(encoder.stats()).toMatchObject({ responses: 10, responsesReused: 9 });
    // Another nonce or version is another response, with the loader's bytes.
    expect(encoder.encode(response('4')).equals(loaderSerialize(response('4')))).toBe(true);
    expect(encoder.encode(response('3', 'v2')).equals(loaderSerialize(response('3', 'v2')))).toBe(true);
    expect(encoder.stats()).toMatchObject({ responses: 12, responsesReused: 9 });
    // A response with fields the relay does not send is encoded on its own every time.
    const canary = { ...response('3'), canary: true };
    expect(encoder.encode(canary).equals(loaderSerialize(canary))).toBe(true);
    expect(encoder.encode(canary)).not.toBe(encoder.encode(canary));
    expect(encoder.stats().responsesReused).toBe(9);
  });
});

describe('relay response encoding across streams', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let relay: Relay;
  let fleet: Fleet;

  beforeAll(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    relay = await startTestRelay(controlPlane.address, new RecordingObserver());
    fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 2, logger: testLogger });
  });

  afterAll(async () => {
    fleet.close();
    await relay.control.close();
    await controlPlane.close();
  });

  it('builds each version\'s resource list once for twenty wildcard streams, and every Envoy ACKs it', async () => {
    const envoys = fleet.addMany(20, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
      // Wildcard on every type: this measures the relay's shared encoding of wildcard lists (Envoy-model
      // clients ask RDS/EDS by name, and the relay encodes named lists per stream).
      subscriptionModel: 'wildcard',
      // A node of a few KB, as a real Envoy's is (its extension list): the relay decodes those once.
      node: (index) => ({ id: `enc-${index}`, cluster: 'enc', metadata: { extensions: EXTENSION_LIST } }),
    });
    const decodingBefore = relay.requestDecoding();
    fleet.connectAll();
    const allAtVersion = (): boolean => allAtOneVersion(envoys);
    await eventually(allAtVersion, 'every Envoy ACKed every type');
    // The simulated Envoys send their node on every request, as Envoy does by default; the relay
    // decodes it only on each stream's first request (request-decoding.ts). Four first requests and
    // four ACKs per Envoy (the last ACKs may still be on their way to the relay), one ADS stream each.
    await eventually(() => relay.requestDecoding().deferred - decodingBefore.deferred >= 20 * 2 * TYPES.length, 'every request decoded without its node');
    expect(relay.requestDecoding().nodesDecoded - decodingBefore.nodesDecoded).toBe(20);
    expect(relay.requestDecoding().decodedWhole - decodingBefore.decodedWhole).toBe(0);
    const afterConnect = relay.responseEncoding();
    expect(afterConnect.responses).toBeGreaterThanOrEqual(20 * TYPES.length);
    // One list per type version (at most a couple of versions while the fleet connected), never per stream.
    expect(afterConnect.resourceListEncodings).toBeLessThanOrEqual(2 * TYPES.length);

    // One change to clusters, endpoints and routes: 20 streams × 3 types get a response, 3 lists are built.
    const before = envoys[0]?.acceptedVersion(CLUSTER_TYPE_URL);
    source.applyEndpoints(endpointsOf('second', '10.0.0.2', 8081));
    source.applyProxy(httpProxy('second', 'second.example.com', 8081));
    await eventually(() => allAtVersion() && envoys[0]?.acceptedVersion(CLUSTER_TYPE_URL) !== before, 'every Envoy ACKed the change');
    const afterChange = relay.responseEncoding();
    const responses = afterChange.responses - afterConnect.responses;
    const encodings = afterChange.resourceListEncodings - afterConnect.resourceListEncodings;
    expect(responses).toBeGreaterThanOrEqual(20 * 3);
    // The control plane may split the change over two rebuilds: still at most one list per type and version.
    expect(encodings).toBeGreaterThanOrEqual(3);
    expect(encodings).toBeLessThanOrEqual(2 * TYPES.length);
    expect(encodings * 10).toBeLessThan(responses);
    for (const envoy of envoys) expect([...envoy.heldResources(CLUSTER_TYPE_URL).keys()].some((name) => name.includes('second'))).toBe(true);
  });

  it('builds each named list once per version for twenty Envoy-model streams (EDS and RDS by name), and encodes each resource once', async () => {
    const envoys = fleet.addMany(20, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
      subscriptionModel: 'envoy',
      node: (index) => ({ id: `named-${index}`, cluster: 'named' }),
    });
    fleet.connectAll();
    const allAtVersion = (): boolean => allAtOneVersion(envoys);
    await eventually(allAtVersion, 'every Envoy ACKed every type');
    const first = envoys[0];
    if (first === undefined) throw new Error('no Envoy added');
    const named = (): number => first.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).size + first.heldResources(ROUTE_CONFIGURATION_TYPE_URL).size;
    expect(named()).toBeGreaterThan(0);
    const before = relay.responseEncoding();
    const cdsBefore = first.acceptedVersion(CLUSTER_TYPE_URL);
    source.applyEndpoints(endpointsOf('third', '10.0.0.3', 8082));
    source.applyProxy(httpProxy('third', 'third.example.com', 8082));
    await eventually(() => allAtVersion() && first.acceptedVersion(CLUSTER_TYPE_URL) !== cdsBefore && envoys.every((envoy) => [...envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).keys()].some((name) => name.includes('third'))), 'every Envoy holds the new endpoints');
    const after = relay.responseEncoding();
    const responses = after.responses - before.responses;
    const lists = after.resourceListEncodings - before.resourceListEncodings;
    const resourceEncodings = after.resourceEncodings - before.resourceEncodings;
    expect(responses).toBeGreaterThanOrEqual(20 * 3);
    // Every stream asks the same EDS and RDS names: a list per type, version and name set, not per stream.
    expect(lists * 5).toBeLessThan(responses);
    // Each changed resource encoded once per node group (this one and the wildcard one of the test
    // above, which gets the change too), not per stream: per stream the named lists alone would be
    // 20 × (EDS + RDS names) encodings.
    const held = TYPES.reduce((sum, typeUrl) => sum + first.heldResources(typeUrl).size, 0);
    expect(resourceEncodings).toBeLessThanOrEqual(2 * held);
    expect(20 * named()).toBeGreaterThan(2 * held);
  });

  it('gives twenty Envoy-model streams naming forty clusters one shared EDS name list per name set, and a changed set reaches every Envoy', async () => {
    // Forty services: each EDS ACK names them all (~1 KB of names), over the request decoding's floor.
    for (let index = 0; index < 40; index++) {
      source.applyEndpoints(endpointsOf(`many-${index}`, `10.0.1.${index + 1}`, 9000));
      source.applyProxy(httpProxy(`many-${index}`, `many-${index}.example.com`, 9000));
    }
    const envoys = fleet.addMany(20, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
      subscriptionModel: 'envoy',
      node: (index) => ({ id: `many-names-${index}`, cluster: 'many-names' }),
    });
    const clustersHeld = (envoy: SimEnvoy, prefix: string): number => [...envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).keys()].filter((name) => name.includes(prefix)).length;
    const before = relay.requestDecoding();
    fleet.connectAll();
    await eventually(() => allAtOneVersion(envoys) && envoys.every((envoy) => clustersHeld(envoy, 'many-') === 40), 'every Envoy holds the endpoints of the forty clusters');
    const connected = relay.requestDecoding();
    // Every stream's EDS requests after the first name the same forty clusters: decoded as a list a
    // few times (once per name set the fleet went through), shared by every other request.
    expect(connected.namesShared - before.namesShared).toBeGreaterThanOrEqual(20);
    expect(connected.nameListsDecoded - before.nameListsDecoded).toBeLessThanOrEqual(5);

    // A forty-first service: every Envoy's EDS names change, and each gets its new cluster's endpoints.
    source.applyEndpoints(endpointsOf('many-40', '10.0.1.41', 9000));
    source.applyProxy(httpProxy('many-40', 'many-40.example.com', 9000));
    await eventually(() => allAtOneVersion(envoys) && envoys.every((envoy) => clustersHeld(envoy, 'many-') === 41), 'every Envoy holds the endpoints of the new cluster');
    const changed = relay.requestDecoding();
    expect(changed.nameListsDecoded - connected.nameListsDecoded).toBeGreaterThanOrEqual(1);
    expect(changed.nameListsDecoded - connected.nameListsDecoded).toBeLessThanOrEqual(5);
    expect(changed.namesShared - connected.namesShared).toBeGreaterThanOrEqual(19);
    expect(changed.sharedNameLists).toBeLessThanOrEqual(16);
  });
});
