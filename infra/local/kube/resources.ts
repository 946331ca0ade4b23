// What the server knows how to serve: one ResourceType per (group, plural). Built-in types are
// fixed; CustomResourceDefinitions add and remove types at runtime (see crd.ts).
import { CUSTOM_RESOURCE_DEFINITION_SCHEMA, LEASE_SCHEMA, NAMESPACE_SCHEMA } from './builtin-schemas';
import type { JsonObject } from './json';

export type StructuralSchema = JsonObject;

export interface ResourceType {
  group: string; // '' for the core group
  /** Versions served, in preference order (first is the preferred version). */
  versions: string[];
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  hasStatusSubresource: boolean;
  /** Built-in types whose strategic-merge-patch is equivalent to a JSON merge patch (see patch.ts). */
  strategicMergeAsMergePatch: boolean;
  /** Structural schema per version (CRDs): used to prune unknown fields and check types. */
  schemas: Map<string, StructuralSchema>;
  /**
   * Kubernetes rule: custom resources (and CRDs) bump metadata.generation on any change outside
   * metadata and status. Namespaces and Leases carry no generation at all in Kubernetes.
   */
  generationRule: 'allButMetadataAndStatus' | 'none';
}

export function resourceKey(group: string, plural: string): string {
  return group === '' ? plural : `${plural}.${group}`;
}

export function apiVersionOf(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}

export const NAMESPACES: ResourceType = {
  group: '',
  versions: ['v1'],
  plural: 'namespaces',
  singular: 'namespace',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  namespaced: false,
  shortNames: ['ns'],
  categories: [],
  hasStatusSubresource: true,
  strategicMergeAsMergePatch: true,
  schemas: new Map([['v1', NAMESPACE_SCHEMA]]),
  generationRule: 'none',
};

export const LEASES: ResourceType = {
  group: 'coordination.k8s.io',
  versions: ['v1'],
  plural: 'leases',
  singular: 'lease',
  kind: 'Lease',
  listKind: 'LeaseList',
  namespaced: true,
  shortNames: [],
  categories: [],
  hasStatusSubresource: false,
  strategicMergeAsMergePatch: true,
  schemas: new Map([['v1', LEASE_SCHEMA]]),
  generationRule: 'none',
};

export const CUSTOM_RESOURCE_DEFINITIONS: ResourceType = {
  group: 'apiextensions.k8s.io',
  versions: ['v1'],
  plural: 'customresourcedefinitions',
  singular: 'customresourcedefinition',
  kind: 'CustomResourceDefinition',
  listKind: 'CustomResourceDefinitionList',
  namespaced: false,
  shortNames: ['crd', 'crds'],
  categories: ['api-extensions'],
  hasStatusSubresource: true,
  // CRD specs hold lists with merge keys (versions by name): strategic merge would differ from
  // merge patch there, so it is refused (415) rather than faked.
  strategicMergeAsMergePatch: false,
  schemas: new Map([['v1', CUSTOM_RESOURCE_DEFINITION_SCHEMA]]),
  generationRule: 'allButMetadataAndStatus',
};

export const BUILT_IN_TYPES: readonly ResourceType[] = [NAMESPACES, LEASES, CUSTOM_RESOURCE_DEFINITIONS];
