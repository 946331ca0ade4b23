// When each simulated Envoy could first route a host to a cluster, judged by content rather than by
// version: the first accepted route configuration whose virtual host for the host sends traffic to
// the cluster, with the cluster and its endpoints accepted too (CDS and EDS carrying its name). A
// control plane that changes a route make-before-break sends the new cluster first and the route
// after it, so "the cluster is held" is one wave short of "the change routes"; the benches' baselines
// wait for this, and the e2e bench reports it beside the product's watermark-based last ACK.
import { z } from 'zod';
import { ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { PROGRAMMED_TYPE_URLS } from './fleet-queries';
import type { GroundTruth } from './groundTruth';
import { matchVirtualHost, routeTableRefs } from './referencedNames';
import type { AcceptedContent } from './simEnvoy';

export const routeWatchSchema = z.object({ key: z.string().min(1), host: z.string().min(1), cluster: z.string().min(1) }).strict();
export type RouteWatchSpec = z.infer<typeof routeWatchSchema>;

export interface FleetRoutable {
  /** Per key: the latest, over the Envoys asked about, of the moment each could first route it. Absent until one could. */
  lastAt: Record<string, number>;
  /** Per key: how many of the Envoys asked about could route it. */
  envoysWith: Record<string, number>;
}

export class RouteWatch {
  /** node id → key → when its accepted routes first sent the watch's host to its cluster. */
  private readonly routed = new Map<string, Map<string, number>>();
  private readonly byKey: ReadonlyMap<string, RouteWatchSpec>;

  constructor(
    private readonly truth: GroundTruth,
    private readonly watches: readonly RouteWatchSpec[],
  ) {
    this.byKey = new Map(watches.map((watch) => [watch.key, watch]));
  }

  /** SimEnvoyOptions.onAccepted for Envoy `nodeId`. What a NACKed response applied does not count. */
  onAccepted(nodeId: string, accepted: AcceptedContent): void {
    if (accepted.typeUrl !== ROUTE_CONFIGURATION_TYPE_URL || accepted.sotw === undefined || accepted.nacked === true) return;
    const tables = routeTableRefs.ofList(accepted.sotw);
    let routed = this.routed.get(nodeId);
    for (const watch of this.watches) {
      if (routed?.has(watch.key) === true) continue;
      if (!tables.some((table) => matchVirtualHost(table.virtualHosts, watch.host)?.clusters.includes(watch.cluster) === true)) continue;
      if (routed === undefined) this.routed.set(nodeId, (routed = new Map()));
      routed.set(watch.key, accepted.at);
    }
  }

  /** When Envoy `nodeId` could first route watch `key`: the later of the route and the cluster with its endpoints. */
  routableAt(nodeId: string, key: string): number | undefined {
    const routed = this.routed.get(nodeId)?.get(key);
    const watch = this.byKey.get(key);
    if (routed === undefined || watch === undefined) return undefined;
    let latest = routed;
    // The cluster and its endpoints, as fleet-queries.ts counts a resource programmed.
    for (const typeUrl of PROGRAMMED_TYPE_URLS) {
      const at = this.truth.acceptedVersions(nodeId, typeUrl).find((version) => version.resources.some((resource) => resource.name === watch.cluster))?.acceptedAt;
      if (at === undefined) return undefined;
      latest = Math.max(latest, at);
    }
    return latest;
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
