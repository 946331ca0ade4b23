// Public surface of common/xds: Envoy proto loading, type URLs, message types, raw discovery clients.
export * from './type-urls';
export * from './types';
export * from './protos';
export * from './client';
export * from './provenance';
export * from './requested-names';
