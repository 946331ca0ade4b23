// The relay against a scripted upstream (a real gRPC xDS server whose responses the test writes):
// bytes are relayed untouched (including a type the relay knows nothing about), a malformed upstream
// response is NACKed upstream while Envoys keep the last good content, and identical bytes under a new
// upstream version take no new seq.
import * as grpc from '@grpc/grpc-js';
import {
  ADS_SERVICE,
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  createDiscoveryClient,
  openAdsSotw,
  packAny,
  unpackAny as unpackAnyResource,
  type AnyResource,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../../common/xds';
import type { Relay } from '../../../xds-gateway/relay';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener, grpcRouteConfiguration } from '../../../infra/local/envoys/grpcXdsResources';
import { eventually, RecordingObserver, sleep, startTestRelay } from './helpers';
import { ScriptedUpstream } from './scripted-upstream';
import { StreamReader } from './stream-reader';

const OPAQUE_TYPE_URL = 'type.googleapis.com/example.v1.Opaque';

/** An opaque resource: field 1 = name, field 2 = payload bytes (a valid message of unknown type). */
function opaque(name: string, payload: string): AnyResource {
  const nameBytes = Buffer.from(name);
  const payloadBytes = Buffer.from(payload);
  return { type_url: OPAQUE_TYPE_URL, value: Buffer.concat([Buffer.from([0x0a, nameBytes.length]), nameBytes, Buffer.from([0x12, payloadBytes.length]), payloadBytes]) };
}

