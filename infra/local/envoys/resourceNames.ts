// Reads the name of an xDS resource straight from its serialized bytes, without decoding it.
// A simulated Envoy must record which resources it accepted, but fully decoding every Listener or
// Cluster for 5,000 Envoys would dominate CPU and memory. Every resource type served over xDS keeps
// its name in field 1 as a string: Listener.name, Cluster.name, RouteConfiguration.name,
// ClusterLoadAssignment.cluster_name, Secret.name, VirtualHost.name, ScopedRouteConfiguration.name
// (envoy/config/**/v3 protos). SotW responses may also wrap resources in
// envoy.service.discovery.v3.Resource (name = field 3, version = field 1, resource = field 2).

export const RESOURCE_WRAPPER_TYPE_URL = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

/** Protobuf wire types (https://protobuf.dev/programming-guides/encoding/#structure). */
const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

export interface WireStringFields {
  [fieldNumber: number]: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * Returns the top-level length-delimited fields `wanted` of a serialized message as UTF-8 strings
 * (the last occurrence wins, as protobuf merging does). Throws on malformed input.
 */
export function readStringFields(bytes: Uint8Array, wanted: readonly number[]): WireStringFields {
  const found: WireStringFields = {};
  let offset = 0;
  const readVarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (offset >= bytes.length) throw new Error('truncated varint');
      const byte = bytes[offset++] as number;
      // Lengths and tags fit in 32 bits for any message we can hold; multiply avoids sign issues.
      if (shift < 49) result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
      if (shift > 63) throw new Error('varint too long');
    }
  };
  while (offset < bytes.length) {
    const tag = readVarint();
    const fieldNumber = Math.floor(tag / 8);
    const wireType = tag & 7;
    switch (wireType) {
      case WIRE_VARINT:
        readVarint();
        break;
      case WIRE_I64:
        offset += 8;
        break;
      case WIRE_I32:
        offset += 4;
        break;
      case WIRE_LEN: {
        const length = readVarint();
        const end = offset + length;
        if (end > bytes.length) throw new Error('truncated length-delimited field');
        if (wanted.includes(fieldNumber)) found[fieldNumber] = utf8.decode(bytes.subarray(offset, end));
        offset = end;
        break;
      }
      default:
        throw new Error(`unsupported wire type ${wireType}`);
    }
    if (offset > bytes.length) throw new Error('truncated fixed-width field');
  }
  return found;
}

export interface NamedResource {
  name: string;
  /** Per-resource version when the response carries one (Delta, or a SotW Resource wrapper). */
  version: string | undefined;
}

/** Name (and version, if wrapped) of a SotW `Any` resource. Throws on malformed bytes. */
export function sotwResourceName(any: { type_url?: string; value?: Uint8Array }): NamedResource {
  const value = any.value ?? new Uint8Array();
  if (any.type_url === RESOURCE_WRAPPER_TYPE_URL) {
    const fields = readStringFields(value, [1, 3]);
    return { name: fields[3] ?? '', version: fields[1] };
  }
  return { name: readStringFields(value, [1])[1] ?? '', version: undefined };
}
