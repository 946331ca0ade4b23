// The reference check's lookups shared across Envoys: firstMissing answers once per (referenced set,
// subscribed name set), and Delta subscription views are shared by content so Envoys asking for the
// same names share those sets. Pure logic.
import fc from 'fast-check';
import { NameListInterner } from '../../../xds-gateway/relay/name-list-interner';
import { addedNames, firstMissing, missingNames, nextSubscription } from '../../../xds-gateway/tracking/subscription-references';

describe('firstMissing', () => {
  it('answers per referenced set and per subscribed name set, each pair on its own', () => {
    const referenced = new Set(['a', 'b']);
    const both = nextSubscription(undefined, ['a', 'b'], 'delta');
    const onlyA = nextSubscription(undefined, ['a'], 'delta');
    expect(firstMissing(referenced, both)).toBeUndefined();
    // Same referenced set, another name set: its own answer, not the first pair's.
    expect(firstMissing(referenced, onlyA)).toBe('b');
    // Another referenced set, the first name set.
    expect(firstMissing(new Set(['c']), both)).toBe('c');
    expect(firstMissing(referenced, nextSubscription(undefined, ['*'], 'delta'))).toBeUndefined();
  });

  it('property: the first of missingNames, asked repeatedly in any order', () => {
    const names = fc.subarray(['a', 'b', 'c', 'd', 'e']);
    fc.assert(
      fc.property(fc.array(fc.tuple(names, names), { minLength: 1, maxLength: 8 }), (pairs) => {
        const sets = pairs.map(([referenced, subscribed]) => ({ referenced: new Set(referenced), child: nextSubscription(undefined, subscribed, 'delta') }));
        for (const round of [0, 1]) {
          for (const { referenced, child } of round === 0 ? sets : [...sets].reverse()) expect(firstMissing(referenced, child)).toBe(missingNames(referenced, child)[0]);
        }
      }),
    );
  });
});

describe('addedNames', () => {
  it('answers per previous and next name set, each pair on its own', () => {
    const a = nextSubscription(undefined, ['a'], 'delta');
    const ab = nextSubscription(undefined, ['a', 'b'], 'delta');
    const ac = nextSubscription(undefined, ['a', 'c'], 'delta');
    expect(addedNames(a, ab)).toEqual(['b']);
    // Same previous set, another next set; then the first next set from another previous set.
    expect(addedNames(a, ac)).toEqual(['c']);
    expect(addedNames(ac, ab)).toEqual(['b']);
    expect(addedNames(ab, a)).toBeUndefined();
    expect(addedNames(a, nextSubscription(undefined, ['*'], 'delta'))).toBe('all');
  });
});

describe('NameListInterner', () => {
  it('hands every caller with the same names in the same order one frozen list', () => {
    const interner = new NameListInterner();
    const first = interner.intern(['a', 'b']);
    expect(interner.intern(['a', 'b'])).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(interner.intern(['b', 'a'])).not.toBe(first);
    // Names that would join to the same text stay apart.
    expect(interner.intern(['a,b'])).not.toBe(interner.intern(['a', 'b']));
    // The shared list gives one subscription name set for every stream asking for it.
    expect(nextSubscription(undefined, interner.intern(['x', 'y']), 'delta').names).toBe(nextSubscription(undefined, interner.intern(['x', 'y']), 'delta').names);
  });

  it('derives a shared list once per list and change; the next stream making the same change gets it without building', () => {
    const interner = new NameListInterner();
    const base = interner.intern(['a']);
    let builds = 0;
    const build = (names: string[]) => () => {
      builds++;
      return names;
    };
    const next = interner.derive(base, 'sub:b', build(['a', 'b']));
    expect(interner.derive(base, 'sub:b', build(['never', 'built']))).toBe(next);
    expect(builds).toBe(1);
    // Another change, or the same change of another list, is built (and shared by content).
    expect(interner.derive(base, 'sub:c', build(['a', 'c']))).toEqual(['a', 'c']);
    expect(interner.derive(interner.intern(['z']), 'sub:b', build(['a', 'b']))).toBe(next);
    expect(builds).toBe(3);
    // No previous list: by content.
    expect(interner.derive(undefined, 'sub:a', build(['a']))).toBe(base);
  });

  it('keeps at most its bound, letting the least recently used list go', () => {
    const interner = new NameListInterner(2);
    const a = interner.intern(['a']);
    const b = interner.intern(['b']);
    expect(interner.intern(['a'])).toBe(a); // used again: now the most recent
    interner.intern(['c']); // evicts ['b']
    expect(interner.size).toBe(2);
    expect(interner.intern(['a'])).toBe(a);
    expect(interner.intern(['b'])).not.toBe(b);
  });
});
