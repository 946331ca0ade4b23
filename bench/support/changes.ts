// The spec change every bench applies: sample-<i> (infra/local/system/samples.ts) moves its route to
// its canary service, so an Envoy has the new generation once it accepted the canary cluster.
import { CDS_TYPE_URL, EDS_TYPE_URL } from '../../common/core';
import type { GroundTruth } from '../../infra/local/envoys';
import { SAMPLE_SERVICE_PORT } from '../../infra/local/system/samples';

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

/** When the Envoy had both the cluster and its endpoints (CDS and EDS ACKed carrying `cluster`). */
export function programmedAt(truth: GroundTruth, envoyId: string, cluster: string): number | undefined {
  let latest = 0;
  for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL]) {
    const at = truth.acceptedVersions(envoyId, typeUrl).find((accepted) => accepted.resources.some((r) => r.name === cluster))?.acceptedAt;
    if (at === undefined) return undefined;
    latest = Math.max(latest, at);
  }
  return latest;
}
