// Which names a simulated client subscribes to, type by type, as the resources it accepts change:
// the subscription model of a real Envoy or of a gRPC xDS client, as plain logic (no I/O; the clock
// that times warming is passed in).
// simEnvoy.ts tells it what each ACK accepted (and each NACK rejected) and sends what it answers.
//
// - 'envoy': LDS and CDS are wildcard. EDS follows the accepted EDS clusters
//   (`eds_cluster_config.service_name`, else the cluster name) and RDS the accepted listeners'
//   HttpConnectionManagers (`rds.route_config_name`). The requests for new names leave while the
//   referencing response is applied, just before its ACK (Envoy pauses the dependent types while it
//   applies an update and resumes them before its mux queues the ACK). LDS is first requested only
//   once CDS is initialised: the first CDS response answered and every EDS cluster in it warm
//   (Envoy's cluster manager initialises before the server's init manager starts LDS). Clusters and
//   listeners warm: a new or changed EDS cluster until an EDS response carrying its name is applied, a
//   listener until every route configuration it names is held.
// - 'grpc': LDS by target name, RDS by the accepted listeners' route_config_name, CDS by the clusters
//   of the virtual host matching the target in the accepted route configurations (or inline ones), EDS
//   as for Envoy (gRFC A27). grpc-js-xds sends the ACK first and the new subscriptions afterwards (its
//   watchers run on the next tick).
// docs/ENVOY-FLEET.md ("Subscription models") has the sources and what is left out.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import {
  clusterRefs,
  internNames,
  listenerRefs,
  matchVirtualHost,
  nameSetOf,
  routeTableRefs,
  sameNames,
  type AnyLike,
  type ClusterRefs,
  type ListenerRefs,
  type RouteTableRefs,
} from './referencedNames';
import type { XdsProtocol } from './xds-protocol';

export type SubscriptionModelName = 'envoy' | 'grpc' | 'wildcard';
/** Envoy's `initial_fetch_timeout` default: how long initialisation waits for a subscription. */
export const DEFAULT_INITIAL_FETCH_TIMEOUT_MS = 15_000;

/** The four types a model derives from one another. */
export const MODEL_TYPE_URLS = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL] as const;

export interface DeltaUpsert {
  name: string;
  resource: AnyLike | undefined;
}

/** What one ACK accepted, restricted to the resources the client asked for. */
export interface AcceptedResponse {
  /** SotW: the accepted resources (a wildcard type's whole list). */
  sotw?: readonly AnyLike[];
  /** Delta: upserted resources and removed names. */
  delta?: { upserts: readonly DeltaUpsert[]; removed: readonly string[] };
  /** Names of the accepted resources (the leaf types need only these). */
  names: readonly string[];
}

export interface NamesChange {
  typeUrl: string;
  /** Interned (see internNames): the same array for the same set. Empty for a wildcard type. */
  names: readonly string[];
  /**
   * SotW only: send even if `names` equal the last request's. Envoy's SotW mux sends a request for
   * every new watch, and a changed EDS cluster is a new cluster object with a new EDS watch.
   */
  resend: boolean;
}

/** Requests a response calls for: `before` go out ahead of its ACK/NACK, `after` behind it. */
export interface ModelReaction {
  before: NamesChange[];
  after: NamesChange[];
}

const NO_REACTION: ModelReaction = Object.freeze({ before: Object.freeze([]), after: Object.freeze([]) }) as unknown as ModelReaction;
const EMPTY: readonly string[] = Object.freeze([]);
const NOTHING_HELD: readonly { readonly name: string }[] = Object.freeze([]);

/**
 * Resources of one type held by one client. SotW LDS/CDS replace the whole list (kept as the shared
 * array the caches returned: no per-client copy); Delta, and gRPC's RDS (not a state-of-the-world
 * type), upsert by name into a map of the client's own.
 */
class HeldSet<T extends { readonly name: string }> {
  // One empty list for every client, so the first difference (from nothing) is computed once too.
  private list: readonly T[] = NOTHING_HELD as readonly T[];
  private map: Map<string, T> | undefined;

  /** The shared SotW list while the set is one; undefined once it is a per-client map. */
  get shared(): readonly T[] | undefined {
    return this.map === undefined ? this.list : undefined;
  }

  replace(list: readonly T[]): void {
    this.list = list;
    this.map = undefined;
  }

  upsert(items: readonly T[], removed: readonly string[]): void {
    const map = this.ensureMap();
    for (const item of items) map.set(item.name, item);
    for (const name of removed) map.delete(name);
  }

