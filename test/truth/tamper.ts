// The tampering competitor in the checks: which condition writes are ours, which of ours repair a
// competitor's write, and the repair phase that ends each schedule.
//
// Attribution: the competitor records the resourceVersion each of its writes returned; the watch
// event carrying that resourceVersion is its write. Every other change of our condition is ours (the
// only other status writer, the control plane, carries our condition over as read, with the
// resourceVersion in its patch, so it cannot change it). Invariants 1, 2 and 4 are judged on our
// writes only; a competitor's True never counts as ours (the harness's `allProgrammed` refuses it).
//
// Repair: a tampered condition is put back by the resync function's condition pass
// (functions/lib/resync-conditions.ts), which in production runs on a schedule (serverless.yml:
// `rate(15 minutes)`), or earlier by the status function when the object's decision changes (its
// planner re-reads the object and writes whenever our condition is missing or differs). The timer is
// off during a run (invariant 5), so the repair phase runs the pass once, as the schedule would,
// and demands the correct condition within the recovery budget.
import type { ConditionResyncReport } from '../../functions/lib/resync-conditions';
import type { Violation } from './checker';
import type { Harness } from './harness';
import type { ConditionWrite } from './observer';
import { TAMPER_MODES, type TamperMode } from './schedule';

/** Our writes (the competitor's filtered out by resourceVersion). */
export function ourWrites(harness: Pick<Harness, 'isCompetitorWrite'>, writes: readonly ConditionWrite[]): ConditionWrite[] {
  return writes.filter((write) => !harness.isCompetitorWrite(write.resourceVersion));
}

/** One of our writes that replaced a competitor's write or removal: a repair, not churn (invariant 4). */
export function isRepair(harness: Pick<Harness, 'isCompetitorWrite'>, write: ConditionWrite): boolean {
  return harness.isCompetitorWrite(write.replacedResourceVersion);
}

/**
 * Our condition vanished from an object without the competitor removing it: someone (the control
 * plane's status writer, a 409 retry of ours) lost it. We never remove it ourselves.
 */
export function checkRemovals(harness: Pick<Harness, 'isCompetitorWrite' | 'observer'>, since: number): Violation[] {
  return harness.observer.removals
    .filter((removal) => removal.at >= since && !harness.isCompetitorWrite(removal.resourceVersion))
    .map((removal) => ({ invariant: 'I3-recovery', detail: `${removal.name}: our condition disappeared at resourceVersion ${removal.resourceVersion ?? '?'} and the tampering competitor did not remove it` }));
}

export interface RepairResult {
  /** Whether the competitor managed to tamper (it skips when there is nothing to change). */
  tampered: boolean;
  mode: TamperMode;
  object: number;
  /** ms from the tamper to our correct condition back on every object (NaN if not tampered). */
  repairMs: number;
  pass?: ConditionResyncReport;
  violations: Violation[];
}

/**
 * After recovery: the competitor tampers with one object's condition (object and mode from the
 * seed), the resync condition pass runs once, and every object must show our correct condition
 * again within the budget.
 */
export async function tamperAndRepair(harness: Harness, seed: number, objects: number, budgetMs: number, runPass: () => Promise<ConditionResyncReport>): Promise<RepairResult> {
  const object = seed % objects;
  const mode = TAMPER_MODES[seed % TAMPER_MODES.length] ?? 'delete';
  const violations: Violation[] = [];
  const tamperedAt = Date.now();
  const tampered = await harness.tamper(object, mode);
  if (!tampered) return { tampered, mode, object, repairMs: Number.NaN, violations };
  let pass: ConditionResyncReport | undefined;
  try {
    pass = await runPass();
  } catch (error) {
    violations.push({ invariant: 'checker', detail: `resync condition pass failed: ${String(error)}` });
  }
  try {
    await harness.observer.waitFor(() => harness.allProgrammed(), budgetMs, `repair after a ${mode} tamper of object ${object}`);
  } catch {
    violations.push({
      invariant: 'I3-recovery',
      detail: `after the competitor's ${mode} of object ${object} and one resync condition pass (${JSON.stringify(pass ?? null)}), not every object showed our True within ${budgetMs} ms:\n  ${harness.describeObjects()}`,
    });
  }
  // Not required: pass.reasserted ≥ 1. The status function may have repaired it first (a decision
  // record arrived meanwhile, e.g. a message-count change), and then the pass finds it in sync.
  return { tampered, mode, object, repairMs: Date.now() - tamperedAt, ...(pass === undefined ? {} : { pass }), violations };
}
