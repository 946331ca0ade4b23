import fc from 'fast-check';
import { programmedThrough, typeVersionAt } from '../../../common/core';
import { CDS, LDS, RDS } from './fixtures';

// Lineage history used below: seq 1 CDS, 2 LDS, 3 RDS, 4 CDS, 5 RDS, 6 (an EDS change, not subscribed).
const history = { [CDS]: [1, 4], [LDS]: [2], [RDS]: [3, 5], eds: [6] };

describe('typeVersionAt', () => {
  it.each([
    [[1, 4], 0, undefined],
    [[1, 4], 1, 1],
    [[1, 4], 3, 1],
    [[1, 4], 4, 4],
    [[1, 4], 100, 4],
    [[], 5, undefined],
  ])('history %j at %d = %p', (h, seq, expected) => {
    expect(typeVersionAt(h, seq)).toBe(expected);
  });
});

describe('programmedThrough', () => {
  it.each<[string, Record<string, number | undefined>, number | undefined]>([
    ['all at latest', { [CDS]: 4, [LDS]: 2, [RDS]: 5 }, 6],
    ['RDS behind: through the seq before its next change', { [CDS]: 4, [LDS]: 2, [RDS]: 3 }, 4],
    ['CDS behind', { [CDS]: 1, [LDS]: 2, [RDS]: 5 }, 3],
    ['acked between changes counts as the change before', { [CDS]: 2, [LDS]: 2, [RDS]: 4 }, 3],
    ['one type never ACKed', { [CDS]: 4, [LDS]: undefined }, undefined],
    ['no subscribed types', {}, undefined],
    ['acked a type with no history: unconstrained', { other: 0, [CDS]: 4 }, 6],
  ])('%s', (_name, acked, expected) => {
    expect(programmedThrough(acked, history)).toBe(expected);
  });

  it.each([
    // History trimmed below 4: CDS acked at 1 may hide a change at 2 or 3, so only 1 is certain.
    [{ [CDS]: 1, [RDS]: 5 }, { historyStart: 4 }, 1],
    [{ [CDS]: 3, [RDS]: 5 }, { historyStart: 4 }, 3],
    [{ [CDS]: 4, [RDS]: 5 }, { historyStart: 4 }, 6],
    [{ [CDS]: 4, [RDS]: 5 }, { currentSeq: 9 }, 9],
  ])('with options %#', (acked, options, expected) => {
    expect(programmedThrough(acked, history, options)).toBe(expected);
  });

  it('agrees with the definition: every type acked >= its version at S, and S+1 fails unless S is current (property)', () => {
    const typeUrls = ['t0', 't1', 't2'];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...typeUrls), { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(40), { minLength: 3, maxLength: 3 }),
        (changes, ackedRaw) => {
          // seq i+1 changes type changes[i]
          const h: Record<string, number[]> = { t0: [], t1: [], t2: [] };
          changes.forEach((typeUrl, i) => h[typeUrl]!.push(i + 1));
          const current = changes.length;
          const acked: Record<string, number> = {};
          typeUrls.forEach((typeUrl, i) => (acked[typeUrl] = Math.min(ackedRaw[i]!, current)));
          const ok = (s: number): boolean => typeUrls.every((t) => acked[t]! >= (typeVersionAt(h[t], s) ?? 0));
          const result = programmedThrough(acked, h, { currentSeq: current });
          expect(result).toBeDefined();
          expect(ok(result!)).toBe(true);
          for (let s = 0; s <= result!; s++) expect(ok(s)).toBe(true);
          if (result! < current) expect(ok(result! + 1)).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
