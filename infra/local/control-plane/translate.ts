// Translation: RouteInputs -> Envoy resources (plain proto-shaped objects) + one Valid condition per
// HTTPProxy. Deterministic: the same inputs give byte-identical resources, so "did a type change?"
// is a byte comparison. The shapes follow Contour where it matters to us:
//   - Listener `ingress_http` and RouteConfiguration `ingress_http` holding one VirtualHost per
//     non-TLS root HTTPProxy (domain = fqdn), routes longest prefix first;
//   - TLS HTTPProxies go on Listener `ingress_https` (one filter chain per fqdn, SNI match, certificate
//     from SDS) with RouteConfiguration `https/<fqdn>`, Secret `<namespace>/<secretName>`;
//   - Cluster and ClusterLoadAssignment `<namespace>/<service>/<port>`, cluster type EDS over ADS.
// Additionally, because gRPC clients resolve `xds:///<name>` by fetching the Listener `<name>`, each
// non-TLS fqdn also gets an API Listener named after it (grpc-js-xds only accepts api_listener).
import { packAny } from '../../../common/xds/protos';
import { formatSourceRef, provenanceMetadata } from '../../../common/xds/provenance';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  DOWNSTREAM_TLS_CONTEXT_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  SECRET_TYPE_URL,
  type ResourceTypeUrl,
} from '../../../common/xds/type-urls';
import {
  type EndpointsObject,
  FORCE_NACK_ANNOTATION,
  HTTPPROXY_GROUP,
  HTTPPROXY_KIND,
  type HTTPProxyObject,
  type HTTPProxyRoute,
  type HTTPProxySpec,
  type RouteInputs,
  type TlsSecretObject,
  httpProxySpecSchema,
  objectKeyString,
} from './model';

export interface TranslateOptions {
  /** Stamp `metadata.filter_metadata["xds-programmed.dev/sources"]` on Listener/Cluster/RouteConfiguration/VirtualHost. */
  provenance: boolean;
  /**
   * 'api' (default): `ingress_http` and one listener per plain fqdn are API listeners, what gRPC xDS
   * clients (grpc-js-xds) require. 'socket': Envoy-style, `ingress_http` listens on 0.0.0.0:httpPort
   * and there are no per-fqdn listeners (Envoy refuses API listeners over LDS).
   */
  listenerStyle?: 'api' | 'socket';
  httpListenerName?: string;
  httpPort?: number;
  httpsListenerName?: string;
  httpsPort?: number;
}

/** One resource before packing: proto-shaped object plus the object generations it reflects. */
export interface TranslatedResource {
  name: string;
  message: Record<string, unknown>;
  sources: string[];
}

export interface ProxyValidity {
  namespace: string;
  name: string;
  generation: number;
  valid: boolean;
  /** Contour's reasons: `Valid` or `ErrorPresent`. */
  reason: 'Valid' | 'ErrorPresent';
  message: string;
  errors: string[];
}

export interface Translation {
  resources: Record<ResourceTypeUrl, TranslatedResource[]>;
  proxies: ProxyValidity[];
}

const DEFAULT_HTTP_LISTENER = 'ingress_http';
const DEFAULT_HTTPS_LISTENER = 'ingress_https';
const ADS_CONFIG_SOURCE = { ads: {}, resource_api_version: 'V3' };
/**
 * A domain with two wildcards: Envoy rejects it ("only a single wildcard") and so does grpc-js-xds
 * ("domains entry has multiple wildcards"), so the whole RouteConfiguration is NACKed. gRPC C-core and
 * grpc-go (1.85) accept it: a test that needs those to NACK gives a route only zero-weight clusters
 * (test/integration/real-clients/xds-peers.test.ts).
 */
const NACK_DOMAIN = '*.force-nack.*';

export function proxySourceRef(proxy: HTTPProxyObject): string {
  return formatSourceRef({
    group: HTTPPROXY_GROUP,
    kind: HTTPPROXY_KIND,
    namespace: proxy.metadata.namespace,
    name: proxy.metadata.name,
    generation: proxy.metadata.generation ?? 1,
  });
}

export function endpointsSourceRef(endpoints: EndpointsObject): string {
  return formatSourceRef({
    group: '',
    kind: 'Endpoints',
    namespace: endpoints.metadata.namespace,
    name: endpoints.metadata.name,
    generation: endpoints.metadata.generation ?? 1,
  });
}

