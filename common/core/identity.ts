// Who is who: Envoys (by xDS node) and the Kubernetes objects we write a condition on.
import { parsedError, parsedOk, type Parsed } from './result';

/** What an Envoy tells us about itself in `DiscoveryRequest.node` (envoy.config.core.v3.Node). */
export interface EnvoyIdentity {
  /** `node.id`: unique per Envoy; the key of its state. */
  nodeId: string;
  /** `node.cluster`: the service cluster; the default node group. */
  cluster: string;
  /** `node.metadata` as plain JSON. */
  metadata: Record<string, unknown>;
}

/** Maps an Envoy to its node group: the Envoys served from one upstream subscription (brief §3.1). */
export type NodeGroupKeyFn = (envoy: EnvoyIdentity) => string;

/** Default node group: every Envoy sharing `node.cluster`. */
export const groupByCluster: NodeGroupKeyFn = (envoy) => envoy.cluster;

/** Groups by a string metadata field, falling back to `node.cluster` when it is absent. */
export function groupByMetadata(field: string): NodeGroupKeyFn {
  return (envoy) => {
    const value = envoy.metadata[field];
    return typeof value === 'string' && value.length > 0 ? value : envoy.cluster;
  };
}

/**
 * A group name usable as the `<groupId>` part of a lineage (`[a-z0-9-]{1,63}`): lowercased, other
 * characters replaced by `-`, then a short deterministic hash appended when anything was changed or cut,
 * so distinct groups stay distinct.
 */
export function lineageGroupId(group: string): string {
  const cleaned = group.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (cleaned === group && cleaned.length > 0 && cleaned.length <= 63) return cleaned;
  const hash = fnv1a32(group).toString(16).padStart(8, '0');
  return `${cleaned.slice(0, 54)}-${hash}`.replace(/^-/, 'g-');
}

function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** A Kubernetes object. `group` is '' for the core API group; `namespace` is '' for cluster-scoped kinds. */
export interface ObjectRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/** `group/kind/namespace/name` (group and namespace may be empty; Kubernetes names never contain `/`). */
export function formatObjectRef(ref: ObjectRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

// DNS-subdomain-ish characters for group, namespace and name; Kind is a CamelCase identifier.
const GROUP_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$/;
const KIND_RE = /^[A-Za-z][A-Za-z0-9]{0,62}$/;
const NAMESPACE_RE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/;
const NAME_RE = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** Validates each field of an object reference; returns the reason for the first bad one. */
export function validateObjectRef(ref: ObjectRef): string | undefined {
  if (ref.group.length > 253 || !GROUP_RE.test(ref.group)) return `invalid group ${JSON.stringify(ref.group)}`;
  if (!KIND_RE.test(ref.kind)) return `invalid kind ${JSON.stringify(ref.kind)}`;
  if (!NAMESPACE_RE.test(ref.namespace)) return `invalid namespace ${JSON.stringify(ref.namespace)}`;
  if (!NAME_RE.test(ref.name)) return `invalid name ${JSON.stringify(ref.name)}`;
  return undefined;
}

export function parseObjectRef(text: string): Parsed<ObjectRef> {
  const parts = text.split('/');
  if (parts.length !== 4) return parsedError(`object ref must be group/kind/namespace/name: ${JSON.stringify(text.slice(0, 300))}`);
  const [group, kind, namespace, name] = parts as [string, string, string, string];
  const ref = { group, kind, namespace, name };
  const problem = validateObjectRef(ref);
  return problem === undefined ? parsedOk(ref) : parsedError(`${problem} in ${JSON.stringify(text.slice(0, 300))}`);
}

export function sameObjectRef(a: ObjectRef, b: ObjectRef): boolean {
  return a.group === b.group && a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}

/** A provenance source: `group/kind/namespace/name@generation` (brief §3.3). */
export interface ObjectGenerationRef {
  object: ObjectRef;
  generation: number;
}

export function formatSourceRef(source: ObjectGenerationRef): string {
  return `${formatObjectRef(source.object)}@${source.generation}`;
}

export function parseSourceRef(text: string): Parsed<ObjectGenerationRef> {
  const at = text.lastIndexOf('@');
  if (at < 0) return parsedError(`source must be group/kind/namespace/name@generation: ${JSON.stringify(text.slice(0, 300))}`);
  const generationText = text.slice(at + 1);
  if (!/^[1-9][0-9]{0,15}$/.test(generationText) || !Number.isSafeInteger(Number(generationText))) {
    return parsedError(`invalid generation ${JSON.stringify(generationText.slice(0, 30))} in source`);
  }
  const object = parseObjectRef(text.slice(0, at));
  if (!object.ok) return object;
  return parsedOk({ object: object.value, generation: Number(generationText) });
}

/**
 * The objects (formatObjectRef keys) a provenance stamp's sources name, generations dropped; malformed
 * sources name nothing (no watermark is recorded from them either).
 */
export function objectKeysOfSources(sources: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const text of sources) {
    const parsed = parseSourceRef(text);
    if (parsed.ok) keys.add(formatObjectRef(parsed.value.object));
  }
  return keys;
}
