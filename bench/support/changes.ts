// The spec change every bench applies: sample-<i> (infra/local/system/samples.ts) moves its route to
// its canary service. The control plane sends it make-before-break: the canary cluster and its
// endpoints first, then the route configuration that sends sample-<i>'s host to it, so an Envoy
// routes the new generation only once it accepted both (`canaryRouteWatches`).
import type { RouteWatchSpec } from '../../infra/local/envoys';
import { SAMPLE_SERVICE_PORT, sampleFqdn } from '../../infra/local/system/samples';

export const HTTPPROXIES_PATH = '/apis/projectcontour.io/v1/namespaces/default/httpproxies';

export function canaryCluster(index: number): string {
  return `default/app-${index}-canary/${SAMPLE_SERVICE_PORT}`;
}

export async function patchToCanary(kubeUrl: string, index: number): Promise<void> {
  const response = await fetch(`${kubeUrl}${HTTPPROXIES_PATH}/sample-${index}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    // A merge patch replaces a list whole: the route now sends everything to the canary service.
    body: JSON.stringify({ spec: { routes: [{ conditions: [{ prefix: '/' }], services: [{ name: `app-${index}-canary`, port: SAMPLE_SERVICE_PORT }] }] } }),
  });
  if (!response.ok) throw new Error(`patching sample-${index} failed: HTTP ${response.status} ${await response.text()}`);
}

/** The fleet's route watch key for sample-<index>'s change (FleetQueries.routable). */
export function canaryRouteKey(index: number): string {
  return `sample-${index}`;
}

/**
 * Route watches (infra/local/envoys/route-watch.ts) for the changed samples: when each Envoy could
 * route sample-<i>'s host to its canary cluster. The control plane moves a route make-before-break,
 * so the canary cluster with its endpoints arrives one wave before the route that uses it; a measure
 * that stopped at the cluster would end while traffic still went to the old service.
 */
export function canaryRouteWatches(indexes: readonly number[]): RouteWatchSpec[] {
  return indexes.map((index) => ({ key: canaryRouteKey(index), host: sampleFqdn(index), cluster: canaryCluster(index) }));
}
