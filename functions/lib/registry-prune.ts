// The one place the lineage registry loses lineages (core lineage-registry.ts): the expire function
// on every tick, from the members it has just read, and resync, from the members it rebuilt from the
// states. Judged on the registry as re-read inside the conditional update, so a lineage whose gateway
// heartbeated since the caller read its members is kept.
import { prunableLineages, type Lineage } from '../../common/core';
import { updateLineageRegistry } from '../../common/store';
import type { ConvergenceDeps } from './convergence-batch';
import { depsTableClock } from './evaluate';

/** Drops the prunable lineages not in `keep`; returns the lineages dropped (logged once). */
export async function pruneLineageRegistry(deps: Pick<ConvergenceDeps, 'aggregates' | 'policy' | 'stallMs' | 'now' | 'logger'>, keep: ReadonlySet<Lineage>): Promise<Lineage[]> {
  let pruned: Lineage[] = [];
  await updateLineageRegistry(deps.aggregates, (registry) => {
    pruned = prunableLineages(registry.lineages, keep, deps.now(), deps.policy.ttlMs, depsTableClock(deps, registry));
    if (pruned.length === 0) return undefined;
    const dropped = new Set(pruned);
    return { ...registry, lineages: Object.fromEntries(Object.entries(registry.lineages).filter(([lineage]) => !dropped.has(lineage))) };
  });
  if (pruned.length > 0) deps.logger.info({ lineages: pruned }, 'silent lineages without live Envoys pruned from the registry');
  return pruned;
}
