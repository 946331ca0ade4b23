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

/**
 * Type changes whose changed names are kept per type (changesSince). A Delta stream answers one
 * response at a time, so when its answer comes the type has usually moved on by one or a few changes;
 * one further back diffs its whole subscription, as before.
 */
export const MAX_CHANGES_PER_TYPE = 16;

/** One change of a type: the names added, changed or removed from the snapshot at `fromSeq` to the one at `seq`. */
interface TypeChange {
  fromSeq: number;
  seq: number;
  names: readonly string[];
}

export class GroupCache {
  private currentSeqValue = 0;
  private readonly types = new Map<string, TypeSnapshot>();
  private readonly history = new Map<string, readonly number[]>();
  /** Per type, for its current snapshot only: name-set key → that subset of `anyList`. */
  private readonly namedLists = new Map<string, Map<string, readonly AnyResource[]>>();
  /** Per type, its latest changes, oldest first (at most MAX_CHANGES_PER_TYPE). */
  private readonly changes = new Map<string, TypeChange[]>();
  /** Per type, for its current snapshot only: from-seq → changesSince's answer (every stream at that seq asks the same). */
  private readonly changesMemo = new Map<string, Map<number, ReadonlySet<string> | undefined>>();

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

  /**
   * The names whose resource was added, changed or removed in `typeUrl` after its snapshot at `seq`,
   * up to the current one: what a Delta client that held the whole type at `seq` may lack now. Undefined
   * when the kept changes do not reach back to `seq` (or `seq` is not one of the type's): diff the
   * whole subscription then.
   */
  changesSince(typeUrl: string, seq: number): ReadonlySet<string> | undefined {
    let memo = this.changesMemo.get(typeUrl);
    if (memo?.has(seq) === true) return memo.get(seq);
    const kept = this.changes.get(typeUrl) ?? [];
    const current = this.types.get(typeUrl)?.seq;
    let answer: ReadonlySet<string> | undefined;
    if (current === seq) answer = new Set();
    else {
      const start = kept.findIndex((change) => change.fromSeq === seq);
      if (start >= 0) {
        const names = new Set<string>();
        for (let i = start; i < kept.length; i++) for (const name of (kept[i] as TypeChange).names) names.add(name);
        answer = names;
      }
    }
    if (memo === undefined) this.changesMemo.set(typeUrl, (memo = new Map()));
    memo.set(seq, answer);
    return answer;
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
    const changedNames: string[] = [];
    for (const { name, resource } of incoming) {
      const old = previous?.resources.get(name);
      // An unchanged resource keeps its seq, so Delta clients are not sent it again.
      const unchanged = old !== undefined && sameAny(old.resource, resource);
      resources.set(name, unchanged ? old : { name, resource, seq, version });
      if (!unchanged) changedNames.push(name);
    }
    for (const name of previous?.resources.keys() ?? []) if (!resources.has(name)) changedNames.push(name);
    this.recordChange(typeUrl, previous !== undefined && previous.hasData ? { fromSeq: previous.seq, seq, names: changedNames } : undefined);
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

  /** Keeps the type's change (none for its first data: nothing before it to diff from). */
  private recordChange(typeUrl: string, change: TypeChange | undefined): void {
    this.changesMemo.delete(typeUrl);
    if (change === undefined) this.changes.delete(typeUrl);
    else this.changes.set(typeUrl, boundedAppend(this.changes.get(typeUrl) ?? [], change));
  }
}

/** `list` with `change` appended, its oldest dropped past MAX_CHANGES_PER_TYPE. */
function boundedAppend(list: TypeChange[], change: TypeChange): TypeChange[] {
  const next = [...list, change];
  return next.length > MAX_CHANGES_PER_TYPE ? next.slice(next.length - MAX_CHANGES_PER_TYPE) : next;
}

function sameAny(a: AnyResource, b: AnyResource): boolean {
  return a.type_url === b.type_url && Buffer.from(a.value.buffer, a.value.byteOffset, a.value.byteLength).equals(b.value);
}
