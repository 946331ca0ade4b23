// The expire function's work on one tick (docs/CONVERGENCE.md, "Expiry and stuck Envoys"):
//   - Envoys not seen for the TTL that are DISCONNECTED, or whose lineage's gateway stopped
//     heartbeating for the TTL, become EXPIRED (a write conditional on their rev; the stream then
//     updates the aggregates like any other state change);
//   - every pending generation on a live lineage is re-evaluated, so Envoys that stopped answering
//     (a response pending longer than the ACK timeout) are reported as stuck without any new write.
//   - a completed tick advances the readers' table clock (core table-clock.ts), the time every reader
//     judges staleness on, so a gap in the table does not age anyone.
//   - a lineage silent for PRUNE_AFTER_TTLS × TTL with no live member left leaves the registry (core
//     lineage-registry.ts), so the lineages a tick reads are the recent ones, not the system's history.
// Candidates are found from the aggregate members (lastSeenAt is in each member), so a tick reads
// O(lineages × shards) items plus one state per Envoy actually expiring.
import { advanceTableClock, applyExpire, isCountedMember, isLiveMember, seenWithin, shouldExpire, type LineageRegistry, type TableClock } from '../../common/core';
import { recordExpireTick } from '../../common/store';
import type { ConvergenceDeps } from './convergence-batch';
import { depsTableClock, evaluateAll, liveLineages, pendingOn, type EvaluationOutcome } from './evaluate';
import { pruneLineageRegistry } from './registry-prune';

export interface ExpireReport {
  examined: number;
  expired: number;
  conflicts: number;
  evaluated: number;
  failed: number;
  outcomes: Record<string, EvaluationOutcome>;
  /** The gap in expire ticks this tick ended (ms the table clock stood still; 0: none). */
  gapEndedMs: number;
  /** Lineages whose shards this tick read (every lineage the registry named). */
  lineagesRead: number;
  /** Lineages this tick dropped from the registry (core lineage-registry.ts). */
  lineagesPruned: number;
  /** How long the tick took (its clock): one longer than the stall bound less the schedule's period is a gap. */
  tickMs: number;
}

function gapEndedBy(registry: LineageRegistry, next: TableClock): number {
  const last = next.gaps.at(-1);
  if (last === undefined || registry.clock === undefined || last.to !== next.tickAt || next === registry.clock) return 0;
  return last.to - last.from;
}

export async function runExpire(deps: ConvergenceDeps): Promise<ExpireReport> {
  const now = deps.now();
  const { ttlMs } = deps.policy;
  const registry = await deps.aggregates.getLineageRegistry();
  // Judged on the clock as this tick will leave it: a tick ending a gap in the table does not count
  // the gap towards anyone's age (core table-clock.ts), and it is recorded once the tick completed.
  const { stallMs } = depsTableClock(deps, registry);
  const clock = { clock: advanceTableClock(registry.clock, now, { stallMs, ttlMs }), stallMs };
  const report: ExpireReport = { examined: 0, expired: 0, conflicts: 0, evaluated: 0, failed: 0, outcomes: {}, gapEndedMs: gapEndedBy(registry, clock.clock), lineagesRead: 0, lineagesPruned: 0, tickMs: 0 };
  /** Lineages the registry must keep: a member still counted, or shards that could not be read. */
  const keep = new Set<string>();
  if (report.gapEndedMs > 0) deps.logger.warn({ gapMs: report.gapEndedMs, previousTickAt: registry.clock?.tickAt }, 'expire ticks resumed after a gap; its time does not count towards any Envoy\'s age');
  for (const [lineage, heartbeatAt] of Object.entries(registry.lineages)) {
    const lineageDead = !seenWithin(heartbeatAt, now, ttlMs, clock);
    report.lineagesRead++;
    const { shards, corrupt } = await deps.aggregates.getLineageShards(lineage);
    if (corrupt.length > 0) keep.add(lineage);
    for (const shard of shards) {
      for (const [nodeId, member] of Object.entries(shard.members)) {
        if (!isCountedMember(member)) continue;
        keep.add(lineage);
        // Live by the evaluations' rule (core isLiveMember): only a member they would drop is examined.
        if (isLiveMember(member, now, ttlMs, clock, heartbeatAt)) continue;
        report.examined++;
        try {
          const read = await deps.store.getEnvoyState(nodeId);
          if (read.status !== 'found') continue;
          const state = read.value;
          if (!shouldExpire(state, now, ttlMs, clock)) continue;
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
  try {
    report.lineagesPruned = (await pruneLineageRegistry(deps, keep)).length;
  } catch (error) {
    report.failed++;
    deps.logger.error({ err: error }, 'pruning the lineage registry failed; retried next tick');
  }
  const candidates = await pendingOn(deps, liveLineages(registry.lineages, now, ttlMs, clock));
  const { failed, outcomes } = await evaluateAll(deps, candidates);
  report.evaluated = candidates.length - failed.size;
  report.failed += failed.size;
  report.outcomes = Object.fromEntries(outcomes);
  // Only a tick that got this far moves the clock on: one the table failed (it threw) leaves it standing.
  // It is recorded at its end, not its start: its requests may have waited out an outage in the SDK's
  // retries, so the table is known usable only now, and the time it hung is a gap like any other.
  const end = deps.now();
  await recordExpireTick(deps.aggregates, end, { stallMs, ttlMs });
  report.tickMs = end - now;
  // The next tick must end within the stall bound of this one, or the table clock stands still and
  // nobody ages (core table-clock.ts): a tick taking half of it is worth knowing about before that.
  if (report.tickMs > stallMs / 2) deps.logger.warn({ tickMs: report.tickMs, stallMs, lineagesRead: report.lineagesRead }, 'expire tick took more than half the stall bound; a slower one stops the table clock (docs/CONVERGENCE.md, "Staleness across a table gap")');
  return report;
}
