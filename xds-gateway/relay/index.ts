// The gateway's xDS relay: public surface for xds-gateway/tracking, ops and main.
export * from './observer';
export { startRelay, DEFAULT_RELAY_LIMITS, type Relay, type RelayListenTls, type RelayOptions, type RelayUpstreamTls } from './relay';
export { TokenBucket, type RequestRateLimit } from './token-bucket';
export type { BackoffOptions } from './upstream-stream';
export { structToJson, identityOf } from './node';
export { readTopLevelString, resourceNameOf, DISCOVERY_RESOURCE_WRAPPER_TYPE_URL } from './resource-name';
