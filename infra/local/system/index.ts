// The whole system locally: startLocalSystem (used by `npm start` and the system tests).
export { startLocalSystem, HTTPPROXY_TRACKED_KIND } from './system';
export { HTTPROUTE_TRACKED_KIND } from '../control-plane/gateway-api';
export type { LocalSystem, SystemEndpoints, StartupStep, StartContext, ControlPlaneMode, ControlPlaneComponentOf } from './system';
export { CONTOUR_LEASE, CONTOUR_INSTALL_HINT, contourInstall, contourReplicaName } from './contour';
export type { ContourComponent, ContourInstall, ContourProcess, ContourReplica } from './contour';
export { localEnvoyHeartbeatMs, localSystemOptionsSchema, portLayout } from './options';
export type { LocalSystemOptions, ResolvedSystemOptions, PortLayout } from './options';
export { startFunctionUrl, toFunctionUrlEvent } from './function-url';
export type { FunctionUrlHandler, FunctionUrlServer } from './function-url';
export { sampleName, sampleFqdn, sampleProxy, applySamples, sampleService, sampleCanaryService, sampleClusterPrefix, applySampleBackends } from './samples';
