// Public surface of the Envoy fleet: simulated Envoys (light, thousands per process) and the
// real @grpc/grpc-js-xds client harness.
export * from './behaviour';
export * from './groundTruth';
export * from './scheduler';
export * from './simEnvoy';
export * from './fleet';
export * from './typeState';
export * from './xds-protocol';
export * from './subscriptionModel';
export {
  decodeClusterRefs,
  decodeListenerRefs,
  decodeRouteTableRefs,
  matchVirtualHost,
  internNames,
  clusterRefs,
  listenerRefs,
  routeTableRefs,
  RefsCache,
  type ClusterRefs,
  type ListenerRefs,
  type RouteTableRefs,
  type VirtualHostRefs,
} from './referencedNames';
export { discoveryCodec, type DiscoveryCodec } from './codec';
export { readStringFields, sotwResourceName, RESOURCE_WRAPPER_TYPE_URL, SotwNameCache, sharedSotwNames, type SotwNameCacheStats } from './resourceNames';
export * from './fleetScenario';
export { RouteWatch, routeWatchSchema, type FleetRoutable, type RouteWatchSpec } from './route-watch';
