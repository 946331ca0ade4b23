// The relay's request deserializer decodes a node's bytes once (xds-gateway/relay/request-decoding.ts):
// every answer must equal what the service's own deserializer gives for the same bytes.
import { ADS_SERVICE, serviceDefinition, messageType } from '../../../common/xds/protos';
import { DELTA_NODE_FIELD, NodeDecodeCache, SOTW_NODE_FIELD, singleFieldSpan, withNodeDecodedOnce } from '../../../xds-gateway/relay/request-decoding';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';

function node(id: string): Record<string, unknown> {
  return {
    id,
    cluster: 'ingress',
    metadata: { fields: { zone: { stringValue: 'a' }, nested: { structValue: { fields: { depth: { numberValue: 2 } } } } } },
    user_agent_name: 'envoy',
    extensions: [{ name: 'envoy.filters.http.router', category: 'envoy.filters.http' }],
  };
}

function sotwBytes(message: Record<string, unknown>): Buffer {
  const type = messageType('envoy.service.discovery.v3.DiscoveryRequest');
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

function deltaBytes(message: Record<string, unknown>): Buffer {
  const type = messageType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  return Buffer.from(type.encode(type.fromObject(message)).finish());
}

const ads = serviceDefinition(ADS_SERVICE);
const sotwOriginal = (bytes: Buffer): unknown => ads['StreamAggregatedResources']!.requestDeserialize(bytes);
const deltaOriginal = (bytes: Buffer): unknown => ads['DeltaAggregatedResources']!.requestDeserialize(bytes);

describe('singleFieldSpan', () => {
  it('finds the one occurrence of a length-delimited field among the others', () => {
    const bytes = sotwBytes({ version_info: 'v1', node: node('a'), resource_names: ['x', 'y'], type_url: CDS, response_nonce: 'n1' });
    const span = singleFieldSpan(bytes, SOTW_NODE_FIELD);
    expect(span).toBeDefined();
    // The span is exactly the node field: decoding what is left gives the request without a node.
    const rest = Buffer.concat([bytes.subarray(0, span!.start), bytes.subarray(span!.end)]);
    const decoded = sotwOriginal(rest) as Record<string, unknown>;
    expect(decoded).toMatchObject({ version_info: 'v1', resource_names: ['x', 'y'], response_nonce: 'n1', type_url: CDS });
    expect(decoded['node']).toBeUndefined();
  });

  it('is undefined when the field is absent, repeated, of another wire type, or the message does not parse', () => {
    const withNode = sotwBytes({ node: node('a'), type_url: CDS });
    expect(singleFieldSpan(sotwBytes({ type_url: CDS, response_nonce: 'n' }), SOTW_NODE_FIELD)).toBeUndefined();
    expect(singleFieldSpan(Buffer.concat([withNode, sotwBytes({ node: node('b') })]), SOTW_NODE_FIELD)).toBeUndefined();
    // Field 2 as a varint (wire type 0): tag 0x10.
    expect(singleFieldSpan(Buffer.from([0x10, 0x05]), 2)).toBeUndefined();
    expect(singleFieldSpan(withNode.subarray(0, withNode.length - 3), SOTW_NODE_FIELD)).toBeUndefined();
    // Fixed-width and varint fields before it are skipped: field 9 fixed64, field 10 fixed32, field 11 varint, then field 2.
    const mixed = Buffer.concat([Buffer.from([0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x55, 1, 2, 3, 4, 0x58, 0x96, 0x01]), Buffer.from([0x12, 0x02, 0x0a, 0x00])]);
    expect(singleFieldSpan(mixed, 2)).toEqual({ start: 17, end: 21 });
  });
});

describe('NodeDecodeCache', () => {
  it('answers every request as the original deserializer does, decoding a node once', () => {
    const cache = new NodeDecodeCache({ minNodeBytes: 0 });
    const deserialize = cache.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names: [] },
      { version_info: 'v1', node: node('a'), type_url: CDS, response_nonce: 'n1' },
      { version_info: 'v1', node: node('a'), type_url: EDS, resource_names: ['c1', 'c2'], response_nonce: 'n2', error_detail: { code: 3, message: 'rejected' } },
      { node: node('b'), type_url: CDS },
      { version_info: 'v2', type_url: CDS, response_nonce: 'n3' },
    ].map(sotwBytes);
    const answers = requests.map(deserialize);
    answers.forEach((answer, index) => expect(answer).toEqual(sotwOriginal(requests[index]!)));
    expect(cache.stats).toEqual({ reused: 2, decodedWhole: 3 });
    // One node object per Envoy, shared and frozen.
    const [first, second] = answers as Array<{ node: unknown }>;
    expect(second!.node).toBe(first!.node);
    expect(Object.isFrozen(first!.node)).toBe(true);
    expect(() => {
      (first!.node as { id: string }).id = 'changed';
    }).toThrow(TypeError);
  });

  it('does the same for Delta requests (node is field 1 there)', () => {
    const cache = new NodeDecodeCache({ minNodeBytes: 0 });
    const deserialize = cache.deserializer(deltaOriginal, DELTA_NODE_FIELD);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names_subscribe: ['*'] },
      { node: node('a'), type_url: CDS, response_nonce: 'n1', initial_resource_versions: { x: '1' } },
    ].map(deltaBytes);
    requests.forEach((bytes) => expect(deserialize(bytes)).toEqual(deltaOriginal(bytes)));
    expect(cache.stats.reused).toBe(1);
  });

  it('decodes whole what it cannot take apart (a node field twice, merged) and fails as the original on bad bytes', () => {
    const cache = new NodeDecodeCache({ minNodeBytes: 0 });
    const deserialize = cache.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    deserialize(sotwBytes({ node: node('a'), type_url: CDS }));
    const twice = Buffer.concat([sotwBytes({ node: node('a'), type_url: CDS }), sotwBytes({ node: { id: 'a', cluster: 'other' } })]);
    expect(deserialize(twice)).toEqual(sotwOriginal(twice));
    const bad = Buffer.from([0x12, 0x7f, 0x01]);
    expect(() => sotwOriginal(bad)).toThrow();
    expect(() => deserialize(bad)).toThrow();
  });

  it('starts over past its bound and stays exact', () => {
    const cache = new NodeDecodeCache({ maxNodes: 2, minNodeBytes: 0 });
    const deserialize = cache.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    for (const id of ['a', 'b', 'c', 'a', 'c']) {
      const bytes = sotwBytes({ node: node(id), type_url: CDS, response_nonce: `n-${id}` });
      expect(deserialize(bytes)).toEqual(sotwOriginal(bytes));
    }
    // 'a' was forgotten when 'c' came (the cache held a, b); 'c' was kept.
    expect(cache.stats).toEqual({ reused: 1, decodedWhole: 4 });
  });

  it('decodes small nodes with the rest by default (a lookup costs what their decoding does)', () => {
    const cache = new NodeDecodeCache();
    const deserialize = cache.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    const large = { ...node('big'), metadata: { fields: { build: { stringValue: 'x'.repeat(1500) } } } };
    for (const message of [{ node: node('a'), type_url: CDS }, { node: node('a'), type_url: EDS }, { node: large, type_url: CDS }, { node: large, type_url: EDS }]) {
      const bytes = sotwBytes(message);
      expect(deserialize(bytes)).toEqual(sotwOriginal(bytes));
    }
    expect(cache.stats).toEqual({ reused: 1, decodedWhole: 3 });
  });
});

describe('withNodeDecodedOnce', () => {
  it('replaces only the named methods\' request deserializers', () => {
    const cache = new NodeDecodeCache();
    const wrapped = withNodeDecodedOnce(ads, { StreamAggregatedResources: SOTW_NODE_FIELD }, cache);
    expect(wrapped['StreamAggregatedResources']!.requestDeserialize).not.toBe(ads['StreamAggregatedResources']!.requestDeserialize);
    expect(wrapped['DeltaAggregatedResources']!.requestDeserialize).toBe(ads['DeltaAggregatedResources']!.requestDeserialize);
    expect(() => withNodeDecodedOnce(ads, { NoSuchMethod: 1 }, cache)).toThrow(/no method NoSuchMethod/);
  });
});
