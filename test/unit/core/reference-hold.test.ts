// The reference hold (common/core/reference-hold.ts) lasts while a referenced name is missing from a
// type's subscription; the hold a request adding names sets is a different thing and survives it.
import { applyAck, applyNamesAdded, applyReferenceMissing, applyReferenceSatisfied, applySent, type EnvoyState } from '../../../common/core';
import { EDS, L1, L2, T0, envoy } from './fixtures';

type Step = (s: EnvoyState) => EnvoyState;
const missing: Step = (s) => applyReferenceMissing(s, { typeUrl: EDS, lineage: L1, now: T0 + 1 });
const satisfied: Step = (s) => applyReferenceSatisfied(s, { typeUrl: EDS });
const namesAdded: Step = (s) => applyNamesAdded(s, { typeUrl: EDS, lineage: L1, now: T0 + 2 });
const sent: Step = (s) => applySent(s, { typeUrl: EDS, version: { lineage: L1, seq: 4 }, now: T0 + 3 });
const acked: Step = (s) => applyAck(s, { typeUrl: EDS, version: { lineage: L1, seq: 4 }, now: T0 + 4 });

it.each<[string, Step[], EnvoyState['types'][string]['namesChange'] | 'absent']>([
  ['a missing name holds the type', [missing], { at: T0 + 1, sent: false, reference: true }],
  ['the hold ends when nothing is missing', [missing, satisfied], 'absent'],
  ['a sent and ACKed response does not end it by itself (the check after the ACK finds the name still missing)', [missing, sent, acked, missing], { at: T0 + 1, sent: false, reference: true }],
  ['the request that adds the name makes it an ordinary hold', [missing, namesAdded], { at: T0 + 1, sent: false }],
  ['an ordinary hold survives "nothing missing"', [namesAdded, satisfied], { at: T0 + 2, sent: false }],
  ['an ordinary hold sent and awaiting its ACK is left as it is by a missing name', [namesAdded, sent, missing], { at: T0 + 2, sent: true }],
  ['an ordinary hold ends with the ACK of a response sent after it', [namesAdded, sent, satisfied, acked, satisfied], 'absent'],
])('%s', (_name, steps, expected) => {
  const state = steps.reduce((s, step) => step(s), envoy('e', { [EDS]: { acked: 3 } }));
  const namesChange = state.types[EDS]?.namesChange;
  if (expected === 'absent') expect(namesChange).toBeUndefined();
  else expect(namesChange).toEqual(expected);
});

it('a type on another lineage, or not known, is not held', () => {
  const other = envoy('e', { [EDS]: { acked: 3, lineage: L2 } });
  expect(applyReferenceMissing(other, { typeUrl: EDS, lineage: L1, now: T0 })).toBe(other);
  const none = envoy('e', {});
  expect(applyReferenceMissing(none, { typeUrl: EDS, lineage: L1, now: T0 })).toBe(none);
});
