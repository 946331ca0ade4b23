// Reads the name of an xDS resource straight from its serialized bytes, without decoding it.
// A simulated Envoy must record which resources it accepted, but fully decoding every Listener or
// Cluster for 5,000 Envoys would dominate CPU and memory. Every resource type served over xDS keeps
// its name in field 1 as a string: Listener.name, Cluster.name, RouteConfiguration.name,
// ClusterLoadAssignment.cluster_name, Secret.name, VirtualHost.name, ScopedRouteConfiguration.name
// (envoy/config/**/v3 protos). SotW responses may also wrap resources in
// envoy.service.discovery.v3.Resource (name = field 3, version = field 1, resource = field 2).

export const RESOURCE_WRAPPER_TYPE_URL = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

/** Protobuf wire types (https://protobuf.dev/programming-guides/encoding/#structure). */
const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

export interface WireStringFields {
  [fieldNumber: number]: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * Returns the top-level length-delimited fields `wanted` of a serialized message as UTF-8 strings
 * (the last occurrence wins, as protobuf merging does). Throws on malformed input.
 */
export function readStringFields(bytes: Uint8Array, wanted: readonly number[]): WireStringFields {
  const found: WireStringFields = {};
  let offset = 0;
  const readVarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (offset >= bytes.length) throw new Error('truncated varint');
      const byte = bytes[offset++] as number;
      // Lengths and tags fit in 32 bits for any message we can hold; multiply avoids sign issues.
      if (shift < 49) result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
      if (shift > 63) throw new Error('varint too long');
    }
  };
  while (offset < bytes.length) {
    const tag = readVarint();
    const fieldNumber = Math.floor(tag / 8);
    const wireType = tag & 7;
    switch (wireType) {
      case WIRE_VARINT:
        readVarint();
        break;
      case WIRE_I64:
        offset += 8;
        break;
      case WIRE_I32:
        offset += 4;
        break;
      case WIRE_LEN: {
        const length = readVarint();
        const end = offset + length;
        if (end > bytes.length) throw new Error('truncated length-delimited field');
        if (wanted.includes(fieldNumber)) found[fieldNumber] = utf8.decode(bytes.subarray(offset, end));
        offset = end;
        break;
      }
      default:
        throw new Error(`unsupported wire type ${wireType}`);
    }
    if (offset > bytes.length) throw new Error('truncated fixed-width field');
  }
  return found;
}

export interface NamedResource {
  name: string;
  /** Per-resource version when the response carries one (Delta, or a SotW Resource wrapper). */
  version: string | undefined;
}

/** Name (and version, if wrapped) of a SotW `Any` resource. Throws on malformed bytes. */
export function sotwResourceName(any: { type_url?: string; value?: Uint8Array }): NamedResource {
  const value = any.value ?? new Uint8Array();
  if (any.type_url === RESOURCE_WRAPPER_TYPE_URL) {
    const fields = readStringFields(value, [1, 3]);
    return { name: fields[3] ?? '', version: fields[1] };
  }
  return { name: readStringFields(value, [1])[1] ?? '', version: undefined };
}

export interface SotwNameCacheStats {
  /** Resource lists whose names were read from the bytes. */
  parses: number;
  /** Lists found equal, byte for byte, to the previous list of the same type: names reused. */
  hits: number;
}

interface CachedList {
  typeUrls: readonly (string | undefined)[];
  /** Each value's offset from the start of `region` and its length, when the values were contiguous. */
  offsets: Int32Array;
  lengths: Int32Array;
  /** A copy of the bytes from the first value's start to the last value's end (see `contiguousRegion`). */
  region: Buffer | undefined;
  /** The values themselves (copied), when they were not in one buffer. */
  values: readonly Buffer[] | undefined;
  names: readonly NamedResource[];
  /** The list itself: the codec hands every Envoy the same array for equal bytes (sotw-response-decoder.ts). */
  source: readonly AnyLike[];
  /** The last name/version list built from `names` and the version it was built for (shared by plans). */
  versioned?: { versionInfo: string; resources: readonly { name: string; version: string }[] };
}

type AnyLike = { type_url?: string; value?: Uint8Array };

/**
 * The names of a type's SotW resource list, read once for a fleet rather than once per Envoy.
 *
 * Why: every Envoy of a group receives the same list, and reading the names of 1,000 Listeners from
 * their bytes costs ~5 ms per response here (1,000 Clusters ~1.4 ms): at 1,000 Envoys that was ~10 s of
 * CPU per fleet-wide push, more than the relay spent sending it. The cache keeps, per type URL, the
 * last list it read; a list equal to it (same length, and every resource's type_url and bytes equal:
 * an exact comparison) reuses its names. Anything else is read afresh, so a server that sends
 * different bytes under the same version is still seen as it is.
 *
 * The comparison is cheap because a decoded response's values are views into the one message buffer,
 * in order: the span from the first value to the last is compared with one memcmp, plus each value's
 * position and length in it (a list whose values are not laid out like that is compared value by value).
 */
