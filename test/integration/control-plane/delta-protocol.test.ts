// Incremental (Delta) xDS protocol rules, ADS and per-type, with a raw @grpc/grpc-js client.
import * as grpc from '@grpc/grpc-js';
import { createDiscoveryClient, openAdsDelta, openPerTypeDelta } from '../../../common/xds/client';
import { ADS_SERVICE, PER_TYPE_SERVICES, unpackAny } from '../../../common/xds/protos';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  SECRET_TYPE_URL,
} from '../../../common/xds/type-urls';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../common/xds/types';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { endpoints, eventually, proxy, testLogger } from './helpers';
import { StreamReader } from './stream-reader';

const NODE = { id: 'raw-delta-1', cluster: 'raw' };
const names = (response: DeltaDiscoveryResponse): string[] => (response.resources ?? []).map((r) => r.name ?? '').sort();

describe('Delta xDS (ADS and per-type)', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let adsClient: grpc.Client;
  const readers: Array<StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse>> = [];
  const clients: grpc.Client[] = [];

  const openAds = (): StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse> => {
    const reader = new StreamReader(openAdsDelta(adsClient));
    readers.push(reader);
    return reader;
  };

  beforeEach(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 8080));
    source.applyEndpoints(endpoints('api', '10.0.1.1', 9090));
    source.applyProxy(proxy('one', 'one.example.com', [{ name: 'app', port: 8080 }]));
    source.applyProxy(proxy('two', 'two.example.com', [{ name: 'api', port: 9090 }]));
    controlPlane = await startControlPlane({
      port: 0,
      replicaId: 'cp-delta',
      source,
      versionScheme: 'contour',
      provenance: false,
      holdoffMs: 5,
      holdoffMaxMs: 20,
      logger: testLogger,
    });
    adsClient = createDiscoveryClient(ADS_SERVICE, controlPlane.address);
    clients.push(adsClient);
  });

  afterEach(async () => {
    for (const reader of readers.splice(0)) reader.close();
    for (const client of clients.splice(0)) client.close();
    await controlPlane.close();
  });

  it('sends the wildcard set with per-resource versions, then only what changed, then removals', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_TYPE_URL });
    const first = await ads.next();
    expect(names(first)).toEqual(['default/api/9090', 'default/app/8080']);
    expect(first.system_version_info).toBe(controlPlane.currentSnapshot()?.[CLUSTER_TYPE_URL].version);
    for (const resource of first.resources ?? []) expect(resource.version).toMatch(/^[0-9a-f]{16}$/);
    ads.call.write({ type_url: CLUSTER_TYPE_URL, response_nonce: first.nonce });

    // A new cluster: only it is sent.
    source.applyEndpoints(endpoints('web', '10.0.2.1', 80));
    source.applyProxy(proxy('three', 'three.example.com', [{ name: 'web', port: 80 }]));
    const second = await ads.next();
    expect(names(second)).toEqual(['default/web/80']);
    expect(second.removed_resources).toEqual([]);
    ads.call.write({ type_url: CLUSTER_TYPE_URL, response_nonce: second.nonce });

    // Deleting the proxy removes its cluster.
    source.deleteProxy({ namespace: 'default', name: 'three' });
    const third = await ads.next();
    expect(third.resources).toEqual([]);
    expect(third.removed_resources).toEqual(['default/web/80']);
  });

  it('does not resend what the client states in initial_resource_versions', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_TYPE_URL });
    const first = await ads.next();
    const known = Object.fromEntries((first.resources ?? []).map((r) => [r.name ?? '', r.version ?? '']));
    const appVersion = known['default/app/8080'];
    expect(appVersion).toBeDefined();

    // A reconnecting client that has app (current) and a cluster that no longer exists.
    const reconnect = openAds();
    reconnect.call.write({
      node: NODE,
      type_url: CLUSTER_TYPE_URL,
      initial_resource_versions: { 'default/app/8080': appVersion ?? '', 'default/gone/1': 'old' },
    });
    const response = await reconnect.next();
    expect(names(response)).toEqual(['default/api/9090']);
    expect(response.removed_resources).toEqual(['default/gone/1']);
  });

  it('subscribes and unsubscribes by name, ignores stale nonces for ACK, and does not resend after a NACK', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names_subscribe: ['default/app/8080'] });
    const first = await ads.next();
    expect(names(first)).toEqual(['default/app/8080']);
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, response_nonce: first.nonce, resource_names_subscribe: ['default/api/9090'] });
    const second = await ads.next();
    expect(names(second)).toEqual(['default/api/9090']);

    // Stale nonce (answers `first`, not `second`): not an ACK.
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, response_nonce: first.nonce });
    await eventually(
      () => controlPlane.xdsEvents.all().some((e) => e.event === 'request' && e.kind === 'stale' && e.nonce === first.nonce && e.stream.nodeId === NODE.id),
      'stale request recorded',
    );
    // NACK of `second`: recorded, not resent.
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, response_nonce: second.nonce, error_detail: { code: 3, message: 'bad endpoints' } });
    const nack = await eventually(
      () => controlPlane.xdsEvents.all().find((e) => e.event === 'request' && e.kind === 'nack' && e.nonce === second.nonce),
      'NACK recorded',
    );
    expect(nack).toMatchObject({ errorMessage: 'bad endpoints', version: second.system_version_info });
    expect(await ads.nothingWithin(400)).toBe(true);

    // Unsubscribe app; a change to app's endpoints is then not sent, a change to api's is.
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names_unsubscribe: ['default/app/8080'] });
    await eventually(
      () => controlPlane.xdsEvents.all().some((e) => e.event === 'request' && e.kind === 'subscription' && e.stream.nodeId === NODE.id),
      'unsubscribe processed',
    );
    source.applyEndpoints(endpoints('app', '10.0.0.9', 8080));
    await controlPlane.whenIdle();
    expect(await ads.nothingWithin(300)).toBe(true);
    source.applyEndpoints(endpoints('api', '10.0.1.9', 9090));
    const third = await ads.next();
    expect(names(third)).toEqual(['default/api/9090']);
    expect(JSON.stringify(unpackAny(third.resources?.[0]?.resource ?? { type_url: '', value: Buffer.alloc(0) }))).toContain('10.0.1.9');
  });

  it('reports an explicitly subscribed name that does not exist in removed_resources, then sends it once created', async () => {
    const ads = openAds();
    ads.call.write({ node: NODE, type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, resource_names_subscribe: ['default/later/80'] });
    const absent = await ads.next();
    expect(absent.resources).toEqual([]);
    expect(absent.removed_resources).toEqual(['default/later/80']);
    ads.call.write({ type_url: CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, response_nonce: absent.nonce });
    source.applyEndpoints(endpoints('later', '10.0.3.1', 80));
    source.applyProxy(proxy('later', 'later.example.com', [{ name: 'later', port: 80 }]));
    const created = await ads.next();
    expect(names(created)).toEqual(['default/later/80']);
    expect(created.removed_resources).toEqual([]);
  });

  it('serves TLS secrets over SDS (SecretDiscoveryService.DeltaSecrets)', async () => {
    source.applySecret({ metadata: { name: 'cert', namespace: 'default' }, certificateChain: 'PEM-CHAIN', privateKey: 'PEM-KEY' });
    source.applyProxy(proxy('secure', 'secure.example.com', [{ name: 'app', port: 8080 }], { tlsSecret: 'cert' }));
    await controlPlane.whenIdle();
    const sdsClient = createDiscoveryClient(PER_TYPE_SERVICES[SECRET_TYPE_URL].service, controlPlane.address);
    clients.push(sdsClient);
    const sds = new StreamReader(openPerTypeDelta(sdsClient, SECRET_TYPE_URL));
    readers.push(sds);
    sds.call.write({ node: NODE, resource_names_subscribe: ['default/cert'] });
    const response = await sds.next();
    expect(names(response)).toEqual(['default/cert']);
    const secret = unpackAny(response.resources?.[0]?.resource ?? { type_url: '', value: Buffer.alloc(0) });
    expect(secret).toMatchObject({ name: 'default/cert', tls_certificate: { certificate_chain: { inline_string: 'PEM-CHAIN' } } });
  });

  it('serves per-type Delta (EndpointDiscoveryService.DeltaEndpoints) and rejects a type mismatch', async () => {
    const edsClient = createDiscoveryClient(PER_TYPE_SERVICES[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL].service, controlPlane.address);
    clients.push(edsClient);
    const eds = new StreamReader(openPerTypeDelta(edsClient, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL));
    readers.push(eds);
    eds.call.write({ node: NODE, resource_names_subscribe: ['default/app/8080'] });
    const response = await eds.next();
    expect(response.type_url).toBe(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL);
    expect(names(response)).toEqual(['default/app/8080']);

    const mismatch = new StreamReader(openPerTypeDelta(edsClient, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL));
    readers.push(mismatch);
    mismatch.call.write({ node: NODE, type_url: LISTENER_TYPE_URL });
    expect(await mismatch.ended()).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    // The first stream is unaffected.
    eds.call.write({ response_nonce: response.nonce });
    source.applyEndpoints(endpoints('app', '10.0.0.7', 8080));
    expect(names(await eds.next())).toEqual(['default/app/8080']);
  });
});
