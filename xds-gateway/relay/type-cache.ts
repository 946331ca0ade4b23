// The relay's cache for one node group: the latest upstream resources per type URL, and the lineage's
// single counter (docs/ARCHITECTURE.md "Core model"). A type's upstream response whose content differs
// from the cache takes the next seq; the type's version is the seq of its last change, and each
// resource remembers the seq at which it last changed (its Delta resource version). Content is
// compared as bytes, never by upstream version string: Contour sends a new UUID on every rebuild even
// for types whose bytes did not change. No I/O here.
import { appendChange, DEFAULT_MAX_HISTORY, encodeVersion, type Lineage } from '../../common/core';
import type { AnyResource } from '../../common/xds';

export interface CachedResource {
  name: string;
  /** The upstream Any, forwarded untouched. */
  resource: AnyResource;
  /** Lineage seq at which this resource last changed. */
  seq: number;
  /** `encodeVersion({lineage, seq})`, precomputed for Delta responses. */
  version: string;
}

export interface TypeSnapshot {
  typeUrl: string;
  /** False until the first upstream response for this type was applied. */
  hasData: boolean;
  /** Seq of the type's last change (0 before any data). */
  seq: number;
  /** `encodeVersion({lineage, seq})` of the type, '' before any data. */
  version: string;
  /** By name, in upstream order. */
  resources: ReadonlyMap<string, CachedResource>;
  /** The same resources as an array of Any, for wildcard SotW responses. */
  anyList: readonly AnyResource[];
}

export interface ApplyResult {
  changed: boolean;
  seq: number;
}

export const DEFAULT_TYPE_HISTORY = DEFAULT_MAX_HISTORY;

/**
 * Most distinct name sets whose lists are kept per type and seq. Envoys of one group ask for the same
 * EDS and RDS names, so a handful are shared by the whole fleet; a client churning names makes new
 * sets, so the memo is bounded (past it a list is built per request, as before the memo).
 */
const MAX_NAMED_LISTS_PER_TYPE = 256;

export class GroupCache {
  private currentSeqValue = 0;
  private readonly types = new Map<string, TypeSnapshot>();
  private readonly history = new Map<string, readonly number[]>();
  /** Per type, for its current snapshot only: name-set key → that subset of `anyList`. */
  private readonly namedLists = new Map<string, Map<string, readonly AnyResource[]>>();

  constructor(
    readonly group: string,
    readonly lineage: Lineage,
    private readonly maxHistory = DEFAULT_TYPE_HISTORY,
  ) {}

  get currentSeq(): number {
    return this.currentSeqValue;
  }

  snapshot(typeUrl: string): TypeSnapshot | undefined {
    return this.types.get(typeUrl);
  }

  /**
   * The resources of `typeUrl`'s current snapshot named in `names`, in the snapshot's order: the same
   * array for every caller with the same `namesKey` (a key of the name set) until the type changes, so
   * the response encoder builds the list once for all of them (response-encoding.ts).
   */
  namedList(typeUrl: string, namesKey: string, names: ReadonlySet<string>): readonly AnyResource[] {
    const snapshot = this.types.get(typeUrl);
    if (snapshot === undefined) return [];
    let lists = this.namedLists.get(typeUrl);
    const memo = lists?.get(namesKey);
    if (memo !== undefined) return memo;
    // Built once per type, seq and name set (memoised below), so one pass over the snapshot is cheap.
    const list: AnyResource[] = [];
    for (const [name, cached] of snapshot.resources) if (names.has(name)) list.push(cached.resource);
    if (lists === undefined) {
      lists = new Map();
      this.namedLists.set(typeUrl, lists);
    }
    if (lists.size < MAX_NAMED_LISTS_PER_TYPE) lists.set(namesKey, list);
    return list;
  }

  typeUrls(): string[] {
    return [...this.types.keys()];
  }

  /** Per type URL: the seqs at which it changed, oldest first (bounded by maxHistory). */
  typeHistory(): Record<string, number[]> {
    return Object.fromEntries([...this.history].map(([typeUrl, seqs]) => [typeUrl, [...seqs]]));
  }

  /** Whether applying `incoming` would change the type (and so take a new seq). */
  wouldChange(typeUrl: string, incoming: readonly { name: string; resource: AnyResource }[]): boolean {
    const previous = this.types.get(typeUrl);
    if (previous === undefined || !previous.hasData || previous.resources.size !== incoming.length) return true;
    for (const { name, resource } of incoming) {
      const old = previous.resources.get(name);
      if (old === undefined || !sameAny(old.resource, resource)) return true;
    }
    return false;
  }

  /**
   * Applies one upstream response (already validated: unique names). Changed when it is the type's
   * first data, or a name was added/removed, or any resource's type URL or bytes differ.
   */
  apply(typeUrl: string, incoming: readonly { name: string; resource: AnyResource }[]): ApplyResult {
    const previous = this.types.get(typeUrl);
    if (!this.wouldChange(typeUrl, incoming) && previous !== undefined) return { changed: false, seq: previous.seq };

    const seq = this.currentSeqValue + 1;
    this.currentSeqValue = seq;
    const version = encodeVersion({ lineage: this.lineage, seq });
    const resources = new Map<string, CachedResource>();
    for (const { name, resource } of incoming) {
      const old = previous?.resources.get(name);
      // An unchanged resource keeps its seq, so Delta clients are not sent it again.
      resources.set(name, old !== undefined && sameAny(old.resource, resource) ? old : { name, resource, seq, version });
    }
    this.namedLists.delete(typeUrl);
    this.types.set(typeUrl, {
      typeUrl,
      hasData: true,
      seq,
      version,
      resources,
      anyList: [...resources.values()].map((cached) => cached.resource),
    });
    // The same history rule as the LINEAGE item's (core type-history.ts): the tracker mirrors it.
    const appended = appendChange(this.history.get(typeUrl), seq, 0, this.maxHistory);
    if (appended !== undefined) this.history.set(typeUrl, appended.history);
    return { changed: true, seq };
  }
}

function sameAny(a: AnyResource, b: AnyResource): boolean {
  return a.type_url === b.type_url && Buffer.from(a.value.buffer, a.value.byteOffset, a.value.byteLength).equals(b.value);
}
