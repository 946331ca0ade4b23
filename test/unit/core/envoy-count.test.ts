// The gateway's rule for counting Envoys on a lineage (common/core/envoy-count.ts; docs/CONVERGENCE.md,
// "The denominator"): +1 on a node's first state, a new connection, a less programmed state or the
// revival of an EXPIRED state; a count taken back only for an incarnation never stored on the lineage.
import {
  countEnvoyState,
  isEnvoyCounted,
  revivesExpired,
  reviveAsNewIncarnation,
  takeBackUnstored,
  withStoredIncarnation,
  type CountedEnvoy,
  type EnvoyState,
  type LineageEnvoyCount,
} from '../../../common/core';

const L1 = 'gw-a.boot1.edge';
const L2 = 'gw-b.boot1.edge';

/** Counted on connection 100, programmed through 5, counted when the lineage's count reached 3. */
const COUNTED: CountedEnvoy = { incarnation: 1, connectedAt: 100, programmedThrough: 5, countedAt: 3 };

describe('countEnvoyState', () => {
  test.each<[string, CountedEnvoy | undefined, Pick<EnvoyState, 'connectedAt' | 'programmedThrough'>, { incarnation: number; wanted: number; countedAt: number }]>([
    ["the node's first state on the lineage", undefined, { connectedAt: 100 }, { incarnation: 1, wanted: 8, countedAt: 8 }],
    ['same connection, as programmed', COUNTED, { connectedAt: 100, programmedThrough: 5 }, { incarnation: 1, wanted: 7, countedAt: 3 }],
    ['same connection, more programmed', COUNTED, { connectedAt: 100, programmedThrough: 9 }, { incarnation: 1, wanted: 7, countedAt: 3 }],
    ['a new connection', COUNTED, { connectedAt: 200, programmedThrough: 5 }, { incarnation: 2, wanted: 8, countedAt: 8 }],
    ['less programmed (restarted under the same node id)', COUNTED, { connectedAt: 100, programmedThrough: 4 }, { incarnation: 2, wanted: 8, countedAt: 8 }],
    ['nothing programmed after programmed through 5', COUNTED, { connectedAt: 100 }, { incarnation: 2, wanted: 8, countedAt: 8 }],
    ['nothing programmed, as before', { ...COUNTED, programmedThrough: -1 }, { connectedAt: 100 }, { incarnation: 1, wanted: 7, countedAt: 3 }],
    ['marked to renew (it revives an EXPIRED state)', reviveAsNewIncarnation(COUNTED), { connectedAt: 100, programmedThrough: 5 }, { incarnation: 2, wanted: 8, countedAt: 8 }],
    ['a third incarnation', { ...COUNTED, incarnation: 2 }, { connectedAt: 300, programmedThrough: 5 }, { incarnation: 3, wanted: 8, countedAt: 8 }],
  ])('%s', (_, last, state, expected) => {
    const counted = countEnvoyState(last, state, 7);
    expect({ incarnation: counted.incarnation, wanted: counted.wanted, countedAt: counted.envoy.countedAt }).toEqual(expected);
    expect(counted.envoy.incarnation).toBe(expected.incarnation);
    expect(counted.envoy.connectedAt).toBe(state.connectedAt);
    expect(counted.envoy.programmedThrough).toBe(state.programmedThrough ?? -1);
    // A renewal is used up by the state it renewed.
    expect(counted.envoy.renew).toBeUndefined();
  });
});

test.each<[string, CountedEnvoy | undefined, number, boolean]>([
  ['not counted at all', undefined, 10, false],
  ['counted by a stored count', COUNTED, 3, true],
  ['covered by a higher stored count', COUNTED, 4, true],
  ['its count not stored yet', COUNTED, 2, false],
])('isEnvoyCounted: %s', (_, envoy, confirmed, expected) => {
  expect(isEnvoyCounted(envoy, confirmed)).toBe(expected);
});

type Stamp = Pick<EnvoyState, 'status' | 'lineage' | 'incarnation'>;
test.each<[string, Stamp, Stamp | undefined, boolean]>([
  ['stored EXPIRED at our incarnation', { status: 'CONNECTED', lineage: L1, incarnation: 1 }, { status: 'EXPIRED', lineage: L1, incarnation: 1 }, true],
  ['stored EXPIRED, incarnations absent (1)', { status: 'CONNECTED', lineage: L1 }, { status: 'EXPIRED', lineage: L1 }, true],
  ['stored EXPIRED at a later incarnation', { status: 'DISCONNECTED', lineage: L1, incarnation: 1 }, { status: 'EXPIRED', lineage: L1, incarnation: 2 }, true],
  ['ours already a later incarnation', { status: 'CONNECTED', lineage: L1, incarnation: 2 }, { status: 'EXPIRED', lineage: L1, incarnation: 1 }, false],
  ['stored live', { status: 'CONNECTED', lineage: L1, incarnation: 1 }, { status: 'CONNECTED', lineage: L1, incarnation: 1 }, false],
  ['stored EXPIRED on another lineage', { status: 'CONNECTED', lineage: L1, incarnation: 1 }, { status: 'EXPIRED', lineage: L2, incarnation: 1 }, false],
  ['ours EXPIRED too', { status: 'EXPIRED', lineage: L1, incarnation: 1 }, { status: 'EXPIRED', lineage: L1, incarnation: 1 }, false],
  ['nothing stored', { status: 'CONNECTED', lineage: L1, incarnation: 1 }, undefined, false],
])('revivesExpired: %s', (_, ours, stored, expected) => {
  expect(revivesExpired(ours, stored)).toBe(expected);
});

