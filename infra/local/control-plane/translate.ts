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
// Gateway API HTTPRoutes (gateway-api.ts) become plain virtual hosts exactly like root HTTPProxies:
// both kinds are first normalised to a ServedHost, so names, shapes and stamps cannot drift apart.
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
  HTTPROUTE_GROUP,
  HTTPROUTE_KIND,
  type HTTPRouteObject,
  type RouteCondition,
  type RouteStatusUpdate,
  httpRouteSpecSchema,
  parentRefsOf,
} from './gateway-api';
import {
  type EndpointsObject,
  FORCE_NACK_ANNOTATION,
  HTTPPROXY_GROUP,
  HTTPPROXY_KIND,
  type HTTPProxyObject,
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

/** The verdict on one HTTPRoute; `served` iff both conditions are True (it is then in the config). */
export interface HTTPRouteValidity extends RouteStatusUpdate {
  served: boolean;
}

export interface Translation {
  resources: Record<ResourceTypeUrl, TranslatedResource[]>;
  proxies: ProxyValidity[];
  httpRoutes: HTTPRouteValidity[];
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

/** The provenance stamp of an object of (group, kind): `group/kind/namespace/name@generation`. */
function sourceRefOf(group: string, kind: string, metadata: { namespace: string; name: string; generation?: number | undefined }): string {
  return formatSourceRef({ group, kind, namespace: metadata.namespace, name: metadata.name, generation: metadata.generation ?? 1 });
}

export function proxySourceRef(proxy: HTTPProxyObject): string {
  return sourceRefOf(HTTPPROXY_GROUP, HTTPPROXY_KIND, proxy.metadata);
}

export function httpRouteSourceRef(route: HTTPRouteObject): string {
  return sourceRefOf(HTTPROUTE_GROUP, HTTPROUTE_KIND, route.metadata);
}

export function endpointsSourceRef(endpoints: EndpointsObject): string {
  return sourceRefOf('', 'Endpoints', endpoints.metadata);
}

function secretSourceRef(secret: TlsSecretObject): string {
  return sourceRefOf('', 'Secret', secret.metadata);
}

export function clusterName(namespace: string, service: string, port: number): string {
  return `${namespace}/${service}/${port}`;
}

/** One backend of a route with its weight already resolved by the kind's rules. */
interface ServedBackend {
  namespace: string;
  service: string;
  port: number;
  weight: number;
}

interface ServedRoute {
  prefix: string;
  backends: ServedBackend[];
}

/** A virtual host to serve, from a valid root HTTPProxy or a valid HTTPRoute. */
interface ServedHost {
  /** The object's namespace (TLS Secrets are looked up there). */
  namespace: string;
  annotations: Record<string, string> | undefined;
  fqdn: string;
  /** `<namespace>/<secretName>` for a TLS virtual host (HTTPProxy only). */
  tlsSecret: string | undefined;
  routes: ServedRoute[];
  source: string;
}

const FQDN_PATTERN = /^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** Gateway API's maxLength of a condition message. */
const MAX_CONDITION_MESSAGE = 32_768;

/** Who claims which fqdn: `namespace/name` for an HTTPProxy, `HTTPRoute namespace/name` for a route. */
type FqdnOwners = Map<string, string[]>;

function fqdnConflict(fqdn: string, owners: string[]): string {
  const kinds = owners.some((owner) => owner.startsWith(`${HTTPROUTE_KIND} `)) ? 'HTTPProxies/HTTPRoutes' : 'HTTPProxies';
  return `fqdn "${fqdn}" is used in multiple ${kinds}: ${owners.join(', ')}`;
}

export function translate(inputs: RouteInputs, options: TranslateOptions): Translation {
  const httpListenerName = options.httpListenerName ?? DEFAULT_HTTP_LISTENER;
  const httpsListenerName = options.httpsListenerName ?? DEFAULT_HTTPS_LISTENER;
  const endpointsByKey = new Map(inputs.endpoints.map((e) => [objectKeyString(e.metadata), e]));
  const secretsByKey = new Map(inputs.secrets.map((s) => [objectKeyString(s.metadata), s]));
  const byKey = (a: { metadata: { namespace: string; name: string } }, b: { metadata: { namespace: string; name: string } }): number =>
    objectKeyString(a.metadata).localeCompare(objectKeyString(b.metadata));
  const proxies = [...inputs.proxies].sort(byKey);
  const httpRoutes = [...(inputs.httpRoutes ?? [])].sort(byKey);

  // Contour: an fqdn claimed by more than one root HTTPProxy invalidates all of them. HTTPRoutes
  // claim their first hostname under the same rule, across both kinds.
  const fqdnOwners: FqdnOwners = new Map();
  const claim = (fqdn: string | undefined, owner: string): void => {
    if (fqdn !== undefined) fqdnOwners.set(fqdn, [...(fqdnOwners.get(fqdn) ?? []), owner]);
  };
  const parsedProxies = proxies.map((proxy) => ({ proxy, result: httpProxySpecSchema.safeParse(proxy.spec ?? {}) }));
  for (const { proxy, result } of parsedProxies) claim(result.success ? result.data.virtualhost?.fqdn : undefined, objectKeyString(proxy.metadata));
  const parsedRoutes = httpRoutes.map((route) => ({ route, result: httpRouteSpecSchema.safeParse(route.spec ?? {}) }));
  for (const { route, result } of parsedRoutes) {
    // A route attached to nothing is not served, so it claims nothing.
    if (result.success && (result.data.parentRefs ?? []).length > 0) claim(result.data.hostnames?.[0], `${HTTPROUTE_KIND} ${objectKeyString(route.metadata)}`);
  }

  const { validProxies, validity } = validateProxies(parsedProxies, fqdnOwners, endpointsByKey, secretsByKey);
  const { servedRoutes, routeValidity } = validateHTTPRoutes(parsedRoutes, fqdnOwners, endpointsByKey);
  const hosts = [...validProxies, ...servedRoutes];
  const stamp = (sources: string[]): Record<string, unknown> =>
    options.provenance && sources.length > 0 ? { metadata: provenanceMetadata(sources) } : {};

  // Clusters and their endpoints: one per (service, port) referenced by a valid proxy.
  const clusterSources = new Map<string, { namespace: string; service: string; port: number; sources: Set<string> }>();
  for (const valid of hosts) {
    for (const route of valid.routes) {
      for (const backend of route.backends) {
        const name = clusterName(backend.namespace, backend.service, backend.port);
        const entry = clusterSources.get(name) ?? {
          namespace: backend.namespace,
          service: backend.service,
          port: backend.port,
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
  const plain = hosts.filter((v) => v.tlsSecret === undefined);
  const tls = hosts.filter((v) => v.tlsSecret !== undefined);
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
    httpRoutes: routeValidity,
  };
}

function tlsSecretName(v: ServedHost): string {
  return v.tlsSecret ?? '';
}

function virtualHost(v: ServedHost, stamp: (sources: string[]) => Record<string, unknown>): Record<string, unknown> {
  const forceNack = v.annotations?.[FORCE_NACK_ANNOTATION] === 'true';
  // Longest prefix first, as Contour sorts, so `/api` wins over `/`. Stable for equal lengths.
  const routes = [...v.routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return {
    name: v.fqdn,
    domains: forceNack ? [v.fqdn, NACK_DOMAIN] : [v.fqdn],
    routes: routes.map((route) => ({
      match: { prefix: route.prefix },
      route: routeAction(route),
    })),
    ...stamp([v.source]),
  };
}

function routeAction(route: ServedRoute): Record<string, unknown> {
  const [only, ...rest] = route.backends;
  if (only !== undefined && rest.length === 0) return { cluster: clusterName(only.namespace, only.service, only.port) };
  return {
    weighted_clusters: {
      clusters: route.backends.map((b) => ({
        name: clusterName(b.namespace, b.service, b.port),
        weight: { value: b.weight },
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
  parsed: Array<{ proxy: HTTPProxyObject; result: ReturnType<typeof httpProxySpecSchema.safeParse> }>,
  fqdnOwners: FqdnOwners,
  endpointsByKey: Map<string, EndpointsObject>,
  secretsByKey: Map<string, TlsSecretObject>,
): { validProxies: ServedHost[]; validity: ProxyValidity[] } {
  const validProxies: ServedHost[] = [];
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
        if (!FQDN_PATTERN.test(fqdn)) errors.push(`invalid fqdn "${fqdn}"`);
        const owners = fqdnOwners.get(fqdn) ?? [];
        if (owners.length > 1) errors.push(fqdnConflict(fqdn, owners));
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
        validProxies.push({
          namespace,
          annotations: proxy.metadata.annotations,
          fqdn,
          tlsSecret: secretName === undefined ? undefined : `${namespace}/${secretName}`,
          routes: (spec.routes ?? []).map((route) => {
            // Contour: weights default to an even split when none is given.
            const anyWeight = route.services.some((s) => s.weight !== undefined);
            return {
              prefix: route.conditions?.find((c) => c.prefix !== undefined)?.prefix ?? '/',
              backends: route.services.map((s) => ({ namespace, service: s.name, port: s.port, weight: anyWeight ? (s.weight ?? 0) : 1 })),
            };
          }),
          source: proxySourceRef(proxy),
        });
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

/**
 * HTTPRoutes, checked like HTTPProxies but reported the Gateway API way (one verdict, written for
 * every parentRef): spec problems (unreadable spec, no hostname, a contested fqdn, unsupported
 * matches or filters, a rule without backends) make Accepted=False/UnsupportedValue; backends that
 * are not Services (InvalidKind) or have no Endpoints (BackendNotFound) make ResolvedRefs=False with
 * Accepted=True, as Contour reports them. Either way the route is left out of the config, as an
 * invalid HTTPProxy is (Contour would serve a 500 for the unresolved backend instead), so a
 * generation reported False is never in a snapshot. A route without parentRefs is attached to
 * nothing: it is not served and has no status to write.
 */
function validateHTTPRoutes(
  parsed: Array<{ route: HTTPRouteObject; result: ReturnType<typeof httpRouteSpecSchema.safeParse> }>,
  fqdnOwners: FqdnOwners,
  endpointsByKey: Map<string, EndpointsObject>,
): { servedRoutes: ServedHost[]; routeValidity: HTTPRouteValidity[] } {
  const servedRoutes: ServedHost[] = [];
  const routeValidity: HTTPRouteValidity[] = [];
  const condition = (status: RouteCondition['status'], reason: string, message: string): RouteCondition => ({
    status,
    reason,
    message: message.length > MAX_CONDITION_MESSAGE ? `${message.slice(0, MAX_CONDITION_MESSAGE - 1)}…` : message,
  });
  for (const { route, result } of parsed) {
    const namespace = route.metadata.namespace;
    const base = { namespace, name: route.metadata.name, generation: route.metadata.generation ?? 1, parentRefs: parentRefsOf(route) };
    if (!result.success) {
      const issues = result.error.issues.map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`).join('; ');
      routeValidity.push({
        ...base,
        served: false,
        accepted: condition('False', 'UnsupportedValue', issues),
        resolvedRefs: condition('Unknown', 'UnsupportedValue', 'the spec could not be read, so its references were not resolved'),
      });
      continue;
    }
    const spec = result.data;
    if ((spec.parentRefs ?? []).length === 0) {
      routeValidity.push({
        ...base,
        served: false,
        accepted: condition('False', 'NoMatchingParent', 'spec.parentRefs is empty: the route is attached to nothing and not served'),
        resolvedRefs: condition('Unknown', 'NoMatchingParent', 'not resolved: the route is attached to nothing'),
      });
      continue;
    }
    const specErrors: string[] = [];
    const refErrors: Array<{ reason: 'InvalidKind' | 'BackendNotFound'; message: string }> = [];
    const hostnames = spec.hostnames ?? [];
    const fqdn = hostnames[0];
    if (fqdn === undefined) {
      specErrors.push('spec.hostnames is empty: this control plane serves a route under its first hostname only');
    } else {
      if (!FQDN_PATTERN.test(fqdn)) specErrors.push(`invalid hostname "${fqdn}"`);
      const owners = fqdnOwners.get(fqdn) ?? [];
      if (owners.length > 1) specErrors.push(fqdnConflict(fqdn, owners));
    }
    const routes: ServedRoute[] = [];
    (spec.rules ?? []).forEach((rule, index) => {
      const backendRefs = rule.backendRefs ?? [];
      if (backendRefs.length === 0) specErrors.push(`rule ${index}: a rule needs at least one backendRef`);
      const backends: ServedBackend[] = [];
      backendRefs.forEach((ref, refIndex) => {
        const backendNamespace = ref.namespace ?? namespace;
        if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service') {
          refErrors.push({ reason: 'InvalidKind', message: `rule ${index} backendRef ${refIndex}: kind ${ref.group ? `${ref.group}/` : ''}${ref.kind ?? 'Service'} is not a core Service` });
          return;
        }
        if (!endpointsByKey.has(`${backendNamespace}/${ref.name}`)) {
          refErrors.push({ reason: 'BackendNotFound', message: `rule ${index} backendRef ${refIndex}: Service "${backendNamespace}/${ref.name}" not found` });
        }
        // Gateway API: a backendRef's weight defaults to 1.
        backends.push({ namespace: backendNamespace, service: ref.name, port: ref.port, weight: ref.weight ?? 1 });
      });
      const matches = rule.matches && rule.matches.length > 0 ? rule.matches : [{}];
      matches.forEach((match, matchIndex) => {
        const type = match.path?.type ?? 'PathPrefix';
        const value = match.path?.value ?? '/';
        if (type === 'RegularExpression') specErrors.push(`rule ${index} match ${matchIndex}: path type RegularExpression is not supported`);
        else if (!value.startsWith('/')) specErrors.push(`rule ${index} match ${matchIndex}: path "${value}" must start with "/"`);
        // Exact is served as a prefix: the translation has prefix matches only.
        routes.push({ prefix: value, backends });
      });
    });
    const ignored = hostnames.length - 1;
    const accepted =
      specErrors.length > 0
        ? condition('False', 'UnsupportedValue', specErrors.join('; '))
        : condition('True', 'Accepted', ignored > 0 ? `Accepted HTTPRoute; served under "${fqdn ?? ''}" only (${ignored} more hostname${ignored === 1 ? '' : 's'} ignored)` : 'Accepted HTTPRoute');
    const resolvedRefs =
      refErrors.length > 0
        ? condition('False', refErrors[0]?.reason ?? 'BackendNotFound', refErrors.map((e) => e.message).join('; '))
        : condition('True', 'ResolvedRefs', 'Resolved all references');
    const served = specErrors.length === 0 && refErrors.length === 0 && fqdn !== undefined;
    routeValidity.push({ ...base, served, accepted, resolvedRefs });
    if (served) {
      servedRoutes.push({ namespace, annotations: route.metadata.annotations, fqdn, tlsSecret: undefined, routes, source: httpRouteSourceRef(route) });
    }
  }
  return { servedRoutes, routeValidity };
}
