// CustomResourceDefinition handling: turn an apiextensions.k8s.io/v1 CRD into a servable
// ResourceType, and the status the real apiextensions controller would write (Established and
// NamesAccepted become True at once here: there is no asynchronous controller to wait for).
import { z } from 'zod';
import { isJsonObject, type JsonObject } from './json';
import type { ResourceType } from './resources';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

const crdSpecSchema = z.object({
  group: z.string().min(1).max(253).regex(DNS_SUBDOMAIN, 'must be a DNS subdomain').refine((g) => g.includes('.'), 'should be a domain with at least one dot'),
  names: z.object({
    plural: z.string().regex(DNS_LABEL, 'must be a lowercase DNS label'),
    singular: z.string().regex(DNS_LABEL, 'must be a lowercase DNS label').optional(),
    kind: z.string().regex(KIND, 'must be a CamelCase kind'),
    listKind: z.string().regex(KIND).optional(),
    shortNames: z.array(z.string().regex(DNS_LABEL)).optional(),
    categories: z.array(z.string()).optional(),
  }),
  scope: z.enum(['Namespaced', 'Cluster']),
  versions: z
    .array(
      z.object({
        name: z.string().regex(DNS_LABEL, 'must be a DNS label'),
        served: z.boolean(),
        storage: z.boolean(),
        schema: z.object({ openAPIV3Schema: z.record(z.string(), z.unknown()) }).optional(),
        subresources: z
          .object({ status: z.record(z.string(), z.unknown()).optional(), scale: z.unknown().optional() })
          .optional(),
      }),
    )
    .min(1, 'must have at least one version'),
});

export interface CrdFieldError {
  field: string;
  message: string;
}

export type CrdParseResult = { ok: true; type: ResourceType } | { ok: false; errors: CrdFieldError[] };

/** Validates a CRD (already shaped as JSON) and derives the ResourceType it defines. */
export function resourceTypeFromCrd(crd: JsonObject): CrdParseResult {
  const parsed = crdSpecSchema.safeParse(crd['spec']);
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => ({ field: ['spec', ...issue.path.map(String)].join('.'), message: issue.message })),
    };
  }
  const spec = parsed.data;
  const errors: CrdFieldError[] = [];
  const name = isJsonObject(crd['metadata']) ? crd['metadata']['name'] : undefined;
  const expectedName = `${spec.names.plural}.${spec.group}`;
  if (name !== expectedName) {
    errors.push({ field: 'metadata.name', message: `must be spec.names.plural+"."+spec.group (${expectedName})` });
  }
  if (spec.versions.filter((v) => v.storage).length !== 1) {
    errors.push({ field: 'spec.versions', message: 'must have exactly one version marked as storage version' });
  }
  const names = new Set<string>();
  for (const version of spec.versions) {
    if (names.has(version.name)) errors.push({ field: 'spec.versions', message: `duplicate version name ${version.name}` });
    names.add(version.name);
    if (!version.schema) errors.push({ field: `spec.versions[${version.name}].schema.openAPIV3Schema`, message: 'Required value: schemas are required' });
    else if (version.schema.openAPIV3Schema['type'] !== 'object') {
      errors.push({ field: `spec.versions[${version.name}].schema.openAPIV3Schema.type`, message: 'must be object at the root' });
    }
  }
  const servedVersions = spec.versions.filter((v) => v.served);
  if (servedVersions.length === 0) errors.push({ field: 'spec.versions', message: 'must have at least one served version' });
  const statusFlags = new Set(spec.versions.map((v) => v.subresources?.status !== undefined));
  if (statusFlags.size > 1) {
    // The real apiserver allows per-version subresources; we store one object per resource, so
    // a status subresource on some versions only would make the same object behave differently.
    errors.push({ field: 'spec.versions[*].subresources.status', message: 'this local server needs the same status subresource setting on every version' });
  }
  if (errors.length > 0) return { ok: false, errors };

  const schemas = new Map<string, JsonObject>();
  for (const version of servedVersions) {
    if (version.schema) schemas.set(version.name, JSON.parse(JSON.stringify(version.schema.openAPIV3Schema)) as JsonObject);
  }
  return {
    ok: true,
    type: {
      group: spec.group,
      versions: orderVersions(servedVersions.map((v) => v.name)),
      plural: spec.names.plural,
      singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
      kind: spec.names.kind,
      listKind: spec.names.listKind ?? `${spec.names.kind}List`,
      namespaced: spec.scope === 'Namespaced',
      shortNames: spec.names.shortNames ?? [],
      categories: spec.names.categories ?? [],
      hasStatusSubresource: servedVersions.some((v) => v.subresources?.status !== undefined),
      strategicMergeAsMergePatch: false, // Kubernetes answers 415 to strategic merge on custom resources
      schemas,
      generationRule: 'allButMetadataAndStatus',
    },
  };
}

/** Kubernetes version priority: GA > beta > alpha, higher numbers first, then other names alphabetically. */
export function orderVersions(versions: string[]): string[] {
  const rank = (version: string): [number, number, number, string] => {
    const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(version);
    if (!match) return [3, 0, 0, version];
    const stability = match[2] === undefined ? 0 : match[2] === 'beta' ? 1 : 2;
    return [stability, -Number(match[1]), -Number(match[3] ?? 0), version];
  };
  return [...versions].sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < 3; i += 1) {
      const diff = (ra[i] as number) - (rb[i] as number);
      if (diff !== 0) return diff;
    }
    return ra[3].localeCompare(rb[3]);
  });
}

/** The status the apiextensions controllers would converge to for an accepted CRD. */
export function acceptedCrdStatus(crd: JsonObject, type: ResourceType, now: string): JsonObject {
  const spec = isJsonObject(crd['spec']) ? crd['spec'] : {};
  const versions = Array.isArray(spec['versions']) ? spec['versions'] : [];
  const storage = versions.find((v) => isJsonObject(v) && v['storage'] === true);
  const storageName = isJsonObject(storage) && typeof storage['name'] === 'string' ? storage['name'] : type.versions[0] ?? 'v1';
  const previous = isJsonObject(crd['status']) && Array.isArray(crd['status']['storedVersions']) ? crd['status']['storedVersions'] : [];
  const storedVersions = [...new Set([...previous.filter((v): v is string => typeof v === 'string'), storageName])];
  const condition = (conditionType: string, reason: string, message: string): JsonObject => ({
    type: conditionType,
    status: 'True',
    lastTransitionTime: now,
    reason,
    message,
  });
  return {
    conditions: [
      condition('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    acceptedNames: {
      plural: type.plural,
      singular: type.singular,
      kind: type.kind,
      listKind: type.listKind,
      ...(type.shortNames.length > 0 ? { shortNames: type.shortNames } : {}),
      ...(type.categories.length > 0 ? { categories: type.categories } : {}),
    },
    storedVersions,
  };
}
