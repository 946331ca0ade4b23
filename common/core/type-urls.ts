// xDS v3 resource type URLs: `type.googleapis.com/<fully qualified proto message name>` (xDS protocol,
// "Resource types"). The core treats any other type URL opaquely: it only needs a stable string per
// type to key per-type state, so an Envoy subscribing to, e.g., RTDS or an extension type still works.

export const CDS_TYPE_URL = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
export const EDS_TYPE_URL = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
export const LDS_TYPE_URL = 'type.googleapis.com/envoy.config.listener.v3.Listener';
export const RDS_TYPE_URL = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
export const SDS_TYPE_URL = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

/** Known types and the short names people use for them in logs and condition messages. */
export const KNOWN_TYPE_URLS: Readonly<Record<string, string>> = {
  [CDS_TYPE_URL]: 'CDS',
  [EDS_TYPE_URL]: 'EDS',
  [LDS_TYPE_URL]: 'LDS',
  [RDS_TYPE_URL]: 'RDS',
  [SDS_TYPE_URL]: 'SDS',
};

/** Longest type URL accepted; real ones are < 120 characters, this bounds key and item sizes. */
export const MAX_TYPE_URL_LENGTH = 256;

/**
 * A type URL we can use in keys: non-empty, bounded, printable, and without `#` (our key separator)
 * or whitespace. It need not be a known type.
 */
export function isValidTypeUrl(typeUrl: string): boolean {
  return typeUrl.length > 0 && typeUrl.length <= MAX_TYPE_URL_LENGTH && /^[\x21-\x22\x24-\x7e]+$/.test(typeUrl);
}

/** "RDS" for the route type; for unknown types the last segment of the message name ("Runtime"). */
export function shortTypeName(typeUrl: string): string {
  const known = KNOWN_TYPE_URLS[typeUrl];
  if (known !== undefined) return known;
  const afterSlash = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  const afterDot = afterSlash.slice(afterSlash.lastIndexOf('.') + 1);
  return afterDot.length > 0 ? afterDot : typeUrl;
}
