// The relay's request deserializer leaves the node for its reader and shares name lists by content
// (xds-gateway/relay/request-decoding.ts): every answer, node included once read, must equal what the
// service's own deserializer gives.
import { ADS_SERVICE, serviceDefinition, messageType } from '../../../common/xds/protos';
import { DELTA_REQUEST_FIELDS, RequestDecoding, requestLayout, SOTW_REQUEST_FIELDS, withRequestDecoding } from '../../../xds-gateway/relay/request-decoding';

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

describe('requestLayout', () => {
  it('finds the one node field and the run of name fields among the others', () => {
    const bytes = sotwBytes({ version_info: 'v1', node: node('a'), resource_names: ['x', 'y'], type_url: CDS, response_nonce: 'n1' });
    const layout = requestLayout(bytes, SOTW_REQUEST_FIELDS);
    expect(layout?.node).toBeDefined();
    expect(layout?.names).toBeDefined();
    // The spans are exactly those fields: decoding what is left gives the request without them, and
    // each span alone decodes to its field.
    const { node: nodeSpan, names } = layout!;
    const rest = Buffer.concat([bytes.subarray(0, nodeSpan!.start), bytes.subarray(nodeSpan!.end, names!.start), bytes.subarray(names!.end)]);
    const decoded = sotwOriginal(rest) as Record<string, unknown>;
    expect(decoded).toMatchObject({ version_info: 'v1', resource_names: [], response_nonce: 'n1', type_url: CDS });
    expect(decoded['node']).toBeUndefined();
    expect((sotwOriginal(bytes.subarray(names!.start, names!.end)) as Record<string, unknown>)['resource_names']).toEqual(['x', 'y']);
  });

  it('leaves out what cannot be taken apart, and is undefined when the message does not parse', () => {
    const withNode = sotwBytes({ node: node('a'), type_url: CDS });
    expect(requestLayout(sotwBytes({ type_url: CDS, response_nonce: 'n' }), SOTW_REQUEST_FIELDS)).toEqual({});
    // The node twice (protobuf merges them): no node span.
    expect(requestLayout(Buffer.concat([withNode, sotwBytes({ node: node('b') })]), SOTW_REQUEST_FIELDS)?.node).toBeUndefined();
    // Field 2 as a varint (wire type 0): tag 0x10.
    expect(requestLayout(Buffer.from([0x10, 0x05]), SOTW_REQUEST_FIELDS)).toEqual({});
    expect(requestLayout(withNode.subarray(0, withNode.length - 3), SOTW_REQUEST_FIELDS)).toBeUndefined();
    // Names with another field between them: no names span (the node is still found).
    const interleaved = Buffer.concat([sotwBytes({ resource_names: ['x'] }), sotwBytes({ node: node('a') }), sotwBytes({ resource_names: ['y'] })]);
    expect(requestLayout(interleaved, SOTW_REQUEST_FIELDS)).toEqual({ node: expect.anything() });
    // Fixed-width and varint fields before it are skipped: field 9 fixed64, field 10 fixed32, field 11 varint, then field 2.
    const mixed = Buffer.concat([Buffer.from([0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x55, 1, 2, 3, 4, 0x58, 0x96, 0x01]), Buffer.from([0x12, 0x02, 0x0a, 0x00])]);
    expect(requestLayout(mixed, SOTW_REQUEST_FIELDS)).toEqual({ node: { start: 17, end: 21 } });
  });
});

/** The request as the relay sees it: its fields and its node (not enumerable when deferred). */
function asRead(request: unknown): Record<string, unknown> {
  const fields = request as Record<string, unknown>;
  return { ...fields, node: fields['node'] };
}

describe('RequestDecoding: the node', () => {
  it('answers every request as the original deserializer does, decoding a node only when it is read', () => {
    const decoding = new RequestDecoding({ minNodeBytes: 0 });
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names: [] },
      { version_info: 'v1', node: node('a'), type_url: CDS, response_nonce: 'n1' },
      { version_info: 'v1', node: node('a'), type_url: EDS, resource_names: ['c1', 'c2'], response_nonce: 'n2', error_detail: { code: 3, message: 'rejected' } },
      { version_info: 'v2', type_url: CDS, response_nonce: 'n3' },
    ].map(sotwBytes);
    const answers = requests.map(deserialize);
    // Nothing read yet: three nodes deferred, none decoded; the request without a node decoded whole.
    expect(decoding.stats).toMatchObject({ deferred: 3, decodedWhole: 1, nodesDecoded: 0 });
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
    const decoding = new RequestDecoding({ minNodeBytes: 0 });
    const deserialize = decoding.deserializer(deltaOriginal, DELTA_REQUEST_FIELDS);
    const requests = [
      { node: node('a'), type_url: CDS, resource_names_subscribe: ['*'] },
      { node: node('a'), type_url: CDS, response_nonce: 'n1', initial_resource_versions: { x: '1' } },
    ].map(deltaBytes);
    requests.forEach((bytes) => expect(asRead(deserialize(bytes))).toEqual(asRead(deltaOriginal(bytes))));
    expect(decoding.stats).toMatchObject({ deferred: 2, decodedWhole: 0, nodesDecoded: 2 });
  });

  it('decodes whole what it cannot take apart (a node field twice, merged), fails as the original on bad bytes, and leaves a bad node to its reader', () => {
    const deserialize = new RequestDecoding({ minNodeBytes: 0 }).deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
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
    const decoding = new RequestDecoding();
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const large = { ...node('big'), metadata: { fields: { build: { stringValue: 'x'.repeat(1500) } } } };
    for (const message of [{ node: node('a'), type_url: CDS }, { node: large, type_url: CDS }]) {
      const bytes = sotwBytes(message);
      expect(asRead(deserialize(bytes))).toEqual(asRead(sotwOriginal(bytes)));
    }
    expect(decoding.stats).toMatchObject({ deferred: 1, decodedWhole: 1, nodesDecoded: 1 });
  });
});

