// The unserved names of an Envoy's added-names holds (xds-gateway/tracking/added-names.ts): the core's
// rule for the hold, per name.
import { AddedNames } from '../../../xds-gateway/tracking/added-names';

const EDS = 'eds';
const held = (names: AddedNames): string[] | 'unknown' | undefined => {
  const value = names.held(EDS);
  return value === undefined || value === 'unknown' ? value : [...value].sort();
};

test('a name is served by the ACK of a response sent after it was added', () => {
  const names = new AddedNames();
  names.added(EDS, ['a']);
  names.acked(EDS); // answers a response sent before `a` was added
  expect(held(names)).toEqual(['a']);
  names.responseSent(EDS);
  names.added(EDS, ['b']);
  expect(held(names)).toEqual(['a', 'b']);
  names.acked(EDS);
  expect(held(names)).toEqual(['b']);
  names.responseSent(EDS);
  names.acked(EDS);
  expect(held(names)).toEqual([]);
});

test('a new stream voids what responses on the old one carried; a wildcard makes the names unknown', () => {
  const names = new AddedNames();
  names.added(EDS, ['a']);
  names.responseSent(EDS);
  names.restarted(EDS);
  names.acked(EDS);
  expect(held(names)).toEqual(['a']);
  names.added(EDS, 'all');
  names.added(EDS, ['c']);
  expect(held(names)).toBe('unknown');
});

test('retains only the types still held', () => {
  const names = new AddedNames();
  names.added(EDS, ['a']);
  names.added('cds', ['c']);
  names.retain((typeUrl) => typeUrl === 'cds');
  expect(held(names)).toBeUndefined();
  expect(names.empty).toBe(false);
  names.retain(() => false);
  expect(names.empty).toBe(true);
});
