// Which objects a resource name a client added to its subscription matters to (docs/ARCHITECTURE.md,
// "A names hold is held against the objects that route to the names"). A client that added names and
// has not had them served counts as programmed through nothing (core withProgrammedThrough): its ACKs
// say nothing about the added names. For the objects that do not route to those names that is too
// coarse, and it is what held a burst's first snapshot behind its second one's new clusters. This file
// names the objects that do, from the provenance stamps of the content the client holds:
//  - an EDS name: the objects stamped on the clusters (at the client's ACKed CDS version) whose
//    endpoints it is, and on whatever routes to those clusters (below);
//  - a cluster name: the objects stamped on the cluster (the lineage's latest CDS) and on whatever
//    routes to it: each virtual host whose routes use it (its own stamp: an unstamped host leaves the
//    name unattributed), in the route configurations and listeners the client holds and in the latest;
//  - a route configuration name: the objects stamped on it and on each of its virtual hosts (latest
//    RDS), and on the listeners that name it (held and latest LDS).
// Anything on those paths without a stamp, content the history no longer keeps, a name nothing
// references, and any other type: undefined, and the client stays held for every object (the coarse
// rule). Listeners above a route configuration are not followed: a listener's objects depend on the
// listener and the name of its route configuration, not on the clusters other objects' hosts route to.
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, objectKeysOfSources, RDS_TYPE_URL, type Lineage } from '../../common/core';
import type { ResourceReferences } from '../../common/xds/references';
import type { ReferencedContent, ReferenceHistory } from './subscription-references';

/** Object keys (core formatObjectRef) an added name matters to. */
export type NameOwners = ReadonlySet<string>;

/** The client's ACKed seq per referencing type (undefined: it holds none of that type). */
export type HeldSeqs = (typeUrl: string) => number | undefined;

/** Sets of contents (per type) remembered per lineage, and names per set, before a memo is dropped (rebuilt on demand). */
const MAX_MEMO_CONTENTS = 256;
const MAX_MEMO_NAMES = 20_000;

/** A version's reverse edges, built once per version on first use. */
interface ReverseIndex {
  /** EDS name → the clusters whose endpoints it is. */
  endpointsOf?: Map<string, string[]>;
  /** cluster name → the stamps of what routes to it (per virtual host; undefined entry: unstamped). */
  routersOf?: Map<string, (readonly string[] | undefined)[]>;
  /** route configuration name → the stamps of the listeners naming it (undefined entry: unstamped). */
  listenersOf?: Map<string, (readonly string[] | undefined)[]>;
}

const UNKNOWN = null;

export class NameOwnership {
  private readonly reverse = new WeakMap<ReferencedContent, ReverseIndex>();
  private readonly memo = new Map<Lineage, Map<string, Map<string, NameOwners | typeof UNKNOWN>>>();
  private readonly objectsOfSources = new WeakMap<readonly string[], ReadonlySet<string> | typeof UNKNOWN>();

  constructor(private readonly history: ReferenceHistory) {}

  /**
   * The objects any of the added names `names` of `typeUrl` matters to, for a client holding `held`;
   * undefined when one of them is not known, or they are more than `limit`.
   */
  ownersOfAll(lineage: Lineage, typeUrl: string, names: Iterable<string>, held: HeldSeqs, limit: number): NameOwners | undefined {
    const contents = this.contentsFor(lineage, typeUrl, held);
    if (contents === UNKNOWN) return undefined;
    // One memo per lineage and set of contents: the per-name lookups then build no key beyond the name.
    const key = `${typeUrl}\n${contents.map((content) => content?.seq ?? '-').join(' ')}`;
    let memos = this.memo.get(lineage);
    if (memos === undefined) {
      memos = new Map();
      this.memo.set(lineage, memos);
    }
    let memo = memos.get(key);
    if (memo === undefined) {
      if (memos.size >= MAX_MEMO_CONTENTS) memos.clear();
      memo = new Map();
      memos.set(key, memo);
    }
    const all = new Set<string>();
    for (const name of names) {
      let owners = memo.get(name);
      if (owners === undefined) {
        owners = this.resolve(typeUrl, name, contents) ?? UNKNOWN;
        if (memo.size >= MAX_MEMO_NAMES) memo.clear();
        memo.set(name, owners);
      }
      if (owners === UNKNOWN) return undefined;
      for (const owner of owners) all.add(owner);
      if (all.size > limit) return undefined;
    }
    return all;
  }

  forget(lineage: Lineage): void {
    this.memo.delete(lineage);
  }

