// The real-client harness against the reference control plane: channels with their own node ids
// resolve xds:///<fqdn> through the control plane's LDS -> RDS -> CDS -> EDS, an RPC reaches the
// backend, and the control plane attributes an ACK of every type to each node id.
import pino from 'pino';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { RealClientFleet, startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';

const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

describe('real grpc-js-xds clients against the reference control plane', () => {
  let backend: EchoBackend;
  let controlPlane: ControlPlane;
  let clients: RealClientFleet | undefined;

  beforeAll(async () => {
    backend = await startEchoBackend('echo-backend');
    const source = new InMemoryRouteSource();
    source.applyEndpoints({ metadata: { name: 'echo', namespace: 'default' }, subsets: [{ addresses: [{ ip: backend.host }], ports: [{ port: backend.port }] }] });
    source.applyProxy({
      apiVersion: 'projectcontour.io/v1',
      kind: 'HTTPProxy',
      metadata: { name: 'web', namespace: 'default' },
      spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ services: [{ name: 'echo', port: backend.port }] }] },
    });
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-real-clients', source, holdoffMs: 10, holdoffMaxMs: 50, logger: quiet });
  });

  afterAll(async () => {
    clients?.close();
    await controlPlane.close();
    await backend.close();
  });

  test('two channels, two node ids: READY, RPC through the config, every type ACKed per node', async () => {
    clients = new RealClientFleet({
      xdsServerAddress: controlPlane.address,
      listenerName: 'web.example.com',
      count: 2,
      node: (index) => ({ id: `real-${index}`, cluster: 'grpc-clients', metadata: { index: String(index) } }),
    });
    await clients.waitAllReady(30_000);
    const replies = await Promise.all(clients.clients.map((client) => client.echo(`from ${client.nodeId}`)));
    expect(replies).toEqual([
      { message: 'from real-0', backend: 'echo-backend' },
      { message: 'from real-1', backend: 'echo-backend' },
    ]);
    expect(backend.calls).toBe(2);
    const snapshot = controlPlane.currentSnapshot();
    const missingAcks = (): string[] =>
      ['real-0', 'real-1'].flatMap((nodeId) =>
        ([LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL] as const)
          .filter(
            (typeUrl) =>
              !controlPlane.xdsEvents
                .all()
                .some((e) => e.event === 'request' && e.kind === 'ack' && e.stream.nodeId === nodeId && e.typeUrl === typeUrl && e.version === snapshot?.[typeUrl].version),
          )
          .map((typeUrl) => `${nodeId} ${typeUrl}`),
      );
    // The ACKs travel on the xDS connection, the RPC on another: give the server a moment to log them.
    const deadline = Date.now() + 20_000;
    while (missingAcks().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(missingAcks()).toEqual([]);
  });
});
