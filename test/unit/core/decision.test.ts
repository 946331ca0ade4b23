// The stored decision: capped blockers with the true count kept, the condition built from it, and
// "same decision" ignoring only when/what snapshot it was decided from.
import {
  conditionForDecision,
  decisionFromConvergence,
  DecisionSchema,
  MAX_DECISION_BLOCKERS,
  MAX_DECISION_MESSAGE_LENGTH,
  sameDecision,
  type Blocker,
  type Convergence,
} from '../../../common/core';
import { CDS, RDS } from './fixtures';

const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };

function pending(n: number): Blocker[] {
  return Array.from({ length: n }, (_, i) => ({ nodeId: `envoy-${String(i).padStart(3, '0')}`, reason: 'pending' as const, typeUrls: [RDS] }));
}

function convergence(blockers: Blocker[], total = blockers.length + 1): Convergence {
  return { object, generation: 7, state: blockers.length === 0 ? 'Programmed' : 'Pending', programmed: total - blockers.length, total, blockers };
}

describe('decisionFromConvergence', () => {
  it.each([
    [0, 0, 0],
    [3, 3, 0],
    [MAX_DECISION_BLOCKERS, MAX_DECISION_BLOCKERS, 0],
    [MAX_DECISION_BLOCKERS + 1, MAX_DECISION_BLOCKERS, 1],
    [1000, MAX_DECISION_BLOCKERS, 1000 - MAX_DECISION_BLOCKERS],
  ])('%i blockers → %i stored, %i omitted', (count, stored, omitted) => {
    const decision = decisionFromConvergence(convergence(pending(count)), 5, 9);
    expect(decision.blockers).toHaveLength(stored);
    expect(decision.blockersOmitted).toBe(omitted);
    expect(DecisionSchema.safeParse(decision).success).toBe(true);
  });

  it('adds the members evaluation counted but did not name (PROGRESS lists only some) to the omitted', () => {
    const decision = decisionFromConvergence({ ...convergence(pending(3), 50), programmed: 3, blockersOmitted: 44 }, 5, 9);
    expect(decision.blockers).toHaveLength(3);
    expect(decision.blockersOmitted).toBe(44);
    expect(decision.programmed + decision.blockers.length + decision.blockersOmitted).toBe(decision.total);
    expect(conditionForDecision(object, 7, decision, { maxListed: 3 }).message).toMatch(/; and 44 more$/);
  });

  it('bounds NACK messages', () => {
    const long = 'x'.repeat(MAX_DECISION_MESSAGE_LENGTH * 3);
    const decision = decisionFromConvergence(
      { object, generation: 1, state: 'Rejected', programmed: 0, total: 1, blockers: [{ nodeId: 'e', reason: 'nacked', nacks: [{ typeUrl: CDS, seq: 2, message: long, at: 1 }] }] },
      5,
      9,
    );
    const blocker = decision.blockers[0]!;
    expect(blocker.reason === 'nacked' && blocker.nacks[0]!.message.length).toBe(MAX_DECISION_MESSAGE_LENGTH);
    expect(DecisionSchema.safeParse(decision).success).toBe(true);
  });
});

describe('conditionForDecision', () => {
  it.each([
    [0, 'True', /^1\/1 Envoys programmed at generation 7$/],
    [2, 'False', /^1\/3 Envoys programmed at generation 7; waiting for envoy-000 \(RDS\), envoy-001 \(RDS\)$/],
    [7, 'False', /; and 2 more$/],
    [500, 'False', /; and 495 more$/],
  ])('%i blockers', (count, status, message) => {
    const draft = conditionForDecision(object, 7, decisionFromConvergence(convergence(pending(count)), 5, 9));
    expect(draft.status).toBe(status);
    expect(draft.observedGeneration).toBe(7);
    expect(draft.message).toMatch(message);
  });

  it('counts omitted blockers even when fewer are stored than listed', () => {
    const decision = { ...decisionFromConvergence(convergence(pending(3)), 5, 9), blockersOmitted: 10 };
    expect(conditionForDecision(object, 7, decision, { maxListed: 5 }).message).toMatch(/envoy-002 \(RDS\); and 10 more$/);
  });
});

describe('sameDecision', () => {
  const base = decisionFromConvergence(convergence(pending(2)), 5, 9);
  it.each([
    ['identical', base, true],
    ['other time and rev', { ...base, decidedAt: 99, evaluatedRev: 100 }, true],
    ['keys in another order', JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(base).reverse()))) as typeof base, true],
    ['other count', { ...base, programmed: 2 }, false],
    ['superseded', { ...base, supersededBy: 8 }, false],
  ])('%s', (_name, other, expected) => {
    expect(sameDecision(base, other)).toBe(expected);
  });
  it('nothing stored yet', () => expect(sameDecision(undefined, base)).toBe(false));
});
