// The message refresh rule of the status writer's pure decision (common/core/status-update.ts):
// a not-True condition whose counts or blockers changed is rewritten once our last write of that
// generation is `intervalMs` old, never sooner; verdict changes are written at once; True is never
// refreshed. The properties drive the planner over random decision timelines, the way the status
// function (one call per record) and convergence's sweep (one call per tick) use it.
import fc from 'fast-check';
import { DEFAULT_MESSAGE_REFRESH_MS, messageRefreshDue, planConditionWrite, type MessageRefresh } from '../../../common/core/status-update';
import type { Condition, ConditionDraft } from '../../../common/core';

const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const R = DEFAULT_MESSAGE_REFRESH_MS;
const pending = (programmed: number, total = 10): ConditionDraft => ({
  type: 'EnvoyProgrammed',
  status: 'False',
  observedGeneration: 3,
  reason: 'Pending',
  message: `${programmed}/${total} Envoys programmed at generation 3; waiting for envoy-${programmed} (RDS)`,
});
const held = (draft: ConditionDraft): Condition => ({ ...draft, lastTransitionTime: new Date(T0).toISOString() });

describe('messageRefreshDue', () => {
  const refresh = (lastWrittenAt: number | undefined): MessageRefresh => ({ intervalMs: R, lastWrittenAt });
  it.each<[string, Condition | undefined, ConditionDraft, number | undefined, number, ReturnType<typeof messageRefreshDue>]>([
    ['nothing held: a first write, not a refresh', undefined, pending(4), T0, T0 + 1, { kind: 'none' }],
    ['the verdict differs: a verdict write, not a refresh', held(pending(4)), { ...pending(4), reason: 'Rejected' }, T0, T0 + 1, { kind: 'none' }],
    ['same message', held(pending(4)), pending(4), T0, T0 + R, { kind: 'none' }],
    ['a True draft is never refreshed', held({ ...pending(10), status: 'True', reason: 'Programmed' }), { ...pending(11, 11), status: 'True', reason: 'Programmed' }, T0, T0 + 10 * R, { kind: 'none' }],
    ['younger than the interval: due at lastWrittenAt + interval', held(pending(4)), pending(8), T0, T0 + R - 1, { kind: 'notDue', dueAt: T0 + R }],
    ['exactly the interval', held(pending(4)), pending(8), T0, T0 + R, { kind: 'due' }],
    ['the time of the last write is unknown: due at once (the write records it)', held(pending(4)), pending(8), undefined, T0, { kind: 'due' }],
  ])('%s', (_name, current, draft, lastWrittenAt, now, expected) => {
    expect(messageRefreshDue(current, draft, now, refresh(lastWrittenAt))).toEqual(expected);
  });

  it('a held condition the item has not recorded counts as written just now (another writer of ours, not recorded yet)', () => {
    const now = T0 + 5 * R;
    // The item recorded 0/10 long ago; Kubernetes already holds 6/10 (the handoff's write, its record in flight).
    expect(messageRefreshDue(held(pending(6)), pending(8), now, { intervalMs: R, lastWrittenAt: T0, recorded: held(pending(0)) })).toEqual({ kind: 'notDue', dueAt: now + R });
    // Nothing recorded at all, but a condition of ours held: the same.
    expect(messageRefreshDue(held(pending(6)), pending(8), now, { intervalMs: R, lastWrittenAt: undefined, recorded: undefined })).toEqual({ kind: 'notDue', dueAt: now + R });
    // What the item recorded is what Kubernetes holds: its time counts.
    expect(messageRefreshDue(held(pending(6)), pending(8), now, { intervalMs: R, lastWrittenAt: T0, recorded: held(pending(6)) })).toEqual({ kind: 'due' });
  });
});

describe('planConditionWrite with the refresh rule', () => {
  const target = (draft: ConditionDraft) => ({ generation: 3, conditions: [held(draft)] });

  it('skips a message-only change before it is due, saying when it is', () => {
    const plan = planConditionWrite(target(pending(4)), pending(8), T0 + 2_000, { refresh: { intervalMs: R, lastWrittenAt: T0 } });
    expect(plan).toMatchObject({ action: 'skip', reason: 'refreshNotDue', dueAt: T0 + R });
  });

  it('writes it once due, keeping lastTransitionTime (the status did not flip)', () => {
    const plan = planConditionWrite(target(pending(4)), pending(8), T0 + R, { refresh: { intervalMs: R, lastWrittenAt: T0 } });
    expect(plan).toMatchObject({ action: 'write', refresh: true, condition: { message: pending(8).message, lastTransitionTime: new Date(T0).toISOString() } });
  });

  it('writes a verdict change at once, whatever the interval', () => {
    const plan = planConditionWrite(target(pending(4)), { ...pending(4), reason: 'Rejected', message: 'envoy-0 rejected RDS: bad route' }, T0 + 1, { refresh: { intervalMs: R, lastWrittenAt: T0 } });
    expect(plan).toMatchObject({ action: 'write', refresh: false });
  });

  it('without the rule (resync) a message-only change is still not written', () => {
    expect(planConditionWrite(target(pending(4)), pending(8), T0 + 10 * R)).toMatchObject({ action: 'skip', reason: 'unchanged' });
  });

  it('STATUS_WRITE_ON_MESSAGE_CHANGE writes every message change, due or not', () => {
    expect(planConditionWrite(target(pending(4)), pending(8), T0 + 1, { writeOnMessageChange: true, refresh: { intervalMs: R, lastWrittenAt: T0 } })).toMatchObject({ action: 'write', refresh: true });
  });
});

