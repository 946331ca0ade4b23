// xDS v3 type URLs. The five resource type URLs come from the pure core (`common/core/type-urls.ts`,
// one definition for the whole project); this file adds the names the xDS plumbing uses and the
// extension type URLs the control plane packs into `Any`.
// Resource type URLs are `type.googleapis.com/<fully qualified proto message name>` (xDS protocol doc,
// "Resource types").
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL } from '../core/type-urls';

// The core's short names, re-exported so xDS code can import everything from common/xds.
export { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL };

export const TYPE_URL_PREFIX = 'type.googleapis.com/';

export const LISTENER_TYPE_URL = LDS_TYPE_URL;
export const ROUTE_CONFIGURATION_TYPE_URL = RDS_TYPE_URL;
export const CLUSTER_TYPE_URL = CDS_TYPE_URL;
export const CLUSTER_LOAD_ASSIGNMENT_TYPE_URL = EDS_TYPE_URL;
export const SECRET_TYPE_URL = SDS_TYPE_URL;
export const DOWNSTREAM_TLS_CONTEXT_TYPE_URL =
  'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext';

export const HTTP_CONNECTION_MANAGER_TYPE_URL =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
export const ROUTER_TYPE_URL = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';

/** The five resource types the control plane serves, in the order Envoy warms them (CDS→EDS→LDS→RDS; SDS). */
export const RESOURCE_TYPE_URLS = [
  CLUSTER_TYPE_URL,
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  SECRET_TYPE_URL,
] as const;

export type ResourceTypeUrl = (typeof RESOURCE_TYPE_URLS)[number];

export function isResourceTypeUrl(typeUrl: string): typeUrl is ResourceTypeUrl {
  return (RESOURCE_TYPE_URLS as readonly string[]).includes(typeUrl);
}

/** Short names used in logs, metrics and the rebuild log. */
export const TYPE_SHORT_NAMES: Record<ResourceTypeUrl, 'CDS' | 'EDS' | 'LDS' | 'RDS' | 'SDS'> = {
  [CLUSTER_TYPE_URL]: 'CDS',
  [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: 'EDS',
  [LISTENER_TYPE_URL]: 'LDS',
  [ROUTE_CONFIGURATION_TYPE_URL]: 'RDS',
  [SECRET_TYPE_URL]: 'SDS',
};

/** Message name inside a type URL: everything after the last '/'. */
export function messageNameOfTypeUrl(typeUrl: string): string {
  return typeUrl.substring(typeUrl.lastIndexOf('/') + 1);
}
