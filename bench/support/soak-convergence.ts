// Recovery for the soak (bench/soak.ts): every spec change must end in the condition True at that
// generation within a budget, unless a newer change of the same object came first (only the latest
// generation must converge). The budget is the Envoy TTL + 5 s (the longest an Envoy gone with a
// killed gateway may lawfully block) plus however long faults were on since the change.
import type { ConditionWrite } from '../../test/truth/observer';
import type { SoakViolation } from './soak-true-check';
import type { SpecChange } from './soak-load';
import { faultTimeWithin, type FaultWindow } from './soak-faults';

export interface ConvergenceTracker {
  /** Per change that became True: spec change → first True at or past its generation (ms). */
  readonly changeToTrueMs: readonly number[];
  /** Changes superseded by a newer change of the object before they were True (not judged). */
  readonly superseded: number;
  readonly violations: readonly SoakViolation[];
  /** Changes still waiting for True (neither True, superseded nor overdue yet). */
  readonly open: number;
  /** Per change judged: how it ended (ms from the change to True, or why not). */
  readonly outcomes: ReadonlyArray<{ change: string; at: number; outcome: 'true' | 'superseded' | 'overdue'; afterMs: number }>;
  /** Judges every change against the writes seen so far, at time `now`. */
  update(changes: readonly SpecChange[], writes: readonly ConditionWrite[], faults: readonly FaultWindow[], now: number): void;
}

export function convergenceTracker(baseBudgetMs: number): ConvergenceTracker {
  const changeToTrueMs: number[] = [];
  const violations: SoakViolation[] = [];
  const outcomes: Array<{ change: string; at: number; outcome: 'true' | 'superseded' | 'overdue'; afterMs: number }> = [];
  let superseded = 0;
  let open = 0;
  const closed = new Set<string>();
  let scanned = 0;
  // name → generation → first time True was seen at or past it (filled from the writes as they come).
  const trueSince = new Map<string, Array<{ generation: number; at: number }>>();
  const firstTrueAtOrPast = (name: string, generation: number): number | undefined => {
    let earliest: number | undefined;
    for (const entry of trueSince.get(name) ?? []) if (entry.generation >= generation && (earliest === undefined || entry.at < earliest)) earliest = entry.at;
    return earliest;
  };
  return {
    changeToTrueMs,
    violations,
    outcomes,
    get superseded() {
      return superseded;
    },
    get open() {
      return open;
    },
    update(changes, writes, faults, now) {
      for (; scanned < writes.length; scanned++) {
        const write = writes[scanned] as ConditionWrite;
        if (write.condition.status !== 'True') continue;
        const list = trueSince.get(write.name) ?? [];
        list.push({ generation: write.condition.observedGeneration, at: write.at });
        trueSince.set(write.name, list);
      }
      const latest = new Map<string, number>();
      for (const change of changes) latest.set(change.name, Math.max(latest.get(change.name) ?? 0, change.generation));
      open = 0;
      for (const change of changes) {
        const key = `${change.name}@${change.generation}`;
        if (closed.has(key)) continue;
        const trueAt = firstTrueAtOrPast(change.name, change.generation);
        if (trueAt !== undefined) {
          closed.add(key);
          changeToTrueMs.push(trueAt - change.at);
          outcomes.push({ change: key, at: change.at, outcome: 'true', afterMs: trueAt - change.at });
          continue;
        }
        if ((latest.get(change.name) ?? 0) > change.generation) {
          closed.add(key);
          superseded++;
          outcomes.push({ change: key, at: change.at, outcome: 'superseded', afterMs: now - change.at });
          continue;
        }
        const budget = baseBudgetMs + faultTimeWithin(faults, change.at, now);
        if (now - change.at > budget) {
          closed.add(key);
          outcomes.push({ change: key, at: change.at, outcome: 'overdue', afterMs: now - change.at });
          violations.push({ check: 'not-true-within-budget', detail: `${key}: not True ${now - change.at} ms after its spec change (budget ${budget} ms, of which faults ${budget - baseBudgetMs} ms)` });
          continue;
        }
        open++;
      }
    },
  };
}
