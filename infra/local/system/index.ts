// The whole system locally: startLocalSystem (used by `npm start` and the system tests).
export { startLocalSystem, HTTPPROXY_TRACKED_KIND } from './system';
export type { LocalSystem, SystemEndpoints, StartupStep, StartContext } from './system';
export { localSystemOptionsSchema, portLayout } from './options';
export type { LocalSystemOptions, ResolvedSystemOptions, PortLayout } from './options';
export { startFunctionUrl, toFunctionUrlEvent } from './function-url';
export type { FunctionUrlHandler, FunctionUrlServer } from './function-url';
export { sampleName, sampleFqdn, sampleProxy, applySamples, sampleService, sampleCanaryService, sampleClusterPrefix } from './samples';
