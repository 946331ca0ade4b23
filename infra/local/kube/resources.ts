// What the server knows how to serve: one ResourceType per (group, plural). Built-in types are
// fixed; CustomResourceDefinitions add and remove types at runtime (see crd.ts).
import {
  CONFIG_MAP_SCHEMA,
  CUSTOM_RESOURCE_DEFINITION_SCHEMA,
  ENDPOINT_SLICE_SCHEMA,
  EVENT_SCHEMA,
  INGRESS_SCHEMA,
  LEASE_SCHEMA,
  NAMESPACE_SCHEMA,
  SECRET_SCHEMA,
  SERVICE_SCHEMA,
} from './builtin-schemas';
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
   * metadata and status; so do Ingresses (their spec) and EndpointSlices (anything outside
   * metadata: they have no status). Namespaces, Leases, Services, Secrets, ConfigMaps and Events
   * carry no generation at all in Kubernetes (their registry strategies never set one).
   */
  generationRule: 'allButMetadataAndStatus' | 'none';
  /**
   * Field-selector fields beyond metadata.name and metadata.namespace (the kind's
   * GetAttrs/field label conversion in kube-apiserver); none for custom resources here.
   */
  selectableFields?: readonly string[];
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

/** A built-in type of the core or a named group, with the defaults most built-ins share. */
function builtIn(
  fields: Pick<ResourceType, 'group' | 'plural' | 'singular' | 'kind' | 'schemas'> &
    Partial<Pick<ResourceType, 'shortNames' | 'hasStatusSubresource' | 'strategicMergeAsMergePatch' | 'generationRule' | 'categories' | 'selectableFields'>>,
): ResourceType {
  return {
    versions: ['v1'],
    listKind: `${fields.kind}List`,
    namespaced: true,
    shortNames: [],
    categories: [],
    hasStatusSubresource: false,
    // Most built-ins hold lists with merge keys (Service ports by port, EndpointSlice ports...):
    // strategic merge would differ from merge patch there, so it is refused (415), never faked.
    strategicMergeAsMergePatch: false,
    generationRule: 'none',
    ...fields,
  };
}

// The kinds an ingress controller reads and writes (docs/CONTOUR.md lists what Contour asks for).
export const SERVICES = builtIn({
  group: '',
  plural: 'services',
  singular: 'service',
  kind: 'Service',
  shortNames: ['svc'],
  categories: ['all'],
  hasStatusSubresource: true,
  selectableFields: ['spec.clusterIP', 'spec.type'],
  schemas: new Map([['v1', SERVICE_SCHEMA]]),
});

export const SECRETS = builtIn({ group: '', plural: 'secrets', singular: 'secret', kind: 'Secret', selectableFields: ['type'], schemas: new Map([['v1', SECRET_SCHEMA]]) });

export const CONFIG_MAPS = builtIn({
  group: '',
  plural: 'configmaps',
  singular: 'configmap',
  kind: 'ConfigMap',
  shortNames: ['cm'],
  schemas: new Map([['v1', CONFIG_MAP_SCHEMA]]),
});

export const EVENTS = builtIn({
  group: '',
  plural: 'events',
  singular: 'event',
  kind: 'Event',
  shortNames: ['ev'],
  // client-go's event recorder patches repeated events (count, lastTimestamp, message) with a
  // strategic merge patch; Event has no merge-key lists, so it is the same as a merge patch.
  strategicMergeAsMergePatch: true,
  // kubectl describe asks for a described object's Events by these (`source`, which names
  // source.component, is not offered: it would need a field-label mapping).
  selectableFields: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'type',
  ],
  schemas: new Map([['v1', EVENT_SCHEMA]]),
});

export const ENDPOINT_SLICES = builtIn({
  group: 'discovery.k8s.io',
  plural: 'endpointslices',
  singular: 'endpointslice',
  kind: 'EndpointSlice',
  generationRule: 'allButMetadataAndStatus',
  schemas: new Map([['v1', ENDPOINT_SLICE_SCHEMA]]),
});

export const INGRESSES = builtIn({
  group: 'networking.k8s.io',
  plural: 'ingresses',
  singular: 'ingress',
  kind: 'Ingress',
  shortNames: ['ing'],
  hasStatusSubresource: true,
  generationRule: 'allButMetadataAndStatus',
  schemas: new Map([['v1', INGRESS_SCHEMA]]),
});

/** Always served: what this project's own components and tests use. */
export const PROJECT_TYPES: readonly ResourceType[] = [NAMESPACES, LEASES, CUSTOM_RESOURCE_DEFINITIONS];

/**
 * Served with `ingressControllerKinds` (KubeApiServerOptions): what an unmodified ingress
 * controller such as Contour lists, watches and writes besides its CRDs (docs/CONTOUR.md).
 */
export const INGRESS_CONTROLLER_TYPES: readonly ResourceType[] = [SERVICES, SECRETS, CONFIG_MAPS, EVENTS, ENDPOINT_SLICES, INGRESSES];

export const BUILT_IN_TYPES: readonly ResourceType[] = [...PROJECT_TYPES, ...INGRESS_CONTROLLER_TYPES];
