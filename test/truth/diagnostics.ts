// What a failing schedule's dump shows of the convergence side, so a recovery failure can be told
// apart at a glance: the gateway still reporting an Envoy (states, in runner.ts), expire not acting,
// or a newer decision refused as stale (the stored decision's freshness per lineage against the
// lineages evaluation reads now: docs/RELIABILITY.md, "Findings").
import { formatObjectRef, snapshotRevs, type ObjectRef } from '../../common/core';
import type { ConvergenceDeps } from '../../functions/lib/convergence-batch';
import { AggregateSnapshot } from '../../functions/lib/evaluate';

function describeRevs(revs: Readonly<Record<string, number>> | undefined): string {
  if (revs === undefined) return '-';
  return Object.entries(revs)
    .map(([lineage, rev]) => `${lineage}=${rev}`)
    .join(',');
}

/** Per object: its latest generation's stored decision and freshness; then the live lineages now. */
export async function describeDecisions(deps: ConvergenceDeps, refs: readonly ObjectRef[]): Promise<string> {
  const parts: string[] = [];
  try {
    const now = deps.now();
    for (const ref of refs) {
      const page = await deps.store.listObjectGenerations(ref, { descending: true, limit: 1 });
      const latest = page.items[0];
      const decision = latest?.decision;
      parts.push(
        latest === undefined
          ? `${formatObjectRef(ref)}: no generation stored`
          : `${ref.name}@${latest.generation} (watermarks on ${Object.keys(latest.watermarks).join(', ') || 'none'}): ${decision === undefined ? 'undecided' : `${decision.state} ${decision.programmed}/${decision.total} decided ${now - decision.decidedAt} ms ago, rev ${decision.evaluatedRev} (${describeRevs(decision.evaluatedRevs)}; registry v${decision.registryVersion ?? '-'})`}`,
      );
    }
    const registry = await deps.aggregates.getLineageRegistry();
    parts.push(`registry v${registry.v}: ${Object.entries(registry.lineages).map(([lineage, heartbeatAt]) => `${lineage} heartbeat ${now - heartbeatAt} ms ago`).join(', ')}`);
    parts.push(`evaluation reads now: ${describeRevs(snapshotRevs(await new AggregateSnapshot(deps).get()))}`);
  } catch (error) {
    parts.push(`(reading decisions failed: ${String(error)})`);
  }
  return parts.join('; ');
}
