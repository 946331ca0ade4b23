// The relay's caps against a client that opens streams, node ids and node groups without end: streams
// per peer address, live node ids, live node groups. Over a cap the new stream ends RESOURCE_EXHAUSTED
// naming the limit and xds_programmed_gateway_streams_refused_total{reason} counts it; streams already served
// are untouched, and a legitimate client from another address keeps getting config throughout.
import * as grpc from '@grpc/grpc-js';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { Relay, RelayOptions } from '../../../xds-gateway/relay/relay';
import { endpointsOf, eventually, httpProxy, newSource, RecordingObserver, sleep, startTestControlPlane, startTestRelay } from '../gateway-relay/helpers';
import { ack, AdsClients, LoopbackForwarder, RecordingRelayMetrics, type Reader } from './hostile-helpers';

describe('relay caps: streams per peer, node ids, node groups', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  const clients = new AdsClients();
  const relays: Relay[] = [];
  const forwarders: LoopbackForwarder[] = [];

  beforeAll(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
  });

  afterAll(async () => {
    clients.close();
    for (const forwarder of forwarders) await forwarder.close();
    for (const relay of relays) await relay.control.close();
    await controlPlane.close();
    await source.close();
  });

  const relayWith = async (limits: Partial<RelayOptions['limits']>, instanceId: string): Promise<{ relay: Relay; metrics: RecordingRelayMetrics }> => {
    const metrics = new RecordingRelayMetrics();
    const relay = await startTestRelay(controlPlane.address, new RecordingObserver(), { instanceId, metrics, limits });
    relays.push(relay);
    return { relay, metrics };
  };
  const served = async (reader: Reader): Promise<void> => {
    expect((await reader.next()).resources?.length).toBeGreaterThan(0);
  };
  const refused = async (reader: Reader, details: RegExp): Promise<void> => {
    const status = await Promise.race([reader.status, sleep(5000).then(() => ({ code: grpc.status.OK, details: 'still open after 5 s' }))]);
    expect({ code: grpc.status[status.code], details: status.details }).toEqual({ code: 'RESOURCE_EXHAUSTED', details: expect.stringMatching(details) });
  };

  test('streams per peer address count every connection of the address; another address is not affected', async () => {
    const { relay, metrics } = await relayWith({ maxStreamsPerPeer: 3 }, 'gw-peer');
    const first = clients.connection(relay.port);
    const second = clients.connection(relay.port);
    const streams = [clients.askClusters(first, { id: 'p-1', cluster: 'peer' }), clients.askClusters(first, { id: 'p-1', cluster: 'peer' }), clients.askClusters(second, { id: 'p-2', cluster: 'peer' })];
    for (const stream of streams) await served(stream);
    const over = clients.askClusters(clients.connection(relay.port), { id: 'p-3', cluster: 'peer' });
    await refused(over, /at most 3 streams per peer address/);
    expect(metrics.refused.peer_streams).toBe(1);

    const forwarder = new LoopbackForwarder(relay.port);
    forwarders.push(forwarder);
    await forwarder.start();
    const elsewhere = clients.connection(forwarder.port);
    for (const id of ['q-1', 'q-2', 'q-3']) await served(clients.askClusters(elsewhere, { id, cluster: 'peer' }));

    // A closed stream gives its place back.
    streams[0]?.close();
    await eventually(() => relay.openStreams() === 5, 'the closed stream no longer counted');
    await served(clients.askClusters(first, { id: 'p-1', cluster: 'peer' }));
  });

  test('live node ids: a new node id over the cap is refused; a known one is still served', async () => {
    const { relay, metrics } = await relayWith({ maxNodeIds: 3 }, 'gw-ids');
    const connection = clients.connection(relay.port);
    for (const id of ['n-1', 'n-2', 'n-3']) await served(clients.askClusters(connection, { id, cluster: 'ids' }));
    await refused(clients.askClusters(connection, { id: 'n-4', cluster: 'ids' }), /at most 3 node ids/);
    expect(metrics.refused.node_ids).toBe(1);
    await served(clients.askClusters(connection, { id: 'n-2', cluster: 'ids' }));
  });

  test('live node groups: a new group over the cap is refused, unless a group without streams can give way', async () => {
    const { relay, metrics } = await relayWith({ maxGroups: 2 }, 'gw-groups');
    const connection = clients.connection(relay.port);
    const a = clients.askClusters(connection, { id: 'g-1', cluster: 'group-a' });
    await served(a);
    await served(clients.askClusters(connection, { id: 'g-2', cluster: 'group-b' }));
    await refused(clients.askClusters(connection, { id: 'g-3', cluster: 'group-c' }), /at most 2 node groups/);
    expect(metrics.refused.node_groups).toBe(1);

    // group-a has no stream left (its idle time, 60 s by default, has not passed): it gives way.
    a.close();
    await eventually(() => relay.openStreams() === 1, 'group-a has no stream');
    await served(clients.askClusters(connection, { id: 'g-3', cluster: 'group-c' }));
    expect(relay.control.groups().map((g) => g.group).sort()).toEqual(['group-b', 'group-c']);
    expect(metrics.refused.node_groups).toBe(1);
  });

  test('a hostile client hits every cap while a legitimate client on other node ids keeps getting config', async () => {
    const { relay, metrics } = await relayWith({ maxStreamsPerPeer: 6, maxNodeIds: 4, maxGroups: 3 }, 'gw-mixed');
    const forwarder = new LoopbackForwarder(relay.port);
    forwarders.push(forwarder);
    await forwarder.start();
    const legitConnection = clients.connection(forwarder.port);
    const legit = clients.askClusters(legitConnection, { id: 'legit-1', cluster: 'legit' });
    const before = await legit.next();
    ack(legit, before);

    const hostile = clients.connection(relay.port);
    // Groups: legit, h-a, h-b fill the cap of 3.
    await served(clients.askClusters(hostile, { id: 'h-1', cluster: 'h-a' }));
    await served(clients.askClusters(hostile, { id: 'h-2', cluster: 'h-b' }));
    await refused(clients.askClusters(hostile, { id: 'h-3', cluster: 'h-c' }), /at most 3 node groups/);
    // Node ids: legit-1, h-1, h-2, h-3 fill the cap of 4.
    await served(clients.askClusters(hostile, { id: 'h-3', cluster: 'h-a' }));
    await refused(clients.askClusters(hostile, { id: 'h-4', cluster: 'h-a' }), /at most 4 node ids/);
    // Streams from the hostile address: 3 live, 3 more fill the cap of 6.
    for (let i = 0; i < 3; i++) await served(clients.askClusters(hostile, { id: 'h-1', cluster: 'h-a' }));
    await refused(clients.askClusters(hostile, { id: 'h-1', cluster: 'h-a' }), /at most 6 streams per peer address/);
    expect(metrics.refused).toMatchObject({ peer_streams: 1, node_ids: 1, node_groups: 1 });

    // The legitimate client's stream lives on and gets the next config change; a second stream of
    // its node id on its connection is served too.
    source.applyEndpoints(endpointsOf('after-flood', '10.0.0.2', 8080));
    source.applyProxy(httpProxy('after-flood', 'after.example.com', 8080));
    const after = await legit.next();
    expect(after.version_info).not.toBe(before.version_info);
    expect(after.resources?.length).toBeGreaterThan(before.resources?.length ?? 0);
    expect(legit.isEnded).toBe(false);
    await served(clients.askClusters(legitConnection, { id: 'legit-1', cluster: 'legit' }));
  });
});