export class SotwNameCache {
  private readonly lists = new Map<string, CachedList>();
  private parses = 0;
  private hits = 0;

  /** The cached names for `resources` under `typeUrl`, or undefined when they must be read. */
  lookup(typeUrl: string, resources: readonly AnyLike[]): readonly NamedResource[] | undefined {
    const cached = this.lists.get(typeUrl);
    if (cached === undefined || cached.names.length !== resources.length) return undefined;
    if (cached.source === resources) {
      this.hits += 1;
      return cached.names;
    }
    for (let index = 0; index < resources.length; index++) {
      if ((resources[index] as AnyLike).type_url !== cached.typeUrls[index]) return undefined;
    }
    if (!sameValues(cached, resources)) return undefined;
    this.hits += 1;
    return cached.names;
  }

  /** Records the names read for `resources` (only for a list that was read without error). */
  store(typeUrl: string, resources: readonly AnyLike[], names: readonly NamedResource[]): void {
    this.parses += 1;
    const region = contiguousRegion(resources);
    const offsets = new Int32Array(resources.length);
    const lengths = new Int32Array(resources.length);
    resources.forEach((resource, index) => {
      const value = resource.value ?? EMPTY_BYTES;
      offsets[index] = region === undefined ? 0 : value.byteOffset - region.start;
      lengths[index] = value.length;
    });
    this.lists.set(typeUrl, {
      typeUrls: resources.map((resource) => resource.type_url),
      offsets,
      lengths,
      region: region === undefined ? undefined : Buffer.from(region.bytes),
      values: region === undefined ? resources.map((resource) => Buffer.from(resource.value ?? EMPTY_BYTES)) : undefined,
      names,
      source: resources,
    });
  }

  /**
   * The resources (name, version) of a list `lookup` just found: the same array for every Envoy that
   * gets the list under the same version, so the ground truth interns it once (GroundTruth.internResources).
   */
  versioned(typeUrl: string, versionInfo: string): readonly { name: string; version: string }[] | undefined {
    const cached = this.lists.get(typeUrl);
    if (cached === undefined) return undefined;
    if (cached.versioned?.versionInfo !== versionInfo) {
      cached.versioned = { versionInfo, resources: cached.names.map((named) => ({ name: named.name, version: named.version ?? versionInfo })) };
    }
    return cached.versioned.resources;
  }

  stats(): SotwNameCacheStats {
    return { parses: this.parses, hits: this.hits };
  }
}

const EMPTY_BYTES = new Uint8Array(0);

/**
 * When every value is a view into one buffer, in increasing order without overlap: the bytes from the
 * first value's start to the last value's end (a view, not a copy) and where they start.
 */
function contiguousRegion(resources: readonly AnyLike[]): { bytes: Buffer; start: number } | undefined {
  const first = resources[0]?.value;
  if (first === undefined) return undefined;
  let end = first.byteOffset;
  for (const resource of resources) {
    const value = resource.value;
    if (value === undefined || value.buffer !== first.buffer || value.byteOffset < end) return undefined;
    end = value.byteOffset + value.length;
  }
  return { bytes: Buffer.from(first.buffer, first.byteOffset, end - first.byteOffset), start: first.byteOffset };
}

function sameValues(cached: CachedList, resources: readonly AnyLike[]): boolean {
  if (cached.region !== undefined) {
    const region = contiguousRegion(resources);
    if (region !== undefined && region.bytes.length === cached.region.length) {
      for (let index = 0; index < resources.length; index++) {
        const value = (resources[index] as AnyLike).value ?? EMPTY_BYTES;
        if (value.byteOffset - region.start !== cached.offsets[index] || value.length !== cached.lengths[index]) return false;
      }
      // Same positions and lengths in an equal span: every value is equal.
      return region.bytes.equals(cached.region);
    }
  }
  // Laid out differently (or cached that way): compare value by value.
  for (let index = 0; index < resources.length; index++) {
    const value = (resources[index] as AnyLike).value ?? EMPTY_BYTES;
    const expected = cached.values?.[index] ?? cachedValue(cached, index);
    if (expected === undefined || !Buffer.from(value.buffer, value.byteOffset, value.byteLength).equals(expected)) return false;
  }
  return true;
}

function cachedValue(cached: CachedList, index: number): Buffer | undefined {
  if (cached.region === undefined) return undefined;
  const offset = cached.offsets[index] ?? 0;
  return cached.region.subarray(offset, offset + (cached.lengths[index] ?? 0));
}

/** One cache for every simulated Envoy in the process (its entries are exact, so sharing is safe). */
export const sharedSotwNames = new SotwNameCache();
