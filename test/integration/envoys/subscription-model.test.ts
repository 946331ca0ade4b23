// Pure logic of the subscription models (no sockets): what a Listener, Cluster or RouteConfiguration
// references, virtual host matching, decoding once per distinct resource, and which names an
// Envoy-model or gRPC-model client asks for after each ACK or NACK.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  packAny,
  type AnyResource,
} from '../../../common/xds';
import {
  DependentSubscriptions,
  RefsCache,
  decodeClusterRefs,
  decodeListenerRefs,
  decodeRouteTableRefs,
  defaultSubscriptionModel,
  matchVirtualHost,
  type AcceptedResponse,
  type NamesChange,
} from '../../../infra/local/envoys';

const ADS = { ads: {}, resource_api_version: 'V3' };
const hcm = (routeName: string): AnyResource => packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, { stat_prefix: 'x', rds: { route_config_name: routeName, config_source: ADS } });
const socketListener = (name: string, ...routeNames: string[]): AnyResource =>
  packAny(LISTENER_TYPE_URL, {
    name,
    address: { socket_address: { address: '0.0.0.0', port_value: 8080 } },
    filter_chains: routeNames.map((routeName) => ({ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: hcm(routeName) }] })),
  });
const apiListener = (name: string, routeName: string): AnyResource => packAny(LISTENER_TYPE_URL, { name, api_listener: { api_listener: hcm(routeName) } });
const edsCluster = (name: string, serviceName?: string, timeoutSeconds = 2): AnyResource =>
  packAny(CLUSTER_TYPE_URL, {
    name,
    type: 'EDS',
    eds_cluster_config: { eds_config: ADS, ...(serviceName === undefined ? {} : { service_name: serviceName }) },
    connect_timeout: { seconds: timeoutSeconds },
  });
const staticCluster = (name: string): AnyResource => packAny(CLUSTER_TYPE_URL, { name, type: 'STATIC', connect_timeout: { seconds: 1 } });
const routeConfig = (name: string, hosts: Array<{ domains: string[]; clusters: string[] }>): AnyResource =>
  packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name,
    virtual_hosts: hosts.map((host, index) => ({
      name: `vh${index}`,
      domains: host.domains,
      routes: host.clusters.map((cluster) => ({ match: { prefix: '/' }, route: { cluster } })),
    })),
  });

