// When each simulated Envoy could first route a host to a cluster, judged by content rather than by
// version: the first accepted route configuration whose virtual host for the host sends traffic to
// the cluster, with the cluster and its endpoints accepted too (CDS and EDS carrying its name). A
// control plane that changes a route make-before-break sends the new cluster first and the route
// after it, so "the cluster is held" is one wave short of "the change routes"; the benches' baselines
// wait for this, and the e2e bench reports it beside the product's watermark-based last ACK.
import { z } from 'zod';
import { ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { PROGRAMMED_TYPE_URLS } from './fleet-queries';
import type { AcceptedVersion, GroundTruth, ResourceVersion } from './groundTruth';
import { matchVirtualHost, routeTableRefs, type RouteTableRefs } from './referencedNames';
import type { AcceptedContent } from './simEnvoy';
import type { DeltaUpsert } from './subscriptionModel';

export const routeWatchSchema = z.object({ key: z.string().min(1), host: z.string().min(1), cluster: z.string().min(1) }).strict();
export type RouteWatchSpec = z.infer<typeof routeWatchSchema>;

export interface FleetRoutable {
  /** Per key: the latest, over the Envoys asked about, of the moment each could first route it. Absent until one could. */
  lastAt: Record<string, number>;
  /** Per key: how many of the Envoys asked about could route it. */
  envoysWith: Record<string, number>;
}

/** The names in a resource list, once per list (an Envoy group's accepted lists are shared arrays). */
const nameSets = new WeakMap<readonly ResourceVersion[], ReadonlySet<string>>();
function namesOf(resources: readonly ResourceVersion[]): ReadonlySet<string> {
  let names = nameSets.get(resources);
  if (names === undefined) nameSets.set(resources, (names = new Set(resources.map((resource) => resource.name))));
  return names;
}

/** The union of key sets (the one set itself when there is one). */
function keysOf(sets: readonly ReadonlySet<string>[]): ReadonlySet<string> {
  if (sets.length === 1) return sets[0] as ReadonlySet<string>;
  const keys = new Set<string>();
  for (const set of sets) for (const key of set) keys.add(key);
  return keys;
}

export class RouteWatch {
  /** node id → key → when its accepted routes first sent the watch's host to its cluster. */
  private readonly routed = new Map<string, Map<string, number>>();
  private readonly byKey: ReadonlyMap<string, RouteWatchSpec>;
  /** Per shared list of route tables (RefsCache.ofList): the keys of the watches it routes. */
  private readonly routedByTables = new WeakMap<readonly RouteTableRefs[], ReadonlySet<string>>();
  /** Per route table (RefsCache.of: one object per content): the keys of the watches it routes. */
  private readonly routedByTable = new WeakMap<RouteTableRefs, ReadonlySet<string>>();
  /** Per Envoy, type and resource name: how far its accepted versions were scanned, and the first that carried it. */
  private readonly heldScans = new Map<string, { scanned: number; at?: number }>();

  constructor(
    private readonly truth: GroundTruth,
    private readonly watches: readonly RouteWatchSpec[],
  ) {
    this.byKey = new Map(watches.map((watch) => [watch.key, watch]));
  }

  /**
   * SimEnvoyOptions.onAccepted for Envoy `nodeId`. What a NACKed response applied does not count. SotW:
   * the accepted list; Delta: the route configurations the response upserted (each replaces the one
   * of its name the Envoy held, so routing the host through one of them is routing it).
   */
  onAccepted(nodeId: string, accepted: AcceptedContent): void {
    if (accepted.typeUrl !== ROUTE_CONFIGURATION_TYPE_URL || accepted.nacked === true) return;
    let routes: ReadonlySet<string>;
    if (accepted.sotw !== undefined) routes = this.watchesRoutedBy(routeTableRefs.ofList(accepted.sotw));
    else if (accepted.delta !== undefined) routes = this.watchesRoutedByUpserts(accepted.delta.upserts);
    else return;
    if (routes.size === 0) return;
    let routed = this.routed.get(nodeId);
    for (const key of routes) {
      if (routed?.has(key) === true) continue;
      if (routed === undefined) this.routed.set(nodeId, (routed = new Map()));
      routed.set(key, accepted.at);
    }
  }

  /**
   * The keys of the watches whose host `tables` send to their cluster, once per list: every Envoy
   * handed the same route configurations gets the same `tables` array (RefsCache.ofList), and
   * matching each watch's host against every virtual host again per Envoy was the largest share of
   * the fleet's CPU at 1,000 objects (1,000 virtual hosts × the watches × the Envoys × the waves).
   */
  private watchesRoutedBy(tables: readonly RouteTableRefs[]): ReadonlySet<string> {
    let keys = this.routedByTables.get(tables);
    if (keys === undefined) {
      keys = keysOf(tables.map((table) => this.watchesRoutedByTable(table)));
      this.routedByTables.set(tables, keys);
    }
    return keys;
  }

  /** `watchesRoutedBy` for Delta upserts: each Envoy's upsert list is its own, its tables are shared by content. */
  private watchesRoutedByUpserts(upserts: readonly DeltaUpsert[]): ReadonlySet<string> {
    return keysOf(upserts.flatMap((upsert) => (upsert.resource === undefined ? [] : [this.watchesRoutedByTable(routeTableRefs.of(upsert.resource))])));
  }

  /** The keys of the watches whose host one table sends to their cluster, once per table (RefsCache.of: one object per content). */
  private watchesRoutedByTable(table: RouteTableRefs): ReadonlySet<string> {
    let keys = this.routedByTable.get(table);
    if (keys === undefined) {
      keys = new Set(this.watches.filter((watch) => matchVirtualHost(table.virtualHosts, watch.host)?.clusters.includes(watch.cluster) === true).map((watch) => watch.key));
      this.routedByTable.set(table, keys);
    }
    return keys;
  }

  /** When Envoy `nodeId` could first route watch `key`: the later of the route and the cluster with its endpoints. */
  routableAt(nodeId: string, key: string): number | undefined {
    const routed = this.routed.get(nodeId)?.get(key);
    const watch = this.byKey.get(key);
    if (routed === undefined || watch === undefined) return undefined;
    let latest = routed;
    // The cluster and its endpoints, as fleet-queries.ts counts a resource programmed.
    for (const typeUrl of PROGRAMMED_TYPE_URLS) {
      const at = this.firstAcceptedWith(nodeId, typeUrl, watch.cluster);
      if (at === undefined) return undefined;
      latest = Math.max(latest, at);
    }
    return latest;
  }

  /**
   * When Envoy `nodeId` first accepted a `typeUrl` response carrying `name`. The truth's accepted
   * versions only grow, so each (Envoy, type, name) is scanned from where the last query stopped: the
   * baselines poll `routable` through the change, and scanning every Envoy's whole history (hundreds
   * of versions of 1,000 resources at 1,000 objects) per poll cost seconds of the fleet's CPU.
   */
  private firstAcceptedWith(nodeId: string, typeUrl: string, name: string): number | undefined {
    const key = `${nodeId}\u0000${typeUrl}\u0000${name}`;
    let scan = this.heldScans.get(key);
    if (scan === undefined) this.heldScans.set(key, (scan = { scanned: 0 }));
    if (scan.at !== undefined) return scan.at;
    const versions = this.truth.acceptedVersions(nodeId, typeUrl);
    for (; scan.scanned < versions.length; scan.scanned++) {
      const version = versions[scan.scanned] as AcceptedVersion;
      if (namesOf(version.resources).has(name)) return (scan.at = version.acceptedAt);
    }
    return undefined;
  }

  /** `routableAt` over Envoys and keys, as plain JSON (what FleetQueries.routable answers). */
  routable(nodeIds: Iterable<string>, keys: readonly string[]): FleetRoutable {
    const lastAt: Record<string, number> = {};
    const envoysWith: Record<string, number> = {};
    for (const key of keys) envoysWith[key] = 0;
    for (const nodeId of nodeIds) {
      for (const key of keys) {
        const at = this.routableAt(nodeId, key);
        if (at === undefined) continue;
        envoysWith[key] = (envoysWith[key] ?? 0) + 1;
        lastAt[key] = Math.max(lastAt[key] ?? 0, at);
      }
    }
    return { lastAt, envoysWith };
  }
}