// --- Timelines: what the status function and the sweep do with the planner.

type Step = { dt: number; change: 'count' | 'reject' | 'pend' | 'true' };

interface Simulated {
  writes: Array<{ at: number; condition: Condition; refresh: boolean }>;
  /** Longest time the held message was out of date while the verdict matched and was not True. */
  maxStaleMs: number;
  verdictChanges: number;
  durationMs: number;
}

/**
 * Decision changes arrive at the given offsets (each one a stream record: one planner call); the
 * sweep calls the planner with the latest draft every `sweepEveryMs`. A write sets what Kubernetes
 * holds and, as applyStatusUpdate records it, the time of our last write.
 */
function simulate(steps: readonly Step[], intervalMs: number, sweepEveryMs: number): Simulated {
  let now = T0;
  let programmed = 0;
  let reason = 'Pending';
  let status: Condition['status'] = 'False';
  const draftNow = (): ConditionDraft => ({ type: 'EnvoyProgrammed', status, observedGeneration: 3, reason, message: status === 'True' ? '10/10 Envoys programmed at generation 3' : `${programmed}/10 Envoys programmed at generation 3 (${reason})` });
  let conditions: unknown = undefined;
  let lastWrittenAt: number | undefined;
  let heldCondition: Condition | undefined;
  let staleSince: number | undefined;
  let maxStaleMs = 0;
  let verdictChanges = 0;
  const writes: Simulated['writes'] = [];
  const plan = (at: number): void => {
    const draft = draftNow();
    const result = planConditionWrite({ generation: 3, conditions }, draft, at, { refresh: { intervalMs, lastWrittenAt } });
    if (result.action === 'write') {
      conditions = result.conditions;
      heldCondition = result.condition;
      lastWrittenAt = at;
      writes.push({ at, condition: result.condition, refresh: result.refresh });
    }
    const stale = heldCondition !== undefined && draft.status !== 'True' && heldCondition.status === draft.status && heldCondition.reason === draft.reason && heldCondition.message !== draft.message;
    if (stale) staleSince ??= at;
    else if (staleSince !== undefined) {
      maxStaleMs = Math.max(maxStaleMs, at - staleSince);
      staleSince = undefined;
    }
  };
  plan(now);
  let nextSweep = T0 + sweepEveryMs;
  for (const step of steps) {
    if (status === 'True') break;
    const at = now + step.dt;
    for (; nextSweep < at; nextSweep += sweepEveryMs) plan(nextSweep);
    now = at;
    if (step.change === 'count') programmed = Math.min(9, programmed + 1);
    else if (step.change === 'true') {
      status = 'True';
      reason = 'Programmed';
      verdictChanges++;
    } else {
      const next = step.change === 'reject' ? 'Rejected' : 'Pending';
      if (next !== reason) verdictChanges++;
      reason = next;
      programmed = Math.min(9, programmed + 1);
    }
    plan(now);
  }
  // The fleet goes quiet: the sweep keeps ticking for two intervals.
  const end = now + 2 * intervalMs + sweepEveryMs;
  for (; nextSweep <= end; nextSweep += sweepEveryMs) plan(nextSweep);
  if (staleSince !== undefined) maxStaleMs = Math.max(maxStaleMs, end - staleSince);
  return { writes, maxStaleMs, verdictChanges, durationMs: end - T0 };
}

const stepArb = fc.record({ dt: fc.integer({ min: 1, max: 6_000 }), change: fc.constantFrom<Step['change']>('count', 'count', 'count', 'count', 'reject', 'pend', 'true') });