describe('relay against a scripted upstream', () => {
  let upstream: ScriptedUpstream;
  let observer: RecordingObserver;
  let relay: Relay;
  let client: grpc.Client;
  const readers: StreamReader<DiscoveryRequest, DiscoveryResponse>[] = [];

  beforeAll(async () => {
    upstream = new ScriptedUpstream();
    await upstream.start();
    observer = new RecordingObserver();
    relay = await startTestRelay(`127.0.0.1:${upstream.port}`, observer);
    client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    client.close();
    await relay.control.close();
    upstream.close();
  });

  const envoy = (id: string, typeUrl: string): StreamReader<DiscoveryRequest, DiscoveryResponse> => {
    const reader = new StreamReader(openAdsSotw(client));
    readers.push(reader);
    reader.send({ node: { id, cluster: 'scripted' }, type_url: typeUrl });
    return reader;
  };
  const bytes = (response: DiscoveryResponse): string[] => (response.resources ?? []).map((r) => Buffer.from(r.value).toString('hex'));

  test('an opaque type is relayed byte for byte; identical bytes under a new upstream version take no new seq', async () => {
    const stream = envoy('opaque-1', OPAQUE_TYPE_URL);
    await eventually(() => upstream.subscribed(OPAQUE_TYPE_URL), 'relay subscribed upstream');
    const sent = [opaque('a', 'payload-a'), opaque('b', 'payload-b')];
    upstream.respond(OPAQUE_TYPE_URL, 'upstream-v1', sent);
    const first = await stream.next();
    expect(first.type_url).toBe(OPAQUE_TYPE_URL);
    expect(bytes(first)).toEqual(sent.map((r) => Buffer.from(r.value).toString('hex')));
    expect(first.resources?.map((r) => r.type_url)).toEqual([OPAQUE_TYPE_URL, OPAQUE_TYPE_URL]);
    stream.send({ type_url: OPAQUE_TYPE_URL, response_nonce: first.nonce, version_info: first.version_info });

    // Same bytes, new upstream version (Contour does this on every rebuild): no new seq, no push.
    upstream.respond(OPAQUE_TYPE_URL, 'upstream-v2', sent);
    await eventually(() => observer.of('upstreamApplied').filter((e) => e.typeUrl === OPAQUE_TYPE_URL).length === 2, 'second upstream response applied');
    expect(observer.of('upstreamApplied').at(-1)).toMatchObject({ changed: false, upstreamVersion: 'upstream-v2', resources: [{ name: 'a' }, { name: 'b' }] });
    expect(await stream.silentFor(300)).toBe(true);
    // The relay ACKed both upstream responses with their nonce and version.
    const acks = upstream.requests.filter((r) => r.type_url === OPAQUE_TYPE_URL && (r.response_nonce ?? '') !== '');
    expect(acks.map((r) => r.version_info)).toEqual(['upstream-v1', 'upstream-v2']);
    expect(acks.every((r) => r.error_detail === undefined || r.error_detail === null)).toBe(true);
    // The upstream sees the gateway's node for the group (its own id, the group's cluster), once per
    // stream, and a wildcard subscription with an empty version_info.
    const initial = upstream.requests.find((r) => r.type_url === OPAQUE_TYPE_URL);
    expect(initial).toMatchObject({ node: { id: 'xds-gateway.gw-test.scripted', cluster: 'scripted', user_agent_name: 'xds-gateway' }, resource_names: [], version_info: '' });
    expect(acks.every((r) => r.node === undefined || r.node === null)).toBe(true);
  });

  test('ADS order: changes arriving RDS, LDS, EDS, CDS within the coalescing window go out CDS, EDS, LDS, RDS', async () => {
    const ordered = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), { pushCoalesceMs: 200, instanceId: 'gw-order' });
    const orderedClient = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${ordered.port}`);
    try {
      const stream = new StreamReader(openAdsSotw(orderedClient));
      readers.push(stream);
      const types = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
      stream.send({ node: { id: 'ordered-1', cluster: 'ordered' }, type_url: types[0] });
      for (const typeUrl of types.slice(1)) stream.send({ type_url: typeUrl });
      const upstreamNodeSeen = (typeUrl: string): boolean =>
        upstream.requests.some((r) => r.type_url === typeUrl && r.node?.id === 'xds-gateway.gw-order.ordered');
      await eventually(() => types.every(upstreamNodeSeen), 'all four types subscribed upstream');
      const resource = (typeUrl: string, generation: number): AnyResource =>
        typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL
          ? packAny(typeUrl, { cluster_name: `r${generation}` })
          : packAny(typeUrl, { name: `r${generation}` });
      for (const typeUrl of types) upstream.respond(typeUrl, 'v1', [resource(typeUrl, 1)]);
      for (let i = 0; i < types.length; i++) {
        const response = await stream.next();
        stream.send({ type_url: response.type_url, response_nonce: response.nonce, version_info: response.version_info });
      }
      // Reverse order, a few ms apart, on four different upstream streams.
      for (const typeUrl of [...types].reverse()) {
        upstream.respond(typeUrl, 'v2', [resource(typeUrl, 2)]);
        await sleep(10);
      }
      const received: string[] = [];
      for (let i = 0; i < types.length; i++) received.push((await stream.next()).type_url ?? '');
      expect(received).toEqual(types);
    } finally {
      orderedClient.close();
      await ordered.control.close();
    }
  });

  test('a malformed upstream response is NACKed upstream; Envoys keep the last good content', async () => {
    const stream = envoy('cds-1', CLUSTER_TYPE_URL);
    await eventually(() => upstream.subscribed(CLUSTER_TYPE_URL), 'relay subscribed upstream');
    const good = [packAny(CLUSTER_TYPE_URL, { name: 'c1' }), packAny(CLUSTER_TYPE_URL, { name: 'c2' })];
    upstream.respond(CLUSTER_TYPE_URL, 'good-1', good);
    const first = await stream.next();
    stream.send({ type_url: CLUSTER_TYPE_URL, response_nonce: first.nonce, version_info: first.version_info });

    const badNonce = upstream.respond(CLUSTER_TYPE_URL, 'bad-2', [packAny(CLUSTER_TYPE_URL, { name: 'c1' }), packAny(CLUSTER_TYPE_URL, { name: 'c1', connect_timeout: { seconds: '3' } })]);
    const nack = await eventually(() => upstream.requests.find((r) => r.response_nonce === badNonce), 'upstream NACK');
    expect(nack.error_detail?.message).toMatch(/duplicate resource name "c1"/);
    expect(nack.version_info).toBe('good-1');
    expect(await stream.silentFor(300)).toBe(true);

    // Another type URL in a resource of this type is refused too.
    const wrongNonce = upstream.respond(CLUSTER_TYPE_URL, 'bad-3', [opaque('x', 'y')]);
    const wrong = await eventually(() => upstream.requests.find((r) => r.response_nonce === wrongNonce), 'upstream NACK of wrong type');
    expect(wrong.error_detail?.message).toMatch(/has type_url .*Opaque, expected .*Cluster/);

    // A new Envoy still gets the last good content.
    const late = envoy('cds-2', CLUSTER_TYPE_URL);
    const served = await late.next();
    expect(served.version_info).toBe(first.version_info);
    expect(bytes(served)).toEqual(good.map((r) => Buffer.from(r.value).toString('hex')));
  });

  describe('make-before-break: a route moving to another cluster', () => {
    const TYPES = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];
    const endpoints = (name: string): AnyResource => grpcClusterLoadAssignment(name, [{ host: '127.0.0.1', port: 8080 }]);
    const names = (response: DiscoveryResponse): string[] =>
      (response.resources ?? []).map((r) => (r.type_url === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL ? String(unpack(r)['cluster_name']) : String(unpack(r)['name'])));
    const unpack = (resource: AnyResource): Record<string, unknown> => unpackAnyResource(resource);

    /** A gRPC-like client on one ADS stream, subscribing by name; answers every response at once. */
    async function grpcLikeClient(relayUnderTest: Relay, nodeId: string, group: string) {
      const adsClient = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relayUnderTest.port}`);
      const stream = new StreamReader(openAdsSotw(adsClient));
      readers.push(stream);
      const subscriptions = new Map<string, string[]>([
        [LISTENER_TYPE_URL, ['web']],
        [ROUTE_CONFIGURATION_TYPE_URL, ['web-routes']],
        [CLUSTER_TYPE_URL, ['a']],
        [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, ['a']],
      ]);
      const last = new Map<string, DiscoveryResponse>();
      stream.send({ node: { id: nodeId, cluster: group }, type_url: LISTENER_TYPE_URL, resource_names: subscriptions.get(LISTENER_TYPE_URL) });
      for (const typeUrl of TYPES.slice(1)) stream.send({ type_url: typeUrl, resource_names: subscriptions.get(typeUrl) });
      const received: Array<{ typeUrl: string; names: string[] }> = [];
      const take = async (): Promise<DiscoveryResponse> => {
        const response = await stream.next();
        last.set(response.type_url ?? '', response);
        received.push({ typeUrl: response.type_url ?? '', names: names(response) });
        return response;
      };
      const ack = (response: DiscoveryResponse): void =>
        stream.send({ type_url: response.type_url, response_nonce: response.nonce, version_info: response.version_info, resource_names: subscriptions.get(response.type_url ?? '') });
      const resubscribe = (typeUrl: string, next: string[]): void => {
        subscriptions.set(typeUrl, next);
        const previous = last.get(typeUrl);
        stream.send({ type_url: typeUrl, response_nonce: previous?.nonce, version_info: previous?.version_info, resource_names: next });
      };
      return { stream, take, ack, resubscribe, received, close: () => adsClient.close() };
    }

    /** Once the relay subscribed upstream for `upstreamNode`: route web → cluster a, every type answered and ACKed. */
    async function routeToA(client: Awaited<ReturnType<typeof grpcLikeClient>>, upstreamNode: string): Promise<void> {
      await eventually(() => TYPES.every((typeUrl) => upstream.requests.some((r) => r.type_url === typeUrl && r.node?.id === upstreamNode)), 'all four types subscribed upstream');
      upstream.respond(LISTENER_TYPE_URL, 'v1', [grpcListener('web', 'web-routes')]);
      upstream.respond(ROUTE_CONFIGURATION_TYPE_URL, 'v1', [grpcRouteConfiguration('web-routes', 'a')]);
      upstream.respond(CLUSTER_TYPE_URL, 'v1', [grpcCluster('a')]);
      upstream.respond(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'v1', [endpoints('a')]);
      for (let i = 0; i < TYPES.length; i++) client.ack(await client.take());
    }

    test('ADS: the old cluster is not removed under a by-name client before the route has moved off it', async () => {
      const relayUnderTest = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), { instanceId: 'gw-mbb' });
      const client = await grpcLikeClient(relayUnderTest, 'mbb-1', 'mbb');
      try {
        await routeToA(client, 'xds-gateway.gw-mbb.mbb');

        // The rebuild arrives in the worst order for this client: the cluster list without a first.
        upstream.respond(CLUSTER_TYPE_URL, 'v2', [grpcCluster('b')]);
        upstream.respond(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'v2', [endpoints('b')]);
        await sleep(30);
        upstream.respond(ROUTE_CONFIGURATION_TYPE_URL, 'v2', [grpcRouteConfiguration('web-routes', 'b')]);
        let movedAt = -1;
        for (;;) {
          const response = await client.take();
          if (response.type_url === ROUTE_CONFIGURATION_TYPE_URL) {
            movedAt = client.received.length - 1;
            client.ack(response);
            // As gRPC does: the route's cluster is asked for only after the route was accepted.
            client.resubscribe(CLUSTER_TYPE_URL, ['a', 'b']);
            continue;
          }
          client.ack(response);
          if (response.type_url === CLUSTER_TYPE_URL && names(response).includes('b')) break;
        }
        client.resubscribe(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, ['a', 'b']);
        client.resubscribe(CLUSTER_TYPE_URL, ['b']);
        // Every CDS/EDS response before the move still held a for this client.
        const beforeMove = client.received.slice(0, movedAt).filter((r) => r.typeUrl === CLUSTER_TYPE_URL || r.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL);
        expect(beforeMove.length).toBeGreaterThan(TYPES.length / 2);
        expect(beforeMove.every((r) => r.names.includes('a'))).toBe(true);
        // Once every client answered the move, a is removed (a new version of each type), well
        // before the 10 s grace period.
        const info = () => relayUnderTest.control.groups().find((g) => g.group === 'mbb');
        const started = Date.now();
        while (info()?.pendingRemovals !== 0 && Date.now() - started < 5000) {
          const response = await client.take().catch(() => undefined);
          if (response !== undefined) client.ack(response);
        }
        expect(info()?.pendingRemovals).toBe(0);
      } finally {
        client.close();
        await relayUnderTest.control.close();
      }
    });

    test('a client that never answers the move holds the removal back for the grace period only', async () => {
      const relayUnderTest = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), { instanceId: 'gw-grace', makeBeforeBreakGraceMs: 300 });
      const client = await grpcLikeClient(relayUnderTest, 'grace-1', 'grace');
      try {
        await routeToA(client, 'xds-gateway.gw-grace.grace');
        upstream.respond(ROUTE_CONFIGURATION_TYPE_URL, 'v2', [grpcRouteConfiguration('web-routes', 'b')]);
        upstream.respond(CLUSTER_TYPE_URL, 'v2', [grpcCluster('b')]);
        // The RDS move is received but never answered; CDS responses are.
        const info = () => relayUnderTest.control.groups().find((g) => g.group === 'grace');
        await eventually(() => (info()?.pendingRemovals ?? 0) > 0, 'a pending removal');
        await eventually(() => info()?.pendingRemovals === 0, 'the removal released after the grace period', 5000);
      } finally {
        client.close();
        await relayUnderTest.control.close();
      }
    });
  });
});
