// The real xDS client (@grpc/grpc-js-xds) harness against the fake xDS server: per-channel
// bootstraps give each channel its own node id, channels resolve xds:///<listener>, and an RPC
// reaches the backend the EDS config points at.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  packAny,
  type DiscoveryRequest,
} from '../../../common/xds';
import { grpcClusterLoadAssignment, grpcXdsResources } from '../../../infra/local/envoys/grpcXdsResources';
import { RealClientFleet, startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';
import { FakeXdsServer } from './fakeXdsServer';
import { PollTimeoutError, waitFor } from '../../support/eventually';

/** Waits for `predicate` at most `timeoutMs`, then returns either way (the caller's expects decide). */
async function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  try {
    await waitFor('predicate', () => predicate() || undefined, { timeoutMs, intervalMs: 25 });
  } catch (error) {
    if (!(error instanceof PollTimeoutError)) throw error;
  }
}

describe('real grpc-js-xds clients against a fake xDS server', () => {
  let server: FakeXdsServer;
  let backendA: EchoBackend;
  let backendB: EchoBackend;
  let clients: RealClientFleet | undefined;
  let address: string;

  beforeAll(async () => {
    server = new FakeXdsServer();
    address = await server.start();
    backendA = await startEchoBackend('backend-a');
    backendB = await startEchoBackend('backend-b');
    const resources = grpcXdsResources({
      listenerName: 'echo',
      routeConfigName: 'echo-routes',
      clusterName: 'echo-cluster',
      endpoints: [{ host: backendA.host, port: backendA.port }],
    });
    server.setResources(LISTENER_TYPE_URL, 'v1', [{ name: 'echo', version: 'v1', any: resources.listener }]);
    server.setResources(ROUTE_CONFIGURATION_TYPE_URL, 'v1', [{ name: 'echo-routes', version: 'v1', any: resources.routeConfiguration }]);
    server.setResources(CLUSTER_TYPE_URL, 'v1', [{ name: 'echo-cluster', version: 'v1', any: resources.cluster }]);
    server.setResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'v1', [{ name: 'echo-cluster', version: 'v1', any: resources.clusterLoadAssignment }]);
  });

  afterEach(() => {
    clients?.close();
    clients = undefined;
  });

  afterAll(async () => {
    await server.stop();
    await backendA.close();
    await backendB.close();
  });

  const sotwRequests = (): DiscoveryRequest[] => server.requests.filter((r) => r.kind === 'sotw').map((r) => r.request as DiscoveryRequest);

  test('three channels, three node ids, all READY, RPCs reach the backend and follow an EDS change', async () => {
    clients = new RealClientFleet({ xdsServerAddress: address, listenerName: 'echo', count: 3 });
    await clients.waitAllReady(20_000);
    const replies = await Promise.all(clients.clients.map((client) => client.echo(`hi from ${client.nodeId}`)));
    expect(replies.map((r) => r.backend)).toEqual(['backend-a', 'backend-a', 'backend-a']);
    expect(replies[1]?.message).toBe('hi from grpc-1');

    // Each channel has its own XdsClient, so its own ADS stream whose first request names its node.
    const nodesByStream = new Map<number, string>();
    for (const r of server.requests) {
      const nodeId = (r.request as DiscoveryRequest).node?.id;
      if (nodeId && !nodesByStream.has(r.stream)) nodesByStream.set(r.stream, nodeId);
    }
    expect([...new Set(nodesByStream.values())].sort()).toEqual(['grpc-0', 'grpc-1', 'grpc-2']);
    // Every type got ACKed at v1 by every client (ACK = version_info v1 with a nonce, no error).
    // (ACKs travel on the xDS connection, the RPCs on another: poll until the server has read them.)
    const ackCounts = (): number[] =>
      [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL].map(
        (typeUrl) => sotwRequests().filter((r) => r.type_url === typeUrl && r.version_info === 'v1' && r.response_nonce && !r.error_detail).length,
      );
    await until(() => ackCounts().every((count) => count >= 3), 20_000);
    expect(ackCounts().every((count) => count >= 3)).toBe(true);

    // Repoint the cluster at backend B: the clients follow the new EDS config.
    server.setResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'v2', [
      { name: 'echo-cluster', version: 'v2', any: grpcClusterLoadAssignment('echo-cluster', [{ host: backendB.host, port: backendB.port }]) },
    ]);
    const deadline = Date.now() + 20_000;
    for (const client of clients.clients) {
      let backend = '';
      while (backend !== 'backend-b' && Date.now() < deadline) {
        backend = (await client.echo('again')).backend;
        if (backend !== 'backend-b') await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(backend).toBe('backend-b');
    }
  });

  test('the real client NACKs an invalid listener with error_detail and keeps the last good version', async () => {
    clients = new RealClientFleet({ xdsServerAddress: address, listenerName: 'echo', count: 1, node: () => ({ id: 'nacker' }) });
    await clients.waitAllReady(20_000);
    // A listener without api_listener is invalid for a gRPC client (gRFC A27).
    server.setResources(LISTENER_TYPE_URL, 'v-bad', [{ name: 'echo', version: 'v-bad', any: packAny(LISTENER_TYPE_URL, { name: 'echo' }) }]);
    const deadline = Date.now() + 20_000;
    let nack: DiscoveryRequest | undefined;
    while (!nack && Date.now() < deadline) {
      nack = sotwRequests().find((r) => r.type_url === LISTENER_TYPE_URL && r.error_detail);
      if (!nack) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(nack?.error_detail?.message).toBeTruthy();
    expect(nack?.version_info).toBe('v1');
    // Still serving on the last good config.
    expect((await clients.clients[0]!.echo('still there')).message).toBe('still there');
  });
});
