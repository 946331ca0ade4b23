// Wire codec for the simulated Envoys' discovery streams, built on the protobufjs Root that
// common/xds loads once per process.
//
// A simulated Envoy needs each resource's name only, so resources must stay bytes
// (`{ type_url, value }`) and never be decoded into full Listener/Cluster objects: for 5,000 Envoys
// that decode would dominate CPU and memory. common/xds's CONVERSION_OPTIONS guarantee it (no `json`:
// with `json: true`, protobufjs decodes every `Any` whose type it knows); the service definitions'
// LOADER_OPTIONS build on the same object. Owning the codec here keeps the fleet off the gRPC loader's
// deserializers and gives tests the server-side halves too.
import * as protobuf from 'protobufjs';
import {
  CONVERSION_OPTIONS,
  loadXdsProtos,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../../common/xds';
import { decodeSotwResponseFast } from './sotw-response-decoder';

export interface DiscoveryCodec {
  encodeSotwRequest(request: DiscoveryRequest): Buffer;
  decodeSotwResponse(bytes: Buffer): DiscoveryResponse;
  encodeDeltaRequest(request: DeltaDiscoveryRequest): Buffer;
  decodeDeltaResponse(bytes: Buffer): DeltaDiscoveryResponse;
  /** Server-side halves, used by tests that fake a control plane. */
  decodeSotwRequest(bytes: Buffer): DiscoveryRequest;
  encodeSotwResponse(response: DiscoveryResponse): Buffer;
  decodeDeltaRequest(bytes: Buffer): DeltaDiscoveryRequest;
  encodeDeltaResponse(response: DeltaDiscoveryResponse): Buffer;
}

let codec: DiscoveryCodec | undefined;

/** `resource_names` is field 3 of DiscoveryRequest (envoy/service/discovery/v3), length-delimited. */
const RESOURCE_NAMES_TAG = (3 << 3) | 2;
/** Shorter name lists are encoded with the rest of the request (a few names encode faster than a lookup). */
const MIN_SHARED_NAMES = 16;
/** Encoded `resource_names` fields per frozen (interned, referencedNames.ts internNames) name list. */
const encodedNameLists = new WeakMap<readonly string[], Uint8Array>();

function encodedNames(names: readonly string[]): Uint8Array {
  let bytes = encodedNameLists.get(names);
  if (bytes === undefined) {
    const writer = protobuf.Writer.create();
    for (const name of names) writer.uint32(RESOURCE_NAMES_TAG).string(name);
    bytes = writer.finish();
    encodedNameLists.set(names, bytes);
  }
  return bytes;
}

/**
 * A SotW request as protobufjs encodes it, but with a long frozen name list's field encoded once per
 * list. A SotW client repeats its whole subscription in every ACK, and the fleet's Envoys share
 * interned lists: encoding 1,000 EDS names per ACK per Envoy was the largest share of the fleet's CPU
 * at 1,000 objects. The names go after the other fields: protobuf field order does not matter to a
 * decoder, and repeated fields keep their order.
 */
function sotwRequestEncoder(encodeWhole: (message: object) => Buffer): (request: DiscoveryRequest) => Buffer {
  return (request) => {
    const names = request.resource_names;
    if (names === undefined || names.length < MIN_SHARED_NAMES || !Object.isFrozen(names)) return encodeWhole(request);
    return Buffer.concat([encodeWhole({ ...request, resource_names: [] }), encodedNames(names)]);
  };
}

export function discoveryCodec(): DiscoveryCodec {
  if (codec) return codec;
  const { root } = loadXdsProtos();
  const sotwRequest = root.lookupType('envoy.service.discovery.v3.DiscoveryRequest');
  const sotwResponse = root.lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const deltaRequest = root.lookupType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  const deltaResponse = root.lookupType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
  const encoder =
    (type: protobuf.Type) =>
    (message: object): Buffer =>
      Buffer.from(type.encode(type.fromObject(message as Record<string, unknown>)).finish());
  const decoder =
    <T>(type: protobuf.Type) =>
    (bytes: Buffer): T =>
      type.toObject(type.decode(bytes), CONVERSION_OPTIONS) as T;
  const decodeSotwResponseSlow = decoder<DiscoveryResponse>(sotwResponse);
  codec = {
    encodeSotwRequest: sotwRequestEncoder(encoder(sotwRequest)),
    // The hand-written decoder gives the same object; it defers to protobufjs on anything unusual.
    decodeSotwResponse: (bytes: Buffer): DiscoveryResponse => decodeSotwResponseFast(bytes) ?? decodeSotwResponseSlow(bytes),
    encodeDeltaRequest: encoder(deltaRequest),
    decodeDeltaResponse: decoder<DeltaDiscoveryResponse>(deltaResponse),
    decodeSotwRequest: decoder<DiscoveryRequest>(sotwRequest),
    encodeSotwResponse: encoder(sotwResponse),
    decodeDeltaRequest: decoder<DeltaDiscoveryRequest>(deltaRequest),
    encodeDeltaResponse: encoder(deltaResponse),
  };
  return codec;
}
