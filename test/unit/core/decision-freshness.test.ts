// Decision freshness per lineage (isStaleDecision, the rule the store's conditional write enforces):
// a decision from an older snapshot never replaces a newer one, and a lineage leaving the live set
// (a dead gateway) never makes later decisions look older — the truth checker's recovery failure
// after a gateway SIGKILL (docs/RELIABILITY.md, "Findings").
import fc from 'fast-check';

import { decisionFromConvergence, DecisionSchema, isStaleDecision, maxEvaluatedRevs, sameDecision, snapshotRevs, type Decision, type LineageAggregate } from '../../../common/core';

const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
const OLD = 'gw.boot1.edge';
const NEW = 'gw.boot2.edge';
const NEWER = 'gw.boot3.edge';

function decided(revs: Record<string, number> | undefined, total = Object.values(revs ?? {}).reduce((a, b) => a + b, 0), registryVersion = 7, state: Decision['state'] = 'Pending'): Decision {
  return decisionFromConvergence({ object, generation: 3, state, programmed: 1, total: 2, blockers: [] }, 1_000, total, revs === undefined ? undefined : { revs, registryVersion });
}

describe('isStaleDecision', () => {
  it.each<[string, Decision | undefined, Decision, boolean]>([
    ['nothing stored', undefined, decided({ [NEW]: 1 }), false],
    ['same snapshot (a later look at the same aggregates: TTLs may have run out)', decided({ [NEW]: 5 }), decided({ [NEW]: 5 }), false],
    ['newer on the one lineage', decided({ [NEW]: 5 }), decided({ [NEW]: 6 }), false],
    ['older on the one lineage', decided({ [NEW]: 6 }), decided({ [NEW]: 5 }), true],
    // The failure: the old lineage (many writes) left the live set; the total dropped from 505 to 9.
    ['a dead lineage left the set, the live one moved on', decided({ [OLD]: 500, [NEW]: 5 }), decided({ [NEW]: 9 }), false],
    ['a dead lineage left the set, nothing else changed', decided({ [OLD]: 500, [NEW]: 5 }), decided({ [NEW]: 5 }), false],
    ['a dead lineage left the set, but ours is behind on the live one', decided({ [OLD]: 500, [NEW]: 9 }), decided({ [NEW]: 5 }), true],
    ['ours read a new lineage the stored one did not know', decided({ [NEW]: 5 }), decided({ [NEW]: 5, [NEWER]: 1 }), false],
    ['ours missed a new lineage and is behind on a common one', decided({ [NEW]: 6, [NEWER]: 1 }), decided({ [NEW]: 5 }), true],
    ['mixed: ahead on one, behind on another', decided({ [NEW]: 5, [NEWER]: 3 }), decided({ [NEW]: 6, [NEWER]: 2 }), true],
    ['stored before per-lineage revs existed (never blocks)', decided(undefined, 900), decided({ [NEW]: 5 }), false],
    ['neither has per-lineage revs: the total decides (older)', decided(undefined, 9), decided(undefined, 5), true],
    ['neither has per-lineage revs: the total decides (newer)', decided(undefined, 5), decided(undefined, 9), false],
    // A lineage missing from an *older* registry read may be one it did not know yet, not a dead one.
    ['older registry read, a lineage missing', decided({ [NEW]: 5, [NEWER]: 1 }, 6, 8), decided({ [NEW]: 5 }, 5, 7), true],
    ['older registry read, otherwise ahead', decided({ [NEW]: 5 }, 5, 8), decided({ [NEW]: 9 }, 9, 7), true],
    ['newer registry read, a lineage left', decided({ [OLD]: 500, [NEW]: 5 }, 505, 7), decided({ [NEW]: 5 }, 5, 8), false],
    // Programmed is final: only a supersession replaces it, whatever the freshness.
    ['stored Programmed, ours fresher and Pending', decided({ [NEW]: 5 }, 5, 7, 'Programmed'), decided({ [NEW]: 9 }, 9, 8), true],
    ['stored Programmed, ours supersedes it', decided({ [NEW]: 5 }, 5, 7, 'Programmed'), { ...decided({ [NEW]: 5 }), supersededBy: 4 }, false],
    ['stored superseded Programmed, ours fresher', { ...decided({ [NEW]: 5 }, 5, 7, 'Programmed'), supersededBy: 4 }, decided({ [NEW]: 9 }), false],
    ['stored Programmed without per-lineage revs, ours with', decided(undefined, 3, 7, 'Programmed'), decided({ [NEW]: 9 }), true],
  ])('%s', (_name, stored, ours, stale) => {
    expect(isStaleDecision(stored, ours)).toBe(stale);
  });

  it('a later snapshot of the same live lineages is never stale, whatever left the set (property)', () => {
    const revs = fc.dictionary(fc.constantFrom('a.b.c', 'a.b.d', 'a.c.c', 'x.y.z'), fc.nat({ max: 1000 }));
    fc.assert(
      fc.property(revs, revs, fc.dictionary(fc.constantFrom('a.b.c', 'a.b.d', 'a.c.c', 'x.y.z'), fc.nat({ max: 50 })), (storedRevs, deadRevs, growth) => {
        // Ours: every lineage the stored one read that is still live, each at least as written.
        const live = Object.keys(storedRevs).filter((lineage) => deadRevs[lineage] === undefined);
        const ours = Object.fromEntries(live.map((lineage) => [lineage, (storedRevs[lineage] ?? 0) + (growth[lineage] ?? 0)]));
        expect(isStaleDecision(decided(storedRevs), decided(ours))).toBe(false);
      }),
    );
  });
});

describe('decision freshness fields', () => {
  it('per-lineage revs are stored, validated, and ignored by sameDecision', () => {
    const a = decided({ [NEW]: 5 });
    const b = decided({ [NEW]: 9, [OLD]: 2 }, 11, 12);
    expect(DecisionSchema.parse(a)).toMatchObject({ evaluatedRevs: { [NEW]: 5 }, registryVersion: 7 });
    expect(DecisionSchema.safeParse({ ...a, evaluatedRevs: { [NEW]: -1 } }).success).toBe(false);
    expect(sameDecision(a, b)).toBe(true);
  });

  it('maxEvaluatedRevs takes the larger rev per lineage', () => {
    expect(maxEvaluatedRevs({ [OLD]: 5, [NEW]: 1 }, { [NEW]: 3, [NEWER]: 2 })).toEqual({ [OLD]: 5, [NEW]: 3, [NEWER]: 2 });
    expect(maxEvaluatedRevs(undefined, { [NEW]: 3 })).toEqual({ [NEW]: 3 });
    expect(maxEvaluatedRevs(undefined, undefined)).toBeUndefined();
  });

  it('snapshotRevs sums shard versions per lineage', () => {
    const shard = (lineage: string, index: number, v: number): LineageAggregate['shards'][number] => ({ lineage, shard: index, v, members: {}, counts: {}, live: 0 });
    const aggregates: LineageAggregate[] = [
      { lineage: OLD, shards: [shard(OLD, 0, 4), shard(OLD, 1, 6)], envoysRecorded: 0 },
      { lineage: NEW, shards: [], envoysRecorded: 0 },
    ];
    expect(snapshotRevs(aggregates)).toEqual({ [OLD]: 10, [NEW]: 0 });
  });
});
