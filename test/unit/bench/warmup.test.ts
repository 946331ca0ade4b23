// Which objects the warm-up changes patch, and in what order the steps run (pure: the steps are recorded).
import { warmupIndexes, warmUp, type WarmupSteps } from '../../../bench/support/warmup';

describe('warmupIndexes', () => {
  it('takes the samples after the measured ones, one block of the measured size per round', () => {
    const plan = { changes: 3, measured: 10, objects: 100 };
    expect(warmupIndexes(plan, 0)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(warmupIndexes(plan, 2)).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
  });

  it('never touches a measured object, and stops where a whole block no longer fits', () => {
    const plan = { changes: 5, measured: 2, objects: 7 };
    expect(warmupIndexes(plan, 0)).toEqual([2, 3]);
    expect(warmupIndexes(plan, 1)).toEqual([4, 5]);
    expect(warmupIndexes(plan, 2)).toBeUndefined(); // only sample 6 is left
    expect(warmupIndexes({ changes: 1, measured: 2, objects: 2 }, 0)).toBeUndefined();
    expect(warmupIndexes({ changes: 1, measured: 0, objects: 5 }, 0)).toBeUndefined();
  });
});

describe('warmUp', () => {
  function recordingSteps(log: string[]): WarmupSteps {
    return {
      patch: async (index) => {
        log.push(`patch ${index}`);
      },
      done: async (indexes) => {
        log.push(`done ${indexes.join(',')}`);
      },
      settle: async () => {
        log.push('settle');
      },
    };
  }

  it('runs each round whole (patches, then done, then settle) before the next', async () => {
    const log: string[] = [];
    const result = await warmUp({ changes: 2, measured: 2, objects: 6 }, recordingSteps(log), 1);
    expect(log).toEqual(['patch 2', 'patch 3', 'done 2,3', 'settle', 'patch 4', 'patch 5', 'done 4,5', 'settle']);
    expect(result).toMatchObject({ asked: 2, changes: 2, objectsPerChange: 2 });
    expect(result.doneAfterMs).toHaveLength(2);
  });

  it('says how many rounds ran when the objects run out', async () => {
    const log: string[] = [];
    const result = await warmUp({ changes: 3, measured: 2, objects: 5 }, recordingSteps(log), 4);
    expect(result).toEqual({ asked: 3, changes: 1, objectsPerChange: 2, doneAfterMs: [expect.any(Number)] });
    expect(log.filter((line) => line.startsWith('patch')).sort()).toEqual(['patch 2', 'patch 3']);
  });
});
