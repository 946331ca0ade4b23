// Bounds on what an Envoy says about itself (DiscoveryRequest.node), checked where it enters the
// gateway (xds-gateway/relay/node.ts) before anything of it is kept or written. Every bound sits well
// inside what the table stores (record-fields.ts: MAX_NODE_ID_LENGTH; envoy-record.ts: the 1,024-character `cluster` and
// `group`, DynamoDB's 2,048-byte partition key and 400 KB item) so a node that passes can always be
// recorded: a write that can never succeed must be refused at the edge, not retried for ever in the
// recorder while its lineage waits for it (docs/GATEWAY.md, "What an Envoy may send").
// The bounds are in UTF-8 bytes, the unit the table's limits are in.
import { firstUnsafeCharacter } from './untrusted-text';
import { utf8Length } from './truncate';

export const NODE_LIMITS = {
  /** node.id: the key of the Envoy's items and the name conditions show. Pod names are ≤ 253. */
  idBytes: 256,
  /** node.cluster: the default node group, part of every lineage's item. */
  clusterBytes: 256,
  /** The node group key (node.cluster, or the metadata field grouping uses). */
  groupBytes: 256,
  /** node.metadata as compact JSON: stored with every state write of the Envoy. */
  metadataJsonBytes: 8192,
  /** Nesting of node.metadata (structs and lists). */
  metadataDepth: 8,
  /** Each of node.locality.region / zone / sub_zone, node.user_agent_name and _version. */
  labelBytes: 128,
} as const;

/** The fields of a node as plain values (the edge decodes protobuf; this checks). */
export interface NodeFields {
  id: string;
  cluster: string;
  /** node.metadata decoded to JSON, and how deep it nests. */
  metadata: Record<string, unknown>;
  metadataDepth: number;
  /** Short labels by their xDS field path (`node.locality.zone`, `node.user_agent_name`, …). */
  labels: Record<string, string>;
}

/**
 * The one name a node id or group cannot be. Node ids and groups are keys of the maps the table holds
 * (an aggregate shard's members, core aggregate.ts), and `__proto__` does not survive as a map key on
 * the way there and back: the AWS SDK's marshall and unmarshall and zod's record parsing drop it
 * silently. A node counted on its lineage whose member is dropped keeps every object on the lineage
 * Pending for ever ("not yet in the aggregates"), so it is refused at the edge, by name.
 */
export const RESERVED_KEY = '__proto__';

/** Why a node cannot be accepted, naming the field, or undefined when every field is within bounds. */
export function checkNodeFields(node: NodeFields): string | undefined {
  if (node.id.length === 0) return 'node.id must be a non-empty string';
  if (node.id === RESERVED_KEY) return reservedKeyProblem('node.id');
  const text: Array<[field: string, value: string, maxBytes: number]> = [
    ['node.id', node.id, NODE_LIMITS.idBytes],
    ['node.cluster', node.cluster, NODE_LIMITS.clusterBytes],
    ...Object.entries(node.labels).map(([field, value]): [string, string, number] => [field, value, NODE_LIMITS.labelBytes]),
  ];
  for (const [field, value, maxBytes] of text) {
    const problem = checkText(field, value, maxBytes);
    if (problem !== undefined) return problem;
  }
  if (node.metadataDepth > NODE_LIMITS.metadataDepth) return `node.metadata nests ${node.metadataDepth} levels deep; at most ${NODE_LIMITS.metadataDepth}`;
  const metadataBytes = utf8Length(JSON.stringify(node.metadata));
  if (metadataBytes > NODE_LIMITS.metadataJsonBytes) return `node.metadata is ${metadataBytes} bytes as JSON; at most ${NODE_LIMITS.metadataJsonBytes}`;
  return undefined;
}

/** Why a node group key cannot be used (it names a lineage and is stored with it), or undefined. */
export function checkGroupKey(group: string, source: string): string | undefined {
  if (group === RESERVED_KEY) return reservedKeyProblem(`the node group (${source})`);
  return checkText(`the node group (${source})`, group, NODE_LIMITS.groupBytes);
}

function reservedKeyProblem(field: string): string {
  return `${field} is ${JSON.stringify(RESERVED_KEY)}, which the table cannot hold as a map key; use another name`;
}

function checkText(field: string, value: string, maxBytes: number): string | undefined {
  const bytes = utf8Length(value);
  if (bytes > maxBytes) return `${field} is ${bytes} bytes of UTF-8; at most ${maxBytes}`;
  const unsafe = firstUnsafeCharacter(value);
  if (unsafe !== undefined) return `${field} holds the control or format character ${unsafe.codePoint} at index ${unsafe.index}`;
  return undefined;
}
