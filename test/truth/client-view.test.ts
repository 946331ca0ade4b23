// The client view (client-view.ts) on resources built like the ones real gRPC clients get: the
// minimal gRFC A27 set of infra/local/envoys/grpcXdsResources.ts, and the reference control plane's
// own translation (stamped with provenance). Each CSDS entry is made the way the peers report them.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  RESOURCE_TYPE_URLS,
  ROUTER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../common/xds/type-urls';
import { packAny } from '../../common/xds/protos';
import { provenanceMetadata } from '../../common/xds/provenance';
import type { AnyResource } from '../../common/xds/types';
import { translate } from '../../infra/local/control-plane/translate';
import {
  grpcCluster,
  grpcClusterLoadAssignment,
  grpcListener,
  grpcRouteConfiguration,
  grpcXdsResources,
} from '../../infra/local/envoys/grpcXdsResources';
import { clientView, describeView, matchVirtualHost, type ClientSnapshot, type CsdsResource } from './client-view';

const TARGET = 'web.example.com';
const CLUSTER = 'default/app/8080';
const CANARY = 'default/app-0-canary/8080';
const ENDPOINT = [{ host: '127.0.0.1', port: 8080 }];

function held(name: string, any: AnyResource, status = 'ACKED', version = 'v1', error?: string): CsdsResource {
  return { typeUrl: any.type_url, name, version, status, value: any.value, ...(error !== undefined ? { error } : {}) };
}

function notHeld(typeUrl: string, name: string, status: string, error?: string): CsdsResource {
  return { typeUrl, name, version: '', status, ...(error !== undefined ? { error } : {}) };
}

function snapshot(...resources: CsdsResource[]): ClientSnapshot {
  return { at: 1, resources };
}

function minimal(): CsdsResource[] {
  const r = grpcXdsResources({ listenerName: TARGET, routeConfigName: 'rc', clusterName: CLUSTER, endpoints: ENDPOINT });
  return [held(TARGET, r.listener), held('rc', r.routeConfiguration), held(CLUSTER, r.cluster), held(CLUSTER, r.clusterLoadAssignment)];
}