  /**
   * The contents an answer depends on, in a fixed order: [held CDS, latest CDS, held RDS, latest RDS,
   * held LDS, latest LDS] (undefined: the type has nothing on the lineage, or the client holds none of it).
   */
  private contentsFor(lineage: Lineage, typeUrl: string, held: HeldSeqs): (ReferencedContent | undefined)[] | typeof UNKNOWN {
    if (typeUrl !== EDS_TYPE_URL && typeUrl !== CDS_TYPE_URL && typeUrl !== RDS_TYPE_URL) return UNKNOWN;
    const contents: (ReferencedContent | undefined)[] = [];
    for (const parent of [CDS_TYPE_URL, RDS_TYPE_URL, LDS_TYPE_URL]) {
      const seq = held(parent);
      const heldContent = seq === undefined ? 'none' : this.history.contentAt(lineage, parent, seq);
      const latest = this.history.contentAt(lineage, parent, undefined);
      if (heldContent === 'unknown' || latest === 'unknown') return UNKNOWN;
      contents.push(heldContent === 'none' ? undefined : heldContent, latest === 'none' ? undefined : latest);
    }
    return contents;
  }

  private resolve(typeUrl: string, name: string, contents: (ReferencedContent | undefined)[]): NameOwners | undefined {
    const [heldClusters, latestClusters, heldRoutes, latestRoutes, heldListeners, latestListeners] = contents;
    const routes = [heldRoutes, latestRoutes, heldListeners, latestListeners];
    const owners = new Set<string>();
    if (typeUrl === EDS_TYPE_URL) {
      if (heldClusters === undefined) return undefined;
      const clusters = this.index(heldClusters).endpointsOf?.get(name) ?? [];
      if (clusters.length === 0) return undefined;
      for (const cluster of clusters) {
        if (!this.addStamped(owners, heldClusters.byName.get(cluster)?.sources)) return undefined;
        if (!this.addRouters(owners, cluster, routes)) return undefined;
      }
      return owners;
    }
    if (typeUrl === CDS_TYPE_URL) {
      if (latestClusters === undefined || !this.addStamped(owners, latestClusters.byName.get(name)?.sources)) return undefined;
      return this.addRouters(owners, name, routes) ? owners : undefined;
    }
    // RDS: the route configuration's own stamps and its hosts', then the listeners naming it.
    const routeConfiguration = latestRoutes?.byName.get(name);
    if (routeConfiguration === undefined || !this.addStamped(owners, routeConfiguration.sources)) return undefined;
    for (const host of routeConfiguration.virtualHosts) if (!this.addStamped(owners, host.sources)) return undefined;
    for (const listeners of [heldListeners, latestListeners]) {
      if (listeners === undefined) continue;
      for (const stamps of this.index(listeners).listenersOf?.get(name) ?? []) if (!this.addStamped(owners, stamps)) return undefined;
    }
    return owners;
  }

  /** Adds what routes to `cluster` in each of `contents`; false when one of them is unstamped. */
  private addRouters(owners: Set<string>, cluster: string, contents: readonly (ReferencedContent | undefined)[]): boolean {
    for (const content of contents) {
      if (content === undefined) continue;
      for (const stamps of this.index(content).routersOf?.get(cluster) ?? []) if (!this.addStamped(owners, stamps)) return false;
    }
    return true;
  }

  /** Adds the objects `sources` names; false when it names none (unstamped, or only malformed stamps). */
  private addStamped(owners: Set<string>, sources: readonly string[] | undefined): boolean {
    if (sources === undefined || sources.length === 0) return false;
    let objects = this.objectsOfSources.get(sources);
    if (objects === undefined) {
      const named = objectKeysOfSources(sources);
      objects = named.size === 0 ? UNKNOWN : named;
      this.objectsOfSources.set(sources, objects);
    }
    if (objects === UNKNOWN) return false;
    for (const object of objects) owners.add(object);
    return true;
  }

  private index(content: ReferencedContent): ReverseIndex {
    let index = this.reverse.get(content);
    if (index !== undefined) return index;
    index = {};
    const endpointsOf = new Map<string, string[]>();
    const routersOf = new Map<string, (readonly string[] | undefined)[]>();
    const listenersOf = new Map<string, (readonly string[] | undefined)[]>();
    const push = <T>(map: Map<string, T[]>, key: string, value: T): void => {
      const list = map.get(key);
      if (list === undefined) map.set(key, [value]);
      else list.push(value);
    };
    for (const [resourceName, references] of content.byName as ReadonlyMap<string, ResourceReferences>) {
      for (const edsName of references.EDS) push(endpointsOf, edsName, resourceName);
      for (const host of references.virtualHosts) {
        // Only the host's own stamp: its route configuration's may name other objects than the host's
        // (a CP may stamp it with what owns the configuration, not with every host in it).
        const stamps = host.sources.length > 0 ? host.sources : undefined;
        for (const cluster of host.clusters) push(routersOf, cluster, stamps);
      }
      for (const routeConfiguration of references.RDS) push(listenersOf, routeConfiguration, references.sources.length > 0 ? references.sources : undefined);
    }
    if (endpointsOf.size > 0) index.endpointsOf = endpointsOf;
    if (routersOf.size > 0) index.routersOf = routersOf;
    if (listenersOf.size > 0) index.listenersOf = listenersOf;
    this.reverse.set(content, index);
    return index;
  }
}
