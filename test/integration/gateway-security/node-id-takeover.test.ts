// One live stream set per node id: the streams of a node id on one connection (ADS, or several
// per-type streams) are that Envoy's; a stream of the same node id from another connection replaces
// them (UNAVAILABLE "replaced by a newer connection with the same node id"), logged with both peers
// and counted. The observer hears the old streams close before the new one opens, so the tracker sees
// a normal disconnect, then a new connection: two connections never feed one Envoy's state.
import * as grpc from '@grpc/grpc-js';
import { CLUSTER_TYPE_URL, LISTENER_TYPE_URL } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { LocalDynamo } from '../../../infra/local/dynamo';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import type { Relay } from '../../../xds-gateway/relay/relay';
import { envoyEvents, envoyState, eventually as eventuallyStored, httpGet, startDynamoAndControlPlane, startTestGateway } from '../gateway/helpers';
import { eventually, newSource, RecordingObserver, startTestControlPlane, startTestRelay } from '../gateway-relay/helpers';
import { ack, AdsClients, RecordingRelayMetrics, type Reader } from './hostile-helpers';
import { captureLogger, type CapturedLogger } from './log-capture';

const REPLACED = 'replaced by a newer connection with the same node id';

const endedReplaced = async (reader: Reader): Promise<void> => {
  const status = await reader.status;
  expect({ code: grpc.status[status.code], details: status.details }).toEqual({ code: 'UNAVAILABLE', details: REPLACED });
};

describe('node id takeover (relay)', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let relay: Relay;
  let observer: RecordingObserver;
  let metrics: RecordingRelayMetrics;
  let logs: CapturedLogger;
  const clients = new AdsClients();

  beforeAll(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    observer = new RecordingObserver();
    metrics = new RecordingRelayMetrics();
    logs = captureLogger('warn');
    relay = await startTestRelay(controlPlane.address, observer, { metrics, logger: logs.logger });
  });

  afterAll(async () => {
    clients.close();
    await relay.control.close();
    await controlPlane.close();
    await source.close();
  });

  test('a newer connection takes the node id over; the old streams are reported closed before the new one opens', async () => {
    const node = { id: 'victim', cluster: 'takeover' };
    const old = clients.connection(relay.port);
    const oldClusters = clients.askClusters(old, node);
    await oldClusters.next();
    // A second stream of the node id on the same connection (per-type style): one stream set.
    const oldListeners = clients.stream(old);
    oldListeners.send({ node, type_url: LISTENER_TYPE_URL, resource_names: [] });
    await oldListeners.next();
    expect(oldClusters.isEnded).toBe(false);
    expect(metrics.takeovers).toBe(0);

    const newer = clients.connection(relay.port);
    const newClusters = clients.askClusters(newer, node);
    expect((await newClusters.next()).resources?.length).toBeGreaterThan(0);
    await endedReplaced(oldClusters);
    await endedReplaced(oldListeners);
    expect(metrics.takeovers).toBe(1);

    const opened = observer.of('streamOpened').filter((e) => e.node.nodeId === 'victim').map((e) => e.streamId);
    expect(opened).toHaveLength(3);
    const [oldA, oldB, newStream] = opened as [string, string, string];
    const at = (predicate: (e: (typeof observer.events)[number]) => boolean): number => observer.events.findIndex(predicate);
    const newOpened = at((e) => e.event === 'streamOpened' && e.streamId === newStream);
    const newFirstRequest = at((e) => e.event === 'requestClassified' && e.streamId === newStream);
    for (const closed of [oldA, oldB]) {
      const index = at((e) => e.event === 'streamClosed' && e.streamId === closed);
      expect(index).toBeGreaterThanOrEqual(0);
      expect(index).toBeLessThan(newOpened);
    }
    expect(newOpened).toBeLessThan(newFirstRequest);

    const warning = logs.lines().find((line) => line['msg'] === 'relay: node id claimed by a newer connection; ending its streams on the previous one');
    expect(warning).toMatchObject({ nodeId: 'victim', previousStreams: 2 });
    expect(typeof warning?.['peer']).toBe('string');
    expect(typeof warning?.['previousPeer']).toBe('string');
    expect(warning?.['peer']).not.toBe(warning?.['previousPeer']);

    // More streams of the node id on the new connection are the same Envoy: nothing is ended.
    const newListeners = clients.stream(newer);
    newListeners.send({ node, type_url: LISTENER_TYPE_URL, resource_names: [] });
    await newListeners.next();
    expect(await newClusters.silentFor(200)).toBe(true);
    expect(newClusters.isEnded).toBe(false);
    expect(metrics.takeovers).toBe(1);

    // The victim reconnects and takes its node id back.
    const back = clients.askClusters(clients.connection(relay.port), node);
    await back.next();
    await endedReplaced(newClusters);
    await endedReplaced(newListeners);
    expect(metrics.takeovers).toBe(2);
  });

  test('other node ids on the old connection are not touched', async () => {
    const shared = clients.connection(relay.port);
    const bystander = clients.askClusters(shared, { id: 'bystander', cluster: 'takeover' });
    const target = clients.askClusters(shared, { id: 'target', cluster: 'takeover' });
    await bystander.next();
    await target.next();
    await clients.askClusters(clients.connection(relay.port), { id: 'target', cluster: 'takeover' }).next();
    await endedReplaced(target);
    expect(await bystander.silentFor(200)).toBe(true);
    expect(bystander.isEnded).toBe(false);
  });
});