describe('clientView', () => {
  it('follows the minimal gRPC set LDS → RDS → CDS → EDS to a complete, routable view', () => {
    const view = clientView(snapshot(...minimal()), TARGET);
    expect(view).toMatchObject({
      complete: true,
      routable: true,
      listener: { kind: 'listener', name: TARGET, status: 'ACKED', version: 'v1' },
      routeConfigName: 'rc',
      inlineRouteConfiguration: false,
      routeConfiguration: { name: 'rc', status: 'ACKED' },
      virtualHost: { name: 'all', domains: ['*'] },
      clusterNames: [CLUSTER],
      clusters: [{ cluster: { name: CLUSTER, status: 'ACKED' }, edsServiceName: CLUSTER, endpoints: { name: CLUSTER }, endpointCount: 1 }],
    });
    expect(view.problem).toBeUndefined();
    expect(describeView(view)).toBe(`${TARGET}: complete: L ${TARGET}@v1 → R rc@v1 → C ${CLUSTER}@v1 E ${CLUSTER}×1`);
  });

  it('names the first missing link: a wrong target has no listener', () => {
    const view = clientView(snapshot(...minimal()), 'other.example.com');
    expect(view.complete).toBe(false);
    expect(view.routable).toBe(false);
    expect(view.problem).toEqual({ kind: 'listener', name: 'other.example.com', status: 'absent', reason: 'listener other.example.com not held (absent)' });
  });

  it('reports a cluster the client was told does not exist, with its status word', () => {
    const [listener, , , ] = minimal();
    if (listener === undefined) throw new Error('no listener');
    const route = held('rc', grpcRouteConfiguration('rc', CANARY));
    const view = clientView(snapshot(listener, route, notHeld(CLUSTER_TYPE_URL, CANARY, 'DOES_NOT_EXIST')), TARGET);
    expect(view).toMatchObject({ complete: false, routable: false, clusterNames: [CANARY] });
    expect(view.problem).toEqual({ kind: 'cluster', name: CANARY, status: 'DOES_NOT_EXIST', reason: `cluster ${CANARY} not held (DOES_NOT_EXIST)` });
    // A REQUESTED endpoint set (sent for, not yet received) is not held either.
    const waiting = clientView(snapshot(...minimal().slice(0, 3), notHeld(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER, 'REQUESTED')), TARGET);
    expect(waiting.problem?.reason).toBe(`endpoints ${CLUSTER} not held (REQUESTED)`);
  });

  it('keeps following the last good bytes of a NACKED resource: routable, not complete', () => {
    const resources = minimal();
    const r = grpcXdsResources({ listenerName: TARGET, routeConfigName: 'rc', clusterName: CLUSTER, endpoints: ENDPOINT });
    resources[1] = held('rc', r.routeConfiguration, 'NACKED', 'v1', 'no valid clusters specified');
    const view = clientView(snapshot(...resources), TARGET);
    expect(view.routable).toBe(true);
    expect(view.complete).toBe(false);
    expect(view.clusters.map((c) => c.cluster.name)).toEqual([CLUSTER]);
    expect(view.problem).toEqual({
      kind: 'route-configuration',
      name: 'rc',
      status: 'NACKED',
      reason: "route configuration rc NACKED: no valid clusters specified (holds version v1)",
    });
  });

  it('a NACK on the very first version leaves nothing held', () => {
    const resources = minimal();
    resources[1] = notHeld(ROUTE_CONFIGURATION_TYPE_URL, 'rc', 'NACKED', 'no valid clusters specified');
    const view = clientView(snapshot(...resources), TARGET);
    expect(view.routable).toBe(false);
    expect(view.problem?.reason).toBe('route configuration rc not held (NACKED: no valid clusters specified)');
  });

  it('reads an inline route configuration as part of the listener', () => {
    const hcm = packAny(HTTP_CONNECTION_MANAGER_TYPE_URL, {
      route_config: { name: 'inline', virtual_hosts: [{ name: 'vh', domains: [TARGET], routes: [{ match: { prefix: '' }, route: { cluster: CLUSTER } }] }] },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: packAny(ROUTER_TYPE_URL, {}) }],
    });
    const listener = packAny(LISTENER_TYPE_URL, { name: TARGET, api_listener: { api_listener: hcm } });
    const [, , cluster, endpoints] = minimal();
    if (cluster === undefined || endpoints === undefined) throw new Error('missing');
    const view = clientView(snapshot(held(TARGET, listener, 'ACKED', 'l7'), cluster, endpoints), TARGET);
    expect(view).toMatchObject({ complete: true, inlineRouteConfiguration: true, routeConfigName: 'inline', routeConfiguration: { version: 'l7' }, virtualHost: { name: 'vh' } });
  });

  it('picks the virtual host a gRPC client picks, and says so when none matches', () => {
    const hosts = [
      { name: 'any', domains: ['*'] },
      { name: 'prefix', domains: ['web.*'] },
      { name: 'suffix-short', domains: ['*.com'] },
      { name: 'suffix-long', domains: ['*.example.com'] },
      { name: 'exact', domains: ['WEB.example.com'] },
    ];
    expect(matchVirtualHost(hosts, TARGET)?.name).toBe('exact');
    expect(matchVirtualHost(hosts.slice(0, 4), TARGET)?.name).toBe('suffix-long');
    expect(matchVirtualHost(hosts.slice(0, 3), TARGET)?.name).toBe('suffix-short');
    expect(matchVirtualHost(hosts.slice(0, 2), TARGET)?.name).toBe('prefix');
    expect(matchVirtualHost(hosts.slice(0, 1), TARGET)?.name).toBe('any');
    // A wildcard in the middle (the reference control plane's force-nack domain) matches nothing.
    expect(matchVirtualHost([{ name: 'odd', domains: ['*.force-nack.*'] }], 'a.force-nack.b')).toBeUndefined();

    const route = packAny(ROUTE_CONFIGURATION_TYPE_URL, {
      name: 'rc',
      virtual_hosts: [{ name: 'other', domains: ['other.example.com'], routes: [{ match: { prefix: '' }, route: { cluster: CLUSTER } }] }],
    });
    const [listener] = minimal();
    if (listener === undefined) throw new Error('missing');
    const view = clientView(snapshot(listener, held('rc', route)), TARGET);
    expect(view.problem).toEqual({ kind: 'virtual-host', name: TARGET, status: 'ACKED', reason: `route configuration rc has no virtual host for ${TARGET} (domains: other.example.com)` });
  });

  it('follows weighted clusters (weight > 0) and the EDS service name, counting usable endpoints', () => {
    const route = packAny(ROUTE_CONFIGURATION_TYPE_URL, {
      name: 'rc',
      virtual_hosts: [
        {
          name: 'vh',
          domains: [TARGET],
          routes: [
            { match: { prefix: '/a' }, route: { weighted_clusters: { clusters: [{ name: CLUSTER, weight: { value: 3 } }, { name: CANARY, weight: { value: 1 } }, { name: 'zero', weight: { value: 0 } }] } } },
            { match: { prefix: '' }, route: { cluster: CLUSTER } },
          ],
        },
      ],
    });
    const canary = packAny(CLUSTER_TYPE_URL, { name: CANARY, type: 'EDS', eds_cluster_config: { eds_config: { ads: {} }, service_name: 'canary-eds' } });
    const canaryEndpoints = packAny(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, {
      cluster_name: 'canary-eds',
      endpoints: [
        {
          load_balancing_weight: { value: 1 },
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 2 } } }, health_status: 'HEALTHY' },
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 3 } } }, health_status: 'UNHEALTHY' },
          ],
        },
        // No weight: a gRPC client ignores the locality.
        { lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 4 } } } }] },
      ],
    });
    const [listener, , cluster, endpoints] = minimal();
    if (listener === undefined || cluster === undefined || endpoints === undefined) throw new Error('missing');
    const view = clientView(snapshot(listener, held('rc', route), cluster, endpoints, held(CANARY, canary), held('canary-eds', canaryEndpoints)), TARGET);
    expect(view.complete).toBe(true);
    expect(view.clusterNames).toEqual([CLUSTER, CANARY]);
    expect(view.clusters.map((c) => [c.cluster.name, c.edsServiceName, c.endpointCount])).toEqual([
      [CLUSTER, CLUSTER, 1],
      [CANARY, 'canary-eds', 2],
    ]);
  });

  it('is not complete with an endpoint set that has no usable endpoint, nor with a non-EDS cluster', () => {
    const resources = minimal();
    resources[3] = held(CLUSTER, grpcClusterLoadAssignment(CLUSTER, []));
    expect(clientView(snapshot(...resources), TARGET).problem?.reason).toBe(`endpoints ${CLUSTER} hold no usable endpoint`);
    const staticCluster = packAny(CLUSTER_TYPE_URL, { name: CLUSTER, type: 'LOGICAL_DNS' });
    const withDns = minimal();
    withDns[2] = held(CLUSTER, staticCluster);
    expect(clientView(snapshot(...withDns), TARGET).problem?.reason).toBe(`cluster ${CLUSTER} is of type LOGICAL_DNS; the view follows EDS clusters only`);
  });

  it('says so when the held bytes do not decode', () => {
    const resources = minimal();
    resources[0] = { typeUrl: LISTENER_TYPE_URL, name: TARGET, version: 'v1', status: 'ACKED', value: Buffer.from([0x0a, 0xff]) };
    const view = clientView(snapshot(...resources), TARGET);
    expect(view.routable).toBe(false);
    expect(view.problem?.kind).toBe('listener');
    expect(view.problem?.reason).toMatch(/^listener web\.example\.com undecodable: /);
  });

  it('exposes the provenance stamps of listener, route configuration, virtual host and cluster (reference translation)', () => {
    const translation = translate(
      {
        proxies: [
          {
            metadata: { name: 'web', namespace: 'default', generation: 4 },
            spec: { virtualhost: { fqdn: TARGET }, routes: [{ services: [{ name: 'app', port: 8080 }] }] },
          },
        ],
        endpoints: [{ metadata: { name: 'app', namespace: 'default', generation: 2 }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ port: 8080 }] }] }],
        secrets: [],
      },
      { provenance: true },
    );
    const resources = RESOURCE_TYPE_URLS.flatMap((typeUrl) => translation.resources[typeUrl].map((r) => held(r.name, packAny(typeUrl, r.message), 'ACKED', `${typeUrl.length}`)));
    const view = clientView(snapshot(...resources), TARGET);
    const source = 'projectcontour.io/HTTPProxy/default/web@4';
    expect(view.complete).toBe(true);
    expect(view.routeConfigName).toBe('ingress_http');
    expect(view.listener?.provenance).toEqual([source]);
    expect(view.routeConfiguration?.provenance).toEqual([source]);
    expect(view.virtualHost).toEqual({ name: TARGET, domains: [TARGET], provenance: [source] });
    expect(view.clusters.map((c) => [c.cluster.name, c.cluster.provenance, c.edsServiceName, c.endpoints?.provenance, c.endpointCount])).toEqual([
      [CLUSTER, [source], CLUSTER, [], 1],
    ]);

    // And a hand-stamped resource set reads the same way.
    const stamped = packAny(ROUTE_CONFIGURATION_TYPE_URL, {
      name: 'rc',
      metadata: provenanceMetadata(['/Service/default/app@1', source]),
      virtual_hosts: [{ name: 'vh', domains: ['*'], metadata: provenanceMetadata([source]), routes: [{ match: { prefix: '' }, route: { cluster: CLUSTER } }] }],
    });
    const minimalSet = minimal();
    minimalSet[1] = held('rc', stamped);
    const handView = clientView(snapshot(...minimalSet), TARGET);
    expect(handView.routeConfiguration?.provenance).toEqual(['/Service/default/app@1', source]);
    expect(handView.virtualHost?.provenance).toEqual([source]);
    expect(handView.listener?.provenance).toEqual([]);
  });

  it('takes the listener and cluster builders of grpcXdsResources as they are', () => {
    // The builders one by one (the path the harness tests use when they vary one link).
    const view = clientView(
      snapshot(
        held(TARGET, grpcListener(TARGET, 'r2')),
        held('r2', grpcRouteConfiguration('r2', CANARY)),
        held(CANARY, grpcCluster(CANARY)),
        held(CANARY, grpcClusterLoadAssignment(CANARY, [...ENDPOINT, { host: '127.0.0.2', port: 8080 }])),
      ),
      TARGET,
    );
    expect(view.complete).toBe(true);
    expect(view.clusters[0]?.endpointCount).toBe(2);
  });
});
