// Minimal OpenAPI v3 documents. kubectl (1.27+) reads them for one decision: whether the server
// validates fields itself (`fieldValidation` on the PATCH operation of the kind). We do, so we
// say so, and kubectl sends `fieldValidation=Strict` instead of validating client-side against
// a full schema. PATCH operations list only the patch formats this server really accepts, so
// kubectl apply never computes an OpenAPI-driven strategic merge patch (it falls back to its
// built-in types for Namespace/Lease and to JSON merge patch for CRDs and custom resources).
// /openapi/v2 stays a 404: kubectl tolerates its absence.
import { createHash } from 'node:crypto';
import type { JsonObject } from './json';
import type { ResourceRegistry } from './registry';
import { apiVersionOf, type ResourceType } from './resources';

function groupVersionPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function hashOf(document: JsonObject): string {
  return createHash('sha256').update(JSON.stringify(document)).digest('hex').slice(0, 32).toUpperCase();
}

export function openApiV3Root(registry: ResourceRegistry): JsonObject {
  const paths: JsonObject = {};
  for (const [group, versions] of registry.groups()) {
    for (const version of versions) {
      const document = openApiV3GroupVersion(registry, group, version);
      if (!document) continue;
      const path = groupVersionPath(group, version);
      paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hashOf(document)}` };
    }
  }
  return { paths };
}

function patchOperation(type: ResourceType, version: string): JsonObject {
  const objectSchema: JsonObject = { schema: { type: 'object' } };
  return {
    'x-kubernetes-group-version-kind': { group: type.group, version, kind: type.kind },
    'x-kubernetes-action': 'patch',
    parameters: [
      { name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } },
      { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
    ],
    requestBody: {
      content: { 'application/json-patch+json': objectSchema, 'application/merge-patch+json': objectSchema },
      required: true,
    },
    responses: { '200': { description: 'OK' } },
  };
}

/** The document for one group/version, or undefined when nothing is served there. */
export function openApiV3GroupVersion(registry: ResourceRegistry, group: string, version: string): JsonObject | undefined {
  const types = registry.typesIn(group, version);
  if (types.length === 0) return undefined;
  const paths: JsonObject = {};
  const schemas: JsonObject = {};
  const prefix = `/${groupVersionPath(group, version)}`;
  for (const type of types.sort((a, b) => a.plural.localeCompare(b.plural))) {
    const itemPath = type.namespaced ? `${prefix}/namespaces/{namespace}/${type.plural}/{name}` : `${prefix}/${type.plural}/{name}`;
    paths[itemPath] = { patch: patchOperation(type, version) };
    const schema = type.schemas.get(version);
    const reversedGroup = group === '' ? 'io.k8s.api.core' : group.split('.').reverse().join('.');
    schemas[`${reversedGroup}.${version}.${type.kind}`] = {
      ...(schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
      'x-kubernetes-group-version-kind': [{ group, version, kind: type.kind }],
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes (xds-programmed local API server)', version: apiVersionOf(group, version) },
    paths,
    components: { schemas },
  };
}
