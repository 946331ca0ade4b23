// Requests decoded for what the relay reads of them. grpc-js hands each message to the service's
// deserializer whole, and two parts of an Envoy's request cost far more to decode than the relay
// needs:
//
// - The node. Envoy sends its Node on every request of a stream unless told otherwise
//   (`set_node_on_first_message_only` defaults to false), and a real Envoy's Node is large: its
//   metadata Struct and the list of every extension it was built with (tens of KB). The relay reads
//   the node of a stream's first request only (downstream-common.ts `identify`; the xDS protocol: "it
//   is sufficient to only check the first message for the node identifier"). So the node field is
//   left out of the decoding, and the request gets a `node` that decodes the field's bytes when it is
//   first read (not enumerable, so schema checks that copy a request's fields do not read it). A node
//   that does not decode there is the reader's error (identify answers INVALID_ARGUMENT).
// - The resource names of a SotW request. Every ACK repeats the stream's whole subscription, and an
//   EDS subscription names every cluster: at 1,000 clusters decoding the names is ~90% of decoding
//   the request (`npm run bench -- request-decoding`), and every Envoy of a fleet sends the same
//   list. So the names' bytes are compared with the lists decoded lately (a few, bounded in count and
//   bytes), and a request whose names are byte-for-byte one of them gets that list: the same
//   array for every request that names the same resources, which is exactly what decoding the bytes
//   gives (the bytes are the same). Only an unseen list is decoded. Downstream, comparing a stream's
//   names with its previous request's is then one identity check (common/xds/requested-names.ts),
//   and one list is kept for all the Envoys that subscribe to it instead of one each.
//
// The top-level structure is still checked (the scan, the rest's decoding). Below a size floor each
// part is decoded with the rest as before (the scan and the copy of the rest cost about what decoding
// it does). Anything unusual (the node field twice, which protobuf merges; names interleaved with
// other fields, or not length-delimited; a malformed message) goes to the original deserializer
// whole, errors included. Nothing is kept per Envoy; the shared lists are bounded.
import type { ServiceDefinition } from '@grpc/grpc-js';

/**
 * Smaller node fields are decoded with the rest: deferring costs a copy of the rest and a property,
 * about what decoding a node of a few hundred bytes does (`npm run bench -- request-decoding`).
 */
const MIN_NODE_BYTES = 1024;
/** Smaller name lists are decoded with the rest (a few names decode faster than they are looked up). */
const MIN_NAMES_BYTES = 512;
/** Name lists kept for sharing: an xDS stream subscribes to a handful of name sets per type. */
const MAX_SHARED_NAME_LISTS = 16;
/** A list whose bytes are larger is decoded with its request and not kept (bounds what is kept to ~16 MB). */
const MAX_SHARED_NAME_LIST_BYTES = 1 << 20;

/** Where a length-delimited top-level field (or a run of them) lies: [start of its first tag, end of its last payload). */
export interface FieldSpan {
  start: number;
  end: number;
}

/** Which top-level fields of a request message the decoding treats apart (their field numbers). */
export interface RequestFields {
  /** The Node: decoded when read. */
  node: number;
  /** A repeated string field of resource names, shared by content (SotW requests only). */
  names?: number;
}

/** DiscoveryRequest: node is field 2, resource_names field 3 (envoy/service/discovery/v3). */
export const SOTW_REQUEST_FIELDS: RequestFields = { node: 2, names: 3 };
/** DeltaDiscoveryRequest: node is field 1; its subscription changes are deltas, usually empty in an ACK. */
export const DELTA_REQUEST_FIELDS: RequestFields = { node: 1 };

/** Where readVarint stopped (module state instead of a result object: this runs per top-level field). */
let varintEnd = 0;

/** The varint at `at`, or -1 when it runs past the end or past 10 bytes; its end in `varintEnd`. */
function readVarint(bytes: Uint8Array, at: number): number {
  let value = 0;
  let multiplier = 1;
  for (let index = at; index < bytes.length && index < at + 10; index++) {
    const byte = bytes[index] as number;
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) {
      varintEnd = index + 1;
      return value;
    }
    multiplier *= 128;
  }
  return -1;
}