test.each<[string, number | undefined, number | undefined, number]>([
  ['first stored write, incarnation absent (1)', undefined, undefined, 1],
  ['a later incarnation stored', 1, 2, 2],
  ['an older incarnation written after a later one', 3, 2, 3],
])('withStoredIncarnation: %s', (_, before, written, expected) => {
  const envoy = withStoredIncarnation({ ...COUNTED, ...(before === undefined ? {} : { storedIncarnation: before }) }, written);
  expect(envoy.storedIncarnation).toBe(expected);
});

describe('takeBackUnstored', () => {
  function lineageCount(nodes: Record<string, CountedEnvoy>, confirmed: number): LineageEnvoyCount {
    const wanted = Object.values(nodes).reduce((sum, node) => sum + node.incarnation, 0);
    return { nodes: new Map(Object.entries(nodes)), wanted, confirmed };
  }
  const a: CountedEnvoy = { incarnation: 1, connectedAt: 100, programmedThrough: 5, countedAt: 1, storedIncarnation: 1 };
  const b: CountedEnvoy = { incarnation: 1, connectedAt: 100, programmedThrough: 5, countedAt: 2 };
  const c: CountedEnvoy = { incarnation: 1, connectedAt: 100, programmedThrough: 5, countedAt: 3 };

  test.each<[string, LineageEnvoyCount, string, { wanted: number; confirmed: number; nodes: Record<string, Pick<CountedEnvoy, 'incarnation' | 'countedAt'>> } | undefined]>([
    ['a node not counted: nothing to take back', lineageCount({ a }, 1), 'x', undefined],
    ['a node whose counted incarnation is stored: stays counted', lineageCount({ a }, 1), 'a', undefined],
    [
      'a node never stored goes; later counts move down with it, the confirmed one too',
      lineageCount({ a, b, c }, 3),
      'b',
      { wanted: 2, confirmed: 2, nodes: { a: { incarnation: 1, countedAt: 1 }, c: { incarnation: 1, countedAt: 2 } } },
    ],
    [
      'a restart never stored falls back to the stored incarnation',
      lineageCount({ a: { ...a, incarnation: 2, countedAt: 3 }, b }, 3),
      'a',
      { wanted: 2, confirmed: 2, nodes: { a: { incarnation: 1, countedAt: 0 }, b: { incarnation: 1, countedAt: 2 } } },
    ],
    [
      'a count not confirmed yet: the confirmed count stays',
      lineageCount({ a, b, c }, 1),
      'c',
      { wanted: 2, confirmed: 1, nodes: { a: { incarnation: 1, countedAt: 1 }, b: { incarnation: 1, countedAt: 2 } } },
    ],
  ])('%s', (_, count, nodeId, expected) => {
    const lowered = takeBackUnstored(count, nodeId);
    if (expected === undefined) {
      expect(lowered).toBeUndefined();
      return;
    }
    expect(lowered).toBeDefined();
    expect({ wanted: lowered?.wanted, confirmed: lowered?.confirmed }).toEqual({ wanted: expected.wanted, confirmed: expected.confirmed });
    const nodes = Object.fromEntries([...(lowered?.nodes ?? new Map<string, CountedEnvoy>())].map(([id, node]) => [id, { incarnation: node.incarnation, countedAt: node.countedAt }]));
    expect(nodes).toEqual(expected.nodes);
    // The input is not changed (pure).
    expect(count.nodes.get(nodeId)).toBeDefined();
  });

  test('a node-id takeover and back: the restart merged away is taken back, and the next state of that connection counts as stored', () => {
    // Counted and stored at incarnation 1 on L1.
    const first = countEnvoyState(undefined, { connectedAt: 100, programmedThrough: 5 }, 0);
    const stored = withStoredIncarnation(first.envoy, first.incarnation);
    // Restarted under the same node id: incarnation 2, and its write is merged into L2's state.
    const restart = countEnvoyState(stored, { connectedAt: 200 }, first.wanted);
    expect(restart.incarnation).toBe(2);
    // The stored incarnation is carried through the count of the next state (the recorder keeps only
    // what countEnvoyState returns).
    expect(restart.envoy.storedIncarnation).toBe(1);
    const count: LineageEnvoyCount = { nodes: new Map([['n1', restart.envoy]]), wanted: restart.wanted, confirmed: restart.wanted };
    const lowered = takeBackUnstored(count, 'n1');
    expect(lowered?.wanted).toBe(1);
    const back = lowered?.nodes.get('n1');
    expect(back?.incarnation).toBe(1);
    expect(isEnvoyCounted(back, lowered?.confirmed ?? 0)).toBe(true);
    // The same connection writes again: no new incarnation, the stored count covers it.
    const again = countEnvoyState(back, { connectedAt: 200 }, lowered?.wanted ?? 0);
    expect(again).toMatchObject({ incarnation: 1, wanted: 1 });
  });
});

test('a node stored, counted again on the same connection, then merged away: nothing is taken back (its stored incarnation stays counted)', () => {
  const first = countEnvoyState(undefined, { connectedAt: 100, programmedThrough: 5 }, 0);
  const stored = withStoredIncarnation(first.envoy, first.incarnation);
  // The next state of the same connection (more programmed): the same incarnation, already stored.
  const next = countEnvoyState(stored, { connectedAt: 100, programmedThrough: 7 }, first.wanted);
  expect(next).toMatchObject({ incarnation: 1, wanted: 1 });
  const count: LineageEnvoyCount = { nodes: new Map([['n1', next.envoy]]), wanted: next.wanted, confirmed: next.wanted };
  // Its write is merged into another lineage's state: incarnation 1 is in the table already, so the
  // count must not drop below the member the aggregates hold.
  expect(takeBackUnstored(count, 'n1')).toBeUndefined();
});
