import fc from 'fast-check';
import {
  buildCondition,
  conditionChanged,
  findCondition,
  setCondition,
  ConditionSchema,
  type Blocker,
  type Condition,
  type Convergence,
} from '../../../common/core';
import { CDS, EDS, RDS, T0 } from './fixtures';

const object = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
const conv = (partial: Partial<Convergence>): Convergence => ({ object, generation: 7, state: 'Pending', programmed: 0, total: 0, blockers: [], ...partial });

describe('buildCondition', () => {
  it.each<[string, Convergence, { status: string; reason: string; message: string | RegExp }]>([
    ['programmed', conv({ state: 'Programmed', programmed: 5, total: 5 }), { status: 'True', reason: 'Programmed', message: '5/5 Envoys programmed at generation 7' }],
    ['pending', conv({ state: 'Pending', programmed: 4, total: 5, blockers: [{ nodeId: 'envoy-b', reason: 'pending', typeUrls: [RDS] }] }),
      { status: 'False', reason: 'Pending', message: '4/5 Envoys programmed at generation 7; waiting for envoy-b (RDS)' }],
    ['rejected with message and a waiter', conv({ state: 'Rejected', programmed: 3, total: 5, blockers: [
      { nodeId: 'envoy-c', reason: 'nacked', nacks: [{ typeUrl: RDS, seq: 9, message: 'duplicate domain', at: T0 }] },
      { nodeId: 'envoy-b', reason: 'pending', typeUrls: [CDS, RDS] },
    ] }), { status: 'False', reason: 'Rejected', message: '3/5 Envoys programmed at generation 7; envoy-c rejected RDS: duplicate domain; waiting for envoy-b (CDS, RDS)' }],
    ['stuck says for how long', conv({ state: 'Stuck', programmed: 1, total: 2, blockers: [{ nodeId: 'envoy-d', reason: 'stuck', typeUrls: [CDS], since: T0 - 95_000 }] }),
      { status: 'False', reason: 'Stuck', message: '1/2 Envoys programmed at generation 7; envoy-d has not answered CDS for 95s' }],
    ['a reference hold is the Envoy\'s missing request, not a missing answer', conv({ state: 'Stuck', programmed: 9, total: 10, blockers: [{ nodeId: 'grpc-0', reason: 'stuck', typeUrls: [EDS], since: T0 - 3_000, unrequested: [EDS] }] }),
      { status: 'False', reason: 'Stuck', message: '9/10 Envoys programmed at generation 7; grpc-0 has not asked for the EDS names its accepted config references for 3s' }],
    ['an unanswered type and a reference hold, both said', conv({ state: 'Stuck', programmed: 1, total: 2, blockers: [{ nodeId: 'e', reason: 'stuck', typeUrls: [CDS, EDS], since: T0 - 40_000, unrequested: [EDS] }] }),
      { status: 'False', reason: 'Stuck', message: '1/2 Envoys programmed at generation 7; e has not answered CDS and has not asked for the EDS names its accepted config references for 40s' }],
    ['no watermark', conv({ state: 'Pending', programmed: 0, total: 1, blockers: [{ nodeId: 'e', reason: 'noWatermark', lineages: ['a.b.c'] }] }),
      { status: 'False', reason: 'Pending', message: /waiting for e \(its gateway has not yet mapped this generation\)/ }],
    ['no envoys', conv({ state: 'NoEnvoys' }), { status: 'Unknown', reason: 'NoEnvoys', message: /no live Envoys/ }],
    // An Envoy's own words cannot forge a line or recolour a terminal (common/core/untrusted-text.ts).
    ['an Envoy\'s node id and NACK text lose control and format characters', conv({ state: 'Rejected', programmed: 0, total: 1, blockers: [
      { nodeId: 'envoy-\u202Ex', reason: 'nacked', nacks: [{ typeUrl: RDS, seq: 9, message: 'bad\n4/5 Envoys programmed \u001b[32mok', at: T0 }] },
    ] }), { status: 'False', reason: 'Rejected', message: '0/1 Envoys programmed at generation 7; envoy-\uFFFDx rejected RDS: bad\uFFFD4/5 Envoys programmed \uFFFD[32mok' }],
    ['not observable', conv({ state: 'GenerationNotObservable', notObservableReason: 'Foo reports no observedGeneration' }),
      { status: 'Unknown', reason: 'GenerationNotObservable', message: /Foo reports no observedGeneration/ }],
  ])('%s', (_name, convergence, expected) => {
    const condition = buildCondition(convergence, {}, T0);
    expect(condition).toMatchObject({ type: 'EnvoyProgrammed', observedGeneration: 7, status: expected.status, reason: expected.reason });
    if (typeof expected.message === 'string') expect(condition.message).toBe(expected.message);
    else expect(condition.message).toMatch(expected.message);
    expect(ConditionSchema.safeParse({ ...condition, lastTransitionTime: '2026-01-01T00:00:00Z' }).success).toBe(true);
  });

  it('caps the list with "and N more" and stays within the Kubernetes message limit', () => {
    const blockers: Blocker[] = Array.from({ length: 40 }, (_, i) => ({ nodeId: `envoy-${i}`, reason: 'nacked' as const, nacks: [{ typeUrl: RDS, seq: 1, message: 'y'.repeat(5000), at: T0 }] }));
    const condition = buildCondition(conv({ state: 'Rejected', total: 40, blockers }), { maxListed: 3, type: 'Programmed' });
    expect(condition.type).toBe('Programmed');
    expect(condition.message).toMatch(/; and 37 more$/);
    expect(condition.message).toContain('envoy-2 rejected RDS');
    expect(condition.message).not.toContain('envoy-3 ');
    expect(condition.message.length).toBeLessThanOrEqual(32768);
  });
});

