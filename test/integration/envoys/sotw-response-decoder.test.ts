// The simulated Envoys' hand-written DiscoveryResponse decoder yields exactly what the protobufjs
// decoder (common/xds CONVERSION_OPTIONS) yields, and gives up (undefined) rather than differ.
import fc from 'fast-check';
import type * as protobuf from 'protobufjs';
import { CONVERSION_OPTIONS, loadXdsProtos, type DiscoveryResponse } from '../../../common/xds';
import { decodeSotwResponseFast } from '../../../infra/local/envoys/sotw-response-decoder';

const responseType = (): protobuf.Type => loadXdsProtos().root.lookupType('envoy.service.discovery.v3.DiscoveryResponse');
/** What may be on the wire: an Any may lack either field. */
type WireResponse = Omit<DiscoveryResponse, 'resources'> & { resources?: Array<{ type_url?: string; value?: Buffer }> };
const encode = (response: WireResponse): Buffer => {
  const type = responseType();
  return Buffer.from(type.encode(type.fromObject(response as Record<string, unknown>)).finish());
};
const protobufjsDecode = (bytes: Buffer): DiscoveryResponse => {
  const type = responseType();
  return type.toObject(type.decode(bytes), CONVERSION_OPTIONS) as DiscoveryResponse;
};

const anyArb = fc.record(
  { type_url: fc.string({ maxLength: 60 }), value: fc.uint8Array({ maxLength: 80 }).map((bytes) => Buffer.from(bytes)) },
  { requiredKeys: [] },
);
const responseArb: fc.Arbitrary<WireResponse> = fc.record(
  {
    version_info: fc.string({ maxLength: 40 }),
    resources: fc.array(anyArb, { maxLength: 8 }),
    canary: fc.boolean(),
    type_url: fc.string({ maxLength: 60 }),
    nonce: fc.string({ maxLength: 10 }),
    control_plane: fc.record({ identifier: fc.string({ maxLength: 20 }) }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

describe('decodeSotwResponseFast', () => {
  it('equals the protobufjs decoding of any encoded response', () => {
    fc.assert(
      fc.property(responseArb, (response) => {
        const bytes = encode(response);
        expect(decodeSotwResponseFast(bytes)).toEqual(protobufjsDecode(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps each resource value as a view into the message, not a copy', () => {
    const bytes = encode({ version_info: 'v1', type_url: 't', nonce: '1', resources: [{ type_url: 't', value: Buffer.from([1, 2, 3]) }] });
    const value = decodeSotwResponseFast(bytes)?.resources?.[0]?.value;
    expect(value?.buffer).toBe(bytes.buffer);
  });

  it('never disagrees on arbitrary bytes: the same object, or undefined (protobufjs decides)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (raw) => {
        const bytes = Buffer.from(raw);
        const fast = decodeSotwResponseFast(bytes);
        if (fast === undefined) return;
        expect(fast).toEqual(protobufjsDecode(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('never disagrees on damaged encodings (a byte changed, or cut short)', () => {
    fc.assert(
      fc.property(responseArb, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean(), (response, at, byte, truncate) => {
        const bytes = Buffer.from(encode(response));
        if (bytes.length === 0) return;
        const position = at % bytes.length;
        const damaged = truncate ? bytes.subarray(0, position) : (bytes.writeUInt8(byte, position), bytes);
        let expected: DiscoveryResponse | Error;
        try {
          expected = protobufjsDecode(damaged);
        } catch (error) {
          expected = error as Error;
        }
        const fast = decodeSotwResponseFast(damaged);
        if (fast === undefined) return;
        expect(fast).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('hands out one resources array for equal resource bytes of a type, a new one when they differ', () => {
    const resources = [{ type_url: 'type.googleapis.com/x.Shared', value: Buffer.from([0x0a, 1, 0x61]) }];
    const first = decodeSotwResponseFast(encode({ version_info: 'v1', type_url: 'type.googleapis.com/x.Shared', nonce: '1', resources }));
    const second = decodeSotwResponseFast(encode({ version_info: 'v1', type_url: 'type.googleapis.com/x.Shared', nonce: '2', resources }));
    expect(second?.nonce).toBe('2');
    expect(second?.resources).toBe(first?.resources);
    const changed = decodeSotwResponseFast(encode({ version_info: 'v2', type_url: 'type.googleapis.com/x.Shared', nonce: '3', resources: [{ ...resources[0], value: Buffer.from([0x0a, 1, 0x62]) }] }));
    expect(changed?.resources).not.toBe(first?.resources);
    expect(changed?.resources?.[0]?.value).toEqual(Buffer.from([0x0a, 1, 0x62]));
    // Another type with the same bytes gets its own list.
    const otherType = decodeSotwResponseFast(encode({ type_url: 'type.googleapis.com/x.Other', nonce: '4', resources }));
    expect(otherType?.resources).not.toBe(first?.resources);
  });

  it('gives up on a singular field given twice (protobuf merges those)', () => {
    const twice = Buffer.concat([encode({ nonce: 'a' }), encode({ nonce: 'b' })]);
    expect(decodeSotwResponseFast(twice)).toBeUndefined();
    // Repeated resources concatenate, as in protobufjs.
    const resources = Buffer.concat([encode({ resources: [{ type_url: 'a' }] }), encode({ resources: [{ type_url: 'b' }] })]);
    expect(decodeSotwResponseFast(resources)).toEqual(protobufjsDecode(resources));
  });
});