  get(name: string): T | undefined {
    return this.map !== undefined ? this.map.get(name) : byNameOf(this.list).get(name);
  }

  values(): Iterable<T> {
    return this.map !== undefined ? this.map.values() : this.list;
  }

  private ensureMap(): Map<string, T> {
    if (this.map === undefined) this.map = new Map(this.list.map((item) => [item.name, item]));
    return this.map;
  }
}

// Per shared SotW list (every client that accepted the list gets the same answers): by-name maps,
// derived name sets, and the difference from the previous list.
const byNameMaps = new WeakMap<readonly { readonly name: string }[], ReadonlyMap<string, { readonly name: string }>>();
function byNameOf<T extends { readonly name: string }>(list: readonly T[]): ReadonlyMap<string, T> {
  let map = byNameMaps.get(list);
  if (map === undefined) {
    map = new Map(list.map((item) => [item.name, item]));
    byNameMaps.set(list, map);
  }
  return map as ReadonlyMap<string, T>;
}

const edsNamesOfList = new WeakMap<readonly ClusterRefs[], readonly string[]>();
const routeNamesOfList = new WeakMap<readonly ListenerRefs[], readonly string[]>();

function edsNames(clusters: HeldSet<ClusterRefs>): readonly string[] {
  const shared = clusters.shared;
  const cached = shared === undefined ? undefined : edsNamesOfList.get(shared);
  if (cached !== undefined) return cached;
  const names: string[] = [];
  for (const cluster of clusters.values()) if (cluster.edsName !== undefined) names.push(cluster.edsName);
  const interned = internNames(names);
  if (shared !== undefined) edsNamesOfList.set(shared, interned);
  return interned;
}

function routeNames(listeners: HeldSet<ListenerRefs>): readonly string[] {
  const shared = listeners.shared;
  const cached = shared === undefined ? undefined : routeNamesOfList.get(shared);
  if (cached !== undefined) return cached;
  const names: string[] = [];
  for (const listener of listeners.values()) names.push(...listener.routeNames);
  const interned = internNames(names);
  if (shared !== undefined) routeNamesOfList.set(shared, interned);
  return interned;
}

interface ListDiff<T> {
  /** Resources that are new or whose content changed (a different decoded object). */
  changed: readonly T[];
  removed: readonly string[];
}
const diffs = new WeakMap<readonly { readonly name: string }[], { from: readonly { readonly name: string }[]; diff: ListDiff<{ readonly name: string }> }>();

/** What changed from `before` to the shared list `after`; computed once for every client making that move. */
function diffLists<T extends { readonly name: string }>(before: HeldSet<T>, after: readonly T[]): ListDiff<T> {
  const from = before.shared;
  const cached = from === undefined ? undefined : diffs.get(after);
  if (cached !== undefined && cached.from === from) return cached.diff as ListDiff<T>;
  const afterNames = byNameOf(after);
  const changed = after.filter((item) => before.get(item.name) !== item);
  const removed: string[] = [];
  for (const item of before.values()) if (!afterNames.has(item.name)) removed.push(item.name);
  const diff = { changed, removed };
  if (from !== undefined) diffs.set(after, { from, diff });
  return diff;
}

const clustersForAuthority = new WeakMap<RouteTableRefs, Map<string, readonly string[]>>();
function clustersFor(table: RouteTableRefs, authority: string): readonly string[] {
  let perAuthority = clustersForAuthority.get(table);
  if (perAuthority === undefined) {
    perAuthority = new Map();
    clustersForAuthority.set(table, perAuthority);
  }
  let clusters = perAuthority.get(authority);
  if (clusters === undefined) {
    clusters = matchVirtualHost(table.virtualHosts, authority)?.clusters ?? EMPTY;
    perAuthority.set(authority, clusters);
  }
  return clusters;
}

/**
 * `items` without those `drop` rejects, computed once per (items, key) pair: every client whose
 * warming batch and event are the same shared arrays gets the same answer without redoing the work.
 */
const filtered = new WeakMap<readonly object[], { key: object; result: readonly object[] }>();
function filterShared<T extends object>(items: readonly T[], key: object, drop: (item: T) => boolean): readonly T[] {
  const cached = filtered.get(items);
  if (cached !== undefined && cached.key === key) return cached.result as readonly T[];
  const kept = items.some(drop) ? Object.freeze(items.filter((item) => !drop(item))) : items;
  filtered.set(items, { key, result: kept });
  return kept;
}