const cond = (type: string, status: Condition['status'], extra: Partial<Condition> = {}): Condition => ({
  type, status, observedGeneration: 1, lastTransitionTime: '2020-01-01T00:00:00.000Z', reason: 'R', message: 'm', ...extra,
});

describe('setCondition', () => {
  const now = Date.UTC(2026, 0, 2);
  const nowText = new Date(now).toISOString();
  it.each<[string, Condition[], Omit<Condition, 'lastTransitionTime'>, Condition[]]>([
    ['appends when absent', [cond('Valid', 'True')], { type: 'EnvoyProgrammed', status: 'False', observedGeneration: 2, reason: 'Pending', message: 'x' },
      [cond('Valid', 'True'), { type: 'EnvoyProgrammed', status: 'False', observedGeneration: 2, reason: 'Pending', message: 'x', lastTransitionTime: nowText }]],
    ['same status keeps lastTransitionTime', [cond('EnvoyProgrammed', 'False'), cond('Valid', 'True')], { type: 'EnvoyProgrammed', status: 'False', observedGeneration: 3, reason: 'Rejected', message: 'y' },
      [cond('EnvoyProgrammed', 'False', { observedGeneration: 3, reason: 'Rejected', message: 'y' }), cond('Valid', 'True')]],
    ['status flip sets lastTransitionTime, in place', [cond('Valid', 'True'), cond('EnvoyProgrammed', 'False')], { type: 'EnvoyProgrammed', status: 'True', observedGeneration: 3, reason: 'Programmed', message: 'z' },
      [cond('Valid', 'True'), { type: 'EnvoyProgrammed', status: 'True', observedGeneration: 3, reason: 'Programmed', message: 'z', lastTransitionTime: nowText }]],
  ])('%s', (_name, before, draft, expected) => {
    expect(setCondition(before, draft, now)).toEqual(expected);
  });

  it('never alters other conditions and leaves exactly one of ours (property)', () => {
    const types = ['Valid', 'Ready', 'Accepted', 'EnvoyProgrammed', 'ResolvedRefs'];
    const condition = fc.record({
      type: fc.constantFrom(...types),
      status: fc.constantFrom<Condition['status']>('True', 'False', 'Unknown'),
      observedGeneration: fc.nat(20),
      lastTransitionTime: fc.constantFrom('2020-01-01T00:00:00Z', '2021-05-05T00:00:00Z'),
      reason: fc.constantFrom('A', 'B', 'C'),
      message: fc.string({ maxLength: 10 }),
    });
    const uniqueConditions = fc.uniqueArray(condition, { selector: (c) => c.type, maxLength: 5 });
    fc.assert(
      fc.property(uniqueConditions, condition, fc.integer({ min: 0, max: 4_000_000_000_000 }), (before, next, now) => {
        const snapshot = JSON.stringify(before);
        const after = setCondition(before, next, now);
        expect(JSON.stringify(before)).toBe(snapshot); // input not mutated
        const others = (list: Condition[]): Condition[] => list.filter((c) => c.type !== next.type);
        expect(others(after)).toEqual(others(before));
        expect(after.filter((c) => c.type === next.type)).toHaveLength(1);
        const ours = findCondition(after, next.type)!;
        const previous = findCondition(before, next.type);
        expect(ours).toMatchObject({ status: next.status, reason: next.reason, message: next.message, observedGeneration: next.observedGeneration });
        if (previous !== undefined && previous.status === next.status) expect(ours.lastTransitionTime).toBe(previous.lastTransitionTime);
        else expect(ours.lastTransitionTime).toBe(new Date(now).toISOString());
        // Applying the same condition twice changes nothing the second time.
        expect(setCondition(after, next, now + 1000)).toEqual(after);
      }),
      { numRuns: 500 },
    );
  });
});

describe('conditionChanged', () => {
  const base = cond('EnvoyProgrammed', 'False');
  it.each<[string, Condition | undefined, Condition, boolean, boolean]>([
    ['no previous', undefined, base, true, true],
    ['identical', base, { ...base }, false, false],
    ['only lastTransitionTime differs', base, { ...base, lastTransitionTime: 'later' }, false, false],
    ['status', base, { ...base, status: 'True' }, true, true],
    ['reason', base, { ...base, reason: 'Other' }, true, true],
    ['observedGeneration', base, { ...base, observedGeneration: 2 }, true, true],
    ['message only', base, { ...base, message: '4/5' }, true, false],
  ])('%s', (_name, previous, next, withMessage, withoutMessage) => {
    expect(conditionChanged(previous, next)).toBe(withMessage);
    expect(conditionChanged(previous, next, { includeMessage: false })).toBe(withoutMessage);
  });
});