function secretSourceRef(secret: TlsSecretObject): string {
  return formatSourceRef({
    group: '',
    kind: 'Secret',
    namespace: secret.metadata.namespace,
    name: secret.metadata.name,
    generation: secret.metadata.generation ?? 1,
  });
}

export function clusterName(namespace: string, service: string, port: number): string {
  return `${namespace}/${service}/${port}`;
}

interface ValidProxy {
  proxy: HTTPProxyObject;
  spec: HTTPProxySpec;
  fqdn: string;
  routes: HTTPProxyRoute[];
  source: string;
}

export function translate(inputs: RouteInputs, options: TranslateOptions): Translation {
  const httpListenerName = options.httpListenerName ?? DEFAULT_HTTP_LISTENER;
  const httpsListenerName = options.httpsListenerName ?? DEFAULT_HTTPS_LISTENER;
  const endpointsByKey = new Map(inputs.endpoints.map((e) => [objectKeyString(e.metadata), e]));
  const secretsByKey = new Map(inputs.secrets.map((s) => [objectKeyString(s.metadata), s]));
  const proxies = [...inputs.proxies].sort((a, b) => objectKeyString(a.metadata).localeCompare(objectKeyString(b.metadata)));

  const { validProxies, validity } = validateProxies(proxies, endpointsByKey, secretsByKey);
  const stamp = (sources: string[]): Record<string, unknown> =>
    options.provenance && sources.length > 0 ? { metadata: provenanceMetadata(sources) } : {};

  // Clusters and their endpoints: one per (service, port) referenced by a valid proxy.
  const clusterSources = new Map<string, { namespace: string; service: string; port: number; sources: Set<string> }>();
  for (const valid of validProxies) {
    for (const route of valid.routes) {
      for (const service of route.services) {
        const name = clusterName(valid.proxy.metadata.namespace, service.name, service.port);
        const entry = clusterSources.get(name) ?? {
          namespace: valid.proxy.metadata.namespace,
          service: service.name,
          port: service.port,
          sources: new Set<string>(),
        };
        entry.sources.add(valid.source);
        clusterSources.set(name, entry);
      }
    }
  }
  const clusters: TranslatedResource[] = [];
  const loadAssignments: TranslatedResource[] = [];
  for (const [name, entry] of [...clusterSources].sort(([a], [b]) => a.localeCompare(b))) {
    const sources = [...entry.sources].sort();
    clusters.push({
      name,
      sources,
      message: {
        name,
        type: 'EDS',
        eds_cluster_config: { eds_config: ADS_CONFIG_SOURCE, service_name: name },
        connect_timeout: { seconds: 2 },
        lb_policy: 'ROUND_ROBIN',
        ...stamp(sources),
      },
    });
    const endpoints = endpointsByKey.get(`${entry.namespace}/${entry.service}`);
    loadAssignments.push({
      name,
      sources: endpoints ? [endpointsSourceRef(endpoints)] : [],
      message: loadAssignment(name, endpoints, entry.port),
    });
  }

  // Routes: ingress_http for plain vhosts, https/<fqdn> for TLS vhosts.
  const plain = validProxies.filter((v) => v.spec.virtualhost?.tls === undefined);
  const tls = validProxies.filter((v) => v.spec.virtualhost?.tls !== undefined);
  const routeConfigurations: TranslatedResource[] = [];
  const plainSources = plain.map((v) => v.source);
  routeConfigurations.push({
    name: httpListenerName,
    sources: plainSources,
    message: {
      name: httpListenerName,
      virtual_hosts: plain.map((v) => virtualHost(v, stamp)),
      ...stamp(plainSources),
    },
  });
  for (const v of tls) {
    const name = `https/${v.fqdn}`;
    routeConfigurations.push({
      name,
      sources: [v.source],
      message: { name, virtual_hosts: [virtualHost(v, stamp)], ...stamp([v.source]) },
    });
  }

  // Listeners.
  const listeners: TranslatedResource[] = [];
  const httpConnectionManager = (routeConfigName: string): Record<string, unknown> => ({
    stat_prefix: routeConfigName,
    rds: { route_config_name: routeConfigName, config_source: ADS_CONFIG_SOURCE },
    http_filters: [{ name: 'envoy.filters.http.router', typed_config: packAny(ROUTER_TYPE_URL, {}) }],
  });
  const apiListener = (name: string, sources: string[]): TranslatedResource => ({
    name,
    sources,
    message: {
      name,
      api_listener: { api_listener: packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, httpConnectionManager(httpListenerName)) },
      ...stamp(sources),
    },
  });
  if (options.listenerStyle === 'socket') {
    listeners.push({
      name: httpListenerName,
      sources: [],
      message: {
        name: httpListenerName,
        address: { socket_address: { address: '0.0.0.0', port_value: options.httpPort ?? 8080 } },
        filter_chains: [
          {
            filters: [
              {
                name: 'envoy.filters.network.http_connection_manager',
                typed_config: packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, httpConnectionManager(httpListenerName)),
              },
            ],
          },
        ],
      },
    });
  } else {
    listeners.push(apiListener(httpListenerName, []));
    for (const v of plain) {
      if (v.fqdn !== httpListenerName && v.fqdn !== httpsListenerName) listeners.push(apiListener(v.fqdn, [v.source]));
    }
  }
  const secrets: TranslatedResource[] = [];
  if (tls.length > 0) {
    const tlsSources = tls.map((v) => v.source);
    listeners.push({
      name: httpsListenerName,
      sources: tlsSources,
      message: {
        name: httpsListenerName,
        address: { socket_address: { address: '0.0.0.0', port_value: options.httpsPort ?? 8443 } },
        filter_chains: tls.map((v) => ({
          name: v.fqdn,
          filter_chain_match: { server_names: [v.fqdn] },
          transport_socket: {
            name: 'envoy.transport_sockets.tls',
            typed_config: packAny(DOWNSTREAM_TLS_CONTEXT_TYPE_URL, {
              common_tls_context: {
                tls_certificate_sds_secret_configs: [{ name: tlsSecretName(v), sds_config: ADS_CONFIG_SOURCE }],
              },
            }),
          },
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, httpConnectionManager(`https/${v.fqdn}`)),
            },
          ],
        })),
        ...stamp(tlsSources),
      },
    });
    const emitted = new Set<string>();
    for (const v of tls) {
      const name = tlsSecretName(v);
      const secret = secretsByKey.get(name);
      if (!secret || emitted.has(name)) continue;
      emitted.add(name);
      secrets.push({
        name,
        sources: [secretSourceRef(secret)],
        message: {
          name,
          tls_certificate: {
            certificate_chain: { inline_string: secret.certificateChain },
            private_key: { inline_string: secret.privateKey },
          },
        },
      });
    }
  }

  return {
    resources: {
      [LISTENER_TYPE_URL]: listeners,
      [ROUTE_CONFIGURATION_TYPE_URL]: routeConfigurations,
      [CLUSTER_TYPE_URL]: clusters,
      [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: loadAssignments,
      [SECRET_TYPE_URL]: secrets,
    },
    proxies: validity,
  };
}

