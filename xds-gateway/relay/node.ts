// The Envoy's identity from DiscoveryRequest.node (envoy.config.core.v3.Node). Clients may send node
// only on a stream's first request (grpc-js-xds does; Envoy can be told to), so the relay reads it
// once per stream and keeps it.
import type { EnvoyIdentity } from '../../common/core';
import type { XdsNode } from '../../common/xds';

export const MAX_NODE_ID_LENGTH = 1024;

/**
 * google.protobuf.Struct as decoded by proto-loader (well-known types use camelCase: `stringValue`,
 * `structValue`, …) → plain JSON. Unknown shapes become null rather than failing the stream.
 */
export function structToJson(struct: unknown): Record<string, unknown> {
  const fields = isRecord(struct) && isRecord(struct.fields) ? struct.fields : {};
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, valueToJson(value)]));
}

function valueToJson(value: unknown, depth = 0): unknown {
  if (!isRecord(value) || depth > 32) return null;
  if (typeof value.stringValue === 'string') return value.stringValue;
  if (typeof value.numberValue === 'number') return value.numberValue;
  if (typeof value.boolValue === 'boolean') return value.boolValue;
  if (isRecord(value.structValue)) return structToJson(value.structValue);
  if (isRecord(value.listValue)) {
    const values = Array.isArray(value.listValue.values) ? value.listValue.values : [];
    return values.map((item: unknown) => valueToJson(item, depth + 1));
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The identity, or why the node cannot identify an Envoy. */
export function identityOf(node: XdsNode | null | undefined): { ok: true; identity: EnvoyIdentity } | { ok: false; error: string } {
  if (node === undefined || node === null) return { ok: false, error: 'the first request on a stream must carry node' };
  const id = typeof node.id === 'string' ? node.id : '';
  if (id.length === 0) return { ok: false, error: 'node.id must be a non-empty string' };
  if (id.length > MAX_NODE_ID_LENGTH) return { ok: false, error: `node.id is longer than ${MAX_NODE_ID_LENGTH} characters` };
  return {
    ok: true,
    identity: { nodeId: id, cluster: typeof node.cluster === 'string' ? node.cluster : '', metadata: structToJson(node.metadata) },
  };
}
