// A real xDS client (@grpc/grpc-js-xds) against the reference control plane: LDS -> RDS -> CDS -> EDS,
// ACKs seen by the server with the versions it sent, a unary RPC routed by that config to a backend,
// and a NACK (without resend) for a route configuration grpc-js-xds rejects.
import * as grpc from '@grpc/grpc-js';
import * as grpcJsXds from '@grpc/grpc-js-xds';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { InMemoryStatusWriter } from '../../../infra/local/control-plane/status';
import type { XdsEvent } from '../../../infra/local/control-plane/xds-events';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds/type-urls';
import { endpoints, eventually, proxy, sleep, testLogger } from './helpers';

grpcJsXds.register();

// A service without a .proto: raw bytes in, raw bytes out.
const ECHO_SERVICE: grpc.ServiceDefinition = {
  Echo: {
    path: '/test.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: (value: Buffer) => value,
    requestDeserialize: (value: Buffer) => value,
    responseSerialize: (value: Buffer) => value,
    responseDeserialize: (value: Buffer) => value,
  },
};
const EchoClient = grpc.makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

function xdsChannelOptions(serverAddress: string, nodeId: string): grpc.ChannelOptions {
  return {
    [BOOTSTRAP_OPTION]: JSON.stringify({
      xds_servers: [{ server_uri: serverAddress, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
      node: { id: nodeId, cluster: 'test-fleet', locality: {} },
    }),
  };
}

function echo(client: grpc.Client, payload: string, waitForReady = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const method = (client as unknown as Record<string, unknown>).Echo as (
      request: Buffer,
      options: grpc.CallOptions,
      callback: (error: grpc.ServiceError | null, response?: Buffer) => void,
    ) => void;
    method.call(client, Buffer.from(payload), { deadline: Date.now() + 15_000, waitForReady }, (error, response) =>
      error ? reject(error) : resolve(response?.toString() ?? ''),
    );
  });
}

/** Retries while the channel is still becoming ready (grpc-js fails fast in TRANSIENT_FAILURE). */
async function retryEcho(client: grpc.Client, payload: string): Promise<string> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    try {
      return await echo(client, payload, true);
    } catch (error) {
      lastError = error;
      await sleep(100);
    }
  }
  throw lastError;
}

function requestsFor(events: readonly XdsEvent[], nodeId: string) {
  return events.flatMap((e) => (e.event === 'request' && e.stream.nodeId === nodeId ? [e] : []));
}

function responsesFor(events: readonly XdsEvent[], nodeId: string) {
  return events.flatMap((e) => (e.event === 'response' && e.stream.nodeId === nodeId ? [e] : []));
}

