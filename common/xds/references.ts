// Which other xDS resources a resource names: a Listener's route configurations (RDS), a route
// configuration's clusters (CDS), an EDS cluster's endpoint assignment (EDS). These edges are how an
// xDS client builds its subscriptions (gRFC A27: LDS → RDS → CDS → EDS by name; Envoy: RDS and EDS by
// the names accepted listeners and clusters reference), and so they decide two things the gateway
// must get right: which resources a client still needs after an update (make-before-break: a cluster
// a served route still uses is not removed under it, docs/GATEWAY.md) and which names a client has
// yet to ask for (an accepted route whose cluster the client does not hold yet is not programmed).
// Decoded once per distinct resource bytes by the callers, never per Envoy.
import { readProvenance } from './provenance';
import { unpackAny } from './protos';
import { CLUSTER_TYPE_URL, HTTP_CONNECTION_MANAGER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from './type-urls';
import type { AnyResource } from './types';

/** The resource types an edge can point at. */
export type ReferencedType = 'RDS' | 'CDS' | 'EDS';

/** One virtual host of a route configuration: the domains it serves and the clusters its routes use. */
export interface VirtualHostReferences {
  domains: string[];
  clusters: string[];
  /** The objects its provenance stamp names (provenance.ts `sources`; [] when unstamped). */
  sources: string[];
}

export interface ResourceReferences {
  /** Route configuration names (HttpConnectionManager `rds.route_config_name`). */
  RDS: string[];
  /** Cluster names (routes' `cluster` and `weighted_clusters`, inline route configs included). */
  CDS: string[];
  /** ClusterLoadAssignment names (an EDS cluster's `eds_cluster_config.service_name`, else its name). */
  EDS: string[];
  /**
   * The same clusters per virtual host (route configurations, and listeners' inline ones): a client
   * that routes for one authority (gRPC resolving `xds:///<name>`) uses only the host matching it.
   */
  virtualHosts: VirtualHostReferences[];
  /**
   * The resource's own provenance stamp (provenance.ts `sources`; [] when unstamped): which objects it
   * comes from, for the gateway's attribution of a name to the objects that route to it.
   */
  sources: string[];
}

export const NO_REFERENCES: ResourceReferences = Object.freeze({ RDS: [], CDS: [], EDS: [], virtualHosts: [], sources: [] }) as ResourceReferences;

const DISCOVERY_RESOURCE_WRAPPER = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

type Json = Record<string, unknown>;
const record = (value: unknown): Json | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function isAny(value: unknown): value is AnyResource {
  const any = record(value);
  return any !== undefined && typeof any['type_url'] === 'string' && any['value'] instanceof Uint8Array;
}

function virtualHostsOf(routeConfiguration: Json): VirtualHostReferences[] {
  return list(routeConfiguration['virtual_hosts']).map((virtualHost) => {
    const clusters = new Set<string>();
    for (const route of list(record(virtualHost)?.['routes'])) {
      const action = record(record(route)?.['route']);
      if (action === undefined) continue;
      const cluster = text(action['cluster']);
      if (cluster !== undefined) clusters.add(cluster);
      for (const weighted of list(record(action['weighted_clusters'])?.['clusters'])) {
        const name = text(record(weighted)?.['name']);
        if (name !== undefined) clusters.add(name);
      }
    }
    const domains = list(record(virtualHost)?.['domains']).filter((domain): domain is string => typeof domain === 'string');
    return { domains, clusters: [...clusters], sources: readProvenance(record(virtualHost)?.['metadata']) };
  });
}

function withClusters(virtualHosts: VirtualHostReferences[]): Pick<ResourceReferences, 'CDS' | 'virtualHosts'> {
  return { CDS: [...new Set(virtualHosts.flatMap((host) => host.clusters))], virtualHosts };
}

function connectionManagerReferences(typedConfig: unknown, routes: Set<string>, virtualHosts: VirtualHostReferences[]): void {
  if (!isAny(typedConfig) || typedConfig.type_url !== HTTP_CONNECTION_MANAGER_TYPE_URL) return;
  const manager = unpackAny(typedConfig);
  const rds = text(record(manager['rds'])?.['route_config_name']);
  if (rds !== undefined) routes.add(rds);
  const inline = record(manager['route_config']);
  if (inline !== undefined) virtualHosts.push(...virtualHostsOf(inline));
}

function listenerReferences(listener: Json): ResourceReferences {
  const routes = new Set<string>();
  const virtualHosts: VirtualHostReferences[] = [];
  const chains = [...list(listener['filter_chains']), listener['default_filter_chain']];
  for (const chain of chains) {
    for (const filter of list(record(chain)?.['filters'])) connectionManagerReferences(record(filter)?.['typed_config'], routes, virtualHosts);
  }
  connectionManagerReferences(record(listener['api_listener'])?.['api_listener'], routes, virtualHosts);
  return { RDS: [...routes], EDS: [], ...withClusters(virtualHosts), sources: readProvenance(listener['metadata']) };
}

function clusterReferences(cluster: Json): ResourceReferences {
  const eds = record(cluster['eds_cluster_config']);
  const sources = readProvenance(cluster['metadata']);
  if (cluster['type'] !== 'EDS' && eds === undefined) return sources.length === 0 ? NO_REFERENCES : { ...NO_REFERENCES, sources };
  const name = text(eds?.['service_name']) ?? text(cluster['name']);
  return name === undefined ? { ...NO_REFERENCES, sources } : { RDS: [], CDS: [], EDS: [name], virtualHosts: [], sources };
}

/**
 * The virtual host a client routing for `authority` uses, as Envoy and gRPC (gRFC A27) pick it: an
 * exact domain, else the longest suffix wildcard (`*.example.com`), else the longest prefix wildcard
 * (`example.*`), else `*`; case-insensitive.
 */
export function virtualHostFor<T extends { domains: readonly string[] }>(virtualHosts: readonly T[], authority: string): T | undefined {
  const host = authority.toLowerCase();
  let best: { host: T; rank: number; length: number } | undefined;
  for (const candidate of virtualHosts) {
    for (const raw of candidate.domains) {
      const domain = raw.toLowerCase();
      const stem = domain.replace(/^\*|\*$/g, '');
      let rank: number | undefined;
      if (domain === '*') rank = 0;
      else if (stem.includes('*')) rank = undefined;
      else if (domain.startsWith('*')) rank = host.endsWith(stem) && host.length > stem.length ? 2 : undefined;
      else if (domain.endsWith('*')) rank = host.startsWith(stem) && host.length > stem.length ? 1 : undefined;
      else rank = domain === host ? 3 : undefined;
      if (rank === undefined) continue;
      if (best === undefined || rank > best.rank || (rank === best.rank && domain.length > best.length)) best = { host: candidate, rank, length: domain.length };
    }
  }
  return best?.host;
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
      const routeConfiguration = unpackAny(resource);
      return { RDS: [], EDS: [], ...withClusters(virtualHostsOf(routeConfiguration)), sources: readProvenance(routeConfiguration['metadata']) };
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
