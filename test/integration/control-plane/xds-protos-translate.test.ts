// common/xds proto loading and the translator's output shapes (decoded back from Any bytes).
import { ADS_SERVICE, PER_TYPE_SERVICES, loadXdsProtos, packAny, serviceDefinition, unpackAny } from '../../../common/xds/protos';
import { formatSourceRef, parseSourceRef, provenanceMetadata, readProvenance } from '../../../common/xds/provenance';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  HTTP_CONNECTION_MANAGER_TYPE_URL,
  LISTENER_TYPE_URL,
  RESOURCE_TYPE_URLS,
  ROUTE_CONFIGURATION_TYPE_URL,
  SECRET_TYPE_URL,
} from '../../../common/xds/type-urls';
import type { AnyResource } from '../../../common/xds/types';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { translate } from '../../../infra/local/control-plane/translate';
import { endpoints, proxy } from './helpers';

describe('common/xds protos', () => {
  it('loads ADS and every per-type service with Stream and Delta methods', () => {
    expect(Object.keys(serviceDefinition(ADS_SERVICE)).sort()).toEqual(['DeltaAggregatedResources', 'StreamAggregatedResources']);
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      const { service, sotwMethod, deltaMethod } = PER_TYPE_SERVICES[typeUrl];
      const methods = serviceDefinition(service);
      expect(methods[sotwMethod]?.requestStream).toBe(true);
      expect(methods[deltaMethod]?.responseStream).toBe(true);
    }
    expect(loadXdsProtos()).toBe(loadXdsProtos());
  });

  it('keeps Any resources as bytes when decoding a DiscoveryResponse', () => {
    const listener = packAny(LISTENER_TYPE_URL, { name: 'l1' });
    const method = serviceDefinition(ADS_SERVICE).StreamAggregatedResources;
    if (!method) throw new Error('missing method');
    const wire = method.responseSerialize({ version_info: '7', type_url: LISTENER_TYPE_URL, nonce: 'n', resources: [listener] });
    const decoded = method.responseDeserialize(wire) as { resources: AnyResource[]; version_info: string };
    expect(decoded.version_info).toBe('7');
    expect(decoded.resources[0]?.type_url).toBe(LISTENER_TYPE_URL);
    expect(Buffer.isBuffer(decoded.resources[0]?.value)).toBe(true);
    expect(Buffer.compare(Buffer.from(decoded.resources[0]?.value ?? []), Buffer.from(listener.value))).toBe(0);
  });

  it('decodes requests with the documented options (snake_case, empty arrays, absent optional fields)', () => {
    const method = serviceDefinition(ADS_SERVICE).StreamAggregatedResources;
    if (!method) throw new Error('missing method');
    const decoded = method.requestDeserialize(method.requestSerialize({ type_url: CLUSTER_TYPE_URL, node: { id: 'n1' } })) as Record<string, unknown>;
    expect(decoded).toMatchObject({ type_url: CLUSTER_TYPE_URL, node: { id: 'n1' }, resource_names: [] });
    expect(decoded.error_detail).toBeUndefined();
    expect(decoded.response_nonce).toBeUndefined();
  });

  it('round-trips provenance references and metadata', () => {
    const ref = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'ns', name: 'web', generation: 12 };
    expect(parseSourceRef(formatSourceRef(ref))).toEqual(ref);
    expect(parseSourceRef('/Endpoints/ns/app@3')).toEqual({ group: '', kind: 'Endpoints', namespace: 'ns', name: 'app', generation: 3 });
    expect(parseSourceRef('not a ref')).toBeUndefined();
    const decoded = unpackAny(packAny(CLUSTER_TYPE_URL, { name: 'c', metadata: provenanceMetadata(['b/K/n/x@2', 'a/K/n/y@1']) }));
    expect(readProvenance(decoded.metadata)).toEqual(['a/K/n/y@1', 'b/K/n/x@2']);
  });
});