function tlsSecretName(v: ValidProxy): string {
  return `${v.proxy.metadata.namespace}/${v.spec.virtualhost?.tls?.secretName ?? ''}`;
}

function routePrefix(route: HTTPProxyRoute): string {
  return route.conditions?.find((c) => c.prefix !== undefined)?.prefix ?? '/';
}

function virtualHost(v: ValidProxy, stamp: (sources: string[]) => Record<string, unknown>): Record<string, unknown> {
  const forceNack = v.proxy.metadata.annotations?.[FORCE_NACK_ANNOTATION] === 'true';
  // Longest prefix first, as Contour sorts, so `/api` wins over `/`. Stable for equal lengths.
  const routes = [...v.routes].sort((a, b) => routePrefix(b).length - routePrefix(a).length);
  return {
    name: v.fqdn,
    domains: forceNack ? [v.fqdn, NACK_DOMAIN] : [v.fqdn],
    routes: routes.map((route) => ({
      match: { prefix: routePrefix(route) },
      route: routeAction(v.proxy.metadata.namespace, route),
    })),
    ...stamp([v.source]),
  };
}

function routeAction(namespace: string, route: HTTPProxyRoute): Record<string, unknown> {
  const [only, ...rest] = route.services;
  if (only !== undefined && rest.length === 0) return { cluster: clusterName(namespace, only.name, only.port) };
  // Contour: weights default to an even split when none is given.
  const anyWeight = route.services.some((s) => s.weight !== undefined);
  return {
    weighted_clusters: {
      clusters: route.services.map((s) => ({
        name: clusterName(namespace, s.name, s.port),
        weight: { value: anyWeight ? (s.weight ?? 0) : 1 },
      })),
    },
  };
}

