import {
  appendChange,
  changesAfter,
  currentVersion,
  currentVersions,
  emptyLineageState,
  latestChange,
  nextChangeAfter,
  withTypeChanges,
  type AppendedChange,
} from '../../../common/core';
import { CDS, EDS, L1, LDS, RDS, T0 } from './fixtures';

describe('appendChange', () => {
  it.each<[string, number[] | undefined, number, number, number, AppendedChange | undefined]>([
    ['first change of a type', undefined, 3, 0, 10, { history: [3], historyStart: 0 }],
    ['appends in order', [1, 4], 6, 0, 10, { history: [1, 4, 6], historyStart: 0 }],
    ['a repeated seq does not extend the history', [1, 4], 4, 0, 10, undefined],
    ['an older seq does not extend the history', [1, 4], 2, 0, 10, undefined],
    ['trimming drops the oldest and moves historyStart past it', [1, 4], 6, 0, 2, { history: [4, 6], historyStart: 2 }],
    ['trimming several moves historyStart past the last dropped', [1, 2, 5], 7, 0, 1, { history: [7], historyStart: 6 }],
    ['historyStart never moves back', [1, 4], 6, 3, 2, { history: [4, 6], historyStart: 3 }],
    ['keeps at least one change', [1, 4], 6, 0, 0, { history: [6], historyStart: 5 }],
  ])('%s', (_name, history, seq, historyStart, maxHistory, expected) => {
    expect(appendChange(history, seq, historyStart, maxHistory)).toEqual(expected);
  });

  it('never changes the history it is given', () => {
    const history = [1, 4];
    appendChange(history, 6, 0, 1);
    expect(history).toEqual([1, 4]);
  });
});

describe('history lookups', () => {
  // seq 1 CDS, 2 LDS, 3 RDS, 4 CDS, 5 RDS.
  const typeHistory: Record<string, number[]> = { [CDS]: [1, 4], [LDS]: [2], [RDS]: [3, 5], [EDS]: [] };

  it.each<[string, number | undefined]>([
    [CDS, 4],
    [RDS, 5],
    [EDS, undefined],
    ['never seen', undefined],
  ])('currentVersion of %s = %p', (typeUrl, expected) => {
    expect(currentVersion(typeHistory[typeUrl])).toBe(expected);
  });

  it('currentVersions leaves out types that never changed', () => {
    expect(currentVersions(typeHistory)).toEqual({ [CDS]: 4, [LDS]: 2, [RDS]: 5 });
  });

  it.each<[string, Record<string, number[]>, number]>([
    ['the last change of any type', typeHistory, 5],
    ['0 before any change', {}, 0],
    ['0 when every history is empty', { [CDS]: [] }, 0],
  ])('latestChange: %s', (_name, history, expected) => {
    expect(latestChange(history)).toBe(expected);
  });

  it.each<[number[] | undefined, number, number | undefined, number]>([
    [[1, 4], 0, 1, 2],
    [[1, 4], 1, 4, 1],
    [[1, 4], 3, 4, 1],
    [[1, 4], 4, undefined, 0],
    [[], 2, undefined, 0],
    [undefined, 2, undefined, 0],
  ])('history %j after seq %d: next change %p, %d changes', (history, seq, next, count) => {
    expect(nextChangeAfter(history, seq)).toBe(next);
    expect(changesAfter(history, seq)).toBe(count);
  });

  it('changesAfter with no seq counts every change', () => {
    expect(changesAfter([0, 4], undefined)).toBe(2);
  });
});

describe('withTypeChanges', () => {
  const start = emptyLineageState({ lineage: L1, instanceId: 'gw-a', bootId: 'boot1', group: 'edge', now: T0 });

  it.each<[string, [string[], number][], number, Record<string, number[]>, number, number]>([
    ['one type per seq', [[[CDS], 1], [[RDS], 2]], 10, { [CDS]: [1], [RDS]: [2] }, 0, 2],
    ['several types at one seq, duplicates once', [[[CDS, EDS, CDS], 1]], 10, { [CDS]: [1], [EDS]: [1] }, 0, 1],
    ['the counter follows the largest seq recorded', [[[CDS], 7]], 10, { [CDS]: [7] }, 0, 7],
    ['a seq a type already has is ignored for that type only', [[[CDS], 2], [[CDS, RDS], 2]], 10, { [CDS]: [2], [RDS]: [2] }, 0, 2],
    ['trimming moves historyStart', [[[CDS], 1], [[CDS], 2], [[CDS], 3]], 2, { [CDS]: [2, 3] }, 2, 3],
  ])('%s', (_name, changes, maxHistory, typeHistory, historyStart, currentSeq) => {
    let state = start;
    for (const [typeUrls, seq] of changes) state = withTypeChanges(state, typeUrls, seq, T0 + seq, maxHistory);
    expect(state.typeHistory).toEqual(typeHistory);
    expect(state.historyStart).toBe(historyStart);
    expect(state.currentSeq).toBe(currentSeq);
  });

  it('a change that moves nothing returns the state itself (nothing to write)', () => {
    const once = withTypeChanges(start, [CDS], 3, T0 + 1);
    expect(withTypeChanges(once, [CDS], 3, T0 + 5)).toBe(once);
    expect(withTypeChanges(once, [], 4, T0 + 5)).toBe(once);
  });

  it('keeps the latest heartbeat', () => {
    expect(withTypeChanges(start, [CDS], 1, T0 + 9).heartbeatAt).toBe(T0 + 9);
    expect(withTypeChanges({ ...start, heartbeatAt: T0 + 20 }, [CDS], 1, T0 + 9).heartbeatAt).toBe(T0 + 20);
  });
});
