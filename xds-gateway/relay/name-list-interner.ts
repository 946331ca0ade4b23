// Delta streams' subscriptions as lists (delta-downstream.ts `view`), shared by content. Each stream
// builds its view from its own name set, so 1,000 Delta Envoys asking for the same 1,000 EDS names made
// 1,000 equal lists, and every reader keyed on the list (the tracker's subscription and its name set,
// requested-names.ts; its reference checks, subscription-references.ts `firstMissing`) did its work
// once per Envoy. SotW lists are shared by the request decoding already (request-decoding.ts).
// Bounded: a fleet of churning subscriptions makes new lists, and the oldest are let go.

/** Distinct lists kept per node group: far more than the subscriptions of one group's Envoys. */
const DEFAULT_MAX_LISTS = 256;

/** Changes remembered per shared list (`derive`): the few a group's Envoys make from the same subscription. */
const MAX_CHANGES_PER_LIST = 64;

export class NameListInterner {
  /** Content key → the shared list; a Map keeps insertion order, oldest first (least recently used). */
  private readonly lists = new Map<string, readonly string[]>();
  /** Shared list → a change's key → the shared list it led to (weakly held with the list). */
  private readonly changes = new WeakMap<readonly string[], Map<string, readonly string[]>>();

  constructor(private readonly maxLists = DEFAULT_MAX_LISTS) {}

  /**
   * The shared list that `change` (a key of what a request subscribed and unsubscribed) makes of
   * `previous` (a shared list, or undefined), built by `build` the first time: Envoys of one group
   * change their subscriptions alike, so after the first the others cost a lookup, not the content
   * key of a 1,000-name list. `build` must give the same list for the same `previous` and `change`.
   */
  derive(previous: readonly string[] | undefined, change: string, build: () => readonly string[]): readonly string[] {
    const known = previous === undefined ? undefined : this.changes.get(previous);
    const derived = known?.get(change);
    if (derived !== undefined) return derived;
    const list = this.intern(build());
    if (previous !== undefined) {
      const byChange = known ?? new Map<string, readonly string[]>();
      if (known === undefined) this.changes.set(previous, byChange);
      if (byChange.size < MAX_CHANGES_PER_LIST) byChange.set(change, list);
    }
    return list;
  }

  /** The shared list with `names`' content, in its order (`names` itself, frozen, when it is the first). */
  intern(names: readonly string[]): readonly string[] {
    const key = JSON.stringify(names);
    const known = this.lists.get(key);
    if (known !== undefined) {
      this.lists.delete(key);
      this.lists.set(key, known);
      return known;
    }
    const list = Object.isFrozen(names) ? names : Object.freeze([...names]);
    this.lists.set(key, list);
    if (this.lists.size > this.maxLists) {
      const oldest = this.lists.keys().next();
      if (oldest.done !== true) this.lists.delete(oldest.value);
    }
    return list;
  }

  /** Lists kept now (tests). */
  get size(): number {
    return this.lists.size;
  }
}
