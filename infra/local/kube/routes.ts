// Maps a request path to what it names. Kubernetes URL layout:
//   /api/v1[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]
//   /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]
// `/api/v1/namespaces/<name>[/status]` names a Namespace itself; a third segment that is a
// namespaced resource of the group names a collection inside that namespace.
import { errors } from './errors';
import type { ResourceRegistry } from './registry';
import type { ResourceType } from './resources';

export type Route =
  | { kind: 'version' }
  | { kind: 'health' }
  | { kind: 'coreVersions' }
  | { kind: 'groupList' }
  | { kind: 'group'; group: string }
  | { kind: 'resourceList'; group: string; version: string }
  | { kind: 'openapiV3Root' }
  | { kind: 'openapiV3GroupVersion'; group: string; version: string }
  | { kind: 'openapiMissing' }
  | {
      kind: 'resource';
      group: string;
      version: string;
      type: ResourceType;
      namespace: string | undefined;
      name: string | undefined;
      subresource: string | undefined;
    }
  | { kind: 'unknownResource'; group: string; version: string; plural: string }
  | { kind: 'notFound' };

export function parseRoute(pathname: string, registry: ResourceRegistry): Route {
  const segments = pathname.split('/').filter((s) => s !== '').map(decodeSegment);
  const [first, second, third] = segments;
  if (first === 'version' && segments.length === 1) return { kind: 'version' };
  if ((first === 'healthz' || first === 'readyz' || first === 'livez') && segments.length === 1) return { kind: 'health' };
  if (first === 'openapi') {
    if (second !== 'v3') return { kind: 'openapiMissing' };
    if (segments.length === 2) return { kind: 'openapiV3Root' };
    if (third === 'api' && segments.length === 4 && segments[3] !== undefined) return { kind: 'openapiV3GroupVersion', group: '', version: segments[3] };
    if (third === 'apis' && segments.length === 5 && segments[3] !== undefined && segments[4] !== undefined) {
      return { kind: 'openapiV3GroupVersion', group: segments[3], version: segments[4] };
    }
    return { kind: 'openapiMissing' };
  }
  if (first === 'api') {
    if (segments.length === 1) return { kind: 'coreVersions' };
    if (second !== 'v1') return { kind: 'notFound' };
    return resourceRoute('', 'v1', segments.slice(2), registry);
  }
  if (first === 'apis') {
    if (segments.length === 1) return { kind: 'groupList' };
    if (second === undefined) return { kind: 'notFound' };
    if (segments.length === 2) return { kind: 'group', group: second };
    if (third === undefined) return { kind: 'notFound' };
    return resourceRoute(second, third, segments.slice(3), registry);
  }
  return { kind: 'notFound' };
}

function resourceRoute(group: string, version: string, rest: string[], registry: ResourceRegistry): Route {
  if (rest.length === 0) return { kind: 'resourceList', group, version };
  let namespace: string | undefined;
  let tail = rest;
  const namespacedCollection = rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== undefined && registry.lookup(group, version, rest[2])?.namespaced === true;
  if (namespacedCollection) {
    namespace = rest[1];
    tail = rest.slice(2);
  }
  const [plural, name, subresource, ...extra] = tail;
  if (plural === undefined || extra.length > 0) return { kind: 'notFound' };
  const type = registry.lookup(group, version, plural);
  if (!type) return { kind: 'unknownResource', group, version, plural };
  return { kind: 'resource', group, version, type, namespace, name, subresource };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw errors.badRequest(`malformed percent-encoding in the path segment "${segment}"`);
  }
}
