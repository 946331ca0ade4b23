// The relay's downstream protocol edge with a raw grpc-js client: node handling, malformed requests
// (clear status, other streams unaffected), limits, garbage/stale nonces, named subscriptions, Delta
// initial_resource_versions of our own lineage, and an opaque type URL over ADS.
import * as grpc from '@grpc/grpc-js';
import { encodeVersion } from '../../../common/core';
import {
  ADS_SERVICE,
  CLUSTER_TYPE_URL,
  createDiscoveryClient,
  LISTENER_TYPE_URL,
  openAdsDelta,
  openAdsSotw,
  openPerTypeSotw,
  PER_TYPE_SERVICES,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { resourceNameOf, type Relay } from '../../../xds-gateway/relay';
import { endpointsOf, eventually, httpProxy, newSource, RecordingObserver, startTestControlPlane, startTestRelay } from './helpers';
import { StreamReader } from './stream-reader';

const RUNTIME_TYPE_URL = 'type.googleapis.com/envoy.service.runtime.v3.Runtime';
const node = (id: string, cluster = 'raw'): DiscoveryRequest['node'] => ({
  id,
  cluster,
  metadata: { fields: { pod: { stringValue: 'envoy-7' }, labels: { structValue: { fields: { app: { stringValue: 'web' } } } } } },
});

describe('relay downstream protocol edge', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let observer: RecordingObserver;
  let relay: Relay;
  let ads: grpc.Client;
  let cds: grpc.Client;
  const readers: StreamReader<unknown, unknown>[] = [];

  beforeAll(async () => {
    source = newSource();
    source.applyEndpoints(endpointsOf('other', '10.0.0.2', 8081));
    source.applyProxy(httpProxy('other', 'other.example.com', 8081));
    controlPlane = await startTestControlPlane(source);
    observer = new RecordingObserver();
    relay = await startTestRelay(controlPlane.address, observer, { limits: { maxMessageBytes: 64 * 1024, maxResourceNamesPerRequest: 100 } });
    ads = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
    cds = createDiscoveryClient(PER_TYPE_SERVICES[CLUSTER_TYPE_URL].service, `127.0.0.1:${relay.port}`);
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    ads.close();
    cds.close();
    await relay.control.close();
    await controlPlane.close();
  });

  const sotw = (): StreamReader<DiscoveryRequest, DiscoveryResponse> => {
    const reader = new StreamReader(openAdsSotw(ads));
    readers.push(reader as StreamReader<unknown, unknown>);
    return reader;
  };
  const delta = (): StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse> => {
    const reader = new StreamReader(openAdsDelta(ads));
    readers.push(reader as StreamReader<unknown, unknown>);
    return reader;
  };
  const names = (response: DiscoveryResponse): string[] =>
    (response.resources ?? []).map((r) => resourceNameOf(r.type_url, r.value) ?? '?').sort();
  const lineage = 'gw-test.boot-1.raw';

  test('node only on the first request; metadata kept; named subscriptions; garbage and stale nonces ignored', async () => {
    const stream = sotw();
    stream.send({ node: node('raw-1'), type_url: CLUSTER_TYPE_URL, resource_names: ['default/app/8080', 'default/missing/1'] });
    const first = await stream.next();
    expect(names(first)).toEqual(['default/app/8080']);
    expect(first.version_info).toMatch(new RegExp(`^xp1:${lineage.replace(/\./g, '\\.')}:[0-9]+$`));
    const opened = observer.of('streamOpened').find((e) => e.node.nodeId === 'raw-1');
    expect(opened?.node).toEqual({ nodeId: 'raw-1', cluster: 'raw', metadata: { pod: 'envoy-7', labels: { app: 'web' } } });

    // A garbage nonce: ignored (logged), the stream stays open, nothing is sent.
    stream.send({ type_url: CLUSTER_TYPE_URL, resource_names: ['default/other/8081'], response_nonce: 'not-a-nonce', version_info: first.version_info });
    expect(await stream.silentFor(300)).toBe(true);
    expect(observer.requests('raw-1', CLUSTER_TYPE_URL).at(-1)?.classification).toEqual({ kind: 'unknownNonce', nonce: 'not-a-nonce' });

    // ACK with a new name set (no node: the stream's node is kept): same version, new resources.
    stream.send({ type_url: CLUSTER_TYPE_URL, resource_names: ['default/other/8081'], response_nonce: first.nonce, version_info: first.version_info });
    const second = await stream.next();
    expect(names(second)).toEqual(['default/other/8081']);
    expect(second.version_info).toBe(first.version_info);
    expect(observer.requests('raw-1', CLUSTER_TYPE_URL).at(-1)?.classification).toEqual({ kind: 'ack', nonce: first.nonce, version: first.version_info });

    // The old nonce is now stale: ignored, even its resource_names.
    stream.send({ type_url: CLUSTER_TYPE_URL, resource_names: ['default/app/8080'], response_nonce: first.nonce, version_info: first.version_info });
    expect(await stream.silentFor(300)).toBe(true);
    expect(observer.requests('raw-1', CLUSTER_TYPE_URL).at(-1)?.classification.kind).toBe('stale');
    expect(stream.isEnded).toBe(false);
  });

  test('first request without node → INVALID_ARGUMENT; other streams unaffected', async () => {
    const healthy = sotw();
    healthy.send({ node: node('raw-healthy'), type_url: LISTENER_TYPE_URL });
    const listeners = await healthy.next();

    const bad = sotw();
    bad.send({ type_url: LISTENER_TYPE_URL });
    const status = await bad.status;
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toMatch(/first request on a stream must carry node/);

    const noType = sotw();
    noType.send({ node: node('raw-no-type') });
    expect(await noType.status).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'type_url is required on ADS streams' });

    const tooMany = sotw();
    tooMany.send({ node: node('raw-many'), type_url: CLUSTER_TYPE_URL, resource_names: Array.from({ length: 101 }, (_, i) => `c${i}`) });
    expect(await tooMany.status).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/101 resource names exceed the limit of 100/) });

    const huge = sotw();
    huge.send({ node: node('raw-huge'), type_url: CLUSTER_TYPE_URL, resource_names: ['x'.repeat(70 * 1024)] });
    expect((await huge.status).code).toBe(grpc.status.RESOURCE_EXHAUSTED);

    const wrongType = new StreamReader(openPerTypeSotw(cds, CLUSTER_TYPE_URL));
    readers.push(wrongType as StreamReader<unknown, unknown>);
    wrongType.send({ node: node('raw-wrong'), type_url: LISTENER_TYPE_URL });
    expect(await wrongType.status).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/on the .*Cluster service/) });

    // The healthy stream still gets changes.
    healthy.send({ type_url: LISTENER_TYPE_URL, response_nonce: listeners.nonce, version_info: listeners.version_info });
    source.applyProxy(httpProxy('third', 'third.example.com', 8080));
    source.applyEndpoints(endpointsOf('third', '10.0.0.3', 8080));
    await controlPlane.rebuildNow();
    const next = await healthy.next();
    expect(names(next)).toContain('third.example.com');
    expect(healthy.isEnded).toBe(false);
  });

  test('Delta: initial_resource_versions of our lineage are not resent; other lineages are; first request always answered', async () => {
    const first = delta();
    first.send({ node: node('raw-delta'), type_url: CLUSTER_TYPE_URL });
    const full = await first.next();
    const held = Object.fromEntries((full.resources ?? []).map((r) => [r.name as string, r.version as string]));
    expect(Object.keys(held).sort()).toEqual(['default/app/8080', 'default/other/8081', 'default/third/8080']);
    first.close();

    const again = delta();
    const foreign = 'xp1:gw-other.boot-9.raw:1';
    again.send({
      node: node('raw-delta'),
      type_url: CLUSTER_TYPE_URL,
      initial_resource_versions: { ...held, 'default/other/8081': foreign, 'default/gone/1': foreign },
    });
    const resumed = await again.next();
    expect((resumed.resources ?? []).map((r) => r.name)).toEqual(['default/other/8081']);
    expect(resumed.removed_resources).toEqual(['default/gone/1']);
    expect(resumed.system_version_info).toBe(encodeVersion({ lineage, seq: relay.control.groups().find((g) => g.group === 'raw')?.typeHistory[CLUSTER_TYPE_URL]?.at(-1) ?? -1 }));

    // Named Delta subscription change: unsubscribe wildcard, subscribe one name.
    again.send({ type_url: CLUSTER_TYPE_URL, response_nonce: resumed.nonce, resource_names_unsubscribe: ['*'], resource_names_subscribe: ['default/app/8080'] });
    expect(await again.silentFor(300)).toBe(true); // it already holds that resource at its version
  });

  test('an opaque type URL over ADS is subscribed upstream on demand without disturbing the stream', async () => {
    const stream = sotw();
    stream.send({ node: node('raw-opaque'), type_url: RUNTIME_TYPE_URL, resource_names: ['rtds'] });
    stream.send({ type_url: LISTENER_TYPE_URL });
    const listeners = await stream.next();
    expect(listeners.type_url).toBe(LISTENER_TYPE_URL);
    // The reference control plane does not serve Runtime: the relay's upstream stream for it fails and
    // is retried with backoff, and the downstream stream stays open.
    await eventually(() => (relay.upstreamStreamsOpened().raw?.[RUNTIME_TYPE_URL] ?? 0) >= 2, 'runtime upstream retried');
    expect(observer.requests('raw-opaque', RUNTIME_TYPE_URL)[0]?.classification.kind).toBe('initial');
    expect(stream.isEnded).toBe(false);
    // A barrier does not wait for a type that never had data (it would wait forever here).
    const reopened = await relay.control.reopenUpstream('raw');
    expect(reopened.types[RUNTIME_TYPE_URL]).toBe(0);
    expect(reopened.types[LISTENER_TYPE_URL]).toBeGreaterThan(0);
  });
});