const sotw = (resources: AnyResource[], names: string[]): AcceptedResponse => ({ sotw: resources, names });
const changes = (list: readonly NamesChange[]): Array<[string, readonly string[], boolean]> => list.map((c) => [short(c.typeUrl), c.names, c.resend]);
const short = (typeUrl: string): string =>
  ({ [CLUSTER_TYPE_URL]: 'CDS', [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: 'EDS', [LISTENER_TYPE_URL]: 'LDS', [ROUTE_CONFIGURATION_TYPE_URL]: 'RDS' })[typeUrl] ?? typeUrl;

describe('what resources reference', () => {
  test('a listener names the route configurations of its HttpConnectionManagers, in filter chains and api_listener', () => {
    expect(decodeListenerRefs(socketListener('ingress_http', 'r1', 'r2', 'r1'))).toEqual({ name: 'ingress_http', routeNames: ['r1', 'r2'], inlineRoutes: [] });
    expect(decodeListenerRefs(apiListener('app.example.com', 'ingress_http')).routeNames).toEqual(['ingress_http']);
    const inline = packAny(LISTENER_TYPE_URL, {
      name: 'inline',
      api_listener: {
        api_listener: packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, {
          stat_prefix: 'x',
          route_config: { name: 'rc', virtual_hosts: [{ name: 'v', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'c-inline' } }] }] },
        }),
      },
    });
    // An inline route configuration is part of its listener: only its hosts matter (nothing subscribes to its name).
    expect(decodeListenerRefs(inline)).toMatchObject({ routeNames: [], inlineRoutes: [{ virtualHosts: [{ domains: ['*'], clusters: ['c-inline'] }] }] });
  });

  test('an EDS cluster names its service_name, else itself; other cluster types name nothing', () => {
    expect(decodeClusterRefs(edsCluster('default/app/80', 'svc-a'))).toEqual({ name: 'default/app/80', edsName: 'svc-a' });
    expect(decodeClusterRefs(edsCluster('default/app/80'))).toEqual({ name: 'default/app/80', edsName: 'default/app/80' });
    expect(decodeClusterRefs(staticCluster('static'))).toEqual({ name: 'static', edsName: undefined });
  });

  test('a route configuration lists each virtual host with its clusters (weighted ones too)', () => {
    const weighted = packAny(ROUTE_CONFIGURATION_TYPE_URL, {
      name: 'r',
      virtual_hosts: [
        { name: 'v', domains: ['a.example.com'], routes: [{ match: { prefix: '/' }, route: { weighted_clusters: { clusters: [{ name: 'c1', weight: { value: 1 } }, { name: 'c2', weight: { value: 3 } }] } } }] },
      ],
    });
    expect(decodeRouteTableRefs(weighted)).toEqual({ name: 'r', virtualHosts: [{ domains: ['a.example.com'], clusters: ['c1', 'c2'] }] });
  });

  test.each([
    ['app.example.com', 'exact'],
    ['other.example.com', 'suffix'],
    ['app.internal', 'prefix'],
    ['unrelated.org', 'any'],
  ])('virtual host for %s: %s', (authority, expected) => {
    const hosts = [
      { domains: ['*'], clusters: ['any'] },
      { domains: ['app.*'], clusters: ['prefix'] },
      { domains: ['*.example.com'], clusters: ['suffix'] },
      { domains: ['APP.example.com'], clusters: ['exact'] },
    ];
    expect(matchVirtualHost(hosts, authority)?.clusters).toEqual([expected]);
  });

  test('no matching domain: no virtual host', () => {
    expect(matchVirtualHost([{ domains: ['a.example.com'], clusters: ['a'] }], 'b.example.com')).toBeUndefined();
  });

  test('each distinct resource is decoded once, however many clients and buffers carry it', () => {
    const cache = new RefsCache(decodeClusterRefs);
    const bytes = edsCluster('c', 's').value;
    // 40 clients, each with its own copy of the bytes (as protobufjs gives every Delta response).
    const answers = Array.from({ length: 40 }, () => cache.of({ type_url: CLUSTER_TYPE_URL, value: Buffer.from(bytes) }));
    expect(cache.decoded).toBe(1);
    expect(new Set(answers).size).toBe(1);
    const list = [edsCluster('x'), edsCluster('y')];
    expect(cache.ofList(list)).toBe(cache.ofList(list));
    expect(cache.decoded).toBe(3);
    cache.of(edsCluster('c', 's', 9));
    expect(cache.decoded).toBe(4);
  });
});

describe('default subscription model', () => {
  const all = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL].map((typeUrl) => ({ typeUrl }));
  test('the four core types without names are an Envoy; anything else stays wildcard', () => {
    expect(defaultSubscriptionModel(all)).toBe('envoy');
    expect(defaultSubscriptionModel(all.slice(0, 3))).toBe('wildcard');
    expect(defaultSubscriptionModel([...all.slice(1), { typeUrl: CLUSTER_TYPE_URL, resourceNames: ['a'] }])).toBe('wildcard');
  });
});

