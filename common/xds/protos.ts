// Loads, once per process, the Envoy xDS protos that @grpc/grpc-js-xds ships in its `deps/` folder:
// the gRPC service definitions (ADS and the per-type discovery services) and a protobufjs Root that
// can encode/decode the resources we put in `google.protobuf.Any`.
//
// One protobufjs Root is parsed from the .proto files; the gRPC package definition is derived from it
// with proto-loader's `fromJSON`, so the (slow, ~hundreds of files) parse happens once.
import * as path from 'node:path';
import * as fs from 'node:fs';
import * as protoLoader from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  SECRET_TYPE_URL,
  type ResourceTypeUrl,
  messageNameOfTypeUrl,
} from './type-urls';
import type { AnyResource } from './types';

/**
 * protobufjs message-to-object conversion shared by the loader options, `unpackAny` and the simulated
 * Envoys' codec: longs/enums as strings, no defaults, empty arrays/objects present, oneof names set.
 * It never sets `json`, so an `Any` stays `{type_url, value: Buffer}` (see LOADER_OPTIONS).
 */
export const CONVERSION_OPTIONS: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  defaults: false,
  arrays: true,
  objects: true,
  oneofs: true,
};

/**
 * proto-loader options used for every service definition here. The message types in `types.ts` match
 * these; change both together.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  ...CONVERSION_OPTIONS,
  // json must stay false: with it, protobufjs decodes any google.protobuf.Any whose type is in the
  // root into `{"@type": …, …fields}`; relays must see `{type_url, value: Buffer}` untouched.
  json: false,
};

const PROTO_FILES = [
  'envoy/service/discovery/v3/ads.proto',
  'envoy/service/cluster/v3/cds.proto',
  'envoy/service/endpoint/v3/eds.proto',
  'envoy/service/listener/v3/lds.proto',
  'envoy/service/route/v3/rds.proto',
  'envoy/service/secret/v3/sds.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/transport_sockets/tls/v3/secret.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
];

/**
 * The include directories (envoy-api, xds, googleapis, protoc-gen-validate) under grpc-js-xds/deps.
 * `XDS_PROTO_DEPS_DIR` overrides the location of `deps/` (e.g. in a bundle without node_modules).
 */
export function xdsProtoIncludeDirs(): string[] {
  const depsDir =
    process.env.XDS_PROTO_DEPS_DIR ?? path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
  return ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dir) => path.join(depsDir, dir));
}

/** Fully qualified gRPC service names, and the stream methods each exposes. */
export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';

export interface PerTypeService {
  /** Fully qualified service name, e.g. envoy.service.cluster.v3.ClusterDiscoveryService. */
  service: string;
  /** State-of-the-World stream method name. */
  sotwMethod: string;
  /** Incremental (Delta) stream method name. */
  deltaMethod: string;
}

