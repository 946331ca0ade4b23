// The expire function's work on one tick (docs/CONVERGENCE.md, "Expiry and stuck Envoys"):
//   - Envoys not seen for the TTL that are DISCONNECTED, or whose lineage's gateway stopped
//     heartbeating for the TTL, become EXPIRED (a write conditional on their rev; the stream then
//     updates the aggregates like any other state change);
//   - every pending generation on a live lineage is re-evaluated, so Envoys that stopped answering
//     (a response pending longer than the ACK timeout) are reported as stuck without any new write.
// Candidates are found from the aggregate members (lastSeenAt is in each member), so a tick reads
// O(lineages × shards) items plus one state per Envoy actually expiring.
import { applyExpire, shouldExpire } from '../../common/core';
import type { ConvergenceDeps } from './convergence-batch';
import { evaluateAll, liveLineages, pendingOn, type EvaluationOutcome } from './evaluate';

export interface ExpireReport {
  examined: number;
  expired: number;
  conflicts: number;
  evaluated: number;
  failed: number;
  outcomes: Record<string, EvaluationOutcome>;
}

export async function runExpire(deps: ConvergenceDeps): Promise<ExpireReport> {
  const now = deps.now();
  const { ttlMs } = deps.policy;
  const registry = await deps.aggregates.getLineageRegistry();
  const report: ExpireReport = { examined: 0, expired: 0, conflicts: 0, evaluated: 0, failed: 0, outcomes: {} };
  for (const [lineage, heartbeatAt] of Object.entries(registry.lineages)) {
    const lineageDead = now - heartbeatAt > ttlMs;
    const { shards } = await deps.aggregates.getLineageShards(lineage);
    for (const shard of shards) {
      for (const [nodeId, member] of Object.entries(shard.members)) {
        if (!member.live || member.gone === true || now - member.s <= ttlMs) continue;
        report.examined++;
        try {
          const read = await deps.store.getEnvoyState(nodeId);
          if (read.status !== 'found') continue;
          const state = read.value;
          if (!shouldExpire(state, now, ttlMs)) continue;
          // A CONNECTED Envoy on a live gateway is the gateway's to judge (its stream is open).
          if (state.status === 'CONNECTED' && !(lineageDead && state.lineage === lineage)) continue;
          const result = await deps.store.updateEnvoyState({ ...applyExpire(state), rev: state.rev + 1 }, state.rev);
          if (result.ok) {
            report.expired++;
            deps.logger.info({ nodeId, lineage: state.lineage, lastSeenAt: state.lastSeenAt, status: state.status }, 'envoy expired');
          } else {
            report.conflicts++;
          }
        } catch (error) {
          report.failed++;
          deps.logger.error({ nodeId, lineage, err: error }, 'expiring envoy failed; retried next tick');
        }
      }
    }
  }
  const candidates = await pendingOn(deps, liveLineages(registry.lineages, now, ttlMs));
  const { failed, outcomes } = await evaluateAll(deps, candidates);
  report.evaluated = candidates.length - failed.size;
  report.failed += failed.size;
  report.outcomes = Object.fromEntries(outcomes);
  return report;
}
