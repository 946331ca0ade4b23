// Encodes each SotW resource once, and each resource list once, however many streams they go to.
//
// Why: a SotW response carries a type's whole resource list, or the whole list of names a stream
// subscribed to (xDS protocol, "State of the World"), and grpc-js serializes every `call.write` on its
// own. With 1,000 Envoys on a 1,000-resource group that is 1,000 protobufjs encodings of the same
// ~360 KB per type and change (≈0.8 ms each on this machine), i.e. seconds of CPU per push.
// go-control-plane marshals a snapshot's resources once, when the snapshot is set, and reuses the
// bytes for every stream; this does the same at two levels:
// - each resource (the cache's Any object, kept while its bytes are unchanged: type-cache.ts) is
//   encoded once, as its `resources` (field 2) entry, in a WeakMap freed with the object. A list is
//   the concatenation of its entries' bytes: a protobuf repeated message field is exactly its
//   elements' tag-length-value entries in order, so the bytes equal protobufjs's for the whole list.
//   Envoys subscribe to EDS and RDS by name, so every stream may ask a different subset: a subset
//   costs a copy of bytes, not an encoding;
// - each list (the same array handed to many streams: TypeSnapshot.anyList for wildcard subscribers,
//   GroupCache.namedList for the same names) keeps its concatenated bytes, and each response only
//   encodes its few per-stream fields (nonce, version) around them.
//
// Streams that got the same responses so far also share the per-stream fields (the nonce is a per-stream
// counter), so a whole response is kept per (list, version, type, nonce) and handed out again (at most
// 16 per list, none over 1 MiB): in a fleet-wide push most responses are then built once.
//
// The output is byte-for-byte what protobufjs would produce: it writes fields in field-number order,
// so the response is [fields numbered below `resources`] + [resources] + [fields above], each part
// encoded by the same protobufjs Type. Any mix of parts is also a valid protobuf message (fields may
// appear in any order and repeated fields concatenate), but keeping the canonical order keeps the
// bytes identical to the previous serializer (tested).
import type { ServiceDefinition } from '@grpc/grpc-js';
import type * as protobuf from 'protobufjs';
import { loadXdsProtos, type AnyResource, type DiscoveryResponse } from '../../common/xds';
import { framedConcat } from './grpc-message-framing';

const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse';
const RESOURCES_FIELD = 'resources';

export interface ResponseEncodingStats {
  /** Responses serialized. */
  responses: number;
  /** Resource lists assembled (a shared list is assembled once for all the responses that carry it). */
  resourceListEncodings: number;
  /** Resources encoded (each once while its cache entry lives, whatever lists carry it). */
  resourceEncodings: number;
  /** Responses whose whole encoding was reused: same list and same per-stream fields (nonce included). */
  responsesReused: number;
}

/** Most distinct (version, type, nonce, …) encodings kept per list. */
const MAX_RESPONSES_PER_LIST = 16;
/** Lists larger than this (bytes) keep no whole responses (bounded memory: 16 × 1 MiB per list at most). */
const MAX_REUSED_RESPONSE_BYTES = 1024 * 1024;

interface EncodedList {
  bytes: Buffer;
  /** Whole responses carrying this list, by their other fields. */
  responses: Map<string, Buffer>;
}

export class SotwResponseEncoder {
  private readonly type: protobuf.Type;
  private readonly headFields: readonly string[];
  private readonly tailFields: readonly string[];
  private readonly encodedLists = new WeakMap<readonly AnyResource[], EncodedList>();
  private readonly encodedResources = new WeakMap<AnyResource, Buffer>();
  private responses = 0;
  private resourceListEncodings = 0;
  private resourceEncodings = 0;
  private responsesReused = 0;

  constructor() {
    this.type = loadXdsProtos().root.lookupType(DISCOVERY_RESPONSE);
    const resourcesField = this.type.fields[RESOURCES_FIELD];
    if (resourcesField === undefined) throw new Error(`${DISCOVERY_RESPONSE} has no ${RESOURCES_FIELD} field`);
    this.headFields = this.type.fieldsArray.filter((field) => field.id < resourcesField.id).map((field) => field.name);
    this.tailFields = this.type.fieldsArray.filter((field) => field.id > resourcesField.id).map((field) => field.name);
  }

