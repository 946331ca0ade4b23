// What an Envoy has yet to ask for. An xDS client learns the names it needs from what it accepted: a
// listener names its route configuration, a route its clusters, an EDS cluster its endpoints (gRFC A27
// for gRPC; Envoy for RDS and EDS). So right after it ACKs a route that moved to a new cluster it holds
// the route but not the cluster, and it asks for the cluster only in a later request. An ACK at or past
// the watermark on every type then says nothing yet about the new cluster: the type whose subscription
// lacks a referenced name is behind (the core's NamesChange) until the client subscribed to the name
// and ACKed a response sent after that (docs/ARCHITECTURE.md, "Added names"; docs/GATEWAY.md).
//
// Two parts, both in memory and synchronous (tracker callbacks never wait on I/O):
// - Subscription: one stream's names for one type, following the relay's rules (sotw-downstream.ts,
//   delta-downstream.ts: legacy wildcard, `*`);
// - ReferenceHistory: per lineage and referencing type, which names each resource referenced at the
//   type's recent versions (from the relay's upstreamApplied, decoded once per distinct resource bytes).
import type { Lineage } from '../../common/core';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { requestedNameSet, sameRequestedNames } from '../../common/xds';
import { cachedReferencesOf, virtualHostFor, type ReferencedType, type ResourceReferences } from '../../common/xds/references';

export interface Subscription {
  wildcard: boolean;
  /** SotW: the stream started with empty names (legacy wildcard), and stays wildcard while it sends none. */
  legacyWildcard: boolean;
  names: ReadonlySet<string>;
  /** The request's resource names it was built from (absent for a union of several streams'). */
  requested?: readonly string[];
}

/** The subscription after a request carrying `resourceNames` (SotW: resource_names; Delta: the relay's post-request view). */
export function nextSubscription(previous: Subscription | undefined, resourceNames: readonly string[], protocol: 'sotw' | 'delta'): Subscription {
  // A client re-sends its whole list with every ACK: the same list gives the same subscription, and
  // keeping the object keeps valid what callers memoise on it (the tracker's reference checks).
  if (previous !== undefined && sameRequestedNames(previous.requested, resourceNames)) return previous;
  // One set per shared list, for every stream and for the relay's own view (requestedNameSet).
  const { names, star } = requestedNameSet(resourceNames);
  if (protocol === 'delta') return { wildcard: star, legacyWildcard: false, names, requested: resourceNames };
  const legacyWildcard = previous === undefined ? resourceNames.length === 0 : previous.legacyWildcard && resourceNames.length === 0;
  return { wildcard: legacyWildcard || star, legacyWildcard, names, requested: resourceNames };
}

/**
 * Answers of a function of two sets, kept per pair (both weakly held). For sets never changed once
 * built and shared by every Envoy that holds the same content or asks for the same names (the
 * reference history's sets; name sets per shared list, requested-names.ts): the fleet's work after a
 * change is one computation per distinct pair instead of one per Envoy (1,000 names × 1,000 Envoys).
 */
class PairAnswers<T> {
  private readonly byFirst = new WeakMap<ReadonlySet<string>, WeakMap<ReadonlySet<string>, { value: T }>>();

  get(first: ReadonlySet<string>, second: ReadonlySet<string>, compute: () => T): T {
    let bySecond = this.byFirst.get(first);
    if (bySecond === undefined) this.byFirst.set(first, (bySecond = new WeakMap()));
    let answer = bySecond.get(second);
    if (answer === undefined) bySecond.set(second, (answer = { value: compute() }));
    return answer.value;
  }
}

/** addedNames' answers per previous and next name set. */
const addedNamesAnswers = new PairAnswers<readonly string[] | undefined>();

/**
 * The names `next` asks for that `previous` did not (a wildcard covers every name): undefined when
 * none, 'all' when `next` turned wildcard.
 */
export function addedNames(previous: Subscription | undefined, next: Subscription): readonly string[] | 'all' | undefined {
  if (previous === undefined || previous.wildcard) return undefined;
  if (next.wildcard) return 'all';
  return addedNamesAnswers.get(previous.names, next.names, () => {
    let added: string[] | undefined;
    for (const name of next.names) if (!previous.names.has(name)) (added ??= []).push(name);
    return added === undefined ? undefined : Object.freeze(added);
  });
}

/** The union of several streams' subscriptions to one type (per-type streams: usually one). */
export function unionOf(subscriptions: readonly Subscription[]): Subscription | undefined {
  // One stream (ADS, or one per-type stream): its own object, so callers can memoise by identity.
  if (subscriptions.length <= 1) return subscriptions[0];
  let wildcard = false;
  let any = false;
  const names = new Set<string>();
  for (const subscription of subscriptions) {
    any = true;
    wildcard ||= subscription.wildcard;
    for (const name of subscription.names) names.add(name);
  }
  return any ? { wildcard, legacyWildcard: false, names } : undefined;
}

/** child type ← the types whose resources name its resources, and by which edge. */
export const REFERENCE_EDGES: ReadonlyArray<{ child: string; key: ReferencedType; parents: readonly string[] }> = [
  { child: RDS_TYPE_URL, key: 'RDS', parents: [LDS_TYPE_URL] },
  { child: CDS_TYPE_URL, key: 'CDS', parents: [RDS_TYPE_URL, LDS_TYPE_URL] },
  { child: EDS_TYPE_URL, key: 'EDS', parents: [CDS_TYPE_URL] },
];
const PARENT_TYPES = new Set(REFERENCE_EDGES.flatMap((edge) => edge.parents));

