// The gRPC side: registers ADS and the five per-type discovery services (SotW and Delta methods) and
// runs one SotwStream/DeltaStream per call. A request that cannot be served ends only its own stream
// with a clear status; a failure inside one stream never affects another.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { ADS_SERVICE, PER_TYPE_SERVICES, serviceDefinition } from '../../../common/xds/protos';
import { RESOURCE_TYPE_URLS, type ResourceTypeUrl } from '../../../common/xds/type-urls';
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
} from '../../../common/xds/types';
import { DeltaStream } from './delta-stream';
import type { SnapshotCache } from './snapshot-cache';
import { SotwStream } from './sotw-stream';
import { StreamRequestError, safeEmit } from './stream-common';
import type { XdsEventListener, XdsProtocol, XdsServiceKind, XdsStreamInfo } from './xds-events';

export interface XdsServerOptions {
  cache: SnapshotCache;
  controlPlaneId: string;
  onEvent: XdsEventListener;
  log: Logger;
}

type SotwCall = grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>;
type DeltaCall = grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

/** Adds the discovery services to `server`. Returns a function that ends every open stream. */
export function addDiscoveryServices(server: grpc.Server, options: XdsServerOptions): () => void {
  let nextStreamId = 0;
  const openCalls = new Set<SotwCall | DeltaCall>();

  const newStreamInfo = (protocol: XdsProtocol, service: XdsServiceKind): XdsStreamInfo => {
    nextStreamId += 1;
    return { streamId: nextStreamId, protocol, service, nodeId: undefined, nodeCluster: undefined };
  };

  const runStream = <Req, Res>(
    call: grpc.ServerDuplexStream<Req, Res>,
    stream: XdsStreamInfo,
    handler: { handleRequest(request: Req): void; close(): void },
  ): void => {
    const { onEvent, log } = options;
    const streamLog = log.child({ streamId: stream.streamId, protocol: stream.protocol, service: stream.service });
    openCalls.add(call as unknown as SotwCall);
    safeEmit(onEvent, { event: 'stream-open', stream }, log);
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      handler.close();
      openCalls.delete(call as unknown as SotwCall);
      safeEmit(onEvent, { event: 'stream-closed', stream }, log);
    };
    call.on('data', (request: Req) => {
      if (finished) return;
      try {
        handler.handleRequest(request);
      } catch (error) {
        const code = error instanceof StreamRequestError ? error.code : grpc.status.INTERNAL;
        const details = error instanceof Error ? error.message : String(error);
        streamLog.warn({ nodeId: stream.nodeId, code, details }, 'ending xDS stream: bad request');
        safeEmit(onEvent, { event: 'stream-error', stream, code, details }, log);
        finish();
        call.emit('error', { code, details });
      }
    });
    call.on('end', () => {
      finish();
      call.end();
    });
    call.on('error', (error: Error) => {
      streamLog.debug({ err: error }, 'xDS stream error');
      finish();
    });
    call.on('close', finish);
    call.on('cancelled', finish);
  };

  const sotwHandler = (service: XdsServiceKind, fixedTypeUrl?: ResourceTypeUrl) => (call: SotwCall) => {
    const stream = newStreamInfo('sotw', service);
    const handler = new SotwStream({
      stream,
      cache: options.cache,
      controlPlaneId: options.controlPlaneId,
      send: (response) => call.write(response),
      onEvent: options.onEvent,
      log: options.log,
      ...(fixedTypeUrl ? { fixedTypeUrl } : {}),
    });
    runStream(call, stream, handler);
  };
  const deltaHandler = (service: XdsServiceKind, fixedTypeUrl?: ResourceTypeUrl) => (call: DeltaCall) => {
    const stream = newStreamInfo('delta', service);
    const handler = new DeltaStream({
      stream,
      cache: options.cache,
      controlPlaneId: options.controlPlaneId,
      send: (response) => call.write(response),
      onEvent: options.onEvent,
      log: options.log,
      ...(fixedTypeUrl ? { fixedTypeUrl } : {}),
    });
    runStream(call, stream, handler);
  };
  const fetchNotSupported: grpc.handleUnaryCall<DiscoveryRequest, DiscoveryResponse> = (_call, callback) => {
    callback({ code: grpc.status.UNIMPLEMENTED, details: 'REST-style Fetch* is not served; use the Stream*/Delta* methods' });
  };

  server.addService(serviceDefinition(ADS_SERVICE), {
    StreamAggregatedResources: sotwHandler('ads'),
    DeltaAggregatedResources: deltaHandler('ads'),
  });
  for (const typeUrl of RESOURCE_TYPE_URLS) {
    const perType = PER_TYPE_SERVICES[typeUrl];
    const fetchMethod = perType.sotwMethod.replace(/^Stream/, 'Fetch');
    server.addService(serviceDefinition(perType.service), {
      [perType.sotwMethod]: sotwHandler('per-type', typeUrl),
      [perType.deltaMethod]: deltaHandler('per-type', typeUrl),
      [fetchMethod]: fetchNotSupported,
    });
  }

  return () => {
    for (const call of [...openCalls]) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'control plane shutting down' });
    }
  };
}
