// A slow link between one xDS client and its server, for ADS State-of-the-World streams: bytes are
// relayed untouched in both directions, but a client request that adds resource names (a route's new
// cluster, that cluster's endpoints) reaches the server `delayMs` later, and everything the client
// sends after it waits behind it, in order, as on a congested connection.
//
// Why: a client asks for a route's new cluster in a request after the one ACKing the route. How long
// after depends on the client — gRPC C-core 1.51's CDS watch started only with its next RPC on an idle
// channel, which made the gap up to seconds; 1.85 subscribes at once. The slow link makes that gap
// long and deterministic with any client, so a check of "programmed" that ignores the names a client
// has yet to ask for fails every time, not by luck of timing.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE } from '../../common/xds';
import { discoveryCodec } from '../../infra/local/envoys';

const ADS_SOTW_PATH = `/${ADS_SERVICE}/StreamAggregatedResources`;
const passthrough = (bytes: Buffer): Buffer => bytes;

export class XdsSlowLink {
  private readonly server = new grpc.Server();
  private readonly upstream: grpc.Client;
  private readonly calls = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  /** Requests delayed so far (the test checks the link did its part). */
  delayed = 0;
  address = '';

  constructor(
    target: string,
    private readonly delayMs: number,
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
    const codec = discoveryCodec();
    this.calls.add(call);
    const upstream = this.upstream.makeBidiStreamRequest<Buffer, Buffer>(ADS_SOTW_PATH, passthrough, passthrough);
    const names = new Map<string, ReadonlySet<string>>();
    // Requests go upstream in order; a delayed one holds back those behind it.
    let queue: Promise<void> = Promise.resolve();
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      this.calls.delete(call);
      upstream.cancel();
      call.end();
    };
    call.on('data', (bytes: Buffer) => {
      let delay = 0;
      try {
        const request = codec.decodeSotwRequest(bytes);
        const typeUrl = request.type_url ?? '';
        const next = new Set(request.resource_names ?? []);
        const previous = names.get(typeUrl);
        if (previous !== undefined && [...next].some((name) => !previous.has(name))) delay = this.delayMs;
        names.set(typeUrl, next);
      } catch {
        // Not ours to judge: relayed as it is.
      }
      if (delay > 0) this.delayed++;
      queue = queue.then(() => (delay > 0 ? new Promise<void>((resolve) => setTimeout(resolve, delay)) : undefined)).then(() => {
        if (!ended) upstream.write(bytes);
      });
    });
    upstream.on('data', (bytes: Buffer) => call.write(bytes));
    call.on('end', end);
    call.on('error', end);
    call.on('cancelled', end);
    upstream.on('end', end);
    upstream.on('error', end);
  }
}
