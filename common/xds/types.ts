// TypeScript shapes of the xDS discovery messages exactly as `common/xds/protos.ts` makes
// @grpc/proto-loader produce them. Loader options (see LOADER_OPTIONS in protos.ts):
//   keepCase: true   -> snake_case field names, as in the .proto files and the xDS docs
//   longs: String    -> int64/uint64 as decimal strings (no Long objects leak out)
//   enums: String    -> enum values as their names
//   defaults: false  -> absent scalar/message fields are `undefined` on decoded messages
//   arrays: true     -> absent repeated fields decode as `[]` (so `resource_names` is always an array)
//   objects: true    -> absent map fields decode as `{}`
//   oneofs: true     -> a virtual field names the set member of each oneof
//   bytes: Buffer    -> (protobufjs default in Node) `bytes` fields decode as Buffer
//   json: false      -> `google.protobuf.Any` stays `{type_url, value}` (json: true would decode it)
// Exception to keepCase: google.protobuf well-known types (Struct, Value, ListValue, Duration…) come
// from protobufjs's bundled JSON definitions, so Struct values use camelCase (`stringValue`,
// `listValue`, `structValue`, `numberValue`, `boolValue`, `nullValue`) — e.g. in `node.metadata`.
// Because `defaults` is false, decoded (incoming) messages have optional fields; what we send may omit
// anything proto3 allows to be empty. `Any` resources stay bytes: a relay can forward them untouched.

/** google.protobuf.Any as bytes: `value` is the serialized inner message of type `type_url`. */
export interface AnyResource {
  type_url: string;
  value: Buffer | Uint8Array;
}

/** google.rpc.Status (the NACK payload in `error_detail`). */
export interface RpcStatus {
  code?: number;
  message?: string;
  details?: AnyResource[];
}

/** envoy.config.core.v3.Node, only the fields we read; the rest passes through as unknown. */
export interface XdsNode {
  id?: string;
  cluster?: string;
  /** google.protobuf.Struct as decoded by proto-loader: `{ fields: { key: { stringValue | … } } }` (camelCase, see above). */
  metadata?: { fields?: Record<string, unknown> };
  locality?: { region?: string; zone?: string; sub_zone?: string };
  user_agent_name?: string;
  user_agent_version?: string;
  client_features?: string[];
  [field: string]: unknown;
}

export interface ResourceLocator {
  name?: string;
  dynamic_parameters?: Record<string, string>;
}

/** envoy.service.discovery.v3.DiscoveryRequest (State of the World). */
export interface DiscoveryRequest {
  version_info?: string;
  node?: XdsNode | null;
  resource_names?: readonly string[];
  resource_locators?: ResourceLocator[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: RpcStatus | null;
}

/** envoy.service.discovery.v3.DiscoveryResponse (State of the World). */
export interface DiscoveryResponse {
  version_info?: string;
  resources?: AnyResource[];
  canary?: boolean;
  type_url?: string;
  nonce?: string;
  control_plane?: { identifier?: string } | null;
}

/** envoy.service.discovery.v3.DeltaDiscoveryRequest (incremental). */
export interface DeltaDiscoveryRequest {
  node?: XdsNode | null;
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  resource_locators_subscribe?: ResourceLocator[];
  resource_locators_unsubscribe?: ResourceLocator[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: RpcStatus | null;
}

/** envoy.service.discovery.v3.Resource (one entry of a Delta response). */
export interface DeltaResource {
  name?: string;
  aliases?: string[];
  version?: string;
  resource?: AnyResource | null;
  ttl?: { seconds?: string | number; nanos?: number } | null;
  cache_control?: { do_not_cache?: boolean } | null;
  metadata?: unknown;
}

/** envoy.service.discovery.v3.DeltaDiscoveryResponse (incremental). */
export interface DeltaDiscoveryResponse {
  system_version_info?: string;
  resources?: DeltaResource[];
  type_url?: string;
  removed_resources?: string[];
  nonce?: string;
  control_plane?: { identifier?: string } | null;
}