/** One version of a referencing type's content: what each resource references (and its stamps). */
export interface ReferencedContent {
  readonly seq: number;
  readonly byName: ReadonlyMap<string, ResourceReferences>;
}

interface VersionReferences extends ReferencedContent {
  seq: number;
  byName: ReadonlyMap<string, ResourceReferences>;
  /** Per edge key: every name any resource references (for wildcard subscribers), built on first use. */
  all: Map<ReferencedType, ReadonlySet<string>>;
}

/** Versions kept per lineage and type: an Envoy more changes behind is judged on the oldest kept. */
export const REFERENCE_HISTORY_VERSIONS = 32;

export class ReferenceHistory {
  /** Per lineage, per type: the versions kept, oldest first. */
  private readonly versions = new Map<Lineage, Map<string, VersionReferences[]>>();

  constructor(private readonly onError: (error: unknown, typeUrl: string) => void = () => undefined) {}

  /** A type's served content at `seq` (relay upstreamApplied with changed content). */
  record(lineage: Lineage, typeUrl: string, seq: number, resources: ReadonlyArray<{ name: string; value: Buffer }>): void {
    if (!PARENT_TYPES.has(typeUrl)) return;
    const byName = new Map<string, ResourceReferences>();
    for (const { name, value } of resources) byName.set(name, cachedReferencesOf({ type_url: typeUrl, value }, (error) => this.onError(error, typeUrl)));
    let types = this.versions.get(lineage);
    if (types === undefined) {
      types = new Map();
      this.versions.set(lineage, types);
    }
    const list = types.get(typeUrl) ?? [];
    if (list.length > 0 && (list[list.length - 1] as VersionReferences).seq >= seq) return;
    list.push({ seq, byName, all: new Map() });
    if (list.length > REFERENCE_HISTORY_VERSIONS) list.splice(0, list.length - REFERENCE_HISTORY_VERSIONS);
    types.set(typeUrl, list);
  }

  /**
   * The content of `typeUrl` a client ACKed at `seq` holds (the type's last change at or before it), or
   * the latest kept version when `seq` is undefined. `unknown`: the type has versions on the lineage
   * but none kept at or before `seq` (the client is further behind than the history keeps);
   * `none`: nothing of the type was ever recorded on the lineage.
   */
  contentAt(lineage: Lineage, typeUrl: string, seq: number | undefined): ReferencedContent | 'unknown' | 'none' {
    const list = this.versions.get(lineage)?.get(typeUrl);
    if (list === undefined || list.length === 0) return 'none';
    if (seq === undefined) return list[list.length - 1] as VersionReferences;
    for (let index = list.length - 1; index >= 0; index--) {
      const candidate = list[index] as VersionReferences;
      if (candidate.seq <= seq) return candidate;
    }
    return 'unknown';
  }

  /** Forgets a lineage (retired or dead): its versions are never asked about again. */
  forget(lineage: Lineage): void {
    this.versions.delete(lineage);
  }

  /**
   * The names of edge `key` referenced by what a client holds of `typeUrl` at its ACKed `seq`, given
   * its subscription to that type. Undefined when nothing is known of the type on that lineage.
   */
  referencedBy(lineage: Lineage, typeUrl: string, seq: number, subscription: Subscription, key: ReferencedType, authorities?: ReadonlySet<string>): ReadonlySet<string> | undefined {
    // The content the client holds: the type's last change at or before its ACKed seq. A client more
    // changes behind than the history keeps is not judged here (undefined): the oldest kept version
    // may name what it never received, and it would wait for names it cannot know. Such a client is
    // far behind any recent watermark on its ACKed versions alone.
    const content = this.contentAt(lineage, typeUrl, seq);
    if (typeof content === 'string') return undefined;
    // contentAt answers with the kept versions themselves.
    const version = content as VersionReferences;
    if (key === 'CDS' && authorities !== undefined) {
      // A client routing for known authorities uses only the virtual host matching each.
      const names = new Set<string>();
      for (const [name, references] of version.byName) {
        if (!subscription.wildcard && !subscription.names.has(name)) continue;
        for (const authority of authorities) for (const cluster of virtualHostFor(references.virtualHosts, authority)?.clusters ?? []) names.add(cluster);
      }
      return names;
    }
    if (subscription.wildcard) {
      let all = version.all.get(key);
      if (all === undefined) {
        const names = new Set<string>();
        for (const references of version.byName.values()) for (const name of references[key]) names.add(name);
        all = names;
        version.all.set(key, all);
      }
      return all;
    }
    const names = new Set<string>();
    for (const name of subscription.names) for (const referenced of version.byName.get(name)?.[key] ?? []) names.add(referenced);
    return names;
  }
}

/** Every name the child subscription lacks, of those `referenced` names. */
export function missingNames(referenced: ReadonlySet<string>, child: Subscription): string[] {
  if (child.wildcard) return [];
  const missing: string[] = [];
  for (const name of referenced) if (!child.names.has(name)) missing.push(name);
  return missing;
}

/** firstMissing's answers per referenced set and subscribed name set. */
const firstMissingAnswers = new PairAnswers<string | undefined>();

/** A name the child subscription lacks, of those `referenced` names; undefined when it covers them all. */
export function firstMissing(referenced: ReadonlySet<string>, child: Subscription): string | undefined {
  if (child.wildcard) return undefined;
  return firstMissingAnswers.get(referenced, child.names, () => {
    for (const name of referenced) if (!child.names.has(name)) return name;
    return undefined;
  });
}
