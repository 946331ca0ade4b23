// The simulated Envoys read a SotW resource list's names once per distinct list (SotwNameCache), and
// the result is exactly what reading each response would give. Pure logic, no sockets.
import { CLUSTER_TYPE_URL, LISTENER_TYPE_URL, packAny, type DiscoveryResponse } from '../../../common/xds';
import { discoveryCodec, GroundTruth, parseBehaviour, SotwNameCache, TypeProtocolState } from '../../../infra/local/envoys';

const cluster = (name: string) => packAny(CLUSTER_TYPE_URL, { name, type: 'EDS', connect_timeout: { seconds: 5 } });
const names = Array.from({ length: 50 }, (_, index) => `default/app-${index}/80`);

/** As each Envoy gets it: its own bytes off the wire (fresh buffers), same content. */
function received(version: string, nonce: string, clusterNames: readonly string[]): DiscoveryResponse {
  const codec = discoveryCodec();
  return codec.decodeSotwResponse(codec.encodeSotwResponse({ version_info: version, nonce, type_url: CLUSTER_TYPE_URL, resources: clusterNames.map(cluster) }));
}

describe('SotwNameCache', () => {
  it('reads a list shared by 40 Envoys once, and every Envoy plans the same ACK and holds one list', () => {
    const cache = new SotwNameCache();
    const truth = new GroundTruth();
    const plans = Array.from({ length: 40 }, (_, index) => new TypeProtocolState(CLUSTER_TYPE_URL, [], cache).planSotw(received('v1', String(index), names), []));
    expect(cache.stats()).toEqual({ parses: 1, hits: 39 });
    for (const plan of plans) {
      expect(plan.outcome).toBe('ack');
      expect(plan.resources).toEqual(names.map((name) => ({ name, version: 'v1' })));
    }
    const interned = new Set(plans.map((plan) => truth.internResources(CLUSTER_TYPE_URL, plan.resources)));
    expect(interned.size).toBe(1);
  });

  it('reads again when one resource differs, and follows a new version_info for the same bytes', () => {
    const cache = new SotwNameCache();
    const state = () => new TypeProtocolState(CLUSTER_TYPE_URL, [], cache);
    state().planSotw(received('v1', '1', names), []);
    const changed = [...names.slice(0, 49), 'default/other/80'];
    const plan = state().planSotw(received('v2', '2', changed), []);
    expect(cache.stats().parses).toBe(2);
    expect(plan.resources.map((r) => r.name)).toEqual(changed);
    const sameBytesNewVersion = state().planSotw(received('v3', '3', changed), []);
    expect(cache.stats()).toEqual({ parses: 2, hits: 1 });
    expect(sameBytesNewVersion.resources.every((r) => r.version === 'v3')).toBe(true);
  });

  it('compares lists whose values are separate buffers value by value, either way round', () => {
    const cache = new SotwNameCache();
    const separate = (version: string): DiscoveryResponse => ({ version_info: version, nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: names.map(cluster) });
    const state = () => new TypeProtocolState(CLUSTER_TYPE_URL, [], cache);
    state().planSotw(received('v1', '1', names), []);
    // Cached from one message buffer, compared with separately packed values of equal bytes.
    expect(state().planSotw(separate('v1'), []).resources.map((r) => r.name)).toEqual(names);
    expect(cache.stats()).toEqual({ parses: 1, hits: 1 });
    const other = [...names.slice(1), 'default/last/80'];
    state().planSotw({ version_info: 'v2', nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: other.map(cluster) }, []);
    expect(cache.stats()).toEqual({ parses: 2, hits: 1 });
    // Cached from separate buffers, compared with one message buffer.
    expect(state().planSotw(received('v2', '2', other), []).resources.map((r) => r.name)).toEqual(other);
    expect(cache.stats()).toEqual({ parses: 2, hits: 2 });
  });

  it('never caches a rejected list: a bad resource is NACKed every time, NACK rules still apply per Envoy', () => {
    const cache = new SotwNameCache();
    const bad: DiscoveryResponse = { version_info: 'v1', nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: [cluster('a'), { type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 0x7f]) }] };
    for (let index = 0; index < 3; index++) expect(new TypeProtocolState(CLUSTER_TYPE_URL, [], cache).planSotw(bad, []).outcome).toBe('nack');
    const wrongType: DiscoveryResponse = { version_info: 'v1', nonce: 'n', type_url: CLUSTER_TYPE_URL, resources: [packAny(LISTENER_TYPE_URL, { name: 'l' })] };
    expect(new TypeProtocolState(CLUSTER_TYPE_URL, [], cache).planSotw(wrongType, []).message).toMatch(/expected .*Cluster/);
    expect(cache.stats().parses).toBe(0);

    // A cached list still goes through each Envoy's own NACK rules.
    new TypeProtocolState(CLUSTER_TYPE_URL, [], cache).planSotw(received('v1', '1', names), []);
    const rules = parseBehaviour({ nackRules: [{ resourceName: '^default/app-7/', message: 'no app-7' }] }).nackRules;
    const nack = new TypeProtocolState(CLUSTER_TYPE_URL, [], cache).planSotw(received('v1', '2', names), rules);
    expect(cache.stats().hits).toBe(1);
    expect(nack.outcome).toBe('nack');
    expect(nack.message).toMatch(/no app-7/);
  });
});
