// What a real gRPC xDS client holds, as the chain it routes `xds:///<target>` by, decoded from the
// client's own CSDS report (test/support/xds-peers.ts turns a peer's CSDS dump into a
// `ClientSnapshot`). Pure: bytes in, a structured verdict out.
//
// The chain (gRFC A27, as grpcXdsResources.ts builds it and the reference control plane serves it):
//   Listener `<target>` → its api_listener HttpConnectionManager → `rds.route_config_name` (or an
//   inline route_config) → that RouteConfiguration → the virtual host matching the target authority
//   → its routes' clusters (`cluster` / `weighted_clusters`) → each Cluster → its EDS service name
//   (`eds_cluster_config.service_name`, else the cluster name) → that ClusterLoadAssignment → its
//   usable endpoints.
//
// A link counts as held when the client reports the resource's bytes, whatever its status word: a
// client that NACKed an update keeps routing by the last version it accepted, and both C-core and
// grpc-go report that version's bytes with status NACKED. So the view separates:
//   - `routable`: every link is held and every cluster has a usable endpoint (the client can route);
//   - `complete`: routable, and every link is ACKED (the client holds, and accepted, the newest it was sent).
// `problem` names the first link that keeps the view from being complete, with the reason.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../common/xds/type-urls';
import { unpackAny } from '../../common/xds/protos';
import { readProvenance } from '../../common/xds/provenance';

/** One entry of a client's CSDS `generic_xds_configs`, as the client reported it. */
export interface CsdsResource {
  typeUrl: string;
  name: string;
  /** `version_info`: the version of the bytes held ('' when none). */
  version: string;
  /** The client's `client_status` word, passed through: REQUESTED, DOES_NOT_EXIST, ACKED, NACKED, … */
  status: string;
  /** `error_state.details`: why the client NACKed the latest update. */
  error?: string;
  /** The resource's bytes (the `xds_config` Any's value) when the client holds it. */
  value?: Uint8Array;
}

/** One CSDS dump of one client's node. */
export interface ClientSnapshot {
  /** Wall clock (ms) when the client answered. */
  at: number;
  resources: readonly CsdsResource[];
}

export type LinkKind = 'listener' | 'route-configuration' | 'cluster' | 'endpoints';

export interface ViewLink {
  kind: LinkKind;
  name: string;
  status: string;
  version: string;
  error?: string;
  /** `metadata.filter_metadata["xds-programmed.dev/sources"]` of the resource (never on EDS). */
  provenance: readonly string[];
}

export interface ViewVirtualHost {
  name: string;
  domains: readonly string[];
  provenance: readonly string[];
}

export interface ViewClusterPath {
  cluster: ViewLink;
  /** The ClusterLoadAssignment name the client asks EDS for. */
  edsServiceName?: string;
  endpoints?: ViewLink;
  /** Endpoints a gRPC client balances over: health UNKNOWN/HEALTHY, in localities of weight > 0. */
  endpointCount: number;
}

export interface ViewProblem {
  kind: LinkKind | 'virtual-host';
  name: string;
  /** The client's status word for that resource, or 'absent' when the client does not list it. */
  status: string;
  reason: string;
}

export interface ClientView {
  target: string;
  complete: boolean;
  routable: boolean;
  problem?: ViewProblem;
  listener?: ViewLink;
  /** The RouteConfiguration named by the listener's `rds`, or the inline one's name. */
  routeConfigName?: string;
  inlineRouteConfiguration: boolean;
  routeConfiguration?: ViewLink;
  virtualHost?: ViewVirtualHost;
  /** Cluster names of the virtual host's routes, in route order, without duplicates. */
  clusterNames: readonly string[];
  clusters: readonly ViewClusterPath[];
}

type Decoded = Record<string, unknown>;

function record(value: unknown): Decoded | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Decoded) : undefined;
}

