// Names of upstream resources, read from the serialized bytes without decoding the message.
// The relay needs each resource's name (SotW responses carry only Any bytes) to cache per name, to
// serve named subscriptions and to diff for Delta. Every xDS resource type keeps its name in field 1
// as a string (Listener.name, Cluster.name, RouteConfiguration.name, ClusterLoadAssignment.cluster_name,
// Secret.name, ScopedRouteConfiguration.name, Runtime.name; envoy/config/**/v3). A control plane may
// instead wrap resources in envoy.service.discovery.v3.Resource, whose name is field 3.
// This runs once per upstream response, never per Envoy.

export const DISCOVERY_RESOURCE_WRAPPER_TYPE_URL = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads a varint at `offset`; returns [value, nextOffset]. Throws on truncation. */
function readVarint(bytes: Uint8Array, offset: number): [number, number] {
  let value = 0;
  let multiplier = 1;
  for (let position = offset; position < bytes.length && position < offset + 10; position++) {
    const byte = bytes[position] as number;
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return [value, position + 1];
    multiplier *= 128;
  }
  throw new Error('truncated or overlong varint');
}

/**
 * The last occurrence (protobuf merge rule) of top-level string field `fieldNumber`, or undefined.
 * Throws on malformed wire data (truncated fields, unknown wire types).
 */
export function readTopLevelString(bytes: Uint8Array, fieldNumber: number): string | undefined {
  let offset = 0;
  let found: string | undefined;
  while (offset < bytes.length) {
    const [tag, afterTag] = readVarint(bytes, offset);
    offset = afterTag;
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (wireType === 0) {
      offset = readVarint(bytes, offset)[1];
    } else if (wireType === 1) {
      offset += 8;
    } else if (wireType === 5) {
      offset += 4;
    } else if (wireType === 2) {
      const [length, afterLength] = readVarint(bytes, offset);
      const end = afterLength + length;
      if (end > bytes.length) throw new Error(`field ${field} runs past the end of the message`);
      if (field === fieldNumber) found = utf8.decode(bytes.subarray(afterLength, end));
      offset = end;
    } else {
      // Groups (3/4) are proto2-only and never appear in xDS v3 resources.
      throw new Error(`unsupported wire type ${wireType} for field ${field}`);
    }
    if (offset > bytes.length) throw new Error(`field ${field} runs past the end of the message`);
  }
  return found;
}

/** The resource's name: field 1 of the resource, or field 3 of a discovery Resource wrapper. */
export function resourceNameOf(typeUrl: string, value: Uint8Array): string | undefined {
  return readTopLevelString(value, typeUrl === DISCOVERY_RESOURCE_WRAPPER_TYPE_URL ? 3 : 1);
}
