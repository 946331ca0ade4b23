// A minimal xDS server for the fleet tests: SotW and Delta, ADS and per-type, one snapshot of
// resources per type pushed to every open stream. It records every request it receives so tests
// can assert what the simulated Envoys sent (node, error_detail, initial_resource_versions).
// Deliberately simple (no per-stream resource filtering beyond names, no nonce bookkeeping
// beyond what is needed): the reference control plane in infra/local/control-plane is the real one.
import * as grpc from '@grpc/grpc-js';
import {
  ADS_SERVICE,
  PER_TYPE_SERVICES,
  type AnyResource,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../../common/xds';
import { discoveryCodec } from '../../../infra/local/envoys/codec';

export interface FakeResource {
  name: string;
  version: string;
  any: AnyResource;
}

interface SotwSubscriber {
  kind: 'sotw';
  call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  /** Per type: names subscribed (empty = wildcard). */
  names: Map<string, readonly string[]>;
}

interface DeltaSubscriber {
  kind: 'delta';
  call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;
  /** Per type: what the client has (name -> version) as far as we know. */
  known: Map<string, Map<string, string>>;
}

export interface ReceivedRequest {
  stream: number;
  kind: 'sotw' | 'delta';
  request: DiscoveryRequest | DeltaDiscoveryRequest;
}

export class FakeXdsServer {
  readonly requests: ReceivedRequest[] = [];
  private readonly server = new grpc.Server();
  private readonly snapshot = new Map<string, { version: string; resources: Map<string, FakeResource> }>();
  private readonly subscribers = new Set<SotwSubscriber | DeltaSubscriber>();
  private nonceCounter = 0;
  private streamCounter = 0;
  port = 0;

  constructor() {
    const codec = discoveryCodec();
    const sotwMethod = (path: string): grpc.MethodDefinition<DiscoveryRequest, DiscoveryResponse> => ({
      path,
      requestStream: true,
      responseStream: true,
      requestSerialize: codec.encodeSotwRequest,
      requestDeserialize: codec.decodeSotwRequest,
      responseSerialize: codec.encodeSotwResponse,
      responseDeserialize: codec.decodeSotwResponse,
    });
    const deltaMethod = (path: string): grpc.MethodDefinition<DeltaDiscoveryRequest, DeltaDiscoveryResponse> => ({
      path,
      requestStream: true,
      responseStream: true,
      requestSerialize: codec.encodeDeltaRequest,
      requestDeserialize: codec.decodeDeltaRequest,
      responseSerialize: codec.encodeDeltaResponse,
      responseDeserialize: codec.decodeDeltaResponse,
    });
    const services: Array<[string, string, string]> = [
      [ADS_SERVICE, 'StreamAggregatedResources', 'DeltaAggregatedResources'],
      ...Object.values(PER_TYPE_SERVICES).map((s): [string, string, string] => [s.service, s.sotwMethod, s.deltaMethod]),
    ];
    for (const [service, sotw, delta] of services) {
      this.server.addService(
        { [sotw]: sotwMethod(`/${service}/${sotw}`), [delta]: deltaMethod(`/${service}/${delta}`) },
        {
          [sotw]: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => this.serveSotw(call),
          [delta]: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>) => this.serveDelta(call),
        },
      );
    }
  }

  async start(): Promise<string> {
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      ),
    );
    return `127.0.0.1:${this.port}`;
  }

  /** Ends every stream with OK, then cuts every connection. */
  async stop(): Promise<void> {
    for (const subscriber of this.subscribers) subscriber.call.end();
    await shutdownServer(this.server);
  }

  get openStreams(): number {
    return this.subscribers.size;
  }

  /** Ends every open stream with UNAVAILABLE (as a control plane restart would). */
  dropAllStreams(): void {
    for (const subscriber of this.subscribers) {
      // grpc-js turns an 'error' emitted on a server stream into the call's final status.
      subscriber.call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'dropped by test' });
    }
    this.subscribers.clear();
  }

  /** Writes `response` as is to every open SotW stream (for malformed or unexpected responses). */
  pushRawSotw(response: DiscoveryResponse): void {
    for (const subscriber of this.subscribers) if (subscriber.kind === 'sotw') subscriber.call.write(response);
  }

  /** Replaces the resources of a type and pushes them to every stream subscribed to it. */
  setResources(typeUrl: string, version: string, resources: FakeResource[]): void {
    this.snapshot.set(typeUrl, { version, resources: new Map(resources.map((r) => [r.name, r])) });
    for (const subscriber of this.subscribers) {
      if (subscriber.kind === 'sotw' && subscriber.names.has(typeUrl)) this.pushSotw(subscriber, typeUrl);
      if (subscriber.kind === 'delta' && subscriber.known.has(typeUrl)) this.pushDelta(subscriber, typeUrl);
    }
  }

  private serveSotw(call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    const stream = ++this.streamCounter;
    const subscriber: SotwSubscriber = { kind: 'sotw', call, names: new Map() };
    this.subscribers.add(subscriber);
    call.on('data', (request: DiscoveryRequest) => {
      this.requests.push({ stream, kind: 'sotw', request });
      const typeUrl = request.type_url ?? '';
      const first = !subscriber.names.has(typeUrl);
      const before = subscriber.names.get(typeUrl)?.join(',');
      subscriber.names.set(typeUrl, request.resource_names ?? []);
      // Respond to a first request or a subscription change; ACKs and NACKs get no response.
      if (first || before !== (request.resource_names ?? []).join(',')) this.pushSotw(subscriber, typeUrl);
    });
    const forget = (): void => {
      this.subscribers.delete(subscriber);
    };
    call.on('end', () => {
      forget();
      call.end();
    });
    call.on('error', forget);
    call.on('cancelled', forget);
  }

  private serveDelta(call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>): void {
    const stream = ++this.streamCounter;
    const subscriber: DeltaSubscriber = { kind: 'delta', call, known: new Map() };
    this.subscribers.add(subscriber);
    call.on('data', (request: DeltaDiscoveryRequest) => {
      this.requests.push({ stream, kind: 'delta', request });
      const typeUrl = request.type_url ?? '';
      if (!subscriber.known.has(typeUrl)) {
        subscriber.known.set(typeUrl, new Map(Object.entries(request.initial_resource_versions ?? {})));
        this.pushDelta(subscriber, typeUrl);
      }
    });
    const forget = (): void => {
      this.subscribers.delete(subscriber);
    };
    call.on('end', () => {
      forget();
      call.end();
    });
    call.on('error', forget);
    call.on('cancelled', forget);
  }

  private pushSotw(subscriber: SotwSubscriber, typeUrl: string): void {
    const entry = this.snapshot.get(typeUrl);
    if (!entry) return;
    const names = subscriber.names.get(typeUrl) ?? [];
    const resources = [...entry.resources.values()].filter((r) => names.length === 0 || names.includes(r.name));
    subscriber.call.write({
      version_info: entry.version,
      type_url: typeUrl,
      nonce: `n${++this.nonceCounter}`,
      resources: resources.map((r) => r.any),
    });
  }

  /** Sends only what differs from what the client is known to hold (Delta semantics). */
  private pushDelta(subscriber: DeltaSubscriber, typeUrl: string): void {
    const entry = this.snapshot.get(typeUrl);
    const known = subscriber.known.get(typeUrl);
    if (!entry || !known) return;
    const changed = [...entry.resources.values()].filter((r) => known.get(r.name) !== r.version);
    const removed = [...known.keys()].filter((name) => !entry.resources.has(name));
    if (changed.length === 0 && removed.length === 0) return;
    for (const r of changed) known.set(r.name, r.version);
    for (const name of removed) known.delete(name);
    subscriber.call.write({
      system_version_info: entry.version,
      type_url: typeUrl,
      nonce: `n${++this.nonceCounter}`,
      resources: changed.map((r) => ({ name: r.name, version: r.version, resource: r.any })),
      removed_resources: removed,
    });
  }
}

/**
 * Ends the server. Not tryShutdown: it sends GOAWAY and waits for clients to close, and the
 * XdsClients grpc-js-xds creates per channel (per-channel bootstrap) never close their channel to
 * the control plane, so it would wait forever; tryShutdown also forgets the sessions it is closing,
 * so a later forceShutdown cannot cut them. forceShutdown destroys every session at once.
 */
export function shutdownServer(server: grpc.Server): Promise<void> {
  server.forceShutdown();
  return new Promise((resolve) => setImmediate(resolve));
}
