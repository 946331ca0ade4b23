// Raw gRPC clients for the xDS discovery services, for simulated Envoys and tests. They carry
// messages as the loader produces them (see types.ts), so `Any` resources stay bytes.
import * as grpc from '@grpc/grpc-js';
import { PER_TYPE_SERVICES, serviceDefinition } from './protos';
import type { ResourceTypeUrl } from './type-urls';
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
} from './types';

export type SotwStream = grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>;
export type DeltaStream = grpc.ClientDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

type StreamMethod<Req, Res> = (metadata?: grpc.Metadata, options?: grpc.CallOptions) => grpc.ClientDuplexStream<Req, Res>;

/** A generic client for one discovery service (ADS or a per-type service). Close it with `.close()`. */
export function createDiscoveryClient(
  serviceName: string,
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  options: grpc.ChannelOptions = {},
): grpc.Client {
  const Constructor = grpc.makeGenericClientConstructor(serviceDefinition(serviceName), serviceName);
  return new Constructor(address, credentials, options);
}

function streamMethod<Req, Res>(client: grpc.Client, method: string): StreamMethod<Req, Res> {
  const candidate: unknown = (client as unknown as Record<string, unknown>)[method];
  if (typeof candidate !== 'function') throw new Error(`discovery client has no method ${method}`);
  return (candidate as StreamMethod<Req, Res>).bind(client);
}

/** Opens an ADS State-of-the-World stream (StreamAggregatedResources). */
export function openAdsSotw(client: grpc.Client, metadata = new grpc.Metadata()): SotwStream {
  return streamMethod<DiscoveryRequest, DiscoveryResponse>(client, 'StreamAggregatedResources')(metadata);
}

/** Opens an ADS Delta stream (DeltaAggregatedResources). */
export function openAdsDelta(client: grpc.Client, metadata = new grpc.Metadata()): DeltaStream {
  return streamMethod<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(client, 'DeltaAggregatedResources')(metadata);
}

/** Opens a per-type SotW stream (e.g. ClusterDiscoveryService.StreamClusters) on a client made for that service. */
export function openPerTypeSotw(client: grpc.Client, typeUrl: ResourceTypeUrl, metadata = new grpc.Metadata()): SotwStream {
  return streamMethod<DiscoveryRequest, DiscoveryResponse>(client, PER_TYPE_SERVICES[typeUrl].sotwMethod)(metadata);
}

/** Opens a per-type Delta stream (e.g. ClusterDiscoveryService.DeltaClusters). */
export function openPerTypeDelta(client: grpc.Client, typeUrl: ResourceTypeUrl, metadata = new grpc.Metadata()): DeltaStream {
  return streamMethod<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(client, PER_TYPE_SERVICES[typeUrl].deltaMethod)(metadata);
}

