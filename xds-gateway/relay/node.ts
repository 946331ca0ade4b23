// The Envoy's identity from DiscoveryRequest.node (envoy.config.core.v3.Node). Clients may send node
// only on a stream's first request (grpc-js-xds does; Envoy can be told to), so the relay reads it
// once per stream and keeps it. Every field is bounded here (common/core node-limits.ts): a node
// that fails is refused with INVALID_ARGUMENT naming the field, before anything of it is kept.
import { checkNodeFields, type EnvoyIdentity } from '../../common/core';
import type { XdsNode } from '../../common/xds';

/** Deeper than this the decoder stops (a refusal follows: NODE_LIMITS.metadataDepth is far below). */
const MAX_DECODE_DEPTH = 64;

/**
 * google.protobuf.Struct as decoded by proto-loader (well-known types use camelCase: `stringValue`,
 * `structValue`, …) → plain JSON. Unknown shapes become null rather than failing the stream.
 */
export function structToJson(struct: unknown): Record<string, unknown> {
  return decodeStruct(struct, 1).value;
}

/** The struct as JSON and how deep it nests (a struct's fields are one level). */
function decodeStruct(struct: unknown, depth: number): { value: Record<string, unknown>; depth: number } {
  const fields = isRecord(struct) && isRecord(struct.fields) ? struct.fields : {};
  let deepest = depth;
  const value: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(fields)) {
    const decoded = decodeValue(field, depth);
    value[key] = decoded.value;
    deepest = Math.max(deepest, decoded.depth);
  }
  return { value, depth: deepest };
}

function decodeValue(value: unknown, depth: number): { value: unknown; depth: number } {
  if (!isRecord(value) || depth > MAX_DECODE_DEPTH) return { value: null, depth };
  if (typeof value.stringValue === 'string') return { value: value.stringValue, depth };
  if (typeof value.numberValue === 'number') return { value: value.numberValue, depth };
  if (typeof value.boolValue === 'boolean') return { value: value.boolValue, depth };
  if (isRecord(value.structValue)) return decodeStruct(value.structValue, depth + 1);
  if (isRecord(value.listValue)) {
    const items = Array.isArray(value.listValue.values) ? value.listValue.values : [];
    let deepest = depth + 1;
    const list = items.map((item: unknown) => {
      const decoded = decodeValue(item, depth + 1);
      deepest = Math.max(deepest, decoded.depth);
      return decoded.value;
    });
    return { value: list, depth: deepest };
  }
  return { value: null, depth };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Short node fields checked as labels, by their xDS field path. */
function labelsOf(node: XdsNode): Record<string, string> {
  const labels: Record<string, string> = {};
  const add = (field: string, value: unknown): void => {
    if (typeof value === 'string') labels[field] = value;
  };
  add('node.locality.region', node.locality?.region);
  add('node.locality.zone', node.locality?.zone);
  add('node.locality.sub_zone', node.locality?.sub_zone);
  add('node.user_agent_name', node.user_agent_name);
  add('node.user_agent_version', node.user_agent_version);
  return labels;
}

/** The identity, or why the node cannot identify an Envoy (naming the field). */
export function identityOf(node: XdsNode | null | undefined): { ok: true; identity: EnvoyIdentity } | { ok: false; error: string } {
  if (node === undefined || node === null) return { ok: false, error: 'the first request on a stream must carry node' };
  const id = typeof node.id === 'string' ? node.id : '';
  const cluster = typeof node.cluster === 'string' ? node.cluster : '';
  const metadata = decodeStruct(node.metadata, 1);
  const problem = checkNodeFields({ id, cluster, metadata: metadata.value, metadataDepth: metadata.depth, labels: labelsOf(node) });
  if (problem !== undefined) return { ok: false, error: problem };
  return { ok: true, identity: { nodeId: id, cluster, metadata: metadata.value } };
}
