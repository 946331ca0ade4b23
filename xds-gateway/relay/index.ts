// The gateway's xDS relay: public surface for xds-gateway/tracking, ops and main.
export * from './observer';
export { AdmissionRefused } from './downstream-common';
export { startRelay, DEFAULT_RELAY_LIMITS, type Relay, type RelayListenTls, type RelayOptions, type RelayUpstreamTls } from './relay';
export { DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS } from './make-before-break';
export { ownsLineage } from './lineage-boot-part';
export { TokenBucket, type RequestRateLimit } from './token-bucket';
export type { BackoffOptions } from './upstream-stream';
export { structToJson, identityOf } from './node';
export { readTopLevelString, resourceNameOf, DISCOVERY_RESOURCE_WRAPPER_TYPE_URL } from './resource-name';