/** Where a request's node field and its run of name fields lie, each only where it can be taken apart. */
export interface RequestLayout {
  /** The node field, when it occurs once, length-delimited. */
  node?: FieldSpan;
  /** The name fields, when every one is length-delimited and they follow each other with nothing between. */
  names?: FieldSpan;
}

/**
 * One pass over the message's top-level fields, none decoded. Undefined when the message does not
 * parse (the original deserializer then decodes it, and fails as it does).
 */
export function requestLayout(bytes: Uint8Array, fields: RequestFields): RequestLayout | undefined {
  let node: FieldSpan | undefined;
  let nodeUsable = true;
  let names: FieldSpan | undefined;
  let namesUsable = true;
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    const tag = readVarint(bytes, at);
    if (tag < 0) return undefined;
    at = varintEnd;
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (wireType === 0) {
      if (readVarint(bytes, at) < 0) return undefined;
      at = varintEnd;
    } else if (wireType === 1) {
      at += 8;
    } else if (wireType === 5) {
      at += 4;
    } else if (wireType === 2) {
      const length = readVarint(bytes, at);
      if (length < 0) return undefined;
      at = varintEnd + length;
    } else {
      return undefined;
    }
    if (at > bytes.length) return undefined;
    if (field === fields.node) {
      if (node !== undefined || wireType !== 2) nodeUsable = false;
      node = { start, end: at };
    } else if (field === fields.names) {
      if (wireType !== 2 || (names !== undefined && names.end !== start)) namesUsable = false;
      names = names === undefined ? { start, end: at } : { start: names.start, end: at };
    }
  }
  return { ...(node !== undefined && nodeUsable ? { node } : {}), ...(names !== undefined && namesUsable ? { names } : {}) };
}

export interface RequestDecodingStats {
  /** Requests decoded without their node (it decodes when read). */
  deferred: number;
  /** Requests decoded whole (no large node or name list, or anything unusual). */
  decodedWhole: number;
  /** Deferred nodes that were read (a stream's first request), hence decoded. */
  nodesDecoded: number;
  /** Requests given a name list decoded before (not decoded again). */
  namesShared: number;
  /** Name lists decoded (seen for the first time, or again after leaving the shared set). */
  nameListsDecoded: number;
}

interface SharedNameList {
  bytes: Buffer;
  /** What the loader decoded the bytes to (an array of strings; checked by the stream's schema). */
  names: unknown;
}

/** The relay's request deserializers: nodes decoded when read, name lists shared by content. */
export class RequestDecoding {
  readonly stats: RequestDecodingStats = { deferred: 0, decodedWhole: 0, nodesDecoded: 0, namesShared: 0, nameListsDecoded: 0 };
  private readonly minNodeBytes: number;
  private readonly minNamesBytes: number;
  /** Most recently used first. */
  private readonly nameLists: SharedNameList[] = [];

  constructor(options: { minNodeBytes?: number; minNamesBytes?: number } = {}) {
    this.minNodeBytes = options.minNodeBytes ?? MIN_NODE_BYTES;
    this.minNamesBytes = options.minNamesBytes ?? MIN_NAMES_BYTES;
  }

  /** Name lists kept for sharing now (diagnostics and tests). */
  sharedNameLists(): number {
    return this.nameLists.length;
  }

  /** `original` (a request deserializer) with the node left for its first reader and the names shared. */
  deserializer(original: (bytes: Buffer) => unknown, fields: RequestFields): (bytes: Buffer) => unknown {
    return (bytes: Buffer): unknown => {
      const layout = requestLayout(bytes, fields);
      const node = sized(layout?.node, this.minNodeBytes, Number.POSITIVE_INFINITY);
      const names = sized(layout?.names, this.minNamesBytes, MAX_SHARED_NAME_LIST_BYTES);
      if (node === undefined && names === undefined) {
        this.stats.decodedWhole++;
        return original(bytes);
      }
      const request = original(without(bytes, node, names));
      if (!isRecord(request)) return request;
      if (names !== undefined) request['resource_names'] = this.sharedNames(original, bytes.subarray(names.start, names.end));
      if (node !== undefined) this.deferNode(request, original, bytes.subarray(node.start, node.end));
      return request;
    };
  }

