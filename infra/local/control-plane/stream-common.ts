// Pieces shared by the SotW and Delta stream loops.
import { status } from '@grpc/grpc-js';
import {
  RESOURCE_TYPE_URLS,
  type ResourceTypeUrl,
  isResourceTypeUrl,
} from '../../../common/xds/type-urls';
import type { XdsNode } from '../../../common/xds/types';
import type { XdsEvent, XdsEventListener, XdsStreamInfo } from './xds-events';
import type { Logger } from 'pino';

/** A request problem that ends the stream with a gRPC status. */
export class StreamRequestError extends Error {
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Which type a request is for. ADS multiplexes types, so `type_url` is mandatory there (xDS protocol:
 * "type_url must be set on ADS"); a per-type service implies its type, and a request naming another type
 * is a client bug.
 */
export function resolveRequestType(requestTypeUrl: string | undefined, fixedTypeUrl: ResourceTypeUrl | undefined): ResourceTypeUrl {
  const typeUrl = requestTypeUrl ?? '';
  if (fixedTypeUrl !== undefined) {
    if (typeUrl === '' || typeUrl === fixedTypeUrl) return fixedTypeUrl;
    throw new StreamRequestError(
      status.INVALID_ARGUMENT,
      `type_url ${typeUrl} does not match this per-type service, which serves ${fixedTypeUrl}`,
    );
  }
  if (typeUrl === '') throw new StreamRequestError(status.INVALID_ARGUMENT, 'type_url is required on ADS streams');
  if (!isResourceTypeUrl(typeUrl)) {
    throw new StreamRequestError(
      status.INVALID_ARGUMENT,
      `unknown type_url ${JSON.stringify(typeUrl.slice(0, 200))}; this control plane serves ${RESOURCE_TYPE_URLS.join(', ')}`,
    );
  }
  return typeUrl;
}

/**
 * Legacy wildcard (xDS protocol, "How the client specifies what resources to return"): a first request
 * naming no resources is a wildcard subscription. The spec defines this for Listener and Cluster only;
 * go-control-plane (and Contour) apply it to every type, and a relay such as our gateway relies on it
 * to mirror all RouteConfigurations/ClusterLoadAssignments, so we follow go-control-plane. Any type may
 * also ask explicitly with "*".
 */
export function supportsLegacyWildcard(_typeUrl: ResourceTypeUrl): boolean {
  return true;
}

export function rememberNode(stream: XdsStreamInfo, node: XdsNode | null | undefined): void {
  // grpc-js-xds (and Envoy with set_node_on_first_message_only) send node only on the first request.
  if (stream.nodeId === undefined && node?.id !== undefined && node.id !== '') {
    stream.nodeId = node.id;
    stream.nodeCluster = node.cluster;
  }
}

export function safeEmit(listener: XdsEventListener, event: XdsEvent, log: Logger): void {
  try {
    listener(event);
  } catch (error) {
    log.error({ err: error, event: event.event }, 'xDS event listener threw; ignored');
  }
}
