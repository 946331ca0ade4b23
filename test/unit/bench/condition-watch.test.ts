import { applyWatchEvent, type ObjectProgress } from '../../../bench/support/condition-watch';

const event = (type: string, generation: number, conditions: unknown[] = []) => ({
  type,
  object: { metadata: { name: 'sample-0', generation }, status: { conditions } },
});
const programmed = (status: string, observedGeneration: number, reason = 'R') => ({ type: 'EnvoyProgrammed', status, observedGeneration, reason });

describe('applyWatchEvent', () => {
  it('counts condition-changing writes per generation and the first True per observed generation', () => {
    const objects = new Map<string, ObjectProgress>();
    expect(applyWatchEvent(objects, event('ADDED', 1), 'EnvoyProgrammed', 0)).toBe(true);
    applyWatchEvent(objects, event('MODIFIED', 1, [programmed('False', 1, 'Pending')]), 'EnvoyProgrammed', 10);
    applyWatchEvent(objects, event('MODIFIED', 1, [programmed('True', 1)]), 'EnvoyProgrammed', 20);
    // Another writer's condition changes: not ours, not counted.
    applyWatchEvent(objects, event('MODIFIED', 1, [programmed('True', 1), { type: 'Valid', status: 'True' }]), 'EnvoyProgrammed', 25);
    applyWatchEvent(objects, event('MODIFIED', 2, [programmed('True', 1)]), 'EnvoyProgrammed', 30);
    applyWatchEvent(objects, event('MODIFIED', 2, [programmed('True', 2)]), 'EnvoyProgrammed', 40);
    applyWatchEvent(objects, event('MODIFIED', 2, [programmed('True', 2)]), 'EnvoyProgrammed', 50);
    const progress = objects.get('sample-0');
    expect(progress?.conditionWrites.get(1)).toBe(2);
    expect(progress?.conditionWrites.get(2)).toBe(1);
    expect(progress?.trueAt.get(1)).toBe(20);
    expect(progress?.trueAt.get(2)).toBe(40);
    expect(progress?.generation).toBe(2);
    expect(progress?.history.map((h) => `${h.generation}:${h.status}/${h.reason}@${h.observedGeneration}`)).toEqual(['1:False/Pending@1', '1:True/R@1', '2:True/R@2']);
  });

  it('does not count the state seen at watch start, forgets deleted objects, rejects garbage', () => {
    const objects = new Map<string, ObjectProgress>();
    applyWatchEvent(objects, event('ADDED', 3, [programmed('True', 3)]), 'EnvoyProgrammed', 5);
    expect(objects.get('sample-0')?.conditionWrites.size).toBe(0);
    expect(objects.get('sample-0')?.trueAt.get(3)).toBe(5);
    applyWatchEvent(objects, event('DELETED', 3), 'EnvoyProgrammed', 6);
    expect(objects.has('sample-0')).toBe(false);
    expect(applyWatchEvent(objects, { type: 'NOPE' }, 'EnvoyProgrammed', 7)).toBe(false);
    expect(applyWatchEvent(objects, 'not an object', 'EnvoyProgrammed', 7)).toBe(false);
  });
});
