// A competing status writer, as Contour is for HTTPProxy: it rewrites `status.conditions` (its own
// condition updated, everyone else's carried over as read) as fast as it can for a window, with
// `resourceVersion` in every merge patch. Every write bumps the object's resourceVersion, so the
// status function's and the control plane's own writes meet 409 Conflict storms and must re-read and
// re-plan (Kubernetes optimistic concurrency) without losing or reverting anyone's condition.
import { z } from 'zod';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE } from '../../infra/local/system/samples';
import type { TamperMode } from './schedule';

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

/**
 * A buggy controller that rewrites *our* condition (docs/RELIABILITY.md, "Fault kinds"): it deletes it, flips its status and reason, or lowers its observedGeneration, keeping
 * every other condition and field as read. Each write is a merge patch with the resourceVersion read
 * (re-read and retried on 409), and returns the resourceVersion the API server gave it, so the checker
 * can attribute the watch event carrying that resourceVersion to the competitor, never to us.
 */
export interface TamperReport {
  /** The resourceVersion of the competitor's write, when it wrote. */
  resourceVersion?: string;
  /** Why nothing was written (our condition is not there yet, or a mode that would change nothing). */
  skipped?: string;
  conflicts: number;
}

const conditionFieldsSchema = z.object({
  type: z.string(),
  status: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  observedGeneration: z.number().int().optional(),
}).passthrough();

const tamperTargetSchema = z.object({
  metadata: z.object({ resourceVersion: z.string(), generation: z.number().int().optional() }).passthrough(),
  status: z.object({ conditions: z.array(conditionFieldsSchema).optional() }).passthrough().optional(),
});

const patchedSchema = z.object({ metadata: z.object({ resourceVersion: z.string() }).passthrough() });

/** The tampered condition list, or undefined when the mode would change nothing. */
export function tamperedConditions<C extends z.infer<typeof conditionFieldsSchema>>(conditions: readonly C[], conditionType: string, mode: TamperMode): Array<Record<string, unknown>> | undefined {
  const index = conditions.findIndex((c) => c.type === conditionType);
  const ours = conditions[index];
  if (ours === undefined) return undefined;
  const others = conditions.filter((_, i) => i !== index);
  switch (mode) {
    case 'delete':
      return others;
    case 'flip': {
      // True becomes a Rejected that quotes no Envoy (the checker must not hold it against us);
      // anything else becomes a True nobody earned (it must never count as our True).
      const flipped = ours.status === 'True' ? { ...ours, status: 'False', reason: 'Rejected', message: 'tampered by a competing controller' } : { ...ours, status: 'True', reason: 'Programmed' };
      return [...others, flipped];
    }
    case 'lowerGeneration': {
      const generation = ours.observedGeneration ?? 0;
      if (generation <= 0) return undefined;
      return [...others, { ...ours, observedGeneration: generation - 1 }];
    }
  }
}

export async function tamperCondition(kubeUrl: string, name: string, conditionType: string, mode: TamperMode): Promise<TamperReport> {
  const url = `${kubeUrl}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`;
  let conflicts = 0;
  for (let attempt = 0; attempt < 10; attempt++) {
    const read = tamperTargetSchema.parse(await (await fetch(url)).json());
    const conditions = tamperedConditions(read.status?.conditions ?? [], conditionType, mode);
    if (conditions === undefined) return { skipped: `no ${conditionType} condition to ${mode}`, conflicts };
    const response = await fetch(`${url}/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      // A merge patch replaces the whole list (RFC 7386): exactly what a careless controller does.
      body: JSON.stringify({ metadata: { resourceVersion: read.metadata.resourceVersion }, status: { conditions } }),
    });
    if (response.status === 409) {
      conflicts++;
      await response.arrayBuffer();
      continue;
    }
    if (!response.ok) throw new Error(`tampering with ${name}: HTTP ${response.status} ${await response.text()}`);
    return { resourceVersion: patchedSchema.parse(await response.json()).metadata.resourceVersion, conflicts };
  }
  return { skipped: 'lost every attempt to a conflict', conflicts };
}
