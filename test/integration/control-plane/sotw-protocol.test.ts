// State-of-the-World protocol rules, driven by a raw @grpc/grpc-js client using common/xds protos.
import * as grpc from '@grpc/grpc-js';
import { createDiscoveryClient, openAdsSotw, openPerTypeSotw } from '../../../common/xds/client';
import { ADS_SERVICE, PER_TYPE_SERVICES, unpackAny } from '../../../common/xds/protos';
import { readProvenance } from '../../../common/xds/provenance';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds/type-urls';
import type { DiscoveryRequest, DiscoveryResponse } from '../../../common/xds/types';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { endpoints, eventually, proxy, testLogger } from './helpers';
import { StreamReader } from './stream-reader';

const NODE = { id: 'raw-sotw-1', cluster: 'raw' };

describe('SotW xDS (ADS and per-type)', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let adsClient: grpc.Client;
  const readers: Array<StreamReader<DiscoveryRequest, DiscoveryResponse>> = [];
  const clients: grpc.Client[] = [];

  const openAds = (): StreamReader<DiscoveryRequest, DiscoveryResponse> => {
    const reader = new StreamReader(openAdsSotw(adsClient));
    readers.push(reader);
    return reader;
  };

  beforeAll(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 8080));
    source.applyProxy(proxy('one', 'one.example.com', [{ name: 'app', port: 8080 }]));
    controlPlane = await startControlPlane({
      port: 0,
      replicaId: 'cp-sotw',
      source,
      versionScheme: 'counter',
      provenance: true,
      holdoffMs: 5,
      holdoffMaxMs: 20,
      logger: testLogger,
    });
    adsClient = createDiscoveryClient(ADS_SERVICE, controlPlane.address);
    clients.push(adsClient);
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    for (const client of clients) client.close();
    await controlPlane.close();
  });

  it('answers a wildcard LDS request with every listener, stamped with provenance', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: LISTENER_TYPE_URL, resource_names: [] });
    const response = await ads.next();
    expect(response.type_url).toBe(LISTENER_TYPE_URL);
    expect(response.version_info).toBe(controlPlane.currentSnapshot()?.[LISTENER_TYPE_URL].version);
    expect(response.nonce).not.toBe('');
    const listeners = (response.resources ?? []).map(unpackAny);
    expect(listeners.map((l) => l.name).sort()).toEqual(['ingress_http', 'one.example.com']);
    const fqdnListener = listeners.find((l) => l.name === 'one.example.com');
    expect(readProvenance(fqdnListener?.metadata)).toEqual(['projectcontour.io/HTTPProxy/default/one@1']);
  });

  it('sends only the requested names for RDS/EDS and pushes a new version after an ACK', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names: ['default/app/8080'] });
    const first = await ads.next();
    const assignments = (first.resources ?? []).map(unpackAny);
    expect(assignments.map((a) => a.cluster_name)).toEqual(['default/app/8080']);
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names: ['default/app/8080'], version_info: first.version_info, response_nonce: first.nonce });

    source.applyEndpoints(endpoints('app', '10.0.0.2', 8080));
    const second = await ads.next();
    expect(second.version_info).not.toBe(first.version_info);
    expect(JSON.stringify((second.resources ?? []).map(unpackAny))).toContain('10.0.0.2');
    const acks = await eventually(
      () => controlPlane.xdsEvents.all().filter((e) => e.event === 'request' && e.kind === 'ack' && e.nonce === first.nonce),
      'ACK recorded',
    );
    expect(acks).toHaveLength(1);
  });

  it('treats a first request without names as wildcard for every type (go-control-plane), and "*" explicitly', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: ROUTE_CONFIGURATION_TYPE_URL, resource_names: [] });
    const legacy = await ads.next();
    expect((legacy.resources ?? []).map((r) => unpackAny(r).name)).toEqual(['ingress_http']);
    ads.call.write({ node: NODE, type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names: ['*'] });
    const explicit = await ads.next();
    expect((explicit.resources ?? []).length).toBe(controlPlane.currentSnapshot()?.[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL].resources.size);
    expect((explicit.resources ?? []).length).toBeGreaterThan(0);
  });

  it('does not answer a reconnecting wildcard client that already has the current version', async () => {
    const version = controlPlane.currentSnapshot()?.[LISTENER_TYPE_URL].version;
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: LISTENER_TYPE_URL, version_info: version });
    expect(await ads.nothingWithin(300)).toBe(true);
    // It does get the next version.
    source.applyProxy(proxy('reconnect', 'reconnect.example.com', [{ name: 'app', port: 8080 }]));
    const next = await ads.next();
    expect(next.version_info).not.toBe(version);
  });

  it('holds a new version until the previous response is answered (one response in flight per type)', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_TYPE_URL, resource_names: [] });
    const first = await ads.next();
    source.applyEndpoints(endpoints('api', '10.0.1.1', 9090));
    source.applyProxy(proxy('two', 'two.example.com', [{ name: 'api', port: 9090 }]));
    await controlPlane.whenIdle();
    expect(await ads.nothingWithin(300)).toBe(true);
    ads.call.write({ type_url: CLUSTER_TYPE_URL, version_info: first.version_info, response_nonce: first.nonce });
    const second = await ads.next();
    expect((second.resources ?? []).map((r) => unpackAny(r).name).sort()).toEqual(['default/api/9090', 'default/app/8080']);
  });

  it('ignores a request with a stale nonce, and does not resend after a NACK', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: ROUTE_CONFIGURATION_TYPE_URL, resource_names: ['ingress_http'] });
    const first = await ads.next();
    ads.call.write({ type_url: ROUTE_CONFIGURATION_TYPE_URL, resource_names: ['ingress_http'], version_info: first.version_info, response_nonce: first.nonce });
    source.applyProxy(proxy('one', 'one.example.com', [{ name: 'app', port: 8080 }], { prefix: '/v2' }));
    const second = await ads.next();
    expect(second.nonce).not.toBe(first.nonce);

    // Stale: answers the first nonce and asks for another name. Ignored entirely (no response).
    ads.call.write({ type_url: ROUTE_CONFIGURATION_TYPE_URL, resource_names: ['ingress_http', 'https/x'], version_info: first.version_info, response_nonce: first.nonce });
    await eventually(
      () => controlPlane.xdsEvents.all().some((e) => e.event === 'request' && e.kind === 'stale' && e.nonce === first.nonce),
      'stale request recorded',
    );
    // NACK of the latest response: recorded with the message, not resent.
    ads.call.write({
      type_url: ROUTE_CONFIGURATION_TYPE_URL,
      resource_names: ['ingress_http'],
      version_info: first.version_info,
      response_nonce: second.nonce,
      error_detail: { code: 3, message: 'test rejects this route' },
    });
    const nack = await eventually(
      () => controlPlane.xdsEvents.all().find((e) => e.event === 'request' && e.kind === 'nack' && e.nonce === second.nonce),
      'NACK recorded',
    );
    expect(nack).toMatchObject({ errorMessage: 'test rejects this route', version: first.version_info });
    expect(await ads.nothingWithin(500)).toBe(true);

    // The next change is sent.
    source.applyProxy(proxy('one', 'one.example.com', [{ name: 'app', port: 8080 }], { prefix: '/v3' }));
    const third = await ads.next();
    expect(JSON.stringify((third.resources ?? []).map(unpackAny))).toContain('/v3');
  });

  it('serves per-type services (CDS over ClusterDiscoveryService.StreamClusters, type_url optional)', async () => {
    const cdsClient = createDiscoveryClient(PER_TYPE_SERVICES[CLUSTER_TYPE_URL].service, controlPlane.address);
    clients.push(cdsClient);
    const cds = new StreamReader(openPerTypeSotw(cdsClient, CLUSTER_TYPE_URL));
    readers.push(cds);
    cds.call.write({ node: NODE, resource_names: [] });
    const response = await cds.next();
    expect(response.type_url).toBe(CLUSTER_TYPE_URL);
    expect((response.resources ?? []).length).toBeGreaterThan(0);

    const ldsClient = createDiscoveryClient(PER_TYPE_SERVICES[LISTENER_TYPE_URL].service, controlPlane.address);
    clients.push(ldsClient);
    const wrongType = new StreamReader(openPerTypeSotw(ldsClient, LISTENER_TYPE_URL));
    readers.push(wrongType);
    wrongType.call.write({ node: NODE, type_url: CLUSTER_TYPE_URL });
    const error = await wrongType.ended();
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/does not match this per-type service/);
  });

  it('rejects a malformed request with a clear status and keeps serving other streams', async () => {
    const healthy = openAds();
    healthy.call.write({ node: NODE, type_url: LISTENER_TYPE_URL });
    const before = await healthy.next();

    const missingType = openAds();
    missingType.call.write({ node: NODE, resource_names: [] });
    expect(await missingType.ended()).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'type_url is required on ADS streams' });

    const unknownType = openAds();
    unknownType.call.write({ node: NODE, type_url: 'type.googleapis.com/envoy.config.bogus.v3.Nothing' });
    const unknownError = await unknownType.ended();
    expect(unknownError.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(unknownError.details).toMatch(/unknown type_url .*bogus/);

    // Bytes that are not a DiscoveryRequest: grpc-js fails the call while deserializing.
    const rawClient = new grpc.Client(controlPlane.address, grpc.credentials.createInsecure());
    clients.push(rawClient);
    const garbage = rawClient.makeBidiStreamRequest<Buffer, Buffer>(
      '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
      (value) => value,
      (value) => value,
    );
    const garbageReader = new StreamReader(garbage);
    garbage.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    const garbageError = await garbageReader.ended();
    expect(garbageError.code).toBe(grpc.status.INTERNAL);

    // The healthy stream still gets pushes.
    healthy.call.write({ type_url: LISTENER_TYPE_URL, version_info: before.version_info, response_nonce: before.nonce });
    source.applyProxy(proxy('three', 'three.example.com', [{ name: 'app', port: 8080 }]));
    const after = await healthy.next();
    expect((after.resources ?? []).map((r) => unpackAny(r).name)).toContain('three.example.com');
  });

  it('answers unary Fetch* with UNIMPLEMENTED', async () => {
    const cdsClient = createDiscoveryClient(PER_TYPE_SERVICES[CLUSTER_TYPE_URL].service, controlPlane.address);
    clients.push(cdsClient);
    const fetchClusters = (cdsClient as unknown as Record<string, unknown>).FetchClusters as (
      request: object,
      callback: (error: grpc.ServiceError | null) => void,
    ) => void;
    const error = await new Promise<grpc.ServiceError | null>((resolve) => fetchClusters.call(cdsClient, { node: NODE }, resolve));
    expect(error?.code).toBe(grpc.status.UNIMPLEMENTED);
  });
});
