// Requests decoded without their node until it is read. Envoy sends its Node on every request of a
// stream unless told otherwise (`set_node_on_first_message_only` defaults to false), and a real
// Envoy's Node is large: its metadata Struct and the list of every extension it was built with
// (tens of KB). The relay reads the node of a stream's first request only (downstream-common.ts
// `identify`; the xDS protocol: "it is sufficient to only check the first message for the node
// identifier"), yet grpc-js hands each message to the service's deserializer whole, so every ACK paid
// for decoding and converting the node.
//
// So the deserializer finds the node field among the message's top-level fields without decoding
// them, decodes the rest, and gives the request a `node` that decodes the field's bytes when it is
// first read (not enumerable, so schema checks that copy a request's fields do not read it). Nothing
// outlives the request: no cache, no per-Envoy memory. The top-level structure is still checked (the
// scan, the rest's decoding); a node field is decoded only where it is read, and a node that does not
// decode there is the reader's error (identify answers INVALID_ARGUMENT). Below 1 KB the node is
// decoded with the rest as before (the scan costs about what decoding it does). Anything unusual (the
// node field twice, which protobuf merges; a malformed message) goes to the original deserializer as
// before, errors included.
import type { ServiceDefinition } from '@grpc/grpc-js';

/**
 * Smaller node fields are decoded with the rest: deferring costs a copy of the rest and a property,
 * about what decoding a node of a few hundred bytes does (`npm run bench -- request-decoding`).
 */
const MIN_NODE_BYTES = 1024;

/** Where a length-delimited top-level field lies in a message: [start of its tag, end of its payload). */
interface FieldSpan {
  start: number;
  end: number;
}

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

/**
 * The span of field `fieldNumber` (length-delimited) among the message's top-level fields; undefined
 * when it is absent, appears more than once, has another wire type, the message does not parse, or
 * it is shorter than `minBytes` (the scan stops there: such a field is decoded with the rest).
 */
export function singleFieldSpan(bytes: Uint8Array, fieldNumber: number, minBytes = 0): FieldSpan | undefined {
  let foundStart = -1;
  let foundEnd = -1;
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
    if (field === fieldNumber) {
      if (foundStart >= 0 || wireType !== 2 || at - start < minBytes) return undefined;
      foundStart = start;
      foundEnd = at;
    }
  }
  return foundStart < 0 ? undefined : { start: foundStart, end: foundEnd };
}

export interface NodeDecodingStats {
  /** Requests decoded without their node (it decodes when read). */
  deferred: number;
  /** Requests decoded whole (no node, a node under 1 KB, or anything unusual). */
  decodedWhole: number;
  /** Deferred nodes that were read (a stream's first request), hence decoded. */
  nodesDecoded: number;
}

/** The relay's request deserializers with the node decoded only when read. */
export class LazyNodeDecoding {
  readonly stats: NodeDecodingStats = { deferred: 0, decodedWhole: 0, nodesDecoded: 0 };
  private readonly minNodeBytes: number;

  constructor(options: { minNodeBytes?: number } = {}) {
    this.minNodeBytes = options.minNodeBytes ?? MIN_NODE_BYTES;
  }

  /** `original` (a request deserializer) with the node field left for its first reader. */
  deserializer(original: (bytes: Buffer) => unknown, nodeField: number): (bytes: Buffer) => unknown {
    return (bytes: Buffer): unknown => {
      const span = singleFieldSpan(bytes, nodeField, this.minNodeBytes);
      if (span === undefined) {
        this.stats.decodedWhole++;
        return original(bytes);
      }
      const request = original(Buffer.concat([bytes.subarray(0, span.start), bytes.subarray(span.end)]));
      if (!isRecord(request)) return request;
      this.stats.deferred++;
      // The field alone is a valid message of the same type holding only the node: decoded by the same
      // deserializer, its node is exactly what decoding the whole request gives.
      // A view, not a copy: grpc-js hands each message its own buffer and never reuses it.
      const field = bytes.subarray(span.start, span.end);
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
      return request;
    };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** DiscoveryRequest.node is field 2; DeltaDiscoveryRequest.node is field 1 (envoy/service/discovery/v3). */
export const SOTW_NODE_FIELD = 2;
export const DELTA_NODE_FIELD = 1;

/** `definition` with the given methods' requests decoded through `decoding` (method name → node field number). */
export function withLazyNode(definition: ServiceDefinition, methods: Readonly<Record<string, number>>, decoding: LazyNodeDecoding): ServiceDefinition {
  const copy: Record<string, ServiceDefinition[string]> = { ...definition };
  for (const [method, nodeField] of Object.entries(methods)) {
    const original = definition[method];
    if (original === undefined) throw new Error(`service has no method ${method}`);
    copy[method] = { ...original, requestDeserialize: decoding.deserializer(original.requestDeserialize, nodeField) };
  }
  return copy as ServiceDefinition;
}