  /** A grpc-js `responseSerialize` for DiscoveryResponse. */
  readonly encode = (response: DiscoveryResponse): Buffer => {
    this.responses += 1;
    const resources = response.resources ?? [];
    const list = this.encodedList(resources);
    // Streams that got the same responses so far use the same nonces (a per-stream counter), so in a
    // fleet-wide push many responses are identical byte for byte: build each such response once. The
    // returned buffer is never written to again, whatever the caller keeps.
    const key = list === undefined ? undefined : responseKey(response);
    const reused = key === undefined ? undefined : list?.responses.get(key);
    if (reused !== undefined) {
      this.responsesReused += 1;
      return reused;
    }
    // Built with its gRPC prefix in front, so the server sends these bytes as they are on every stream
    // it goes to instead of copying them into a frame per stream (grpc-message-framing.ts).
    const encoded = framedConcat([this.encodePart(response, this.headFields), list?.bytes ?? EMPTY, this.encodePart(response, this.tailFields)]);
    if (list !== undefined && key !== undefined && list.responses.size < MAX_RESPONSES_PER_LIST && encoded.length <= MAX_REUSED_RESPONSE_BYTES) {
      list.responses.set(key, encoded);
    }
    return encoded;
  };

  stats(): ResponseEncodingStats {
    return { responses: this.responses, resourceListEncodings: this.resourceListEncodings, resourceEncodings: this.resourceEncodings, responsesReused: this.responsesReused };
  }

  private encodedList(resources: readonly AnyResource[]): EncodedList | undefined {
    if (resources.length === 0) return undefined;
    const cached = this.encodedLists.get(resources);
    if (cached !== undefined) return cached;
    this.resourceListEncodings += 1;
    const entries = resources.map((resource) => this.encodedResource(resource));
    const encoded: EncodedList = { bytes: entries.length === 1 ? (entries[0] ?? EMPTY) : Buffer.concat(entries), responses: new Map() };
    this.encodedLists.set(resources, encoded);
    return encoded;
  }

  /** One resource's `resources` entry (tag, length, Any), encoded once per resource object. */
  private encodedResource(resource: AnyResource): Buffer {
    const cached = this.encodedResources.get(resource);
    if (cached !== undefined) return cached;
    this.resourceEncodings += 1;
    const encoded = Buffer.from(this.type.encode(this.type.fromObject({ [RESOURCES_FIELD]: [resource] })).finish());
    this.encodedResources.set(resource, encoded);
    return encoded;
  }

  private encodePart(response: DiscoveryResponse, fields: readonly string[]): Buffer {
    const part: Record<string, unknown> = {};
    let any = false;
    for (const name of fields) {
      const value = (response as Record<string, unknown>)[name];
      if (value !== undefined && value !== null) {
        part[name] = value;
        any = true;
      }
    }
    return any ? Buffer.from(this.type.encode(this.type.fromObject(part)).finish()) : EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);
const RESPONSE_FIELDS = new Set(['version_info', 'resources', 'type_url', 'nonce']);

/**
 * The fields other than `resources` of a plain response (what the relay sends), as a key; undefined
 * for anything else (canary, control_plane, unknown fields), which is then never reused.
 */
function responseKey(response: DiscoveryResponse): string | undefined {
  for (const [name, value] of Object.entries(response)) {
    if (value !== undefined && !RESPONSE_FIELDS.has(name)) return undefined;
  }
  return JSON.stringify([response.version_info ?? null, response.type_url ?? null, response.nonce ?? null]);
}

/**
 * A copy of `definition` whose SotW methods (`sotwMethods`, whose responses are DiscoveryResponse)
 * serialize through `encoder`; every other method is left as loaded.
 */
export function withSharedResponseEncoding(definition: ServiceDefinition, sotwMethods: readonly string[], encoder: SotwResponseEncoder): ServiceDefinition {
  const copy: Record<string, ServiceDefinition[string]> = { ...definition };
  for (const method of sotwMethods) {
    const original = definition[method];
    if (original === undefined) throw new Error(`service has no method ${method}`);
    copy[method] = { ...original, responseSerialize: encoder.encode };
  }
  return copy as ServiceDefinition;
}
