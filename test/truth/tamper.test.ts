// The tampering competitor's pure parts: what each mode does to a condition list, and how the checks
// tell its writes from ours (by the resourceVersion its writes returned).
import { tamperedConditions } from './competitor';
import type { ConditionObserver, ConditionWrite } from './observer';
import { checkRemovals, isRepair, ourWrites } from './tamper';

const OURS = { type: 'EnvoyProgrammed', status: 'True', reason: 'Programmed', message: '6/6 Envoys programmed', observedGeneration: 4, lastTransitionTime: '2026-11-29T00:00:00Z' };
const THEIRS = { type: 'Valid', status: 'True', reason: 'Valid', message: 'valid HTTPProxy', observedGeneration: 4 };

function write(resourceVersion: string, status: string, replacedResourceVersion?: string): ConditionWrite {
  return {
    name: 'sample-0',
    at: Number(resourceVersion),
    generation: 4,
    condition: { status, reason: status === 'True' ? 'Programmed' : 'Rejected', message: '', observedGeneration: 4 },
    resourceVersion,
    ...(replacedResourceVersion === undefined ? {} : { replacedResourceVersion }),
  };
}

describe('tamperedConditions', () => {
  it('delete removes only our condition', () => {
    expect(tamperedConditions([THEIRS, OURS], 'EnvoyProgrammed', 'delete')).toEqual([THEIRS]);
  });

  it('flip turns our True into a Rejected quoting nobody, and anything else into an unearned True; other fields kept', () => {
    expect(tamperedConditions([OURS, THEIRS], 'EnvoyProgrammed', 'flip')).toEqual([THEIRS, { ...OURS, status: 'False', reason: 'Rejected', message: 'tampered by a competing controller' }]);
    const pending = { ...OURS, status: 'False', reason: 'Pending' };
    expect(tamperedConditions([pending], 'EnvoyProgrammed', 'flip')).toEqual([{ ...pending, status: 'True', reason: 'Programmed' }]);
  });

  it('lowerGeneration lowers observedGeneration by one and never below zero', () => {
    expect(tamperedConditions([OURS, THEIRS], 'EnvoyProgrammed', 'lowerGeneration')).toEqual([THEIRS, { ...OURS, observedGeneration: 3 }]);
    expect(tamperedConditions([{ ...OURS, observedGeneration: 0 }], 'EnvoyProgrammed', 'lowerGeneration')).toBeUndefined();
  });

  it('nothing to tamper with when our condition is absent', () => {
    expect(tamperedConditions([THEIRS], 'EnvoyProgrammed', 'delete')).toBeUndefined();
  });
});

describe('attribution by resourceVersion', () => {
  const competitor = new Set(['11', '20']);
  const harness = { isCompetitorWrite: (rv: string | undefined) => rv !== undefined && competitor.has(rv) };

  it('filters the competitor writes out and recognises our repairs of them', () => {
    const writes = [write('10', 'True'), write('11', 'False', '10'), write('12', 'True', '11'), write('13', 'False', '12')];
    expect(ourWrites(harness, writes).map((w) => w.resourceVersion)).toEqual(['10', '12', '13']);
    expect(writes.filter((w) => isRepair(harness, w)).map((w) => w.resourceVersion)).toEqual(['12']);
  });

  it('a removal of our condition not made by the competitor is a violation', () => {
    const observer = { removals: [{ name: 'sample-0', at: 100, resourceVersion: '20' }, { name: 'sample-1', at: 100, resourceVersion: '21' }, { name: 'sample-2', at: 10, resourceVersion: '5' }] } as unknown as ConditionObserver;
    const violations = checkRemovals({ ...harness, observer }, 50);
    expect(violations).toHaveLength(1);
    expect(violations[0]?.detail).toContain('sample-1');
  });
});
