// Condition writes per object per generation for the soak (bench/soak.ts), from the watch's record
// of every change of our condition (test/truth/observer.ts): the writes that change status or reason
// (a verdict) per object and observedGeneration, as invariant 4 counts them (test/truth/checker.ts
// checkWriteCounts, whose bound check is reused), and the message-only refreshes next to them.
import { checkWriteCounts } from '../../test/truth/checker';
import type { ConditionWrite } from '../../test/truth/observer';
import { round } from './stats';

export interface ConditionWriteCounts {
  /** Object generations that got at least one write. */
  generations: number;
  /** Writes changing status or reason, per object generation. */
  verdictWritesPerGeneration: { mean: number; max: number };
  /** Message-only rewrites (the counts of a not-True condition, at most once per refresh interval). */
  messageRefreshes: number;
  /** Invariant 4's findings at `bound` (a verdict write past the bound, a refresh too soon or after True). */
  boundExceeded: string[];
  bound: number;
}

export function countConditionWrites(writes: readonly ConditionWrite[], bound: number): ConditionWriteCounts {
  const verdicts = new Map<string, number>();
  const last = new Map<string, ConditionWrite>();
  for (const write of [...writes].sort((a, b) => a.at - b.at)) {
    const key = `${write.name}@${write.condition.observedGeneration}`;
    const before = last.get(key);
    last.set(key, write);
    const messageOnly = before !== undefined && before.condition.status === write.condition.status && before.condition.reason === write.condition.reason;
    verdicts.set(key, (verdicts.get(key) ?? 0) + (messageOnly ? 0 : 1));
  }
  const counts = [...verdicts.values()];
  const checked = checkWriteCounts(writes, bound);
  return {
    generations: counts.length,
    verdictWritesPerGeneration: { mean: counts.length === 0 ? Number.NaN : round(counts.reduce((sum, n) => sum + n, 0) / counts.length, 2), max: Math.max(0, ...counts) },
    messageRefreshes: checked.refreshes,
    boundExceeded: checked.violations.map((violation) => violation.detail),
    bound,
  };
}
