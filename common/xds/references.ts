// Which other xDS resources a resource names: a Listener's route configurations (RDS), a route
// configuration's clusters (CDS), an EDS cluster's endpoint assignment (EDS). These edges are how an
// xDS client builds its subscriptions (gRFC A27: LDS → RDS → CDS → EDS by name; Envoy: RDS and EDS by
// the names accepted listeners and clusters reference), and so they decide two things the gateway
// must get right: which resources a client still needs after an update (make-before-break: a cluster
// a served route still uses is not removed under it, docs/GATEWAY.md) and which names a client has
// yet to ask for (an accepted route whose cluster the client does not hold yet is not programmed).
// Decoded once per distinct resource bytes by the callers, never per Envoy.
import { unpackAny } from './protos';
import { CLUSTER_TYPE_URL, HTTP_CONNECTION_MANAGER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from './type-urls';
import type { AnyResource } from './types';

/** The resource types an edge can point at. */
export type ReferencedType = 'RDS' | 'CDS' | 'EDS';

export interface ResourceReferences {
  /** Route configuration names (HttpConnectionManager `rds.route_config_name`). */
  RDS: string[];
  /** Cluster names (routes' `cluster` and `weighted_clusters`, inline route configs included). */
  CDS: string[];
  /** ClusterLoadAssignment names (an EDS cluster's `eds_cluster_config.service_name`, else its name). */
  EDS: string[];
}

export const NO_REFERENCES: ResourceReferences = Object.freeze({ RDS: [], CDS: [], EDS: [] }) as ResourceReferences;

const DISCOVERY_RESOURCE_WRAPPER = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

type Json = Record<string, unknown>;
const record = (value: unknown): Json | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function isAny(value: unknown): value is AnyResource {
  const any = record(value);
  return any !== undefined && typeof any['type_url'] === 'string' && any['value'] instanceof Uint8Array;
}

function routeClusters(routeConfiguration: Json, into: Set<string>): void {
  for (const virtualHost of list(routeConfiguration['virtual_hosts'])) {
    for (const route of list(record(virtualHost)?.['routes'])) {
      const action = record(record(route)?.['route']);
      if (action === undefined) continue;
      const cluster = text(action['cluster']);
      if (cluster !== undefined) into.add(cluster);
      for (const weighted of list(record(action['weighted_clusters'])?.['clusters'])) {
        const name = text(record(weighted)?.['name']);
        if (name !== undefined) into.add(name);
      }
    }
  }
}

function connectionManagerReferences(typedConfig: unknown, routes: Set<string>, clusters: Set<string>): void {
  if (!isAny(typedConfig) || typedConfig.type_url !== HTTP_CONNECTION_MANAGER_TYPE_URL) return;
  const manager = unpackAny(typedConfig);
  const rds = text(record(manager['rds'])?.['route_config_name']);
  if (rds !== undefined) routes.add(rds);
  const inline = record(manager['route_config']);
  if (inline !== undefined) routeClusters(inline, clusters);
}

function listenerReferences(listener: Json): ResourceReferences {
  const routes = new Set<string>();
  const clusters = new Set<string>();
  const chains = [...list(listener['filter_chains']), listener['default_filter_chain']];
  for (const chain of chains) {
    for (const filter of list(record(chain)?.['filters'])) connectionManagerReferences(record(filter)?.['typed_config'], routes, clusters);
  }
  connectionManagerReferences(record(listener['api_listener'])?.['api_listener'], routes, clusters);
  return { RDS: [...routes], CDS: [...clusters], EDS: [] };
}

function clusterReferences(cluster: Json): ResourceReferences {
  const eds = record(cluster['eds_cluster_config']);
  if (cluster['type'] !== 'EDS' && eds === undefined) return NO_REFERENCES;
  const name = text(eds?.['service_name']) ?? text(cluster['name']);
  return name === undefined ? NO_REFERENCES : { RDS: [], CDS: [], EDS: [name] };
}

/**
 * The names `resource` references. Types without outgoing edges (endpoints, secrets, unknown types)
 * reference nothing. Throws when the bytes do not decode as their type: callers decide what an
 * undecodable resource means for them.
 */
export function referencesOf(resource: AnyResource): ResourceReferences {
  if (resource.type_url === DISCOVERY_RESOURCE_WRAPPER) {
    const inner = unpackAny(resource)['resource'];
    return isAny(inner) ? referencesOf(inner) : NO_REFERENCES;
  }
  switch (resource.type_url) {
    case LISTENER_TYPE_URL:
      return listenerReferences(unpackAny(resource));
    case ROUTE_CONFIGURATION_TYPE_URL: {
      const clusters = new Set<string>();
      routeClusters(unpackAny(resource), clusters);
      return { RDS: [], CDS: [...clusters], EDS: [] };
    }
    case CLUSTER_TYPE_URL:
      return clusterReferences(unpackAny(resource));
    default:
      return NO_REFERENCES;
  }
}

/**
 * referencesOf, decoded once per resource bytes object: the relay's cache keeps an unchanged
 * resource's bytes across seqs, so a rebuild decodes only what changed. An undecodable resource
 * references nothing (the client rejects it; nothing of it is worth keeping alive); `onError` hears why.
 */
const decoded = new WeakMap<Uint8Array, ResourceReferences>();
export function cachedReferencesOf(resource: AnyResource, onError?: (error: unknown) => void): ResourceReferences {
  const known = decoded.get(resource.value);
  if (known !== undefined) return known;
  let references: ResourceReferences;
  try {
    references = referencesOf(resource);
  } catch (error) {
    onError?.(error);
    references = NO_REFERENCES;
  }
  decoded.set(resource.value, references);
  return references;
}