const edsClustersOf = new WeakMap<readonly ClusterRefs[], readonly ClusterRefs[]>();
function edsClusters(clusters: readonly ClusterRefs[]): readonly ClusterRefs[] {
  let found = edsClustersOf.get(clusters);
  if (found === undefined) {
    found = Object.freeze(clusters.filter((cluster) => cluster.edsName !== undefined));
    edsClustersOf.set(clusters, found);
  }
  return found;
}

/**
 * Resources warming, kept as batches of shared arrays (the clusters one CDS response added or
 * changed), not one map entry per resource per client: at startup every cluster of every client warms
 * for a round trip, and 5,000 clients x 1,000 clusters of map entries would be hundreds of MB.
 */
class WarmingSet<T extends { readonly name: string }> {
  private batches: Array<{ items: readonly T[]; since: number }> = [];

  add(items: readonly T[], since: number): void {
    if (items.length > 0) this.batches.push({ items, since });
  }

  /** Drops items `drop` rejects; `key` identifies the event (the same array for clients seeing the same one). */
  drop(key: object, drop: (item: T) => boolean): void {
    this.batches = this.batches.flatMap((batch) => {
      const items = filterShared(batch.items, key, drop);
      return items.length === 0 ? [] : [{ items, since: batch.since }];
    });
  }

  clear(): void {
    this.batches = [];
  }

  /** Drops batches that started at or before `cutoff`. */
  expire(cutoff: number): void {
    if (this.batches.some((batch) => batch.since <= cutoff)) this.batches = this.batches.filter((batch) => batch.since > cutoff);
  }

  get empty(): boolean {
    return this.batches.length === 0;
  }

  names(): readonly string[] {
    return internNames(this.batches.flatMap((batch) => batch.items.map((item) => item.name)));
  }
}

export interface DependentSubscriptionsOptions {
  model: 'envoy' | 'grpc';
  protocol: XdsProtocol;
  /** gRPC: the targets (`xds:///<target>`): the Listener names, and the authorities matched to virtual hosts. */
  targets?: readonly string[];
  /** Clock (ms) for warming: a resource warms at most `initialFetchTimeoutMs`, as in Envoy. */
  now: () => number;
  initialFetchTimeoutMs?: number;
}

/** One client's derived subscriptions. Undecodable resources throw (the caller NACKed them already). */
export class DependentSubscriptions {
  readonly model: 'envoy' | 'grpc';
  private readonly protocol: XdsProtocol;
  private readonly targets: readonly string[];
  private readonly now: () => number;
  private readonly initialFetchTimeoutMs: number;
  /** The names last handed out per type; absent = the type is not requested yet. */
  private readonly requested = new Map<string, readonly string[]>();
  private readonly listeners = new HeldSet<ListenerRefs>();
  private readonly clusters = new HeldSet<ClusterRefs>();
  /** gRPC: route configurations held (RDS is not a state-of-the-world type, so always by name). */
  private readonly routeTables = new HeldSet<RouteTableRefs>();
  /** Envoy: names of the route configurations held (interned: the key of shared warming filters). */
  private heldRoutes: readonly string[] = EMPTY;
  private readonly warmingClusters = new WarmingSet<ClusterRefs>();
  private readonly warmingListeners = new WarmingSet<ListenerRefs>();
  private cdsAnswered = false;
  private initialised: boolean;

  constructor(options: DependentSubscriptionsOptions) {
    this.model = options.model;
    this.protocol = options.protocol;
    this.targets = internNames(options.targets ?? []);
    this.now = options.now;
    this.initialFetchTimeoutMs = options.initialFetchTimeoutMs ?? DEFAULT_INITIAL_FETCH_TIMEOUT_MS;
    if (this.model === 'envoy') {
      this.requested.set(CLUSTER_TYPE_URL, EMPTY);
      this.initialised = false;
    } else {
      if (this.targets.length === 0) throw new Error('the grpc subscription model needs the target names (LDS resourceNames)');
      this.requested.set(LISTENER_TYPE_URL, this.targets);
      this.initialised = true;
    }
  }

  /** Names requested for a type (empty for a wildcard type); undefined when not requested yet. */
  names(typeUrl: string): readonly string[] | undefined {
    return this.requested.get(typeUrl);
  }

  /** Whether `typeUrl` is a wildcard subscription in this model. */
  isWildcard(typeUrl: string): boolean {
    return this.model === 'envoy' && (typeUrl === LISTENER_TYPE_URL || typeUrl === CLUSTER_TYPE_URL);
  }

  /** Envoy: whether CDS initialisation is over (LDS requested). */
  get initialisedClusters(): boolean {
    return this.initialised;
  }

