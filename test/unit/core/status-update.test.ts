// Tests of common/core/status-update.ts (the status writer's pure decision; written by the status
// writer's author, tested here with the rest of the core).
import fc from 'fast-check';
import { planConditionWrite, type StatusTarget } from '../../../common/core/status-update';
import type { ConditionDraft } from '../../../common/core';

const now = Date.UTC(2026, 10, 29, 12, 0, 0);
const nowText = new Date(now).toISOString();
const draft: ConditionDraft = { type: 'EnvoyProgrammed', status: 'True', observedGeneration: 5, reason: 'Programmed', message: '3/3 Envoys programmed at generation 5' };
const foreign = { type: 'Valid', status: 'True', reason: 'Valid', message: 'Valid HTTPProxy', lastTransitionTime: '2020-01-01T00:00:00Z', observedGeneration: 5, extra: { kept: true } };
const ours = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'EnvoyProgrammed', status: 'False', observedGeneration: 5, reason: 'Pending', message: '2/3', lastTransitionTime: '2026-01-01T00:00:00.000Z', ...extra,
});

describe('planConditionWrite', () => {
  it.each<[string, StatusTarget, string]>([
    ['object moved on to a newer generation', { generation: 6, conditions: [] }, 'objectNewer'],
    ['decision for a generation the object has not reached', { generation: 4, conditions: [] }, 'decisionAhead'],
    ['stored condition speaks of a newer generation', { generation: undefined, conditions: [ours({ observedGeneration: 7 })] }, 'storedNewer'],
    ['nothing a reader acts on changes', { generation: 5, conditions: [ours({ status: 'True', reason: 'Programmed', message: 'old text' })] }, 'unchanged'],
  ])('skips: %s', (_name, target, reason) => {
    expect(planConditionWrite(target, draft, now)).toMatchObject({ action: 'skip', reason });
  });

  it.each<[string, StatusTarget, Record<string, unknown>[]]>([
    ['appends to absent conditions', { generation: 5, conditions: undefined }, [{ ...draft, lastTransitionTime: nowText }]],
    ['appends after foreign conditions, kept as they are', { generation: 5, conditions: [foreign] }, [foreign, { ...draft, lastTransitionTime: nowText }]],
    ['replaces ours in place on a status flip', { generation: 5, conditions: [ours(), foreign] }, [{ ...draft, lastTransitionTime: nowText }, foreign]],
    ['replaces a malformed entry of our type', { generation: 5, conditions: [foreign, { type: 'EnvoyProgrammed', status: 'Maybe' }] }, [foreign, { ...draft, lastTransitionTime: nowText }]],
    ['ignores non-object entries and a non-list', { generation: 5, conditions: 'garbage' }, [{ ...draft, lastTransitionTime: nowText }]],
  ])('writes: %s', (_name, target, conditions) => {
    const plan = planConditionWrite(target, draft, now);
    expect(plan).toMatchObject({ action: 'write', conditions });
  });

  it('keeps lastTransitionTime when the status does not flip', () => {
    const plan = planConditionWrite({ generation: 5, conditions: [ours()] }, { ...draft, status: 'False', reason: 'Rejected' }, now);
    expect(plan.action === 'write' && plan.condition.lastTransitionTime).toBe('2026-01-01T00:00:00.000Z');
  });

  it('message-only changes are written only when asked', () => {
    const target = { generation: 5, conditions: [ours({ message: '1/3' })] };
    const pending = { ...draft, status: 'False' as const, reason: 'Pending', message: '2/3' };
    expect(planConditionWrite(target, pending, now).action).toBe('skip');
    expect(planConditionWrite(target, pending, now, { writeOnMessageChange: true }).action).toBe('write');
  });

  it('never alters foreign conditions, whatever their shape (property)', () => {
    const foreignEntry = fc.dictionary(fc.constantFrom('type', 'status', 'reason', 'x', 'y'), fc.jsonValue()).filter((entry) => entry['type'] !== 'EnvoyProgrammed');
    fc.assert(
      fc.property(fc.array(fc.oneof(foreignEntry, fc.constant(ours()))), fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }), (conditions, generation) => {
        const snapshot = JSON.stringify(conditions);
        const plan = planConditionWrite({ generation, conditions }, draft, now);
        expect(JSON.stringify(conditions)).toBe(snapshot);
        if (plan.action === 'write') {
          const others = (list: unknown[]): unknown[] => list.filter((c) => typeof c === 'object' && c !== null && !Array.isArray(c) && (c as Record<string, unknown>)['type'] !== 'EnvoyProgrammed');
          expect(others(plan.conditions)).toEqual(others(conditions));
          expect(plan.conditions.filter((c) => c['type'] === 'EnvoyProgrammed').length).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 500 },
    );
  });
});
