// A scripted upstream for relay tests: a real gRPC ADS server whose responses the test writes
// (scripted-upstream.test.ts; test/integration/real-clients/deleted-cluster-returns.test.ts).
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, serviceDefinition, type AnyResource, type DiscoveryRequest, type DiscoveryResponse } from '../../../common/xds';

/** A minimal ADS server: records requests, and `respond` writes to every stream of that type. */
export class ScriptedUpstream {
  readonly requests: DiscoveryRequest[] = [];
  private readonly streams = new Map<string, Set<grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>>>();
  private readonly server = new grpc.Server();
  private nonce = 0;
  port = 0;

  async start(): Promise<void> {
    this.server.addService(serviceDefinition(ADS_SERVICE), {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        call.on('data', (request: DiscoveryRequest) => {
          this.requests.push(request);
          const typeUrl = request.type_url ?? '';
          const set = this.streams.get(typeUrl) ?? new Set();
          set.add(call);
          this.streams.set(typeUrl, set);
        });
        const forget = (): void => {
          for (const set of this.streams.values()) set.delete(call);
        };
        call.on('end', () => {
          forget();
          call.end();
        });
        call.on('cancelled', forget);
        call.on('error', forget);
      },
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
  }

  respond(typeUrl: string, version: string, resources: AnyResource[]): string {
    const nonce = `n${++this.nonce}`;
    for (const call of this.streams.get(typeUrl) ?? []) call.write({ version_info: version, type_url: typeUrl, nonce, resources });
    return nonce;
  }

  /** A stream of `typeUrl` whose first request came from upstream node `nodeId` is open. */
  subscribed(typeUrl: string, nodeId = /^xds-gateway\.gw-test\./): boolean {
    return (this.streams.get(typeUrl)?.size ?? 0) > 0 && this.requests.some((r) => r.type_url === typeUrl && nodeId.test(r.node?.id ?? ''));
  }

  close(): void {
    this.server.forceShutdown();
  }
}