  private deferNode(request: Record<string, unknown>, original: (bytes: Buffer) => unknown, field: Buffer): void {
    this.stats.deferred++;
    // The field alone is a valid message of the same type holding only the node: decoded by the same
    // deserializer, its node is exactly what decoding the whole request gives.
    // A view, not a copy: grpc-js hands each message its own buffer and never reuses it.
    const stats = this.stats;
    Object.defineProperty(request, 'node', {
      configurable: true,
      enumerable: false,
      get(): unknown {
        const decoded = original(field);
        const node = isRecord(decoded) ? decoded['node'] : undefined;
        stats.nodesDecoded++;
        Object.defineProperty(request, 'node', { configurable: true, enumerable: false, writable: false, value: node });
        return node;
      },
    });
  }

  /** The shared list whose bytes are `field`, decoding and keeping it when it is new. */
  private sharedNames(original: (bytes: Buffer) => unknown, field: Buffer): unknown {
    const lists = this.nameLists;
    for (let index = 0; index < lists.length; index++) {
      const shared = lists[index] as SharedNameList;
      if (shared.bytes.length !== field.length || !shared.bytes.equals(field)) continue;
      if (index > 0) {
        lists.splice(index, 1);
        lists.unshift(shared);
      }
      this.stats.namesShared++;
      return shared.names;
    }
    // The run alone is a valid message of the same type holding only the names, in their order: its
    // `resource_names` is exactly what decoding the whole request gives, whatever the loader makes of
    // them. Their shape is checked where every request's is, whether shared or decoded whole: the
    // stream's schema (downstream-common.ts), which also types them readonly from there on.
    const decoded = original(field);
    const names = isRecord(decoded) ? decoded['resource_names'] : undefined;
    this.stats.nameListsDecoded++;
    // Every request naming these resources holds this array, so none may change it. Not frozen: V8
    // reads a frozen array's elements on a slow path (an indexed pass over 1,000 names ~7× slower,
    // Array.prototype.every ~30×), and every reader of every request would pay for it.
    lists.unshift({ bytes: Buffer.from(field), names });
    if (lists.length > MAX_SHARED_NAME_LISTS) lists.pop();
    return names;
  }
}

/** `span` when it is `min` to `max` bytes long (a part worth taking apart), else undefined. */
function sized(span: FieldSpan | undefined, min: number, max: number): FieldSpan | undefined {
  if (span === undefined) return undefined;
  const length = span.end - span.start;
  return length >= min && length <= max ? span : undefined;
}

/** `bytes` without the given spans (at most two, disjoint, in either order). */
function without(bytes: Buffer, a: FieldSpan | undefined, b: FieldSpan | undefined): Buffer {
  const [first, second] = a !== undefined && b !== undefined && b.start < a.start ? [b, a] : [a, b];
  const parts: Buffer[] = [];
  let at = 0;
  for (const span of [first, second]) {
    if (span === undefined) continue;
    parts.push(bytes.subarray(at, span.start));
    at = span.end;
  }
  parts.push(bytes.subarray(at));
  return Buffer.concat(parts);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `definition` with the given methods' requests decoded through `decoding` (method name → the request's fields). */
export function withRequestDecoding(definition: ServiceDefinition, methods: Readonly<Record<string, RequestFields>>, decoding: RequestDecoding): ServiceDefinition {
  const copy: Record<string, ServiceDefinition[string]> = { ...definition };
  for (const [method, fields] of Object.entries(methods)) {
    const original = definition[method];
    if (original === undefined) throw new Error(`service has no method ${method}`);
    copy[method] = { ...original, requestDeserialize: decoding.deserializer(original.requestDeserialize, fields) };
  }
  return copy as ServiceDefinition;
}