describe('node id takeover (gateway: the tracker sees a disconnect, then a new connection)', () => {
  let dynamo: LocalDynamo;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let gateway: Gateway;
  const clients = new AdsClients();

  beforeAll(async () => {
    ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
    gateway = await startTestGateway({ upstream: controlPlane.address, table: 'gw-takeover', 'dynamodb-endpoint': dynamo.endpoint, 'instance-id': 'gw-takeover' });
  });

  afterAll(async () => {
    clients.close();
    await gateway.close();
    await controlPlane.close();
    await source.close();
    await dynamo.close();
  });

  test('the old connection\'s streams are a disconnect for the tracker; the new connection is recorded and ACKs', async () => {
    const node = { id: 'pod-7', cluster: 'edge' };
    const old = clients.askClusters(clients.connection(gateway.xdsPort), node);
    const first = await old.next();
    ack(old, first);
    await eventuallyStored(async () => (await envoyEvents(gateway.store, 'pod-7')).some((e) => e.outcome === 'ACK'), 'the first connection\'s ACK stored');
    const connectedBefore = gateway.tracker.envoyState('pod-7')?.connectedAt;
    expect(gateway.tracker.snapshot().streams).toBe(1);

    const replacing = clients.askClusters(clients.connection(gateway.xdsPort), node);
    const response = await replacing.next();
    await endedReplaced(old);
    // One stream left for the node id, connected again (not a second connection merged in).
    expect(gateway.tracker.snapshot().streams).toBe(1);
    const state = gateway.tracker.envoyState('pod-7');
    expect(state?.status).toBe('CONNECTED');
    expect(state?.connectedAt).toBeGreaterThan(connectedBefore ?? Number.POSITIVE_INFINITY);

    ack(replacing, response);
    // The ACK on the new connection is recorded on the state of that connection (an ACK event at the
    // same version as the first one is the same event, listed once).
    const stored = await eventuallyStored(async () => {
      const read = await envoyState(gateway.store, 'pod-7');
      return read !== undefined && read.connectedAt === state?.connectedAt && read.types[CLUSTER_TYPE_URL]?.acked !== undefined ? read : undefined;
    }, 'the new connection\'s state stored with its ACK');
    expect(stored.status).toBe('CONNECTED');
    const metricsText = (await httpGet(gateway.opsPort, '/metrics')).body;
    expect(metricsText).toMatch(/^xds_programmed_gateway_node_id_takeovers_total 1$/m);
  });

  test('a takeover from another node group whose connection ends before its state is stored: the table says DISCONNECTED, not the old group\'s CONNECTED', async () => {
    const old = clients.askClusters(clients.connection(gateway.xdsPort), { id: 'mover', cluster: 'group-a' });
    ack(old, await old.next());
    const before = await eventuallyStored(async () => {
      const read = await envoyState(gateway.store, 'mover');
      return read?.status === 'CONNECTED' && read.types[CLUSTER_TYPE_URL]?.acked !== undefined ? read : undefined;
    }, 'the first connection\'s state stored');
    // Writes held back: the newer connection's connect and its disconnect reach the table as one
    // state, written over the first connection's CONNECTED on the other group's lineage.
    dynamo.faults.setHook((request) => (['PutItem', 'UpdateItem', 'BatchWriteItem', 'TransactWriteItems'].includes(request.operation) ? 'throttle' : 'none'));
    let lineage: string | undefined;
    try {
      const newer = clients.askClusters(clients.connection(gateway.xdsPort), { id: 'mover', cluster: 'group-b' });
      await endedReplaced(old);
      await eventually(() => gateway.tracker.envoyState('mover')?.lineage !== before.lineage, 'the tracker follows the newer connection');
      newer.close();
      await eventually(() => gateway.tracker.envoyState('mover')?.status === 'DISCONNECTED', 'the newer connection gone');
      lineage = gateway.tracker.envoyState('mover')?.lineage;
    } finally {
      dynamo.faults.setHook(undefined);
    }
    // Kept CONNECTED, the state had no stream behind it and held its group's objects Pending.
    const stored = await eventuallyStored(async () => {
      const read = await envoyState(gateway.store, 'mover');
      return read?.status === 'DISCONNECTED' ? read : undefined;
    }, 'the disconnect stored', 10_000);
    expect({ status: stored.status, lineage: stored.lineage }).toEqual({ status: 'DISCONNECTED', lineage });
  });

  test('the caps are wired from flags: refusals are counted by reason on /metrics', async () => {
    const capped = await startTestGateway({
      upstream: controlPlane.address,
      table: 'gw-takeover',
      'dynamodb-endpoint': dynamo.endpoint,
      'instance-id': 'gw-capped',
      'max-node-ids': '1',
      'max-streams-per-peer': '2',
      'max-node-groups': '1',
    });
    try {
      const connection = clients.connection(capped.xdsPort);
      await clients.askClusters(connection, { id: 'only-1', cluster: 'edge' }).next();
      const status = (reader: Reader) => reader.status.then((s) => [grpc.status[s.code], s.details]);
      expect(await status(clients.askClusters(connection, { id: 'only-2', cluster: 'edge' }))).toEqual(['RESOURCE_EXHAUSTED', 'relay serves at most 1 node ids (limit maxNodeIds)']);
      expect(await status(clients.askClusters(connection, { id: 'only-1', cluster: 'other' }))).toEqual(['RESOURCE_EXHAUSTED', 'relay serves at most 1 node groups (limit maxGroups)']);
      await clients.askClusters(connection, { id: 'only-1', cluster: 'edge' }).next();
      expect(await status(clients.askClusters(connection, { id: 'only-1', cluster: 'edge' }))).toEqual(['RESOURCE_EXHAUSTED', 'relay serves at most 2 streams per peer address (limit maxStreamsPerPeer)']);
      const metricsText = (await httpGet(capped.opsPort, '/metrics')).body;
      for (const reason of ['node_ids', 'node_groups', 'peer_streams']) expect(metricsText).toContain(`xds_programmed_gateway_streams_refused_total{reason="${reason}"} 1`);
      expect(metricsText).toContain('xds_programmed_gateway_streams_refused_total{reason="node_id_not_in_cert"} 0');
    } finally {
      await capped.close();
    }
  });

  test('--group-idle-ms frees an unused group: its lineage is retired in the tracker and the freeing counted', async () => {
    const idle = await startTestGateway({ upstream: controlPlane.address, table: 'gw-takeover', 'dynamodb-endpoint': dynamo.endpoint, 'instance-id': 'gw-idle', 'group-idle-ms': '200' });
    try {
      const reader = clients.askClusters(clients.connection(idle.xdsPort), { id: 'idle-envoy', cluster: 'edge' });
      await reader.next();
      const lineage = idle.relay.control.groups()[0]?.lineage ?? '';
      expect(idle.tracker.lineageState(lineage)).toBeDefined();
      reader.close();
      await eventually(() => idle.relay.control.groups().length === 0, 'the group freed');
      expect(idle.tracker.lineageState(lineage)).toBeUndefined();
      const metricsText = (await httpGet(idle.opsPort, '/metrics')).body;
      expect(metricsText).toMatch(/^xds_programmed_gateway_node_groups_freed_total 1$/m);
      expect(metricsText).not.toContain('xds_programmed_gateway_lineage_moves_total{');
      expect(metricsText).not.toContain(`lineage="${lineage}"`);
    } finally {
      await idle.close();
    }
  });
});
