// Fixtures for the tests of the relay's defences against hostile or broken Envoys: raw ADS clients on
// connections of their own, a TCP forwarder that makes a client come from another loopback address
// (the per-peer cap counts remote IPs, and every test client is on 127.0.0.1 otherwise), a metrics
// recorder, and an upstream that records what the relay subscribes with.
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import {
  ADS_SERVICE,
  CLUSTER_TYPE_URL,
  createDiscoveryClient,
  openAdsSotw,
  serviceDefinition,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type XdsNode,
} from '../../../common/xds';
import type { StreamRefusalReason } from '../../../xds-gateway/relay/downstream-common';
import type { RelayMetrics } from '../../../xds-gateway/relay/relay';
import { StreamReader } from '../gateway-relay/stream-reader';

export type Reader = StreamReader<DiscoveryRequest, DiscoveryResponse>;

/** Raw ADS clients, each its own HTTP/2 connection (so its own `call.getPeer()` at the relay); closed together. */
export class AdsClients {
  private readonly clients: grpc.Client[] = [];
  private readonly readers: Reader[] = [];

  /** A new connection to `port` (127.0.0.1 unless `host` is given). */
  connection(port: number, credentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): grpc.Client {
    // A local subchannel pool: grpc-js would otherwise share one connection between equal clients.
    const client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${port}`, credentials, { 'grpc.use_local_subchannel_pool': 1, ...options });
    this.clients.push(client);
    return client;
  }

  stream(connection: grpc.Client): Reader {
    const reader = new StreamReader(openAdsSotw(connection));
    this.readers.push(reader);
    return reader;
  }

  /** A stream on `connection` that asks for clusters as `node`. */
  askClusters(connection: grpc.Client, node: XdsNode): Reader {
    const reader = this.stream(connection);
    reader.send({ node, type_url: CLUSTER_TYPE_URL, resource_names: [] });
    return reader;
  }

  close(): void {
    for (const reader of this.readers) reader.close();
    for (const client of this.clients) client.close();
  }
}

/** ACKs a response on its stream (so the next version can be pushed). */
export function ack(reader: Reader, response: DiscoveryResponse): void {
  reader.send({ type_url: response.type_url ?? '', resource_names: [], response_nonce: response.nonce ?? '', version_info: response.version_info ?? '' });
}

/**
 * Forwards TCP connections to `127.0.0.1:<target>` from another loopback source address, so the
 * relay sees them from `sourceAddress` (Linux routes all of 127.0.0.0/8 to the loopback interface).
 */
export class LoopbackForwarder {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly target: number,
    readonly sourceAddress = '127.0.0.2',
  ) {
    this.server = net.createServer((inbound) => {
      const outbound = net.connect({ host: '127.0.0.1', port: this.target, localAddress: this.sourceAddress });
      for (const socket of [inbound, outbound]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          inbound.destroy();
          outbound.destroy();
        });
      }
      inbound.pipe(outbound);
      outbound.pipe(inbound);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** RelayMetrics that counts what the relay reports. */
export class RecordingRelayMetrics implements RelayMetrics {
  readonly refused: Record<StreamRefusalReason, number> = { peer_streams: 0, node_ids: 0, node_groups: 0, node_id_not_in_cert: 0, invalid_node: 0 };
  takeovers = 0;
  streamRefused(reason: StreamRefusalReason): void {
    this.refused[reason] += 1;
  }
  nodeIdTakenOver(): void {
    this.takeovers += 1;
  }
}

/** An ADS server that records every request and never answers: enough to see how the relay subscribes. */
export class RecordingUpstream {
  readonly requests: DiscoveryRequest[] = [];
  private readonly server = new grpc.Server();
  port = 0;

  async start(): Promise<void> {
    this.server.addService(serviceDefinition(ADS_SERVICE), {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        call.on('data', (request: DiscoveryRequest) => this.requests.push(request));
        call.on('end', () => call.end());
        call.on('error', () => undefined);
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
    );
  }

  close(): void {
    this.server.forceShutdown();
  }
}
