// Discovery documents (the unaggregated v1 forms; kubectl asks for aggregated discovery first
// and falls back to these when the server answers plain application/json).
import type { JsonObject } from './json';
import type { ResourceRegistry } from './registry';
import { apiVersionOf, type ResourceType } from './resources';

export const SERVER_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.0-xds-programmed-local' };

export function versionDocument(): JsonObject {
  return {
    ...SERVER_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'n/a (TypeScript)',
    compiler: 'n/a',
    platform: `${process.platform}/${process.arch}`,
  };
}

export function coreApiVersions(serverAddress: string): JsonObject {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function groupDocument(group: string, versions: string[]): JsonObject {
  const entries = versions.map((version) => ({ groupVersion: apiVersionOf(group, version), version }));
  return { name: group, versions: entries, preferredVersion: entries[0] ?? null };
}

export function apiGroupList(registry: ResourceRegistry): JsonObject {
  const groups = [...registry.groups().entries()]
    .filter(([group]) => group !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, versions]) => groupDocument(group, versions));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function apiGroup(registry: ResourceRegistry, group: string): JsonObject | undefined {
  const versions = registry.groups().get(group);
  if (!versions || group === '') return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupDocument(group, versions) };
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function resourceEntries(type: ResourceType): JsonObject[] {
  const main: JsonObject = {
    name: type.plural,
    singularName: type.singular,
    namespaced: type.namespaced,
    kind: type.kind,
    verbs: VERBS,
  };
  if (type.shortNames.length > 0) main['shortNames'] = type.shortNames;
  if (type.categories.length > 0) main['categories'] = type.categories;
  const entries = [main];
  if (type.hasStatusSubresource) {
    entries.push({ name: `${type.plural}/status`, singularName: '', namespaced: type.namespaced, kind: type.kind, verbs: ['get', 'patch', 'update'] });
  }
  return entries;
}

export function apiResourceList(registry: ResourceRegistry, group: string, version: string): JsonObject | undefined {
  const types = registry.typesIn(group, version);
  if (types.length === 0) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf(group, version),
    resources: types.sort((a, b) => a.plural.localeCompare(b.plural)).flatMap(resourceEntries),
  };
}