describe('translate', () => {
  const inputs = () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 8080));
    source.applyEndpoints(endpoints('canary', '10.0.0.2', 8080));
    source.applySecret({ metadata: { name: 'cert', namespace: 'default' }, certificateChain: 'CERT', privateKey: 'KEY' });
    source.applyProxy({
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        virtualhost: { fqdn: 'web.example.com' },
        routes: [
          { services: [{ name: 'app', port: 8080 }] },
          { conditions: [{ prefix: '/api' }], services: [{ name: 'app', port: 8080, weight: 90 }, { name: 'canary', port: 8080, weight: 10 }] },
        ],
      },
    });
    source.applyProxy(proxy('secure', 'secure.example.com', [{ name: 'app', port: 8080 }], { tlsSecret: 'cert' }));
    return source.list();
  };
  const byName = (resources: Array<{ name: string; message: Record<string, unknown> }>, name: string) =>
    resources.find((r) => r.name === name);

  it('produces Contour-shaped resources that encode and decode', () => {
    const translation = translate(inputs(), { provenance: true });
    const decode = (typeUrl: (typeof RESOURCE_TYPE_URLS)[number], name: string) => {
      const resource = byName(translation.resources[typeUrl], name);
      if (!resource) throw new Error(`missing ${name}`);
      return unpackAny(packAny(typeUrl, resource.message));
    };

    const routes = decode(ROUTE_CONFIGURATION_TYPE_URL, 'ingress_http') as { virtual_hosts: Array<{ name: string; routes: Array<{ match: { prefix: string }; route: Record<string, unknown> }>; metadata: unknown }> };
    expect(routes.virtual_hosts.map((v) => v.name)).toEqual(['web.example.com']);
    const webRoutes = routes.virtual_hosts[0]?.routes ?? [];
    // Longest prefix first; weighted split kept.
    expect(webRoutes.map((r) => r.match.prefix)).toEqual(['/api', '/']);
    expect(webRoutes[0]?.route).toMatchObject({ weighted_clusters: { clusters: [{ name: 'default/app/8080', weight: { value: 90 } }, { name: 'default/canary/8080', weight: { value: 10 } }] } });
    expect(readProvenance(routes.virtual_hosts[0]?.metadata)).toEqual(['projectcontour.io/HTTPProxy/default/web@1']);

    const cluster = decode(CLUSTER_TYPE_URL, 'default/app/8080');
    expect(cluster).toMatchObject({ type: 'EDS', lb_policy: 'ROUND_ROBIN', eds_cluster_config: { service_name: 'default/app/8080' } });
    expect(readProvenance(cluster.metadata)).toEqual(['projectcontour.io/HTTPProxy/default/secure@1', 'projectcontour.io/HTTPProxy/default/web@1']);

    const assignment = decode(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'default/canary/8080');
    expect(JSON.stringify(assignment)).toContain('10.0.0.2');

    const apiListener = decode(LISTENER_TYPE_URL, 'web.example.com') as { api_listener: { api_listener: AnyResource } };
    expect(unpackAny(apiListener.api_listener.api_listener)).toMatchObject({ rds: { route_config_name: 'ingress_http' } });
    expect(apiListener.api_listener.api_listener.type_url).toBe(HTTP_CONNECTION_MANAGER_TYPE_URL);

    // TLS: ingress_https listener with an SNI chain reading its certificate over SDS, its own route config.
    const https = decode(LISTENER_TYPE_URL, 'ingress_https') as { filter_chains: Array<{ filter_chain_match: { server_names: string[] }; transport_socket: { typed_config: AnyResource } }> };
    expect(https.filter_chains[0]?.filter_chain_match.server_names).toEqual(['secure.example.com']);
    const tls = unpackAny(https.filter_chains[0]?.transport_socket.typed_config ?? { type_url: '', value: Buffer.alloc(0) });
    expect(JSON.stringify(tls)).toContain('"name":"default/cert"');
    expect(decode(ROUTE_CONFIGURATION_TYPE_URL, 'https/secure.example.com')).toMatchObject({ name: 'https/secure.example.com' });
    expect(decode(SECRET_TYPE_URL, 'default/cert')).toMatchObject({ tls_certificate: { certificate_chain: { inline_string: 'CERT' } } });
    expect(byName(translation.resources[LISTENER_TYPE_URL], 'secure.example.com')).toBeUndefined();
  });

  it("socket listener style: one Envoy-style ingress_http listener on a port, no API listeners", () => {
    const translation = translate(inputs(), { provenance: false, listenerStyle: 'socket', httpPort: 8081 });
    const names = translation.resources[LISTENER_TYPE_URL].map((l) => l.name).sort();
    expect(names).toEqual(['ingress_http', 'ingress_https']);
    const http = unpackAny(packAny(LISTENER_TYPE_URL, byName(translation.resources[LISTENER_TYPE_URL], 'ingress_http')?.message ?? {}));
    expect(http).toMatchObject({ address: { socket_address: { port_value: 8081 } } });
    expect(http.api_listener).toBeUndefined();
  });

  it('is deterministic and stamps nothing without provenance', () => {
    const a = translate(inputs(), { provenance: false });
    const b = translate(inputs(), { provenance: false });
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      const bytes = (t: typeof a) => t.resources[typeUrl].map((r) => Buffer.from(packAny(typeUrl, r.message).value).toString('hex'));
      expect(bytes(a)).toEqual(bytes(b));
    }
    const cluster = unpackAny(packAny(CLUSTER_TYPE_URL, byName(a.resources[CLUSTER_TYPE_URL], 'default/app/8080')?.message ?? {}));
    expect(cluster.metadata).toBeUndefined();
  });
});
