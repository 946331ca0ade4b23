// Provenance contract between a control plane and the gateway (design brief §3.3, source 1):
// a resource (Listener, Cluster, RouteConfiguration, or a VirtualHost inside one) may carry
//   metadata.filter_metadata["xds-programmed.dev/sources"] = Struct { sources: ListValue<string> }
// where each string is `group/kind/namespace/name@generation` (core group is the empty string, so a
// core object reads `/Service/ns/name@3`). `filter_metadata` values must be `google.protobuf.Struct`
// (envoy.config.core.v3.Metadata), which is a map, hence the `sources` field holding the list.
// Note: google.protobuf.Struct/Value come from protobufjs's bundled definitions, whose field names are
// camelCase even with keepCase (`listValue`, `stringValue`), unlike every Envoy message.

export const PROVENANCE_FILTER_METADATA_KEY = 'xds-programmed.dev/sources';
export const PROVENANCE_STRUCT_FIELD = 'sources';

export interface SourceRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  generation: number;
}

export function formatSourceRef(ref: SourceRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}@${ref.generation}`;
}

const SOURCE_REF_PATTERN = /^([^/@]*)\/([^/@]+)\/([^/@]*)\/([^/@]+)@([0-9]+)$/;

/** Parses `group/kind/namespace/name@generation`; undefined if malformed. */
export function parseSourceRef(text: string): SourceRef | undefined {
  const match = SOURCE_REF_PATTERN.exec(text);
  if (!match) return undefined;
  const [, group, kind, namespace, name, generation] = match;
  if (kind === undefined || name === undefined || generation === undefined) return undefined;
  return { group: group ?? '', kind, namespace: namespace ?? '', name, generation: Number(generation) };
}

/** The `metadata` value (envoy.config.core.v3.Metadata, proto-loader object shape) stamping `sources`. */
export function provenanceMetadata(sources: readonly string[]): Record<string, unknown> {
  return {
    filter_metadata: {
      [PROVENANCE_FILTER_METADATA_KEY]: {
        fields: {
          [PROVENANCE_STRUCT_FIELD]: {
            listValue: { values: [...sources].sort().map((source) => ({ stringValue: source })) },
          },
        },
      },
    },
  };
}

/**
 * Reads the sources back from a decoded resource's `metadata` (as `unpackAny` returns it). Returns []
 * when absent; ignores entries that are not strings.
 */
export function readProvenance(metadata: unknown): string[] {
  const filterMetadata = field(metadata, 'filter_metadata');
  const struct = field(filterMetadata, PROVENANCE_FILTER_METADATA_KEY);
  const list = field(field(field(struct, 'fields'), PROVENANCE_STRUCT_FIELD), 'listValue');
  const values = field(list, 'values');
  if (!Array.isArray(values)) return [];
  const sources: string[] = [];
  for (const value of values) {
    const text = field(value, 'stringValue');
    if (typeof text === 'string') sources.push(text);
  }
  return sources;
}

function field(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  return (value as Record<string, unknown>)[key];
}
