// Real @grpc/grpc-js-xds clients among the checker's Envoys, and their ground truth.
//
// A real client cannot be asked what it accepted, so its xDS connection goes through a tap: a
// byte-for-byte ADS relay between the client and the gateway that decodes each message on the way.
// A response the client received is recorded (and its provenance stamps read, ./content.ts); a
// request whose response_nonce names that response is the client's own ACK (no error_detail, the
// response's version_info echoed) or NACK (error_detail), recorded at the moment the tap forwards it,
// i.e. before the gateway can know. Everything lands in the fleet's GroundTruth under the client's
// node id, so the same invariants judge it. The tap never changes a byte.
//
// A gRPC client subscribes by name (its listener, that listener's route configuration, its clusters
// and their endpoints), so it holds only its own object's config: the checker judges it on the
// objects it subscribes to (`objectsOf`), which is the one whose fqdn it resolves.
import type { Logger } from 'pino';
import type { DiscoveryRequest, DiscoveryResponse } from '../../common/xds';
import { AdsByteRelay, type RelayedStream } from '../support/ads-byte-relay';
import { discoveryCodec, sotwResourceName, type GroundTruth, type ResourceVersion } from '../../infra/local/envoys';
import { RealXdsClient } from '../../infra/local/envoys/realClient';
import { decodeSotwResponseUntapped, responseSources } from './content';

interface SentResponse {
  versionInfo: string;
  resources: ResourceVersion[];
}

/** An ADS SotW relay that records the client side of every stream into the ground truth. */
export class XdsTap {
  private readonly relay: AdsByteRelay;
  /**
   * Per client and response (`nodeId|typeUrl|nonce`): a named subscription's response under one
   * version_info is that client's subset only, and a subscription change brings another response at
   * the same version_info with other names.
   */
  private readonly contents = new Map<string, ReadonlySet<string>>();
  private readonly undecodableResponses: string[] = [];
  private readonly clients = new Set<string>();

  constructor(
    target: string,
    private readonly truth: GroundTruth,
    private readonly logger: Logger,
  ) {
    this.relay = new AdsByteRelay(target, () => this.recordStream());
  }

  get address(): string {
    return this.relay.address;
  }

  start(): Promise<string> {
    return this.relay.start();
  }

  /** Whether `nodeId` is a client of this tap. */
  serves(nodeId: string): boolean {
    return this.truth.envoyTruth(nodeId) !== undefined && this.clients.has(nodeId);
  }

  /** What the response with `nonce` of `typeUrl` to client `nodeId` contained. */
  sources(nodeId: string, typeUrl: string, nonce: string): ReadonlySet<string> | undefined {
    return this.contents.get(`${nodeId}|${typeUrl}|${nonce}`);
  }

  /** Responses whose resources could not be decoded, since the last call. */
  undecodable(): string[] {
    return this.undecodableResponses.splice(0);
  }

  close(): void {
    this.relay.close();
  }

  /** One client stream's recording hooks: the ground truth of what it received and answered. */
  private recordStream(): RelayedStream {
    const codec = discoveryCodec();
    const sent = new Map<string, SentResponse>();
    let nodeId: string | undefined;
    return {
      request: (bytes) => {
        try {
          this.onRequest(codec.decodeSotwRequest(bytes), sent, (id, cluster) => {
            nodeId = id;
            this.clients.add(id);
            this.truth.registerEnvoy(id, cluster);
            this.truth.recordConnection(id, { kind: 'connected', at: Date.now() });
          }, nodeId);
        } catch (error) {
          this.logger.warn({ err: error }, 'xds tap: undecodable request forwarded as is');
        }
        return 0;
      },
      response: (bytes) => {
        try {
          const response = decodeSotwResponseUntapped(bytes);
          if (nodeId === undefined) return;
          const key = `${nodeId}|${response.type_url ?? ''}|${response.nonce ?? ''}`;
          try {
            this.contents.set(key, responseSources(response));
          } catch (error) {
            this.undecodableResponses.push(`${key}: ${error instanceof Error ? error.message : String(error)}`);
          }
          this.onResponse(nodeId, response, sent);
        } catch (error) {
          this.logger.warn({ err: error }, 'xds tap: undecodable response forwarded as is');
        }
      },
      ended: (detail) => {
        if (nodeId !== undefined) this.truth.recordConnection(nodeId, { kind: 'stream-error', at: Date.now(), detail });
      },
    };
  }

  private onRequest(request: DiscoveryRequest, sent: Map<string, SentResponse>, identify: (id: string, cluster: string) => void, nodeId: string | undefined): void {
    if (nodeId === undefined && request.node?.id) identify(request.node.id, request.node.cluster ?? '');
    const id = nodeId ?? request.node?.id;
    const typeUrl = request.type_url ?? '';
    const nonce = request.response_nonce ?? '';
    const response = nonce === '' ? undefined : sent.get(`${typeUrl}|${nonce}`);
    if (id === undefined || response === undefined) return;
    sent.delete(`${typeUrl}|${nonce}`);
    const at = Date.now();
    if (request.error_detail) {
      this.truth.recordNack(id, typeUrl, { versionInfo: response.versionInfo, nonce, message: request.error_detail.message ?? '', at, resourceNames: response.resources.map((r) => r.name) });
    } else if ((request.version_info ?? '') === response.versionInfo) {
      this.truth.recordAccepted(id, typeUrl, { versionInfo: response.versionInfo, nonce, acceptedAt: at, resources: this.truth.internResources(typeUrl, response.resources), removed: [] });
    }
  }

  private onResponse(nodeId: string, response: DiscoveryResponse, sent: Map<string, SentResponse>): void {
    const typeUrl = response.type_url ?? '';
    const versionInfo = response.version_info ?? '';
    const nonce = response.nonce ?? '';
    this.truth.recordReceived(nodeId, typeUrl, { versionInfo, nonce, at: Date.now() });
    const resources = (response.resources ?? []).map((any) => {
      const named = sotwResourceName(any);
      return { name: named.name, version: named.version ?? versionInfo };
    });
    sent.set(`${typeUrl}|${nonce}`, { versionInfo, resources });
  }
}

/** Real clients, each resolving one object's fqdn through the tap; node ids `grpc-<i>`. */
export class RealClients {
  readonly clients: RealXdsClient[] = [];
  /** node id → the object (sample index) it resolves. */
  readonly objectOf = new Map<string, number>();

  constructor(
    private readonly tapAddress: string,
    private readonly fqdnOf: (object: number) => string,
  ) {}

  add(object: number, cluster: string): RealXdsClient {
    const id = `grpc-${this.clients.length}`;
    const client = new RealXdsClient({ xdsServerAddress: this.tapAddress, listenerName: this.fqdnOf(object), node: { id, cluster } });
    this.clients.push(client);
    this.objectOf.set(id, object);
    client.connect();
    return client;
  }

  close(): void {
    for (const client of this.clients) client.close();
  }
}