describe('Envoy model', () => {
  let now = 1_000;
  const envoy = (protocol: 'sotw' | 'delta' = 'sotw', initialFetchTimeoutMs = 15_000): DependentSubscriptions =>
    new DependentSubscriptions({ model: 'envoy', protocol, now: () => now, initialFetchTimeoutMs });
  beforeEach(() => {
    now = 1_000;
  });

  test('CDS first; EDS by accepted clusters; LDS once the clusters are warm; RDS by accepted listeners', () => {
    const model = envoy();
    expect(model.names(CLUSTER_TYPE_URL)).toEqual([]);
    expect(model.names(LISTENER_TYPE_URL)).toBeUndefined();
    expect(model.names(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toBeUndefined();

    const cds = model.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('c1', 's1'), staticCluster('c2'), edsCluster('c3')], ['c1', 'c2', 'c3']));
    // Sent while the CDS update is applied, so ahead of its ACK.
    expect(changes(cds.before)).toEqual([['EDS', ['c3', 's1'], false]]);
    expect(cds.after).toEqual([]);
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual(['c1', 'c3']);
    expect(model.names(LISTENER_TYPE_URL)).toBeUndefined();

    // Endpoints for one cluster: the other still warms, LDS still waits.
    expect(changes(model.accepted(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { names: ['s1'] }).before)).toEqual([]);
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual(['c3']);
    expect(changes(model.accepted(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { names: ['c3', 's1'] }).before)).toEqual([['LDS', [], false]]);
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual([]);

    const lds = model.accepted(LISTENER_TYPE_URL, sotw([socketListener('l1', 'r1'), apiListener('l2', 'r2')], ['l1', 'l2']));
    expect(changes(lds.before)).toEqual([['RDS', ['r1', 'r2'], false]]);
    expect(model.warming(LISTENER_TYPE_URL)).toEqual(['l1', 'l2']);
    model.accepted(ROUTE_CONFIGURATION_TYPE_URL, { names: ['r1'] });
    expect(model.warming(LISTENER_TYPE_URL)).toEqual(['l2']);
    model.accepted(ROUTE_CONFIGURATION_TYPE_URL, { names: ['r2'] });
    expect(model.warming(LISTENER_TYPE_URL)).toEqual([]);
  });

  test('a route to a new cluster: EDS gains it when CDS accepts it, and drops the old one', () => {
    const model = envoy();
    model.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('a')], ['a']));
    model.accepted(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { names: ['a'] });
    const moved = model.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('b')], ['b']));
    expect(changes(moved.before)).toEqual([['EDS', ['b'], false]]);
    expect(model.names(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual(['b']);
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual(['b']);
    // A listener referencing a route Envoy already holds is warm at once; a new route name warms it.
    model.accepted(LISTENER_TYPE_URL, sotw([socketListener('l', 'r1')], ['l']));
    model.accepted(ROUTE_CONFIGURATION_TYPE_URL, { names: ['r1'] });
    model.accepted(LISTENER_TYPE_URL, sotw([socketListener('l', 'r1'), socketListener('l-b', 'r1')], ['l', 'l-b']));
    expect(model.warming(LISTENER_TYPE_URL)).toEqual([]);
  });

  test('a changed EDS cluster with the same EDS name: SotW asks again with the same names, Delta does not', () => {
    for (const protocol of ['sotw', 'delta'] as const) {
      const model = envoy(protocol);
      const accept = (cluster: AnyResource): NamesChange[] =>
        model.accepted(
          CLUSTER_TYPE_URL,
          protocol === 'sotw' ? sotw([cluster], ['a']) : { delta: { upserts: [{ name: 'a', resource: cluster }], removed: [] }, names: ['a'] },
        ).before;
      expect(changes(accept(edsCluster('a', 's', 1)))).toEqual([['EDS', ['s'], false]]);
      // Same bytes again: nothing changed, nothing to ask.
      expect(changes(accept(edsCluster('a', 's', 1)).filter((c) => c.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL))).toEqual([]);
      const changed = changes(accept(edsCluster('a', 's', 7)).filter((c) => c.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL));
      expect(changed).toEqual(protocol === 'sotw' ? [['EDS', ['s'], true]] : []);
      expect(model.warming(CLUSTER_TYPE_URL)).toEqual(['a']);
    }
  });

  test('Delta: upserts and removals move the EDS names', () => {
    const model = envoy('delta');
    const delta = (upserts: Array<[string, AnyResource]>, removed: string[] = []): AcceptedResponse => ({
      delta: { upserts: upserts.map(([name, resource]) => ({ name, resource })), removed },
      names: upserts.map(([name]) => name),
    });
    expect(changes(model.accepted(CLUSTER_TYPE_URL, delta([['a', edsCluster('a')], ['b', edsCluster('b')]])).before)).toEqual([['EDS', ['a', 'b'], false]]);
    expect(changes(model.accepted(CLUSTER_TYPE_URL, delta([['c', edsCluster('c')]], ['a'])).before)).toEqual([['EDS', ['b', 'c'], false]]);
    // A removal of the assignment also ends the wait (Envoy initialises the cluster with no endpoints).
    model.accepted(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, { delta: { upserts: [], removed: ['b', 'c'] }, names: [] });
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual([]);
  });

  test('a NACK of EDS ends the warming and lets LDS start; so does the initial fetch timeout', () => {
    const nacked = envoy();
    nacked.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('a')], ['a']));
    expect(changes(nacked.rejected(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).before)).toEqual([['LDS', [], false]]);

    const timedOut = envoy();
    expect(changes(timedOut.initialFetchTimedOut().before)).toEqual([['LDS', [], false]]);
    expect(changes(timedOut.initialFetchTimedOut().before)).toEqual([]);

    const noEds = envoy();
    expect(changes(noEds.accepted(CLUSTER_TYPE_URL, sotw([staticCluster('s')], ['s'])).before)).toEqual([['LDS', [], false]]);
    const firstCdsNacked = envoy();
    expect(changes(firstCdsNacked.rejected(CLUSTER_TYPE_URL).before)).toEqual([['LDS', [], false]]);
  });

  test('a cluster warms at most the initial fetch timeout', () => {
    const model = envoy('sotw', 500);
    model.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('a')], ['a']));
    now += 499;
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual(['a']);
    now += 1;
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual([]);
  });

  test('every client making the same move shares the answers (no per-client arrays)', () => {
    const list = [edsCluster('a'), edsCluster('b')];
    const clients = Array.from({ length: 20 }, () => envoy());
    const eds = clients.map((client) => client.accepted(CLUSTER_TYPE_URL, sotw(list, ['a', 'b'])).before[0]?.names);
    expect(new Set(eds).size).toBe(1);
  });
});