describe('RequestDecoding: the names', () => {
  const clusters = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, index) => `default/${prefix}-${String(index).padStart(3, '0')}/8080`);

  it('gives every request naming the same resources one list, equal to decoding them', () => {
    const decoding = new RequestDecoding({ minNamesBytes: 0 });
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const names = clusters('app', 50);
    const requests = ['a', 'b', 'c'].map((id, index) => sotwBytes({ version_info: `v${index}`, node: { id, cluster: 'ingress' }, resource_names: names, type_url: EDS, response_nonce: `n${index}` }));
    const answers = requests.map((bytes) => deserialize(bytes) as { resource_names: string[] });
    answers.forEach((answer, index) => expect(asRead(answer)).toEqual(asRead(sotwOriginal(requests[index]!))));
    expect(answers[1]!.resource_names).toBe(answers[0]!.resource_names);
    expect(answers[2]!.resource_names).toBe(answers[0]!.resource_names);
    expect(decoding.stats).toMatchObject({ namesShared: 2, nameListsDecoded: 1, decodedWhole: 0 });
  });

  it('never gives a request another list: one name different, even at the same length, is another list', () => {
    const decoding = new RequestDecoding({ minNamesBytes: 0 });
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const names = clusters('app', 30);
    const sameLength = [...names.slice(0, 29), 'default/app-999/8080'];
    const reordered = [...names].reverse();
    const lists = [names, sameLength, reordered, names.slice(1), names].map((resource_names) => {
      const bytes = sotwBytes({ node: { id: 'a' }, resource_names, type_url: EDS });
      const answer = deserialize(bytes) as { resource_names: string[] };
      expect(answer.resource_names).toEqual(resource_names);
      expect(asRead(answer)).toEqual(asRead(sotwOriginal(bytes)));
      return answer.resource_names;
    });
    expect(new Set(lists.slice(0, 4)).size).toBe(4);
    expect(lists[4]).toBe(lists[0]);
    expect(decoding.stats).toMatchObject({ nameListsDecoded: 4, namesShared: 1 });
  });

  it('keeps a bounded number of lists, most recently used first, and decodes an evicted one again', () => {
    const decoding = new RequestDecoding({ minNamesBytes: 0 });
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const request = (prefix: string): { resource_names: string[] } => deserialize(sotwBytes({ resource_names: clusters(prefix, 5), type_url: EDS })) as { resource_names: string[] };
    const hot = request('hot');
    for (let list = 0; list < 40; list++) {
      request(`cold${list}`);
      // Used again after each new list: never the oldest, never evicted.
      expect(request('hot').resource_names).toBe(hot.resource_names);
    }
    expect(decoding.sharedNameLists()).toBe(16);
    expect(decoding.stats.nameListsDecoded).toBe(41);
    request('cold0');
    expect(decoding.stats.nameListsDecoded).toBe(42);
  });

  it('decodes with the rest what it cannot share: few names, names between other fields, a names field of another wire type', () => {
    const decoding = new RequestDecoding();
    const deserialize = decoding.deserializer(sotwOriginal, SOTW_REQUEST_FIELDS);
    const few = sotwBytes({ node: { id: 'a' }, resource_names: ['one', 'two'], type_url: EDS });
    const interleaved = Buffer.concat([sotwBytes({ resource_names: clusters('x', 30) }), sotwBytes({ type_url: EDS }), sotwBytes({ resource_names: clusters('y', 30) })]);
    for (const bytes of [few, interleaved]) expect(asRead(deserialize(bytes))).toEqual(asRead(sotwOriginal(bytes)));
    expect(decoding.stats).toMatchObject({ decodedWhole: 2, namesShared: 0, nameListsDecoded: 0 });
    // Field 3 as a varint among the names (wire type 0, tag 0x18) is not a run of names: decoded whole,
    // as the original does (it fails on the wire type mismatch or decodes; either way the same).
    const varint = Buffer.concat([sotwBytes({ resource_names: clusters('z', 30) }), Buffer.from([0x18, 0x01])]);
    let original: unknown;
    try {
      original = sotwOriginal(varint);
    } catch (error) {
      original = error;
    }
    if (original instanceof Error) expect(() => deserialize(varint)).toThrow();
    else expect(asRead(deserialize(varint))).toEqual(asRead(original));
  });
});

describe('withRequestDecoding', () => {
  it('replaces only the named methods\' request deserializers', () => {
    const decoding = new RequestDecoding();
    const wrapped = withRequestDecoding(ads, { StreamAggregatedResources: SOTW_REQUEST_FIELDS }, decoding);
    expect(wrapped['StreamAggregatedResources']!.requestDeserialize).not.toBe(ads['StreamAggregatedResources']!.requestDeserialize);
    expect(wrapped['DeltaAggregatedResources']!.requestDeserialize).toBe(ads['DeltaAggregatedResources']!.requestDeserialize);
    expect(() => withRequestDecoding(ads, { NoSuchMethod: SOTW_REQUEST_FIELDS }, decoding)).toThrow(/no method NoSuchMethod/);
  });
});
