// A competing status writer, as Contour is for HTTPProxy: it rewrites `status.conditions` (its own
// condition updated, everyone else's carried over as read) as fast as it can for a window, with
// `resourceVersion` in every merge patch. Every write bumps the object's resourceVersion, so the
// status function's and the control plane's own writes meet 409 Conflict storms and must re-read and
// re-plan (Kubernetes optimistic concurrency) without losing or reverting anyone's condition.
import { z } from 'zod';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE } from '../../infra/local/system/samples';

export const COMPETITOR_CONDITION_TYPE = 'CompetitorProcessed';

const objectSchema = z.object({
  metadata: z.object({ resourceVersion: z.string(), generation: z.number().int().optional() }).passthrough(),
  status: z.object({ conditions: z.array(z.object({ type: z.string() }).passthrough()).optional() }).passthrough().optional(),
});

export interface StormReport {
  writes: number;
  conflicts: number;
  errors: number;
}

export async function statusStorm(kubeUrl: string, name: string, durationMs: number): Promise<StormReport> {
  const report: StormReport = { writes: 0, conflicts: 0, errors: 0 };
  const url = `${kubeUrl}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`;
  const until = Date.now() + durationMs;
  while (Date.now() < until) {
    try {
      const read = objectSchema.parse(await (await fetch(url)).json());
      const others = (read.status?.conditions ?? []).filter((c) => c.type !== COMPETITOR_CONDITION_TYPE);
      const mine = {
        type: COMPETITOR_CONDITION_TYPE,
        status: 'True',
        reason: 'Rewritten',
        message: `write ${report.writes}`,
        observedGeneration: read.metadata.generation ?? 0,
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      };
      const response = await fetch(`${url}/status`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ metadata: { resourceVersion: read.metadata.resourceVersion }, status: { conditions: [...others, mine] } }),
      });
      if (response.status === 409) report.conflicts++;
      else if (response.ok) report.writes++;
      else report.errors++;
      await response.arrayBuffer();
    } catch {
      report.errors++;
    }
  }
  return report;
}