/** EDS for a service port: Kubernetes Endpoints ports are target ports; match by number, else a single port. */
function loadAssignment(name: string, endpoints: EndpointsObject | undefined, servicePort: number): Record<string, unknown> {
  const lbEndpoints: Record<string, unknown>[] = [];
  for (const subset of endpoints?.subsets ?? []) {
    const ports = subset.ports ?? [];
    const port = ports.find((p) => p.port === servicePort) ?? (ports.length === 1 ? ports[0] : undefined);
    if (!port) continue;
    for (const address of subset.addresses ?? []) {
      lbEndpoints.push({ endpoint: { address: { socket_address: { address: address.ip, port_value: port.port } } } });
    }
  }
  return {
    cluster_name: name,
    endpoints:
      lbEndpoints.length === 0
        ? []
        : [{ locality: { region: '', zone: '' }, lb_endpoints: lbEndpoints, load_balancing_weight: { value: 1 } }],
  };
}

function validateProxies(
  proxies: HTTPProxyObject[],
  endpointsByKey: Map<string, EndpointsObject>,
  secretsByKey: Map<string, TlsSecretObject>,
): { validProxies: ValidProxy[]; validity: ProxyValidity[] } {
  const parsed = proxies.map((proxy) => ({ proxy, result: httpProxySpecSchema.safeParse(proxy.spec ?? {}) }));
  // Contour: an fqdn claimed by more than one root HTTPProxy invalidates all of them.
  const fqdnOwners = new Map<string, string[]>();
  for (const { proxy, result } of parsed) {
    const fqdn = result.success ? result.data.virtualhost?.fqdn : undefined;
    if (fqdn !== undefined) fqdnOwners.set(fqdn, [...(fqdnOwners.get(fqdn) ?? []), objectKeyString(proxy.metadata)]);
  }
  const validProxies: ValidProxy[] = [];
  const validity: ProxyValidity[] = [];
  for (const { proxy, result } of parsed) {
    const errors: string[] = [];
    const namespace = proxy.metadata.namespace;
    if (!result.success) {
      errors.push(...result.error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`));
    } else {
      const spec = result.data;
      const fqdn = spec.virtualhost?.fqdn;
      if (fqdn === undefined) {
        errors.push('Spec.VirtualHost must be specified (only root HTTPProxies are supported)');
      } else {
        if (!/^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(fqdn)) errors.push(`invalid fqdn "${fqdn}"`);
        const owners = fqdnOwners.get(fqdn) ?? [];
        if (owners.length > 1) errors.push(`fqdn "${fqdn}" is used in multiple HTTPProxies: ${owners.join(', ')}`);
      }
      (spec.routes ?? []).forEach((route, index) => {
        const prefixes = (route.conditions ?? []).filter((c) => c.prefix !== undefined);
        if (prefixes.length > 1) errors.push(`route ${index}: more than one prefix is not allowed in a condition block`);
        const prefix = prefixes[0]?.prefix;
        if (prefix !== undefined && !prefix.startsWith('/')) errors.push(`route ${index}: prefix "${prefix}" must start with "/"`);
        for (const service of route.services) {
          if (!endpointsByKey.has(`${namespace}/${service.name}`)) {
            errors.push(`route ${index}: Service "${namespace}/${service.name}" not found`);
          }
        }
      });
      const secretName = spec.virtualhost?.tls?.secretName;
      if (secretName !== undefined && !secretsByKey.has(`${namespace}/${secretName}`)) {
        errors.push(`TLS Secret "${namespace}/${secretName}" not found`);
      }
      if (errors.length === 0 && fqdn !== undefined) {
        validProxies.push({ proxy, spec, fqdn, routes: spec.routes ?? [], source: proxySourceRef(proxy) });
      }
    }
    validity.push({
      namespace,
      name: proxy.metadata.name,
      generation: proxy.metadata.generation ?? 1,
      valid: errors.length === 0,
      reason: errors.length === 0 ? 'Valid' : 'ErrorPresent',
      message: errors.length === 0 ? 'Valid HTTPProxy' : `At least one error present: ${errors.join('; ')}`,
      errors,
    });
  }
  return { validProxies, validity };
}