  /**
   * Envoy: clusters (CDS) or listeners (LDS) still warming, sorted; nothing for other types or gRPC.
   * One that waited `initialFetchTimeoutMs` counts as warm: Envoy's initial fetch timeout ends the wait
   * (a cluster then uses a cached assignment, or none).
   */
  warming(typeUrl: string): readonly string[] {
    this.expireWarming();
    if (typeUrl === CLUSTER_TYPE_URL) return this.warmingClusters.names();
    if (typeUrl === LISTENER_TYPE_URL) return this.warmingListeners.names();
    return EMPTY;
  }

  /** An ACK of `typeUrl` accepted `response`. */
  accepted(typeUrl: string, response: AcceptedResponse): ModelReaction {
    return this.model === 'envoy' ? this.envoyAccepted(typeUrl, response) : this.grpcAccepted(typeUrl, response);
  }

  /** A NACK of `typeUrl`: nothing was accepted, but Envoy's initialisation and warming go on. */
  rejected(typeUrl: string): ModelReaction {
    if (this.model !== 'envoy') return NO_REACTION;
    // A failed update ends the wait of every cluster (listener) warming on that type: Envoy's EDS
    // cluster and RDS subscription treat onConfigUpdateFailed as "initialised", so startup continues.
    if (typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL) this.warmingClusters.clear();
    if (typeUrl === ROUTE_CONFIGURATION_TYPE_URL) this.warmingListeners.clear();
    if (typeUrl === CLUSTER_TYPE_URL) this.cdsAnswered = true;
    return { before: this.maybeFinishInitialisation(), after: [] };
  }

  /** Envoy: `initial_fetch_timeout` passed without CDS initialising; LDS starts anyway. */
  initialFetchTimedOut(): ModelReaction {
    if (this.model !== 'envoy' || this.initialised) return NO_REACTION;
    return { before: this.startListeners(), after: [] };
  }

  private expireWarming(): void {
    const cutoff = this.now() - this.initialFetchTimeoutMs;
    this.warmingClusters.expire(cutoff);
    this.warmingListeners.expire(cutoff);
  }

  private envoyAccepted(typeUrl: string, response: AcceptedResponse): ModelReaction {
    const before: NamesChange[] = [];
    switch (typeUrl) {
      case CLUSTER_TYPE_URL: {
        const diff = this.replaceOrUpsert(this.clusters, clusterRefs, response);
        if (diff.removed.length > 0) {
          const removed = nameSetOf(diff.removed);
          this.warmingClusters.drop(diff.removed, (cluster) => removed.has(cluster.name));
        }
        // A new or changed EDS cluster is a new cluster object that warms until its endpoints arrive,
        // even if its EDS name did not change (xDS protocol doc, "Resource warming").
        const warming = edsClusters(diff.changed);
        this.warmingClusters.add(warming, this.now());
        this.cdsAnswered = true;
        this.push(before, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, edsNames(this.clusters), this.protocol === 'sotw' && warming.length > 0);
        break;
      }
      case CLUSTER_LOAD_ASSIGNMENT_TYPE_URL: {
        const removed = response.delta?.removed ?? EMPTY;
        const arrived = removed.length === 0 ? response.names : internNames([...response.names, ...removed]);
        const names = nameSetOf(arrived);
        this.warmingClusters.drop(arrived, (cluster) => names.has(cluster.edsName ?? ''));
        break;
      }
      case LISTENER_TYPE_URL: {
        const diff = this.replaceOrUpsert(this.listeners, listenerRefs, response);
        if (diff.removed.length > 0) {
          const removed = nameSetOf(diff.removed);
          this.warmingListeners.drop(diff.removed, (listener) => removed.has(listener.name));
        }
        const wanted = routeNames(this.listeners);
        const wantedSet = nameSetOf(wanted);
        if (this.heldRoutes.some((name) => !wantedSet.has(name))) this.heldRoutes = internNames(this.heldRoutes.filter((name) => wantedSet.has(name)));
        // A listener naming a route configuration Envoy already holds uses it at once; otherwise it
        // warms until RDS delivers it (xDS protocol doc, "Resource warming").
        this.warmingListeners.add(diff.changed, this.now());
        this.dropWarmListeners();
        // Route configuration providers are shared by name, so RDS is asked again only for new names.
        this.push(before, ROUTE_CONFIGURATION_TYPE_URL, wanted, false);
        break;
      }
      case ROUTE_CONFIGURATION_TYPE_URL: {
        const removed = nameSetOf(response.delta?.removed ?? EMPTY);
        this.heldRoutes = internNames([...this.heldRoutes.filter((name) => !removed.has(name)), ...response.names]);
        this.dropWarmListeners();
        break;
      }
      default:
        return NO_REACTION;
    }
    before.push(...this.maybeFinishInitialisation());
    return { before, after: [] };
  }

