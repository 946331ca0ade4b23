// The relay's request deserializer leaves the node for its reader (xds-gateway/relay/request-decoding.ts):
// every answer, node included once read, must equal what the service's own deserializer gives.
import { ADS_SERVICE, serviceDefinition, messageType } from '../../../common/xds/protos';
import { DELTA_NODE_FIELD, LazyNodeDecoding, SOTW_NODE_FIELD, singleFieldSpan, withLazyNode } from '../../../xds-gateway/relay/request-decoding';

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
    // Shorter than asked: undefined (the deserializer decodes such a node with the rest).
    expect(singleFieldSpan(withNode, SOTW_NODE_FIELD, withNode.length)).toBeUndefined();
    expect(singleFieldSpan(withNode, SOTW_NODE_FIELD, 8)).toBeDefined();
    expect(singleFieldSpan(Buffer.concat([withNode, sotwBytes({ node: node('b') })]), SOTW_NODE_FIELD)).toBeUndefined();
    // Field 2 as a varint (wire type 0): tag 0x10.
    expect(singleFieldSpan(Buffer.from([0x10, 0x05]), 2)).toBeUndefined();
    expect(singleFieldSpan(withNode.subarray(0, withNode.length - 3), SOTW_NODE_FIELD)).toBeUndefined();
    // Fixed-width and varint fields before it are skipped: field 9 fixed64, field 10 fixed32, field 11 varint, then field 2.
    const mixed = Buffer.concat([Buffer.from([0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x55, 1, 2, 3, 4, 0x58, 0x96, 0x01]), Buffer.from([0x12, 0x02, 0x0a, 0x00])]);
    expect(singleFieldSpan(mixed, 2)).toEqual({ start: 17, end: 21 });
  });
});

/** The request as the relay sees it: its fields and its node (not enumerable when deferred). */
function asRead(request: unknown): Record<string, unknown> {
  const fields = request as Record<string, unknown>;
  return { ...fields, node: fields['node'] };
}

describe('LazyNodeDecoding', () => {
  it('answers every request as the original deserializer does, decoding a node only when it is read', () => {
    const decoding = new LazyNodeDecoding({ minNodeBytes: 0 });
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names: [] },
      { version_info: 'v1', node: node('a'), type_url: CDS, response_nonce: 'n1' },
      { version_info: 'v1', node: node('a'), type_url: EDS, resource_names: ['c1', 'c2'], response_nonce: 'n2', error_detail: { code: 3, message: 'rejected' } },
      { version_info: 'v2', type_url: CDS, response_nonce: 'n3' },
    ].map(sotwBytes);
    const answers = requests.map(deserialize);
    // Nothing read yet: three nodes deferred, none decoded; the request without a node decoded whole.
    expect(decoding.stats).toEqual({ deferred: 3, decodedWhole: 1, nodesDecoded: 0 });
    // Schema checks that copy a request's own fields do not see (or decode) the node.
    expect(Object.keys(answers[1] as object)).not.toContain('node');
    answers.forEach((answer, index) => expect(asRead(answer)).toEqual(asRead(sotwOriginal(requests[index]!))));
    expect(decoding.stats.nodesDecoded).toBe(3);
    // Read twice, decoded once.
    const first = answers[0] as { node: unknown };
    expect(first.node).toBe(first.node);
    expect(decoding.stats.nodesDecoded).toBe(3);
  });

  it('does the same for Delta requests (node is field 1 there)', () => {
    const decoding = new LazyNodeDecoding({ minNodeBytes: 0 });
    const deserialize = decoding.deserializer(deltaOriginal, DELTA_NODE_FIELD);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names_subscribe: ['*'] },
      { node: node('a'), type_url: CDS, response_nonce: 'n1', initial_resource_versions: { x: '1' } },
    ].map(deltaBytes);
    requests.forEach((bytes) => expect(asRead(deserialize(bytes))).toEqual(asRead(deltaOriginal(bytes))));
    expect(decoding.stats).toEqual({ deferred: 2, decodedWhole: 0, nodesDecoded: 2 });
  });

  it('decodes whole what it cannot take apart (a node field twice, merged), fails as the original on bad bytes, and leaves a bad node to its reader', () => {
    const deserialize = new LazyNodeDecoding({ minNodeBytes: 0 }).deserializer(sotwOriginal, SOTW_NODE_FIELD);
    const twice = Buffer.concat([sotwBytes({ node: node('a'), type_url: CDS }), sotwBytes({ node: { id: 'a', cluster: 'other' } })]);
    expect(asRead(deserialize(twice))).toEqual(asRead(sotwOriginal(twice)));
    const bad = Buffer.from([0x12, 0x7f, 0x01]);
    expect(() => sotwOriginal(bad)).toThrow();
    expect(() => deserialize(bad)).toThrow();
    // A node field whose own bytes do not decode (wire type 7 inside): the request decodes, reading its node throws.
    const badNode = Buffer.concat([sotwBytes({ type_url: CDS, response_nonce: 'n' }), Buffer.from([0x12, 0x01, 0x0f])]);
    expect(() => sotwOriginal(badNode)).toThrow();
    const request = deserialize(badNode) as { node?: unknown; response_nonce?: string };
    expect(request.response_nonce).toBe('n');
    expect(() => request.node).toThrow();
  });

  it('decodes small nodes with the rest by default (the scan costs what their decoding does)', () => {
    const decoding = new LazyNodeDecoding();
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_NODE_FIELD);
    const large = { ...node('big'), metadata: { fields: { build: { stringValue: 'x'.repeat(1500) } } } };
    for (const message of [{ node: node('a'), type_url: CDS }, { node: large, type_url: CDS }]) {
      const bytes = sotwBytes(message);
      expect(asRead(deserialize(bytes))).toEqual(asRead(sotwOriginal(bytes)));
    }
    expect(decoding.stats).toEqual({ deferred: 1, decodedWhole: 1, nodesDecoded: 1 });
  });
});

describe('withLazyNode', () => {
  it('replaces only the named methods\' request deserializers', () => {
    const decoding = new LazyNodeDecoding();
    const wrapped = withLazyNode(ads, { StreamAggregatedResources: SOTW_NODE_FIELD }, decoding);
    expect(wrapped['StreamAggregatedResources']!.requestDeserialize).not.toBe(ads['StreamAggregatedResources']!.requestDeserialize);
    expect(wrapped['DeltaAggregatedResources']!.requestDeserialize).toBe(ads['DeltaAggregatedResources']!.requestDeserialize);
    expect(() => withLazyNode(ads, { NoSuchMethod: 1 }, decoding)).toThrow(/no method NoSuchMethod/);
  });
});
