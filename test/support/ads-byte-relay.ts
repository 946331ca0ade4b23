// A byte-for-byte ADS State-of-the-World relay between xDS clients and their server, for tests that
// must watch or disturb what crosses the wire without changing a byte: the truth checker's recording
// tap (test/truth/real-clients.ts) and the slow link (xds-slow-link.ts). Per client stream the owner
// gets hooks: each request (it may hold it back for a while; later requests wait behind it, in order,
// as on one connection), each response, and the end with its reason.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE } from '../../common/xds';

const ADS_SOTW_PATH = `/${ADS_SERVICE}/StreamAggregatedResources`;
const passthrough = (bytes: Buffer): Buffer => bytes;

export interface RelayedStream {
  /** A client request, before it goes upstream; returns how long to hold it (ms, 0 = at once). */
  request(bytes: Buffer): number;
  /** A server response, before it goes to the client. */
  response(bytes: Buffer): void;
  /** The stream ended (either side, or an error); called once. */
  ended(detail: string): void;
}

export class AdsByteRelay {
  private readonly server = new grpc.Server();
  private readonly upstream: grpc.Client;
  private readonly calls = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  address = '';

  constructor(
    target: string,
    private readonly openStream: () => RelayedStream,
  ) {
    this.upstream = new grpc.Client(target, grpc.credentials.createInsecure());
    this.server.register<Buffer, Buffer>(ADS_SOTW_PATH, (call: grpc.ServerDuplexStream<Buffer, Buffer>) => this.relay(call), passthrough, passthrough, 'bidi');
  }

  async start(): Promise<string> {
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    this.address = `127.0.0.1:${port}`;
    return this.address;
  }

  close(): void {
    for (const call of this.calls) call.destroy();
    this.upstream.close();
    this.server.forceShutdown();
  }

  private relay(call: grpc.ServerDuplexStream<Buffer, Buffer>): void {
    const hooks = this.openStream();
    this.calls.add(call);
    const upstream = this.upstream.makeBidiStreamRequest<Buffer, Buffer>(ADS_SOTW_PATH, passthrough, passthrough);
    // Requests go upstream in order; a held one holds back those behind it.
    let queue: Promise<void> = Promise.resolve();
    let ended = false;
    const end = (detail: string): void => {
      if (ended) return;
      ended = true;
      this.calls.delete(call);
      hooks.ended(detail);
      upstream.cancel();
      call.end();
    };
    call.on('data', (bytes: Buffer) => {
      const holdMs = hooks.request(bytes);
      queue = queue.then(() => (holdMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, holdMs)) : undefined)).then(() => {
        if (!ended) upstream.write(bytes);
      });
    });
    upstream.on('data', (bytes: Buffer) => {
      hooks.response(bytes);
      call.write(bytes);
    });
    call.on('end', () => end('client ended the stream'));
    call.on('error', (error: Error) => end(`client stream: ${error.message}`));
    call.on('cancelled', () => end('client cancelled'));
    upstream.on('end', () => end('server ended the stream'));
    upstream.on('error', (error: Error) => end(`server stream: ${error.message}`));
  }
}