  private dropWarmListeners(): void {
    const held = nameSetOf(this.heldRoutes);
    this.warmingListeners.drop(this.heldRoutes, (listener) => listener.routeNames.every((name) => held.has(name)));
  }

  private grpcAccepted(typeUrl: string, response: AcceptedResponse): ModelReaction {
    const after: NamesChange[] = [];
    switch (typeUrl) {
      case LISTENER_TYPE_URL: {
        this.replaceOrUpsert(this.listeners, listenerRefs, response);
        const wanted = nameSetOf(routeNames(this.listeners));
        // A route configuration no listener names any more is forgotten with its subscription.
        const stale = [...this.routeTables.values()].filter((table) => !wanted.has(table.name)).map((table) => table.name);
        if (stale.length > 0) this.routeTables.upsert([], stale);
        this.push(after, ROUTE_CONFIGURATION_TYPE_URL, routeNames(this.listeners), false);
        this.push(after, CLUSTER_TYPE_URL, this.grpcClusterNames(), false);
        break;
      }
      case ROUTE_CONFIGURATION_TYPE_URL: {
        // Not a state-of-the-world type: a response may carry only the route configurations that
        // changed (xDS protocol doc, "Grouping Resources into Responses"), so upsert by name.
        const tables = (response.sotw ?? []).map((any) => routeTableRefs.of(any));
        const upserts = (response.delta?.upserts ?? []).flatMap((u) => (u.resource === undefined ? [] : [routeTableRefs.of(u.resource)]));
        this.routeTables.upsert([...tables, ...upserts], response.delta?.removed ?? EMPTY);
        this.push(after, CLUSTER_TYPE_URL, this.grpcClusterNames(), false);
        break;
      }
      case CLUSTER_TYPE_URL:
        this.replaceOrUpsert(this.clusters, clusterRefs, response);
        this.push(after, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, edsNames(this.clusters), false);
        break;
      default:
        return NO_REACTION;
    }
    return { before: [], after };
  }

  /** The clusters of the virtual host matching each target, in the route configuration its listener uses. */
  private grpcClusterNames(): readonly string[] {
    const names: string[] = [];
    for (const target of this.targets) {
      const listener = this.listeners.get(target);
      if (listener === undefined) continue;
      for (const routeName of listener.routeNames) {
        const table = this.routeTables.get(routeName);
        if (table !== undefined) names.push(...clustersFor(table, target));
      }
      for (const table of listener.inlineRoutes) names.push(...clustersFor(table, target));
    }
    return internNames(names);
  }

  private replaceOrUpsert<T extends { readonly name: string }>(
    held: HeldSet<T>,
    cache: { of(any: AnyLike): T; ofList(list: readonly AnyLike[]): readonly T[] },
    response: AcceptedResponse,
  ): ListDiff<T> {
    if (response.sotw !== undefined) {
      const list = cache.ofList(response.sotw);
      const diff = diffLists(held, list);
      held.replace(list);
      return diff;
    }
    const upserts = (response.delta?.upserts ?? []).flatMap((u) => (u.resource === undefined ? [] : [cache.of(u.resource)]));
    const removed = (response.delta?.removed ?? EMPTY).filter((name) => held.get(name) !== undefined);
    const changed = upserts.filter((item) => held.get(item.name) !== item);
    held.upsert(upserts, removed);
    return { changed, removed };
  }

  /** Records a change of `typeUrl`'s names into `into`, unless there is nothing to ask. */
  private push(into: NamesChange[], typeUrl: string, names: readonly string[], resend: boolean): void {
    const current = this.requested.get(typeUrl);
    if (current === undefined) {
      // Not requested yet: the first request waits until there is a name to ask for.
      if (names.length === 0) return;
    } else if (sameNames(current, names) && !resend) {
      return;
    }
    this.requested.set(typeUrl, names);
    into.push({ typeUrl, names, resend: resend && current !== undefined && sameNames(current, names) });
  }

  private maybeFinishInitialisation(): NamesChange[] {
    if (this.model !== 'envoy' || this.initialised || !this.cdsAnswered) return [];
    this.expireWarming();
    if (!this.warmingClusters.empty) return [];
    return this.startListeners();
  }

  private startListeners(): NamesChange[] {
    this.initialised = true;
    if (this.requested.has(LISTENER_TYPE_URL)) return [];
    this.requested.set(LISTENER_TYPE_URL, EMPTY);
    return [{ typeUrl: LISTENER_TYPE_URL, names: EMPTY, resend: false }];
  }
}
