// sameRequestedNames decides when the relay and the tracker may keep what they built from a SotW
// request's names: only an identical list, in the same order, qualifies. requestedNameSet is what
// they build, once per list.
import { requestedNameSet, sameRequestedNames } from '../../../common/xds';

describe('sameRequestedNames', () => {
  it.each<[string, readonly string[] | undefined, readonly string[], boolean]>([
    ['no earlier request', undefined, [], false],
    ['both empty (wildcard)', [], [], true],
    ['the same names', ['a', 'b'], ['a', 'b'], true],
    ['a name added', ['a'], ['a', 'b'], false],
    ['a name removed', ['a', 'b'], ['a'], false],
    ['a name replaced', ['a', 'b'], ['a', 'c'], false],
    ['the same names reordered (rebuilt: order is not compared as a set)', ['a', 'b'], ['b', 'a'], false],
    ['a duplicate instead of a name', ['a', 'b'], ['a', 'a'], false],
    ['the wildcard name added', ['a'], ['a', '*'], false],
  ])('%s', (_case, previous, next, same) => {
    expect(sameRequestedNames(previous, next)).toBe(same);
  });
});

describe('requestedNameSet', () => {
  it('is the names other than * and whether * is among them, duplicates once', () => {
    expect(requestedNameSet(['a', '*', 'b', 'a'])).toEqual({ names: new Set(['a', 'b']), star: true });
    expect(requestedNameSet([])).toEqual({ names: new Set(), star: false });
    expect(requestedNameSet(['a'])).toEqual({ names: new Set(['a']), star: false });
  });

  it('is one object per list (a list shared by many streams has one set), another for an equal list in another array', () => {
    const shared = ['c1', 'c2', 'c3'];
    const first = requestedNameSet(shared);
    expect(requestedNameSet(shared)).toBe(first);
    const copy = requestedNameSet([...shared]);
    expect(copy).not.toBe(first);
    expect(copy).toEqual(first);
  });
});