/** Per-type (non-aggregated) discovery services: one stream carries exactly one type URL. */
export const PER_TYPE_SERVICES: Record<ResourceTypeUrl, PerTypeService> = {
  [CLUSTER_TYPE_URL]: {
    service: 'envoy.service.cluster.v3.ClusterDiscoveryService',
    sotwMethod: 'StreamClusters',
    deltaMethod: 'DeltaClusters',
  },
  [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: {
    service: 'envoy.service.endpoint.v3.EndpointDiscoveryService',
    sotwMethod: 'StreamEndpoints',
    deltaMethod: 'DeltaEndpoints',
  },
  [LISTENER_TYPE_URL]: {
    service: 'envoy.service.listener.v3.ListenerDiscoveryService',
    sotwMethod: 'StreamListeners',
    deltaMethod: 'DeltaListeners',
  },
  [ROUTE_CONFIGURATION_TYPE_URL]: {
    service: 'envoy.service.route.v3.RouteDiscoveryService',
    sotwMethod: 'StreamRoutes',
    deltaMethod: 'DeltaRoutes',
  },
  [SECRET_TYPE_URL]: {
    service: 'envoy.service.secret.v3.SecretDiscoveryService',
    sotwMethod: 'StreamSecrets',
    deltaMethod: 'DeltaSecrets',
  },
};

export interface XdsProtos {
  /** protobufjs Root with every message above resolved (encode/decode, Any packing). */
  root: protobuf.Root;
  /** proto-loader package definition (keys: fully qualified names). */
  packageDefinition: protoLoader.PackageDefinition;
  /** gRPC service definitions by fully qualified name: pass to `server.addService` or `makeGenericClientConstructor`. */
  services: Record<string, ServiceDefinition>;
}

let loaded: XdsProtos | undefined;

function addIncludeResolver(root: protobuf.Root, includeDirs: string[]): void {
  // Same resolution rule as protoc -I: the first include dir holding the import wins.
  root.resolvePath = (_origin: string, target: string): string => {
    if (path.isAbsolute(target)) return target;
    for (const dir of includeDirs) {
      const candidate = path.join(dir, target);
      if (fs.existsSync(candidate)) return candidate;
    }
    // google/protobuf/*.proto are bundled in protobufjs (`protobuf.common`); it matches them by name.
    return target;
  };
}

/** Loads the protos on first call and returns the same object afterwards. */
export function loadXdsProtos(): XdsProtos {
  if (loaded) return loaded;
  // Importing @grpc/proto-loader registers descriptor.proto & co. in protobufjs's bundled commons,
  // which the validate/udpa annotation protos import.
  const root = new protobuf.Root();
  addIncludeResolver(root, xdsProtoIncludeDirs());
  root.loadSync(PROTO_FILES, { keepCase: true });
  root.resolveAll();
  const packageDefinition = protoLoader.fromJSON(root.toJSON(), LOADER_OPTIONS);
  const services: Record<string, ServiceDefinition> = {};
  const serviceNames = [ADS_SERVICE, ...Object.values(PER_TYPE_SERVICES).map((s) => s.service)];
  for (const name of serviceNames) {
    const definition = packageDefinition[name];
    if (!definition || !isServiceDefinition(definition)) {
      throw new Error(`xDS protos: service ${name} missing from the loaded package definition`);
    }
    services[name] = definition;
  }
  loaded = { root, packageDefinition, services };
  return loaded;
}

function isServiceDefinition(definition: protoLoader.AnyDefinition): definition is protoLoader.ServiceDefinition {
  // Message and enum definitions carry a `format` string; service definitions are maps of methods.
  return !('format' in definition);
}

export function serviceDefinition(serviceName: string): ServiceDefinition {
  const definition = loadXdsProtos().services[serviceName];
  if (!definition) throw new Error(`xDS protos: unknown service ${serviceName}`);
  return definition;
}

/** The protobufjs Type of a resource by its type URL (or fully qualified message name). */
export function messageType(typeUrlOrName: string): protobuf.Type {
  const name = messageNameOfTypeUrl(typeUrlOrName);
  return loadXdsProtos().root.lookupType(name);
}

/**
 * Encodes a plain object (snake_case fields, as in the .proto; enums by name; nested Any as
 * `{type_url, value}`) into `google.protobuf.Any` bytes. protobufjs `fromObject` drops unknown fields
 * silently, so callers should decode-check anything hand-written (the tests do).
 */
export function packAny(typeUrl: string, message: Record<string, unknown>): AnyResource {
  const type = messageType(typeUrl);
  const value = Buffer.from(type.encode(type.fromObject(message)).finish());
  return { type_url: typeUrl, value };
}

/** Decodes `Any` bytes into a plain object with the loader conventions (longs/enums as strings). */
export function unpackAny(resource: AnyResource): Record<string, unknown> {
  const type = messageType(resource.type_url);
  const decoded = type.decode(resource.value);
  return type.toObject(decoded, CONVERSION_OPTIONS);
}