describe('the refresh rule over decision timelines (property)', () => {
  const intervalArb = fc.integer({ min: 1_000, max: 20_000 });

  it('a message-only write comes at least one interval after the previous write, and never on a True condition', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 60 }), intervalArb, fc.integer({ min: 100, max: 5_000 }), (steps, intervalMs, sweepEveryMs) => {
        const { writes } = simulate(steps, intervalMs, sweepEveryMs);
        for (let i = 1; i < writes.length; i++) {
          const [previous, write] = [writes[i - 1], writes[i]] as [Simulated['writes'][number], Simulated['writes'][number]];
          if (!write.refresh) continue;
          expect(write.at - previous.at).toBeGreaterThanOrEqual(intervalMs);
          expect(previous.condition.status).not.toBe('True');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('writes per generation ≤ 1 + verdict changes + one per interval elapsed; ≤ 2 when it converges within the interval', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 60 }), intervalArb, fc.integer({ min: 100, max: 5_000 }), (steps, intervalMs, sweepEveryMs) => {
        const { writes, verdictChanges, durationMs } = simulate(steps, intervalMs, sweepEveryMs);
        expect(writes.filter((w) => w.refresh).length).toBeLessThanOrEqual(Math.floor(durationMs / intervalMs));
        expect(writes.filter((w) => !w.refresh).length).toBeLessThanOrEqual(1 + verdictChanges);
      }),
      { numRuns: 500 },
    );
    // Pending, counts moving, then True within the interval: exactly Pending once, True once.
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 400 }), { maxLength: 20 }), (gaps) => {
        const steps: Step[] = [...gaps.map((dt) => ({ dt, change: 'count' as const })), { dt: 1, change: 'true' }];
        fc.pre(steps.reduce((sum, step) => sum + step.dt, 0) < R);
        const { writes } = simulate(steps, R, 2_500);
        expect(writes.map((w) => w.condition.status)).toEqual(['False', 'True']);
      }),
    );
  });

  it('a not-True message is never out of date for longer than the interval plus the sweep period', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 60 }), intervalArb, fc.integer({ min: 100, max: 5_000 }), (steps, intervalMs, sweepEveryMs) => {
        const { maxStaleMs } = simulate(steps, intervalMs, sweepEveryMs);
        expect(maxStaleMs).toBeLessThanOrEqual(intervalMs + sweepEveryMs);
      }),
      { numRuns: 500 },
    );
  });
});

describe('two writers of ours, each recording its write a little later (property)', () => {
  // Convergence's handoff (or sweep) and the status function plan against what Kubernetes holds, each
  // with the item as it stands; a write reaches Kubernetes at once and the item (lastCondition,
  // conditionWrittenAt) some milliseconds later. The refresh spacing must hold across both writers.
  type Move = { dt: number; writer: 0 | 1; programmed: number; recordDelay: number };
  const moveArb = fc.record({ dt: fc.integer({ min: 0, max: 3_000 }), writer: fc.constantFrom<0 | 1>(0, 1), programmed: fc.integer({ min: 0, max: 9 }), recordDelay: fc.integer({ min: 0, max: 800 }) });

  function run(moves: readonly Move[], withRecorded: boolean): Array<{ at: number; condition: Condition; refresh: boolean }> {
    let conditions: unknown = [held(pending(0))];
    let item: { lastCondition: Condition | undefined; writtenAt: number | undefined } = { lastCondition: held(pending(0)), writtenAt: T0 };
    const inFlight: Array<{ at: number; lastCondition: Condition; writtenAt: number }> = [];
    const writes: Array<{ at: number; condition: Condition; refresh: boolean }> = [];
    let now = T0;
    for (const move of moves) {
      now += move.dt;
      for (const record of inFlight.filter((r) => r.at <= now)) item = { lastCondition: record.lastCondition, writtenAt: record.writtenAt };
      inFlight.splice(0, inFlight.length, ...inFlight.filter((r) => r.at > now));
      const refresh: MessageRefresh = withRecorded ? { intervalMs: R, lastWrittenAt: item.writtenAt, recorded: item.lastCondition } : { intervalMs: R, lastWrittenAt: item.writtenAt };
      const plan = planConditionWrite({ generation: 3, conditions }, pending(move.programmed), now, { refresh });
      if (plan.action === 'write') {
        conditions = plan.conditions;
        writes.push({ at: now, condition: plan.condition, refresh: plan.refresh });
        inFlight.push({ at: now + move.recordDelay, lastCondition: plan.condition, writtenAt: now });
      } else if (plan.current !== undefined && withRecorded && item.lastCondition?.message !== plan.current.message) {
        // applyStatusUpdate re-learns what Kubernetes holds, with now as its time.
        inFlight.push({ at: now + move.recordDelay, lastCondition: plan.current, writtenAt: now });
      }
    }
    return writes;
  }

  const spacedByTheInterval = (writes: ReturnType<typeof run>): boolean => {
    let previous = T0;
    for (const write of writes) {
      if (write.refresh && write.at - previous < R) return false;
      previous = write.at;
    }
    return true;
  };

  it('never puts two message-only writes less than the interval apart', () => {
    fc.assert(fc.property(fc.array(moveArb, { maxLength: 80 }), (moves) => spacedByTheInterval(run(moves, true))), { numRuns: 1000 });
  });

  it('(without comparing the held condition with the recorded one, the spacing breaks)', () => {
    const found = fc.check(fc.property(fc.array(moveArb, { maxLength: 80 }), (moves) => spacedByTheInterval(run(moves, false))), { numRuns: 1000, seed: 7 });
    expect(found.failed).toBe(true);
  });
});