function list(value: unknown): Decoded[] {
  return Array.isArray(value) ? value.map(record).filter((v): v is Decoded => v !== undefined) : [];
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function anyOf(value: unknown): { type_url: string; value: Buffer } | undefined {
  const any = record(value);
  const typeUrl = text(any?.type_url);
  const bytes = any?.value;
  if (typeUrl === undefined || !(bytes instanceof Uint8Array)) return undefined;
  return { type_url: typeUrl, value: Buffer.from(bytes) };
}

/** A protobuf wrapper (UInt32Value) as protobufjs decodes it; absent → undefined. */
function uint32Wrapper(value: unknown): number | undefined {
  const wrapper = record(value);
  if (wrapper === undefined) return undefined;
  return typeof wrapper.value === 'number' ? wrapper.value : 0;
}

class Incomplete extends Error {
  constructor(readonly problem: ViewProblem) {
    super(problem.reason);
  }
}

const KIND_WORDS: Record<LinkKind, string> = {
  listener: 'listener',
  'route-configuration': 'route configuration',
  cluster: 'cluster',
  endpoints: 'endpoints',
};

/** The CSDS entries of a snapshot by `typeUrl|name` (a client lists a resource once per xDS client). */
function index(snapshot: ClientSnapshot): Map<string, CsdsResource> {
  const byKey = new Map<string, CsdsResource>();
  for (const resource of snapshot.resources) {
    const key = `${resource.typeUrl}|${resource.name}`;
    if (!byKey.has(key)) byKey.set(key, resource);
  }
  return byKey;
}

/**
 * Written apart from the gateway's `virtualHostFor` (common/xds/references.ts) on purpose: the ground
 * truth must not share code with what it judges.
 * Matches a virtual host the way gRPC clients do (gRFC A27, after Envoy): an exact domain first, then
 * the longest suffix wildcard (`*.example.com`), then the longest prefix wildcard (`example.*`), then
 * `*`. Case-insensitive. A domain with a `*` anywhere else never matches.
 */
export function matchVirtualHost<T extends { domains: readonly string[] }>(virtualHosts: readonly T[], authority: string): T | undefined {
  const host = authority.toLowerCase();
  let best: { vh: T; rank: number; length: number } | undefined;
  for (const vh of virtualHosts) {
    for (const raw of vh.domains) {
      const domain = raw.toLowerCase();
      let rank: number | undefined;
      if (domain === '*') rank = 0;
      else if (domain.startsWith('*') && !domain.slice(1).includes('*')) rank = host.endsWith(domain.slice(1)) && host.length > domain.length - 1 ? 2 : undefined;
      else if (domain.endsWith('*') && !domain.slice(0, -1).includes('*')) rank = host.startsWith(domain.slice(0, -1)) && host.length > domain.length - 1 ? 1 : undefined;
      else if (!domain.includes('*')) rank = domain === host ? 3 : undefined;
      if (rank === undefined) continue;
      if (best === undefined || rank > best.rank || (rank === best.rank && domain.length > best.length)) best = { vh, rank, length: domain.length };
    }
  }
  return best?.vh;
}

/** The cluster names a route sends to: `cluster`, or each weighted cluster of weight > 0 (gRPC drops weight-0 entries). */
function routeClusters(route: Decoded): string[] {
  const action = record(route.route);
  if (action === undefined) return [];
  const single = text(action.cluster);
  if (single !== undefined) return [single];
  const weighted = record(action.weighted_clusters);
  if (weighted === undefined) return [];
  return list(weighted.clusters)
    .filter((c) => (uint32Wrapper(c.weight) ?? 0) > 0)
    .map((c) => text(c.name))
    .filter((name): name is string => name !== undefined && name !== '');
}

function usableEndpoints(assignment: Decoded): number {
  let count = 0;
  for (const locality of list(assignment.endpoints)) {
    if ((uint32Wrapper(locality.load_balancing_weight) ?? 0) === 0) continue;
    for (const endpoint of list(locality.lb_endpoints)) {
      const health = text(endpoint.health_status) ?? 'UNKNOWN';
      if (health === 'UNKNOWN' || health === 'HEALTHY') count++;
    }
  }
  return count;
}

/** Builds the client's routing chain for `target` from one CSDS snapshot. */
export function clientView(snapshot: ClientSnapshot, target: string): ClientView {
  const byKey = index(snapshot);
  const view: ClientView = { target, complete: false, routable: false, inlineRouteConfiguration: false, clusterNames: [], clusters: [] };
  // The first link that is held but not ACKED; kept while the chain is followed further, since the
  // client still routes by what it holds.
  let notAcked: ViewProblem | undefined;

  const hold = (kind: LinkKind, typeUrl: string, name: string): { link: ViewLink; message: Decoded } => {
    const resource = byKey.get(`${typeUrl}|${name}`);
    const words = `${KIND_WORDS[kind]} ${name}`;
    if (resource?.value === undefined) {
      const status = resource?.status ?? 'absent';
      throw new Incomplete({ kind, name, status, reason: `${words} not held (${status}${resource?.error ? `: ${resource.error}` : ''})` });
    }
    let message: Decoded;
    try {
      message = unpackAny({ type_url: typeUrl, value: Buffer.from(resource.value) });
    } catch (error) {
      throw new Incomplete({ kind, name, status: resource.status, reason: `${words} undecodable: ${error instanceof Error ? error.message : String(error)}` });
    }
    const link: ViewLink = {
      kind,
      name,
      status: resource.status,
      version: resource.version,
      ...(resource.error !== undefined ? { error: resource.error } : {}),
      provenance: kind === 'endpoints' ? [] : readProvenance(message.metadata),
    };
    if (resource.status !== 'ACKED' && notAcked === undefined) {
      notAcked = { kind, name, status: resource.status, reason: `${words} ${resource.status}${resource.error ? `: ${resource.error}` : ''} (holds version ${resource.version || "''"})` };
    }
    return { link, message };
  };

  try {
    const listener = hold('listener', LISTENER_TYPE_URL, target);
    view.listener = listener.link;
    const apiListener = anyOf(record(listener.message.api_listener)?.api_listener);
    if (apiListener === undefined || apiListener.type_url !== HTTP_CONNECTION_MANAGER_TYPE_URL) {
      throw new Incomplete({ kind: 'listener', name: target, status: listener.link.status, reason: `listener ${target} has no api_listener HttpConnectionManager` });
    }
    const hcm = unpackAny(apiListener);
    let routeConfig: Decoded;
    const rdsName = text(record(hcm.rds)?.route_config_name);
    const inline = record(hcm.route_config);
    if (rdsName !== undefined) {
      view.routeConfigName = rdsName;
      const held = hold('route-configuration', ROUTE_CONFIGURATION_TYPE_URL, rdsName);
      view.routeConfiguration = held.link;
      routeConfig = held.message;
    } else if (inline !== undefined) {
      const name = text(inline.name) ?? '';
      view.routeConfigName = name;
      view.inlineRouteConfiguration = true;
      // An inline route configuration is part of the listener: it has the listener's status.
      view.routeConfiguration = { ...listener.link, kind: 'route-configuration', name, provenance: readProvenance(inline.metadata) };
      routeConfig = inline;
    } else {
      throw new Incomplete({ kind: 'listener', name: target, status: listener.link.status, reason: `listener ${target}: HttpConnectionManager has neither rds nor route_config` });
    }

    const virtualHosts = list(routeConfig.virtual_hosts).map((vh) => ({
      name: text(vh.name) ?? '',
      domains: Array.isArray(vh.domains) ? vh.domains.filter((d): d is string => typeof d === 'string') : [],
      routes: list(vh.routes),
      provenance: readProvenance(vh.metadata),
    }));
    const vh = matchVirtualHost(virtualHosts, target);
    if (vh === undefined) {
      throw new Incomplete({
        kind: 'virtual-host',
        name: target,
        status: view.routeConfiguration.status,
        reason: `route configuration ${view.routeConfigName} has no virtual host for ${target} (domains: ${virtualHosts.flatMap((v) => v.domains).join(', ') || 'none'})`,
      });
    }
    view.virtualHost = { name: vh.name, domains: vh.domains, provenance: vh.provenance };
    view.clusterNames = [...new Set(vh.routes.flatMap(routeClusters))];
    if (view.clusterNames.length === 0) {
      throw new Incomplete({ kind: 'virtual-host', name: vh.name, status: view.routeConfiguration.status, reason: `virtual host ${vh.name} routes to no cluster` });
    }

    const clusters: ViewClusterPath[] = [];
    view.clusters = clusters;
    for (const clusterName of view.clusterNames) {
      const cluster = hold('cluster', CLUSTER_TYPE_URL, clusterName);
      const path: ViewClusterPath = { cluster: cluster.link, endpointCount: 0 };
      clusters.push(path);
      // protobufjs leaves an enum at its zero value (STATIC) out with `defaults: false`.
      const type = text(cluster.message.type) ?? (cluster.message.cluster_type !== undefined ? 'custom' : 'STATIC');
      if (type !== 'EDS') {
        throw new Incomplete({ kind: 'cluster', name: clusterName, status: cluster.link.status, reason: `cluster ${clusterName} is of type ${type}; the view follows EDS clusters only` });
      }
      const serviceName = text(record(cluster.message.eds_cluster_config)?.service_name);
      path.edsServiceName = serviceName !== undefined && serviceName !== '' ? serviceName : clusterName;
      const endpoints = hold('endpoints', CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, path.edsServiceName);
      path.endpoints = endpoints.link;
      path.endpointCount = usableEndpoints(endpoints.message);
      if (path.endpointCount === 0) {
        throw new Incomplete({ kind: 'endpoints', name: path.edsServiceName, status: endpoints.link.status, reason: `endpoints ${path.edsServiceName} hold no usable endpoint` });
      }
    }
  } catch (error) {
    if (!(error instanceof Incomplete)) throw error;
    view.problem = error.problem;
    return view;
  }
  view.routable = true;
  view.complete = notAcked === undefined;
  if (notAcked !== undefined) view.problem = notAcked;
  return view;
}

/** One line for logs and assertion messages: "complete: … → …" or the problem. */
export function describeView(view: ClientView): string {
  const chain = [
    view.listener ? `L ${view.listener.name}@${view.listener.version}` : undefined,
    view.routeConfiguration ? `R ${view.routeConfiguration.name}@${view.routeConfiguration.version}` : undefined,
    ...view.clusters.map((c) => `C ${c.cluster.name}@${c.cluster.version} E ${c.edsServiceName ?? '?'}×${c.endpointCount}`),
  ].filter((part): part is string => part !== undefined);
  const head = view.complete ? 'complete' : view.routable ? `routable, not complete (${view.problem?.reason ?? '?'})` : `incomplete (${view.problem?.reason ?? '?'})`;
  return `${view.target}: ${head}: ${chain.join(' → ') || 'nothing held'}`;
}