describe('gRPC model', () => {
  const grpc = (): DependentSubscriptions => new DependentSubscriptions({ model: 'grpc', protocol: 'sotw', targets: ['app.example.com'], now: () => 0 });

  test('LDS by target, then RDS, CDS by the matching virtual host, EDS; each after the ACK', () => {
    const model = grpc();
    expect(model.names(LISTENER_TYPE_URL)).toEqual(['app.example.com']);
    expect(model.names(ROUTE_CONFIGURATION_TYPE_URL)).toBeUndefined();
    const lds = model.accepted(LISTENER_TYPE_URL, sotw([apiListener('app.example.com', 'ingress_http')], ['app.example.com']));
    expect(lds.before).toEqual([]);
    expect(changes(lds.after)).toEqual([['RDS', ['ingress_http'], false]]);
    const rds = model.accepted(
      ROUTE_CONFIGURATION_TYPE_URL,
      sotw([routeConfig('ingress_http', [{ domains: ['other.example.com'], clusters: ['other'] }, { domains: ['app.example.com'], clusters: ['app-v1', 'app-v2'] }])], ['ingress_http']),
    );
    expect(changes(rds.after)).toEqual([['CDS', ['app-v1', 'app-v2'], false]]);
    const cds = model.accepted(CLUSTER_TYPE_URL, sotw([edsCluster('app-v1'), edsCluster('app-v2', 'svc-2')], ['app-v1', 'app-v2']));
    expect(changes(cds.after)).toEqual([['EDS', ['app-v1', 'svc-2'], false]]);
    // The route moves to a new cluster: CDS follows it once the route configuration is accepted.
    const moved = model.accepted(ROUTE_CONFIGURATION_TYPE_URL, sotw([routeConfig('ingress_http', [{ domains: ['*'], clusters: ['app-v3'] }])], ['ingress_http']));
    expect(changes(moved.after)).toEqual([['CDS', ['app-v3'], false]]);
    expect(model.warming(CLUSTER_TYPE_URL)).toEqual([]);
  });

  test('the targets are required', () => {
    expect(() => new DependentSubscriptions({ model: 'grpc', protocol: 'sotw', now: () => 0 })).toThrow(/target/);
  });
});
