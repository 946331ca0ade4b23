// Pure pieces of the convergence throttle (functions/lib/evaluate.ts) and its configuration.
import { decisionRefreshFromEnv } from '../../../functions/convergence';
import { AggregateSnapshot, DECISION_REFRESH_MAX_MS, decisionRefreshPeriodMs, GenerationCache, recentSameVerdict, type EvaluationDeps } from '../../../functions/lib/evaluate';
import type { Decision, ObjectGeneration } from '../../../common/core';

const pending: Decision = { state: 'Pending', programmed: 1, total: 3, blockers: [], blockersOmitted: 0, decidedAt: 1000, evaluatedRev: 5 };

function generation(name: string): ObjectGeneration {
  return { object: { group: 'g', kind: 'K', namespace: 'n', name }, generation: 1, watermarks: {}, firstSeenAt: 0 } as ObjectGeneration;
}

describe('recentSameVerdict', () => {
  it.each([
    ['same state, within the refresh', pending, { ...pending, programmed: 2, decidedAt: 1500 }, 1500, 1000, true],
    ['same state, refresh elapsed', pending, { ...pending, programmed: 2, decidedAt: 2000 }, 2000, 1000, false],
    ['state changed', pending, { ...pending, state: 'Programmed', programmed: 3 }, 1100, 1000, false],
    ['stuck is a new verdict', pending, { ...pending, state: 'Stuck' }, 1100, 1000, false],
    ['superseded is a new verdict', pending, { ...pending, supersededBy: 2 }, 1100, 1000, false],
    ['off (0)', pending, { ...pending, programmed: 2 }, 1100, 0, false],
    ['nothing stored', undefined, pending, 1100, 1000, false],
  ] as Array<[string, Decision | undefined, Decision, number, number, boolean]>)('%s', (_name, stored, fresh, now, refresh, expected) => {
    expect(recentSameVerdict(stored, fresh, now, refresh)).toBe(expected);
  });
});

describe('decisionRefreshPeriodMs', () => {
  it.each([
    ['off stays off', 0, 60_000, 0],
    ['young generation: the configured period', 1000, 1500, 1000],
    ['half the age once that is longer', 1000, 6000, 3000],
    ['capped for old generations', 1000, 600_000, DECISION_REFRESH_MAX_MS],
    ['a configured period longer than the cap wins', 30_000, 600_000, 30_000],
  ])('%s', (_name, refreshMs, ageMs, expected) => {
    expect(decisionRefreshPeriodMs(refreshMs, ageMs)).toBe(expected);
  });

  it('makes the count-only rewrites of a long push logarithmic in its length', () => {
    // Evaluations every 100 ms for 28 s (a 5,000-Envoy push here), counts changing on each.
    const rewrites = (refreshAt: (ageMs: number) => number): number => {
      let decidedAt = 0;
      let count = 0;
      for (let now = 100; now <= 28_000; now += 100) {
        if (now - decidedAt >= refreshAt(now)) {
          decidedAt = now;
          count++;
        }
      }
      return count;
    };
    const fixed = rewrites(() => 1000);
    const growing = rewrites((age) => decisionRefreshPeriodMs(1000, age));
    expect(fixed).toBe(28);
    expect(growing).toBeLessThanOrEqual(7);
  });
});

describe('GenerationCache', () => {
  it('forgets entries after its lifetime and evicts the oldest beyond its size', () => {
    const cache = new GenerationCache(100, 2);
    cache.set('a', generation('a'), 0);
    cache.set('b', generation('b'), 10);
    expect(cache.get('a', 50)?.object.name).toBe('a');
    expect(cache.get('a', 100)).toBeUndefined();
    cache.set('a', generation('a'), 100);
    cache.set('c', generation('c'), 101);
    expect(cache.size).toBe(2);
    expect(cache.get('b', 101)).toBeUndefined();
    expect(cache.get('c', 101)?.object.name).toBe('c');
    cache.delete('c');
    expect(cache.get('c', 101)).toBeUndefined();
  });
});

describe('decisionRefreshFromEnv', () => {
  it('defaults to off and validates', () => {
    expect(decisionRefreshFromEnv({})).toBe(0);
    expect(decisionRefreshFromEnv({ DECISION_REFRESH_MS: '' })).toBe(0);
    expect(decisionRefreshFromEnv({ DECISION_REFRESH_MS: '1000' })).toBe(1000);
    expect(() => decisionRefreshFromEnv({ DECISION_REFRESH_MS: '-1' })).toThrow();
    expect(() => decisionRefreshFromEnv({ DECISION_REFRESH_MS: 'soon' })).toThrow();
  });
});

describe('AggregateSnapshot.evaluate', () => {
  const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
  // Two Envoys on lineage l: one at seq 20, one at 10.
  const shard = { lineage: 'l', shard: 0, v: 3, live: 2, counts: { '20': 1, '10': 1 }, members: { a: { t: 20, r: 1, live: true, s: 1_000 }, b: { t: 10, r: 1, live: true, s: 1_000 } } };
  let reads = 0;
  const deps = {
    aggregates: {
      getLineageRegistry: async () => ({ v: 1, lineages: { l: 1_000 } }),
      getLineageShards: async () => {
        reads++;
        return { shards: [shard], corrupt: [] };
      },
    },
    store: { getLineageState: async () => ({ status: 'found', value: { envoysRecorded: 2 } }) },
    logger: { error: () => undefined, warn: () => undefined, debug: () => undefined },
    policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 },
    now: () => 2_000,
  } as unknown as EvaluationDeps;
  const at = (name: string, seq: number, firstSeenAt: number): ObjectGeneration =>
    ({ object: { group: 'g', kind: 'K', namespace: 'n', name }, generation: 2, watermarks: { l: { seq, types: { [CDS]: seq }, at: firstSeenAt } }, firstSeenAt }) as ObjectGeneration;

  it('shares one evaluation per watermark, keeps each object, and never conflates watermarks', async () => {
    const snapshot = new AggregateSnapshot(deps);
    const one = await snapshot.evaluate(at('one', 10, 5));
    const two = await snapshot.evaluate(at('two', 10, 6)); // same seq, different first-seen time
    const three = await snapshot.evaluate(at('three', 15, 5));
    expect(reads).toBe(1);
    expect(one.convergence).toMatchObject({ object: { name: 'one' }, state: 'Programmed', programmed: 2, total: 2 });
    expect(two.convergence).toMatchObject({ object: { name: 'two' }, state: 'Programmed' });
    expect(three.convergence).toMatchObject({ object: { name: 'three' }, state: 'Pending', programmed: 1, total: 2 });
    expect(three.convergence.blockers.map((b) => b.nodeId)).toEqual(['b']);
    expect(one.now).toBe(2_000);
  });
});
