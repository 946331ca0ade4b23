// A harness around @grpc/grpc-js-xds, the real xDS client: N gRPC channels, each with its own
// xDS node id, resolving `xds:///<listener>` through a control plane and calling a backend through
// the resulting config.
//
// A bootstrap per channel: grpc-js-xds reads the channel option
// `grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config` (a bootstrap JSON string) in its
// resolver (build/src/resolver-xds.js) and then creates an XdsClient for that channel alone,
// instead of the process-wide one configured by GRPC_XDS_BOOTSTRAP / GRPC_XDS_BOOTSTRAP_CONFIG.
// So each channel is one "Envoy" with its own ADS stream and node, in one process.
import * as grpc from '@grpc/grpc-js';
import { register as registerXdsResolver } from '@grpc/grpc-js-xds';

export const XDS_BOOTSTRAP_CHANNEL_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

let xdsRegistered = false;

/** Registers the `xds:` scheme with @grpc/grpc-js (once per process). */
export function ensureXdsResolverRegistered(): void {
  if (xdsRegistered) return;
  registerXdsResolver();
  xdsRegistered = true;
}

export interface RealClientNode {
  id: string;
  cluster?: string;
  metadata?: Record<string, string>;
  locality?: { region?: string; zone?: string; sub_zone?: string };
}

/** A gRPC xDS bootstrap (gRFC A27 "bootstrap file") for one node against one plaintext control plane. */
export function grpcXdsBootstrap(xdsServerAddress: string, node: RealClientNode): Record<string, unknown> {
  return {
    xds_servers: [{ server_uri: xdsServerAddress, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: {
      id: node.id,
      ...(node.cluster !== undefined ? { cluster: node.cluster } : {}),
      ...(node.metadata !== undefined ? { metadata: node.metadata } : {}),
      locality: node.locality ?? {},
    },
  };
}

// --- A tiny backend service: JSON over gRPC, one unary method. ---------------------------------

export const ECHO_METHOD_PATH = '/xdsprogrammed.test.Echo/Echo';

export interface EchoRequest {
  message: string;
}
export interface EchoReply {
  message: string;
  /** Name of the backend that answered (tells which endpoint the xDS config routed to). */
  backend: string;
}

const encodeJson = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

function decodeEchoRequest(bytes: Buffer): EchoRequest {
  const parsed: unknown = JSON.parse(bytes.toString('utf8'));
  if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { message?: unknown }).message !== 'string') {
    throw new Error('echo request must be {"message": string}');
  }
  return { message: (parsed as { message: string }).message };
}

function decodeEchoReply(bytes: Buffer): EchoReply {
  const parsed: unknown = JSON.parse(bytes.toString('utf8'));
  const reply = parsed as Partial<EchoReply> | null;
  if (typeof reply?.message !== 'string' || typeof reply.backend !== 'string') {
    throw new Error('echo reply must be {"message": string, "backend": string}');
  }
  return { message: reply.message, backend: reply.backend };
}

const echoMethod: grpc.MethodDefinition<EchoRequest, EchoReply> = {
  path: ECHO_METHOD_PATH,
  requestStream: false,
  responseStream: false,
  requestSerialize: encodeJson,
  requestDeserialize: decodeEchoRequest,
  responseSerialize: encodeJson,
  responseDeserialize: decodeEchoReply,
};

export interface EchoBackend {
  name: string;
  host: string;
  port: number;
  /** Number of calls served. */
  readonly calls: number;
  close(): Promise<void>;
}

/** Starts the echo backend on 127.0.0.1, random port. */
export async function startEchoBackend(name: string): Promise<EchoBackend> {
  const server = new grpc.Server();
  let calls = 0;
  server.addService(
    { Echo: echoMethod },
    {
      Echo: (call: grpc.ServerUnaryCall<EchoRequest, EchoReply>, callback: grpc.sendUnaryData<EchoReply>) => {
        calls++;
        callback(null, { message: call.request.message, backend: name });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    name,
    host: '127.0.0.1',
    port,
    get calls() {
      return calls;
    },
    // forceShutdown, not tryShutdown: a graceful shutdown waits for every client to close its
    // connection, and a test's clients may outlive the backend.
    close: async () => {
      server.forceShutdown();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

// --- The client side. ---------------------------------------------------------------------------

export interface RealXdsClientOptions {
  /** Control plane `host:port` (plaintext). */
  xdsServerAddress: string;
  node: RealClientNode;
  /** Resolves `xds:///<listenerName>`. */
  listenerName: string;
}

/** One real gRPC xDS client: its own channel, XdsClient, ADS stream and node id. */
export class RealXdsClient {
  readonly nodeId: string;
  readonly target: string;
  private readonly client: grpc.Client;

  constructor(options: RealXdsClientOptions) {
    ensureXdsResolverRegistered();
    this.nodeId = options.node.id;
    this.target = `xds:///${options.listenerName}`;
    this.client = new grpc.Client(this.target, grpc.credentials.createInsecure(), {
      [XDS_BOOTSTRAP_CHANNEL_OPTION]: JSON.stringify(grpcXdsBootstrap(options.xdsServerAddress, options.node)),
      // Channels with equal options share subchannels in grpc-js's global pool; keep them apart so
      // each client is as independent as a separate process would be.
      'grpc.use_local_subchannel_pool': 1,
    });
  }

  /** Starts resolution, and with it the xDS stream, without waiting for READY (no backend needed). */
  connect(): void {
    this.client.getChannel().getConnectivityState(true);
  }

  /** Connectivity state without triggering a connection attempt. */
  state(): grpc.connectivityState {
    return this.client.getChannel().getConnectivityState(false);
  }

  /**
   * Resolves once the channel is READY: the xDS resolver got a complete LDS→RDS→CDS→EDS config and
   * a backend connection is up. Rejects with the last state after `timeoutMs`.
   */
  waitForReady(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.waitForReady(Date.now() + timeoutMs, (error) => {
        if (error) reject(new Error(`${this.nodeId}: ${this.target} not ready after ${timeoutMs} ms (${grpc.connectivityState[this.state()]}): ${error.message}`));
        else resolve();
      });
    });
  }

  /** One unary call to the backend chosen by the xDS config. */
  echo(message: string, timeoutMs = 5000): Promise<EchoReply> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        ECHO_METHOD_PATH,
        echoMethod.requestSerialize,
        echoMethod.responseDeserialize,
        { message },
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error, reply) => {
          if (error) reject(error);
          else if (!reply) reject(new Error('echo: empty reply'));
          else resolve(reply);
        },
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

export interface RealClientFleetOptions {
  xdsServerAddress: string;
  listenerName: string;
  count: number;
  /** Node of client `index` (default: id `grpc-<index>`, cluster `grpc`). */
  node?: (index: number) => RealClientNode;
}

/** N real clients, each with its own node id. */
export class RealClientFleet {
  readonly clients: RealXdsClient[];

  constructor(options: RealClientFleetOptions) {
    this.clients = Array.from({ length: options.count }, (_, index) =>
      new RealXdsClient({
        xdsServerAddress: options.xdsServerAddress,
        listenerName: options.listenerName,
        node: options.node?.(index) ?? { id: `grpc-${index}`, cluster: 'grpc' },
      }),
    );
  }

  async waitAllReady(timeoutMs: number): Promise<void> {
    await Promise.all(this.clients.map((client) => client.waitForReady(timeoutMs)));
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}