describe('grpc-js-xds against the reference control plane', () => {
  let backend: grpc.Server;
  let backendPort: number;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  const statusWriter = new InMemoryStatusWriter();
  const clients: grpc.Client[] = [];

  beforeAll(async () => {
    backend = new grpc.Server();
    backend.addService(ECHO_SERVICE, {
      Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
        callback(null, Buffer.from(`echo:${call.request.toString()}`)),
    });
    backendPort = await new Promise<number>((resolve, reject) =>
      backend.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('echo', '127.0.0.1', backendPort));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'echo', port: backendPort }]));
    source.applyProxy(
      proxy('broken', 'broken.example.com', [{ name: 'echo', port: backendPort }], {
        annotations: { 'xds-programmed.dev/force-nack': 'true' },
      }),
    );
    controlPlane = await startControlPlane({
      port: 0,
      replicaId: 'cp-test-1',
      source,
      statusWriter,
      versionScheme: 'contour',
      provenance: true,
      holdoffMs: 10,
      holdoffMaxMs: 50,
      logger: testLogger,
    });
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    await controlPlane.close();
    backend.forceShutdown();
  });

  it('the force-nack annotation is a valid HTTPProxy (the NACK comes from the client, not from validation)', () => {
    expect(statusWriter.validCondition('default', 'broken')).toMatchObject({ status: 'True', observedGeneration: 1 });
  });

  it('resolves LDS -> RDS -> CDS -> EDS, ACKs every version sent, and routes a unary RPC to the backend', async () => {
    // The route configuration `ingress_http` holds every plain vhost, including the one that forces a
    // NACK, so for this client the proxy `broken` is removed first.
    source.deleteProxy({ namespace: 'default', name: 'broken' });
    await controlPlane.rebuildNow();
    const nodeId = 'grpc-js-xds-ack';
    const client = new EchoClient('xds:///web.example.com', grpc.credentials.createInsecure(), xdsChannelOptions(controlPlane.address, nodeId));
    clients.push(client);

    await expect(echo(client, 'hello')).resolves.toBe('echo:hello');

    const events = controlPlane.xdsEvents.all();
    const snapshot = controlPlane.currentSnapshot();
    if (!snapshot) throw new Error('no snapshot');
    for (const typeUrl of [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL] as const) {
      const sent = responsesFor(events, nodeId).filter((r) => r.typeUrl === typeUrl);
      expect(sent.length).toBeGreaterThan(0);
      // Every response of this type was ACKed with its own nonce and exactly the version sent.
      await eventually(
        () => {
          const acks = requestsFor(controlPlane.xdsEvents.all(), nodeId).filter((r) => r.typeUrl === typeUrl && r.kind === 'ack');
          return sent.every((response) => acks.some((ack) => ack.nonce === response.nonce && ack.version === response.version));
        },
        `ACKs for every ${typeUrl} response`,
      );
      expect(sent[sent.length - 1]?.version).toBe(snapshot[typeUrl].version);
    }
    // grpc-js-xds subscribed by name, following the chain of references.
    const names = (typeUrl: string) =>
      responsesFor(events, nodeId).filter((r) => r.typeUrl === typeUrl).flatMap((r) => r.resourceNames);
    expect(names(LISTENER_TYPE_URL)).toEqual(expect.arrayContaining(['web.example.com']));
    expect(names(ROUTE_CONFIGURATION_TYPE_URL)).toEqual(expect.arrayContaining(['ingress_http']));
    expect(names(CLUSTER_TYPE_URL)).toEqual(expect.arrayContaining([`default/echo/${backendPort}`]));
    expect(requestsFor(events, nodeId).some((r) => r.kind === 'nack')).toBe(false);
  });

  it('gets a NACK with error_detail for a route configuration it rejects, and does not resend it', async () => {
    source.applyProxy(
      proxy('broken', 'broken.example.com', [{ name: 'echo', port: backendPort }], {
        annotations: { 'xds-programmed.dev/force-nack': 'true' },
      }),
    );
    const record = await controlPlane.rebuildNow();
    const rdsVersion = record?.versions.RDS;
    expect(rdsVersion).toBeDefined();
    const nodeId = 'grpc-js-xds-nack';
    const client = new EchoClient('xds:///web.example.com', grpc.credentials.createInsecure(), xdsChannelOptions(controlPlane.address, nodeId));
    clients.push(client);
    // Start resolution: the call stays queued while the client has no valid route configuration.
    const firstCall = echo(client, 'queued').catch((error: unknown) => error);

    const nack = await eventually(
      () => requestsFor(controlPlane.xdsEvents.all(), nodeId).find((r) => r.typeUrl === ROUTE_CONFIGURATION_TYPE_URL && r.kind === 'nack'),
      'a NACK of the route configuration',
    );
    expect(nack.errorMessage).toMatch(/multiple wildcards/);
    const rdsResponses = () =>
      responsesFor(controlPlane.xdsEvents.all(), nodeId).filter((r) => r.typeUrl === ROUTE_CONFIGURATION_TYPE_URL);
    expect(rdsResponses().find((r) => r.nonce === nack.nonce)?.version).toBe(rdsVersion);
    const countAfterNack = rdsResponses().length;
    // Give a resend every chance to happen: none may.
    await sleep(1000);
    expect(rdsResponses().length).toBe(countAfterNack);

    // Fixing the object produces a new version, which is sent and ACKed.
    source.applyProxy(proxy('broken', 'broken.example.com', [{ name: 'echo', port: backendPort }]));
    const fixed = await controlPlane.rebuildNow();
    await eventually(
      () =>
        requestsFor(controlPlane.xdsEvents.all(), nodeId).some(
          (r) => r.typeUrl === ROUTE_CONFIGURATION_TYPE_URL && r.kind === 'ack' && r.version === fixed?.versions.RDS,
        ),
      'ACK of the fixed route configuration',
    );
    // The channel left TRANSIENT_FAILURE only once CDS and EDS are in as well; retry until it is ready.
    await eventually(
      () => requestsFor(controlPlane.xdsEvents.all(), nodeId).some((r) => r.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL && r.kind === 'ack'),
      'EDS ACK after the fix',
    );
    expect(await retryEcho(client, 'again')).toBe('echo:again');
    await firstCall;
  });
});
