// answersDueSoon: whether the recorder may hold an Envoy's state for answers still due (docs/bench/README.md).
import { answersDueSoon, crossesWatermark, type EnvoyState, type TypeState } from '../../../common/core';

const LINEAGE = 'gw-a.boot1.edge';
const NOW = 100_000;

function stateWith(types: Record<string, Partial<TypeState>>): EnvoyState {
  const full: Record<string, TypeState> = {};
  for (const [typeUrl, type] of Object.entries(types)) full[typeUrl] = { lineage: LINEAGE, subscribed: true, ...type };
  return {
    nodeId: 'n1',
    cluster: 'edge',
    metadata: {},
    group: 'edge',
    lineage: LINEAGE,
    status: 'CONNECTED',
    connectedAt: 1,
    lastSeenAt: NOW,
    rev: 1,
    types: full,
  } as EnvoyState;
}

test.each<[string, Record<string, Partial<TypeState>>, boolean]>([
  ['nothing out', { cds: { acked: 3 }, eds: { acked: 3 } }, false],
  ['a response sent 10 ms ago', { cds: { acked: 4 }, eds: { acked: 3, pending: { seq: 4, sentAt: NOW - 10 } } }, true],
  ['a response sent exactly the hold ago', { eds: { pending: { seq: 4, sentAt: NOW - 1000 } } }, false],
  ['a response sent long ago (slow or stuck Envoy)', { eds: { pending: { seq: 4, sentAt: NOW - 60_000 } } }, false],
  ['a recent response on a type no longer subscribed', { eds: { subscribed: false, pending: { seq: 4, sentAt: NOW - 10 } } }, false],
  ['one old and one recent response', { cds: { pending: { seq: 4, sentAt: NOW - 60_000 } }, rds: { pending: { seq: 5, sentAt: NOW - 5 } } }, true],
])('%s → %s', (_, types, expected) => {
  expect(answersDueSoon(stateWith(types), NOW, 1000)).toBe(expected);
});

// crossesWatermark: a state reaching a watermark is convergence news and is never held.
test.each<[string, number | undefined, number | undefined, number[], boolean]>([
  ['reaches the only watermark', 9, 10, [10], true],
  ['passes it', 9, 12, [10], true],
  ['was already past it', 10, 12, [10], false],
  ['stops short of it', 5, 9, [10], false],
  ['the first state, nothing stored', undefined, 3, [3], true],
  ['no programmedThrough yet', 5, undefined, [10], false],
  ['went down (a reset)', 12, 9, [10], false],
  ['between two watermarks', 10, 14, [4, 10, 15, 20], false],
  ['reaches the second of several', 10, 15, [4, 10, 15, 20], true],
  ['no watermarks', 0, 100, [], false],
])('%s', (_, stored, next, seqs, expected) => {
  expect(crossesWatermark(stored, next, seqs)).toBe(expected);
});
