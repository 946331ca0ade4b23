// The convergence rules both evaluators (Envoy states: convergence.ts; aggregate members:
// aggregate.ts) and the fleet views share, each stated once in the core.
import {
  ackCovers,
  BLOCKER_SEVERITY,
  BLOCKER_VERDICT,
  convergenceState,
  isNackBlocker,
  isSettledDecision,
  isUnresolvedNack,
  noEnvoysConvergence,
  requiredVersion,
  sameVerdict,
  seenWithin,
  sortBlockers,
  storedObservationTime,
  typeWaitingSince,
  waitedPastTimeout,
  type Blocker,
  type ConvergenceState,
  type Decision,
  type Nack,
  type ObjectRef,
} from '../../../common/core';
import { CDS, RDS, T0 } from './fixtures';

const nack = (seq: number): Nack => ({ seq, message: 'bad', at: T0 });

describe('isUnresolvedNack', () => {
  it.each<[string, Nack | undefined, number | undefined, boolean]>([
    ['no NACK', undefined, 3, false],
    ['nothing ACKed', nack(0), undefined, true],
    ['ACKed below the NACKed version', nack(4), 3, true],
    ['ACK of the NACKed version clears it', nack(4), 4, false],
    ['ACK of a newer version clears it', nack(4), 5, false],
  ])('%s', (_name, given, acked, expected) => {
    expect(isUnresolvedNack(given, acked)).toBe(expected);
  });
});

describe('liveness and stuck, on plain times', () => {
  it.each<[number, number, number, boolean]>([
    [T0, T0, 0, true],
    [T0, T0 + 1000, 1000, true],
    [T0, T0 + 1001, 1000, false],
    [T0 + 5, T0, 0, true],
  ])('seenWithin(lastSeenAt %d, now %d, window %d) = %p', (lastSeenAt, now, windowMs, expected) => {
    expect(seenWithin(lastSeenAt, now, windowMs)).toBe(expected);
  });

  it.each<[string, { pending?: { seq: number; sentAt: number }; namesChange?: { at: number; sent: boolean } }, number | undefined]>([
    ['nothing out', {}, undefined],
    ['an unanswered response', { pending: { seq: 3, sentAt: T0 + 5 } }, T0 + 5],
    ['names added, not yet served', { namesChange: { at: T0 + 7, sent: false } }, T0 + 7],
    ['both: the older', { pending: { seq: 3, sentAt: T0 + 5 }, namesChange: { at: T0 + 2, sent: true } }, T0 + 2],
  ])('typeWaitingSince: %s', (_name, type, expected) => {
    expect(typeWaitingSince(type)).toBe(expected);
  });

  it.each<[number, number, number, boolean]>([
    [T0, T0 + 999, 1000, false],
    [T0, T0 + 1000, 1000, true],
    [T0, T0 + 5000, 1000, true],
  ])('waitedPastTimeout(since %d, at %d, timeout %d) = %p', (since, at, timeout, expected) => {
    expect(waitedPastTimeout(since, at, timeout)).toBe(expected);
  });

  it.each<[number, number, number]>([
    [T0 + 10, T0, T0],
    [T0, T0 + 10, T0],
  ])('a stored state read at %d, last seen at %d, is judged at %d', (now, lastSeenAt, expected) => {
    expect(storedObservationTime(now, lastSeenAt)).toBe(expected);
  });
});

describe('what a watermark asks of a type', () => {
  const mark = { seq: 9, types: { [CDS]: 7 }, at: T0 };

  it.each<[string, number]>([
    [CDS, 7],
    [RDS, 0],
  ])('requiredVersion of %s = %d', (typeUrl, expected) => {
    expect(requiredVersion(mark, typeUrl)).toBe(expected);
  });

  it.each<[string, number | undefined, number, boolean, boolean]>([
    ['ACKed at the version', 7, 7, false, true],
    ['ACKed past it', 8, 7, false, true],
    ['ACKed below it', 6, 7, false, false],
    ['nothing ACKed', undefined, 0, false, false],
    ['nothing ACKed, as a member spells it (-1)', -1, 0, false, false],
    ['any ACK covers a type the watermark does not list', 0, 0, false, true],
    ['names added: no ACK covers', 9, 7, true, false],
  ])('ackCovers: %s', (_name, acked, required, namesChanged, expected) => {
    expect(ackCovers(acked, required, namesChanged)).toBe(expected);
  });
});

