// Requests decoded without decoding the same node again. Envoy sends its Node on every request of a
// stream unless told otherwise (`set_node_on_first_message_only` defaults to false), and a real
// Envoy's Node is large: its metadata Struct and the list of every extension it was built with. The
// relay reads the node once per stream (node.ts, downstream-common.ts `identify`), yet grpc-js hands
// each message to the service's deserializer whole, so every ACK paid for decoding and converting the
// node (a profile of a 100-Envoy change: ~7% of the gateway's busy time, with the simulated fleet's
// small nodes).
//
// So the deserializer looks at the message's top-level fields without decoding them, and when the
// node field's bytes (1 KB or more: smaller ones decode as cheaply as they are looked up) are ones it
// decoded before, decodes the rest alone and puts back the node it kept. Bytes are the key, so an answer is exactly what decoding them gives; the kept node is frozen
// because every request of that Envoy (and every stream it opens) shares it. Anything unusual (no
// node, the node field twice, which protobuf merges, a malformed message) goes to the original
// deserializer as before, errors included.
import type { ServiceDefinition } from '@grpc/grpc-js';

/** Past this many distinct nodes the cache starts over (one entry per Envoy; a bound, not a tuning). */
const MAX_NODES = 20_000;
/**
 * Smaller node fields are decoded with the rest: looking one up (key, comparison, the copy of the
 * rest) costs about what decoding a node of a few hundred bytes does (`npm run bench --
 * request-decoding`: a 632-byte request with a ~100-byte node, 5.6 µs whole against 6.6 µs through the
 * cache; with a ~28 KB Envoy-like node, 143 against 14 µs).
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
 * when it is absent, appears more than once, has another wire type, or the message does not parse.
 */
export function singleFieldSpan(bytes: Uint8Array, fieldNumber: number): FieldSpan | undefined {
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
      if (foundStart >= 0 || wireType !== 2) return undefined;
      foundStart = start;
      foundEnd = at;
    }
  }
  return foundStart < 0 ? undefined : { start: foundStart, end: foundEnd };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

export interface NodeDecodingStats {
  /** Requests whose node came from the cache. */
  reused: number;
  /** Requests decoded whole (first sight of a node, no node, or anything unusual). */
  decodedWhole: number;
}

/** One cache for the relay: an Envoy's streams of every service share its node. */
/** A node decoded before, with the exact bytes it was decoded from. */
interface KnownNode {
  bytes: Buffer;
  node: unknown;
}

/**
 * The cache's key: the field's length and its first and last bytes (the node id is near the start).
 * Only a key; an entry is used only when its bytes equal the field's (Buffer.equals), so two nodes
 * sharing a key are told apart and cost a second comparison.
 */
function keyOf(bytes: Buffer, span: FieldSpan): string {
  const edge = Math.min(64, span.end - span.start);
  return `${span.end - span.start}:${bytes.toString('latin1', span.start, span.start + edge)}:${bytes.toString('latin1', span.end - edge, span.end)}`;
}

export class NodeDecodeCache {
  private readonly nodes = new Map<string, KnownNode[]>();
  private size = 0;
  readonly stats: NodeDecodingStats = { reused: 0, decodedWhole: 0 };

  private readonly maxNodes: number;
  private readonly minNodeBytes: number;

  constructor(options: { maxNodes?: number; minNodeBytes?: number } = {}) {
    this.maxNodes = options.maxNodes ?? MAX_NODES;
    this.minNodeBytes = options.minNodeBytes ?? MIN_NODE_BYTES;
  }

  /** `original` (a request deserializer) with the node field decoded once per distinct bytes. */
  deserializer(original: (bytes: Buffer) => unknown, nodeField: number): (bytes: Buffer) => unknown {
    return (bytes: Buffer): unknown => {
      const span = singleFieldSpan(bytes, nodeField);
      if (span === undefined || span.end - span.start < this.minNodeBytes) return this.whole(original, bytes);
      const field = bytes.subarray(span.start, span.end);
      const key = keyOf(bytes, span);
      const candidates = this.nodes.get(key);
      const known = candidates?.find((candidate) => candidate.bytes.equals(field))?.node;
      if (known === undefined) {
        const request = this.whole(original, bytes);
        const node = isRecord(request) ? request['node'] : undefined;
        if (isRecord(node)) {
          if (this.size >= this.maxNodes) {
            this.nodes.clear();
            this.size = 0;
          }
          const entry = { bytes: Buffer.from(field), node: deepFreeze(node) };
          if (candidates === undefined || this.size === 0) this.nodes.set(key, [entry]);
          else candidates.push(entry);
          this.size++;
        }
        return request;
      }
      const request = original(Buffer.concat([bytes.subarray(0, span.start), bytes.subarray(span.end)]));
      if (!isRecord(request)) return request;
      this.stats.reused++;
      request['node'] = known;
      return request;
    };
  }

  private whole(original: (bytes: Buffer) => unknown, bytes: Buffer): unknown {
    this.stats.decodedWhole++;
    return original(bytes);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** DiscoveryRequest.node is field 2; DeltaDiscoveryRequest.node is field 1 (envoy/service/discovery/v3). */
export const SOTW_NODE_FIELD = 2;
export const DELTA_NODE_FIELD = 1;

/** `definition` with the given methods' requests decoded through `cache` (method name → node field number). */
export function withNodeDecodedOnce(definition: ServiceDefinition, methods: Readonly<Record<string, number>>, cache: NodeDecodeCache): ServiceDefinition {
  const copy: Record<string, ServiceDefinition[string]> = { ...definition };
  for (const [method, nodeField] of Object.entries(methods)) {
    const original = definition[method];
    if (original === undefined) throw new Error(`service has no method ${method}`);
    copy[method] = { ...original, requestDeserialize: cache.deserializer(original.requestDeserialize, nodeField) };
  }
  return copy as ServiceDefinition;
}