describe('blocker severity and the verdict', () => {
  const blocker: Record<Blocker['reason'], Blocker> = {
    nacked: { nodeId: 'a', reason: 'nacked', nacks: [] },
    blocked: { nodeId: 'b', reason: 'blocked', nacks: [] },
    stuck: { nodeId: 'c', reason: 'stuck', typeUrls: [CDS], since: T0 },
    noWatermark: { nodeId: 'd', reason: 'noWatermark', lineages: [] },
    pending: { nodeId: 'e', reason: 'pending', typeUrls: [CDS] },
  };

  it('orders reasons Rejected > Blocked > Stuck > Pending', () => {
    expect(BLOCKER_SEVERITY).toEqual({ nacked: 0, blocked: 1, stuck: 2, noWatermark: 3, pending: 4 });
    expect(BLOCKER_VERDICT).toEqual({ nacked: 'Rejected', blocked: 'Blocked', stuck: 'Stuck', noWatermark: 'Pending', pending: 'Pending' });
  });

  it.each<[string, Blocker['reason'][], boolean, ConvergenceState]>([
    ['no blocker, decided', [], false, 'Programmed'],
    ['no blocker, undecided (denominator)', [], true, 'Pending'],
    ['one NACK among others, in any order', ['pending', 'stuck', 'nacked'], false, 'Rejected'],
    ['blocked beats stuck', ['stuck', 'blocked', 'noWatermark'], false, 'Blocked'],
    ['stuck beats waiting', ['pending', 'stuck'], false, 'Stuck'],
    ['no watermark is waiting', ['noWatermark'], false, 'Pending'],
    ['pending', ['pending'], true, 'Pending'],
  ])('convergenceState: %s', (_name, reasons, undecided, expected) => {
    expect(convergenceState(reasons.map((reason) => blocker[reason]), undecided)).toBe(expected);
  });

  it('sorts blockers most severe first, then by node id', () => {
    const sorted = sortBlockers([blocker.pending, blocker.stuck, { ...blocker.nacked, nodeId: 'z' }, blocker.blocked, blocker.nacked, blocker.noWatermark]);
    expect(sorted.map((b) => `${b.reason}:${b.nodeId}`)).toEqual(['nacked:a', 'nacked:z', 'blocked:b', 'stuck:c', 'noWatermark:d', 'pending:e']);
  });

  it.each<[Blocker['reason'], boolean]>([
    ['nacked', true],
    ['blocked', true],
    ['stuck', false],
    ['noWatermark', false],
    ['pending', false],
  ])('isNackBlocker(%s) = %p', (reason, expected) => {
    expect(isNackBlocker(blocker[reason])).toBe(expected);
  });

  it('no live Envoy: NoEnvoys with nothing counted', () => {
    const object: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
    expect(noEnvoysConvergence(object, 3)).toEqual({ object, generation: 3, state: 'NoEnvoys', programmed: 0, total: 0, blockers: [] });
  });
});

describe('decisions: settled and same verdict', () => {
  const decision = (overrides: Partial<Decision> = {}): Decision => ({ state: 'Pending', programmed: 1, total: 2, blockers: [], blockersOmitted: 0, decidedAt: T0, evaluatedRev: 1, ...overrides });

  it.each<[string, Decision | undefined, boolean]>([
    ['no decision', undefined, false],
    ['Pending', decision(), false],
    ['Stuck', decision({ state: 'Stuck' }), false],
    ['Programmed is final', decision({ state: 'Programmed' }), true],
    ['superseded', decision({ supersededBy: 4 }), true],
  ])('isSettledDecision: %s', (_name, given, expected) => {
    expect(isSettledDecision(given)).toBe(expected);
  });

  it.each<[string, Partial<Decision>, boolean]>([
    ['counts, blockers and times are not the verdict', { programmed: 2, blockers: [{ nodeId: 'e', reason: 'pending', typeUrls: [] }], blockersOmitted: 3, decidedAt: T0 + 9, evaluatedRev: 7 }, true],
    ['the state is', { state: 'Stuck' }, false],
    ['being superseded is', { supersededBy: 4 }, false],
    ['the not-observable reason is', { notObservableReason: 'no signal' }, false],
    ['the controller message is', { controllerMessage: 'invalid' }, false],
  ])('sameVerdict: %s', (_name, overrides, expected) => {
    expect(sameVerdict(decision(), decision(overrides))).toBe(expected);
  });
});
