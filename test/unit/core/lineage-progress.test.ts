// The PROGRESS item's edge cases (common/core/lineage-progress.ts): what the gateway's builder counts
// and folds, and what the evaluator decides from it, including where it differs from the shard
// evaluator by design. The equivalence over random fleets is lineage-progress.property.test.ts.
import {
  applyMember,
  DENOMINATOR_IN_TRANSIT,
  PROGRESS_MISSING,
  requiredMismatchText,
  ttlMismatchText,
  emptyShard,
  evaluateFromAggregates,
  evaluateFromProgress,
  foldThrough,
  formatObjectRef,
  LineageProgressSchema,
  MAX_PROGRESS_ANCHORS,
  MAX_PROGRESS_BLAME_GROUPS,
  MAX_PROGRESS_LISTED,
  MAX_PROGRESS_SPLIT_GROUPS,
  MEMBER_MESSAGE_LENGTH,
  memberFromEnvoyState,
  progressFromStates,
  type EnvoyState,
  type LineageAggregate,
  type LineageProgress,
  type LineageProgressRead,
  type LineageWatermark,
  type ProgressBuildInput,
  type Watermark,
} from '../../../common/core';
import { CDS, envoy, L1, L2, LDS, T0 } from './fixtures';

const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
const other = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'other' };
const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };

/** A watermark on L1 at `seq` (CDS at that version unless given). */
function mark(seq: number, types: Record<string, number> = { [CDS]: seq }): LineageWatermark {
  return { seq, types, at: T0 };
}

function on(marks: Record<string, LineageWatermark>): Watermark {
  return { observable: true, lineages: marks };
}

/** An Envoy on L1 with CDS ACKed at `t` (programmed through it). */
function at(nodeId: string, t: number, overrides: Partial<EnvoyState> = {}): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked: t } }, { programmedThrough: t, ...overrides });
}

function build(states: readonly EnvoyState[], open: readonly LineageWatermark[] = [], extra: Partial<ProgressBuildInput> = {}): LineageProgress {
  return progressFromStates({ lineage: L1, v: 1, heartbeatAt: T0, states, openWatermarks: open, requiredTypeUrls: [], policy, ...extra });
}

function decide(lineages: readonly LineageProgressRead[], watermark: Watermark, extra: { now?: number; deadLineages?: ReadonlySet<string>; decided?: typeof object; requiredTypeUrls?: readonly string[] } = {}) {
  return evaluateFromProgress({ object: extra.decided ?? object, generation: 2, watermark, lineages, now: extra.now ?? T0, policy: { ...policy, ...(extra.requiredTypeUrls === undefined ? {} : { requiredTypeUrls: extra.requiredTypeUrls }) }, ...(extra.deadLineages === undefined ? {} : { deadLineages: extra.deadLineages }) });
}

/** The shards the convergence function would hold for the same states (one shard, L1, all applied). */
function shards(states: readonly EnvoyState[], envoysRecorded = states.length): LineageAggregate {
  let shard = emptyShard(L1, 0);
  for (const state of states) shard = applyMember(shard, state.nodeId, memberFromEnvoyState(state)).shard;
  return { lineage: L1, envoysRecorded, shards: [shard] };
}

const nack = (seq: number, message = 'bad cluster', blamed?: typeof object) => ({ seq, message, at: T0, ...(blamed === undefined ? {} : { blame: { basis: 'named' as const, objects: [formatObjectRef(blamed)], resources: ['ns/svc/80'] } }) });

describe('progressFromStates', () => {
  it('counts the live members only: not EXPIRED, seen within the TTL, on this lineage; incarnations summed', () => {
    const item = build([
      at('a', 5),
      at('b', 5, { status: 'DISCONNECTED', lastSeenAt: T0 - 30_000, incarnation: 3 }),
      at('c', 5, { status: 'DISCONNECTED', lastSeenAt: T0 - 61_000 }),
      at('d', 5, { status: 'EXPIRED' }),
      at('e', 5, { lineage: L2 }),
    ]);
    expect(item).toMatchObject({ lineage: L1, v: 1, heartbeatAt: T0, members: 2, incarnations: 4 });
    expect(item.listed.map(([nodeId]) => nodeId)).toEqual(['a', 'b']);
  });

  it('keeps one state per node, the latest rev', () => {
    const item = build([at('a', 3, { rev: 1 }), at('a', 7, { rev: 2 })], [mark(7)]);
    expect(item.members).toBe(1);
    expect(item.through).toEqual([[7, 1]]);
  });

  it('counts members without programmedThrough and without a subscription apart from the histogram', () => {
    const item = build([at('a', 4), envoy('b', { [CDS]: {} }), envoy('c', {})], [mark(4)]);
    expect(item).toMatchObject({ members: 3, through: [[4, 1]], unprogrammed: 1, none: 1 });
  });

  it('keeps the oldest open watermarks as anchors, at most MAX_PROGRESS_ANCHORS', () => {
    const open = Array.from({ length: MAX_PROGRESS_ANCHORS + 3 }, (_, i) => mark(20 - i));
    expect(build([at('a', 1)], open).anchors).toEqual(Array.from({ length: MAX_PROGRESS_ANCHORS }, (_, i) => 9 + i));
  });
});

describe('histogram folding', () => {
  it('parts programmedThrough at the anchors, each part one row at its lowest value', () => {
    expect(foldThrough([12, 2, 5, 3, 9, 6], [5, 9])).toEqual([
      [2, 2],
      [5, 2],
      [9, 2],
    ]);
    expect(foldThrough([7, 4, 9], [])).toEqual([[4, 3]]);
    expect(foldThrough([], [5])).toEqual([]);
  });

  it('is exact at every anchor and never more programmed between them', () => {
    const states = [2, 3, 5, 6, 9, 12].map((t, i) => at(`e${i}`, t));
    const item = build(states, [mark(5), mark(9)], { maxListed: 0 });
    const reference = (seq: number) => evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: mark(seq) }), aggregates: [shards(states)], now: T0, policy });
    for (const seq of [5, 9]) expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(seq) })).programmed).toBe(reference(seq).programmed);
    // W = 6 is not an anchor: e3 (at 6) is in the row at 5, so it does not count; true is 3.
    expect(reference(6).programmed).toBe(3);
    const between = decide([{ lineage: L1, progress: item }], on({ [L1]: mark(6) }));
    expect([between.programmed, between.state, between.blockersOmitted]).toEqual([2, 'Pending', 4]);
    // Every member at or past a watermark counts wherever the rows are: the row's seq is its lowest member's.
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(2) })).state).toBe('Programmed');
  });
});

describe('evaluateFromProgress', () => {
  it('no members: NoEnvoys', () => {
    expect(decide([{ lineage: L1, progress: build([]) }], on({ [L1]: mark(1) }))).toMatchObject({ state: 'NoEnvoys', total: 0, programmed: 0, blockers: [], blockersOmitted: 0 });
    expect(decide([], on({ [L1]: mark(1) })).state).toBe('NoEnvoys');
    expect(decide([{ lineage: L1, progress: build([at('a', 1, { status: 'EXPIRED' })]) }], on({ [L1]: mark(1) })).state).toBe('NoEnvoys');
  });

  it("a dead gateway's members drop at its heartbeat + TTL", () => {
    const item = build([at('a', 1)]);
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(1) }), { now: T0 + 60_000 })).toMatchObject({ state: 'Programmed', total: 1 });
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(1) }), { now: T0 + 60_001 })).toMatchObject({ state: 'NoEnvoys', total: 0 });
  });

  it('a live lineage without PROGRESS is Pending, never NoEnvoys nor Programmed', () => {
    const unknown = { nodeId: `Envoys of gateway lineage ${L2}`, reason: 'pending', typeUrls: [PROGRESS_MISSING] };
    expect(decide([{ lineage: L2, progress: undefined }], on({ [L1]: mark(1) }))).toMatchObject({ state: 'Pending', total: 0, blockers: [unknown] });
    const result = decide([{ lineage: L1, progress: build([at('a', 1)], [mark(1)]) }, { lineage: L2, progress: undefined }], on({ [L1]: mark(1) }));
    expect(result).toMatchObject({ state: 'Pending', programmed: 1, total: 1, blockers: [unknown], blockersOmitted: 0 });
  });

  it('an item judged with fewer required types than the functions require is unknown: Pending, naming the setting', () => {
    // a has subscribed to CDS only: with no required types its gateway counts it programmed.
    const lax = build([at('a', 1)], [mark(1)]);
    expect(lax.required).toBeUndefined();
    expect(decide([{ lineage: L1, progress: lax }], on({ [L1]: mark(1) }))).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    const strict = decide([{ lineage: L1, progress: lax }], on({ [L1]: mark(1) }), { requiredTypeUrls: [CDS, LDS] });
    expect(strict).toMatchObject({ state: 'Pending', programmed: 0, total: 0 });
    expect(strict.blockers).toEqual([{ nodeId: `Envoys of gateway lineage ${L1}`, reason: 'pending', typeUrls: [requiredMismatchText([CDS, LDS])] }]);
    // Judged with the same list (or more) it is read as usual: a lacks LDS, so it is not programmed.
    const aligned = build([at('a', 1)], [mark(1)], { requiredTypeUrls: [LDS, CDS] });
    expect(aligned.required).toEqual([CDS, LDS].sort());
    expect(decide([{ lineage: L1, progress: aligned }], on({ [L1]: mark(1) }), { requiredTypeUrls: [CDS, LDS] })).toMatchObject({ state: 'Pending', programmed: 0, total: 1 });
    expect(decide([{ lineage: L1, progress: aligned }], on({ [L1]: mark(1) }), { requiredTypeUrls: [CDS] })).toMatchObject({ programmed: 0, total: 1 });
  });

  it('an item judged with a shorter TTL than the functions use is unknown: Pending, naming the setting', () => {
    const short = build([at('a', 1)], [mark(1)], { policy: { ...policy, ttlMs: policy.ttlMs - 1 } });
    expect(short.ttlMs).toBe(policy.ttlMs - 1);
    const result = decide([{ lineage: L1, progress: short }], on({ [L1]: mark(1) }));
    expect(result).toMatchObject({ state: 'Pending', programmed: 0, total: 0 });
    expect(result.blockers).toEqual([{ nodeId: `Envoys of gateway lineage ${L1}`, reason: 'pending', typeUrls: [ttlMismatchText(policy.ttlMs - 1, policy.ttlMs)] }]);
    // The same TTL or a longer one (only stricter: it keeps disconnected Envoys longer) is read as usual.
    expect(decide([{ lineage: L1, progress: build([at('a', 1)], [mark(1)], { policy: { ...policy, ttlMs: 2 * policy.ttlMs } }) }], on({ [L1]: mark(1) }))).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
  });

  it('a NACK blocks until an ACK at or past its seq, with its message (capped as in the shards)', () => {
    const long = 'x'.repeat(MEMBER_MESSAGE_LENGTH + 50);
    const rejected = decide([{ lineage: L1, progress: build([at('a', 5, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: nack(6, long) } } })]) }], on({ [L1]: mark(5) }));
    expect(rejected).toMatchObject({ state: 'Rejected', programmed: 0, total: 1 });
    expect(rejected.blockers).toEqual([{ nodeId: 'a', reason: 'nacked', nacks: [{ typeUrl: CDS, seq: 6, message: `${'x'.repeat(MEMBER_MESSAGE_LENGTH - 1)}…`, at: T0 }] }]);
    // Counted, not only listed: with nothing listed the verdict stays Rejected.
    const unlisted = build([at('a', 5, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: nack(6) } } })], [], { maxListed: 0 });
    expect(decide([{ lineage: L1, progress: unlisted }], on({ [L1]: mark(5) }))).toMatchObject({ state: 'Rejected', blockers: [], blockersOmitted: 1 });
    const acked = build([at('a', 6, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 6, nack: nack(6) } } })]);
    expect(decide([{ lineage: L1, progress: acked }], on({ [L1]: mark(5) }))).toMatchObject({ state: 'Programmed', programmed: 1 });
  });

  it('NACK blame: Blocked for an object the NACKs do not name, Rejected for the one they do and for an unblamed NACK', () => {
    const blamesOther = at('a', 5, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: nack(6, 'bad', other) } } });
    const item = build([blamesOther], [], { maxListed: 0 });
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) })).state).toBe('Blocked');
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }), { decided: other }).state).toBe('Rejected');
    const unblamed = at('b', 5, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: nack(6) } } });
    expect(decide([{ lineage: L1, progress: build([blamesOther, unblamed], [], { maxListed: 0 }) }], on({ [L1]: mark(5) })).state).toBe('Rejected');
  });

  it('blames beyond what the item counts are held against every object: Rejected where the shards say Blocked (safe side)', () => {
    const states = Array.from({ length: MAX_PROGRESS_BLAME_GROUPS + 2 }, (_, i) =>
      at(`e${i}`, 5, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: nack(6, 'bad', { ...other, name: `other-${i}` }) } } }),
    );
    const item = build(states, [], { maxListed: 0 });
    expect(item.nacks).toHaveLength(MAX_PROGRESS_BLAME_GROUPS);
    expect(item.nacks[0]).toEqual({ n: 3 });
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) })).state).toBe('Rejected');
    expect(evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: mark(5) }), aggregates: [shards(states)], now: T0, policy }).state).toBe('Blocked');
  });

  it('stuck at a watermark only when a type waiting past the timeout is behind it', () => {
    // CDS waits 40 s for seq 7 with 5 ACKed; LDS is at 4, waiting for nothing.
    const waiting = envoy('a', { [CDS]: { acked: 5, pending: { seq: 7, sentAt: T0 - 40_000 } }, [LDS]: { acked: 4 } }, { programmedThrough: 4 });
    const cdsCovered = mark(6, { [CDS]: 5, [LDS]: 6 });
    const cdsBehind = mark(7, { [CDS]: 7, [LDS]: 6 });
    const item = build([waiting], [cdsCovered, cdsBehind], { maxListed: 0 });
    expect(item.stuck).toEqual([[7, 1]]);
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: cdsCovered })).state).toBe('Pending');
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: cdsBehind })).state).toBe('Stuck');
    // A watermark the gateway did not know as open: its counts cannot say stuck (Pending, the
    // conservative side), while a listed member still says what memberBlocker says of it.
    const unknown = build([waiting], [], { maxListed: 0 });
    expect(decide([{ lineage: L1, progress: unknown }], on({ [L1]: cdsBehind })).state).toBe('Pending');
    const listed = decide([{ lineage: L1, progress: build([waiting]) }], on({ [L1]: cdsBehind }));
    expect(listed).toMatchObject({ state: 'Stuck', blockers: [{ nodeId: 'a', reason: 'stuck', typeUrls: [CDS], since: T0 - 40_000 }] });
  });

  it('a reference hold past the timeout is stuck on the Envoy\'s request, in the PROGRESS item and in the shards alike', () => {
    const held = envoy('a', { [CDS]: { acked: 7, namesChange: { at: T0 - 40_000, sent: false, reference: true } }, [LDS]: { acked: 6 } }, { programmedThrough: 6 });
    const behind = mark(7, { [CDS]: 7, [LDS]: 6 });
    const expected = { nodeId: 'a', reason: 'stuck', typeUrls: [CDS], since: T0 - 40_000, unrequested: [CDS] };
    expect(decide([{ lineage: L1, progress: build([held]) }], on({ [L1]: behind })).blockers).toEqual([expected]);
    expect(evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: behind }), aggregates: [shards([held])], now: T0, policy }).blockers).toEqual([expected]);
  });

  it('no watermark on the lineage: every member with a subscription is noWatermark, one without is pending', () => {
    const item = build([at('a', 5), envoy('b', {})], [], { maxListed: 0 });
    const result = decide([{ lineage: L1, progress: item }], on({ [L2]: mark(5) }));
    expect(result).toMatchObject({ state: 'Pending', programmed: 0, total: 2, blockersOmitted: 2 });
    expect(decide([{ lineage: L1, progress: build([at('a', 5)]) }], on({ [L2]: mark(5) })).blockers).toEqual([{ nodeId: 'a', reason: 'noWatermark', lineages: [L1] }]);
  });

  it('a generation that cannot be decided from Envoys: not observable or Invalid, with the live total', () => {
    const item = build([at('a', 5)]);
    expect(decide([{ lineage: L1, progress: item }], { observable: false, reason: 'no signal' })).toMatchObject({ state: 'GenerationNotObservable', total: 1, notObservableReason: 'no signal', blockersOmitted: 0 });
    expect(decide([{ lineage: L1, progress: item }], { observable: false, reason: 'bad', rejectedByController: true })).toMatchObject({ state: 'Invalid', total: 1, controllerMessage: 'bad' });
  });
});

describe('split lineages', () => {
  // CDS on L1 at the watermark, LDS held from L2 (per-type streams on two gateway instances).
  const split = envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 } }, { programmedThrough: 5 });

  it('counts a split member by its lineage set, judged by its own types once the others are dead', () => {
    const item = build([split, at('b', 5)], [mark(5)], { maxListed: 0 });
    expect(item.split).toEqual([{ lineages: [L1, L2], none: 0, unprogrammed: 0, through: [[5, 1]], stuck: [] }]);
    expect(item.through).toEqual([[5, 1]]);
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }))).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }), { deadLineages: new Set([L2]) })).toMatchObject({ state: 'Programmed', programmed: 2 });
  });

  it('names the live foreign lineage as the shards do', () => {
    expect(decide([{ lineage: L1, progress: build([split]) }], on({ [L1]: mark(5) })).blockers).toEqual([
      { nodeId: 'a', reason: 'pending', typeUrls: [`split across gateway instances (${L1}, ${L2})`] },
    ]);
  });

  it('a NACK on the foreign type blocks even when that lineage is dead (invariant 2)', () => {
    const nacked = envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 1, lineage: L2, nack: nack(2) } }, { programmedThrough: 5 });
    expect(decide([{ lineage: L1, progress: build([nacked], [], { maxListed: 0 }) }], on({ [L1]: mark(5) }), { deadLineages: new Set([L2]) }).state).toBe('Rejected');
  });

  it('lineage sets beyond the bound share one group under their union: blocking while any of it is live (safe side)', () => {
    const foreign = Array.from({ length: MAX_PROGRESS_SPLIT_GROUPS + 1 }, (_, i) => `gw-x${i + 1}.boot1.edge`);
    const states = foreign.map((lineage, i) => envoy(`e${i}`, { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage } }, { programmedThrough: 5 }));
    const item = build(states, [mark(5)], { maxListed: 0 });
    expect(item.split).toHaveLength(MAX_PROGRESS_SPLIT_GROUPS);
    expect(item.split[MAX_PROGRESS_SPLIT_GROUPS - 1]?.lineages).toEqual([L1, ...foreign.slice(MAX_PROGRESS_SPLIT_GROUPS - 1)].sort());
    const allDead = new Set(foreign);
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }), { deadLineages: allDead })).toMatchObject({ state: 'Programmed', programmed: foreign.length });
    // Only the last foreign lineage is live: its member blocks, and so does the one it shares a group with.
    const lastLive = new Set(foreign.slice(0, -1));
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }), { deadLineages: lastLive })).toMatchObject({ state: 'Pending', programmed: foreign.length - 2 });
    const reference = evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: mark(5) }), aggregates: [shards(states)], deadLineages: lastLive, now: T0, policy });
    expect(reference).toMatchObject({ state: 'Pending', programmed: foreign.length - 1 });
  });
});

describe('the listing bound', () => {
  const behind = Array.from({ length: 30 }, (_, i) => at(`e${String(i).padStart(2, '0')}`, 3));
  const nacked = ['n1', 'n2'].map((nodeId) => at(nodeId, 3, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 3, nack: nack(4) } } }));

  it('names MAX_PROGRESS_LISTED members, the most severe first, and counts the rest', () => {
    const item = build([...behind, ...nacked], [mark(5)]);
    expect(item.listed).toHaveLength(MAX_PROGRESS_LISTED);
    const result = decide([{ lineage: L1, progress: item }], on({ [L1]: mark(5) }));
    expect(result).toMatchObject({ state: 'Rejected', programmed: 0, total: 32, blockersOmitted: 32 - MAX_PROGRESS_LISTED });
    expect(result.blockers.map((b) => `${b.nodeId}:${b.reason}`).slice(0, 3)).toEqual(['n1:nacked', 'n2:nacked', 'e00:pending']);
    // The ones it names are the shard evaluator's first ones here (the rest sort by node id too).
    const reference = evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: mark(5) }), aggregates: [shards([...behind, ...nacked])], now: T0, policy });
    expect(result.blockers).toEqual(reference.blockers.slice(0, MAX_PROGRESS_LISTED));
  });

  it('lists the least programmed first among members that block for no other reason', () => {
    const item = build([at('a', 9), at('b', 2), at('c', 4), envoy('d', { [CDS]: {} })], [mark(9)], { maxListed: 2 });
    expect(item.listed.map(([nodeId]) => nodeId)).toEqual(['d', 'b']);
    expect(decide([{ lineage: L1, progress: item }], on({ [L1]: mark(9) }))).toMatchObject({ programmed: 1, total: 4, blockersOmitted: 1 });
  });

  it('the item stays the same size whatever the fleet', () => {
    const fleet = (n: number) =>
      Array.from({ length: n }, (_, i) => {
        const nodeId = `envoy-${String(i).padStart(5, '0')}`;
        if (i % 10 === 0) return at(nodeId, 3, { types: { [CDS]: { lineage: L1, subscribed: true, acked: 3, nack: nack(4, 'e'.repeat(2_000), i % 20 === 0 ? other : undefined) } } });
        if (i % 10 === 1) return envoy(nodeId, { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 } }, { programmedThrough: 5 });
        return at(nodeId, i % 7);
      });
    const size = (n: number) => JSON.stringify(build(fleet(n), [mark(2), mark(4), mark(6)])).length;
    // Both list 20 NACK members (messages capped at 256 characters); only the counts' digits differ.
    expect(size(10_000)).toBeLessThan(size(1_000) + 100);
    expect(size(10_000)).toBeLessThan(12_000);
  });
});

describe('by design: no denominator in transit', () => {
  // The gateway has both states; the convergence function has received a's record only (b's is in
  // the stream), and the LINEAGE count says 2.
  const a = at('a', 5);

  it('the shards wait for the state in transit; PROGRESS, built from the gateway\'s states, counts it as it is', () => {
    const b = at('b', 5);
    const fromShards = evaluateFromAggregates({ object, generation: 2, watermark: on({ [L1]: mark(5) }), aggregates: [shards([a], 2)], now: T0, policy });
    expect(fromShards).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
    expect(fromShards.blockers).toEqual([{ nodeId: `1 Envoy state of gateway lineage ${L1}`, reason: 'pending', typeUrls: [DENOMINATOR_IN_TRANSIT] }]);
    const fromProgress = decide([{ lineage: L1, progress: build([a, b], [mark(5)]) }], on({ [L1]: mark(5) }));
    expect(fromProgress).toMatchObject({ state: 'Programmed', programmed: 2, total: 2, blockers: [] });
  });

  it('an Envoy not yet programmed is named by PROGRESS itself', () => {
    const fromProgress = decide([{ lineage: L1, progress: build([a, envoy('b', { [CDS]: {} })], [mark(5)]) }], on({ [L1]: mark(5) }));
    expect(fromProgress).toMatchObject({ state: 'Pending', programmed: 1, total: 2, blockers: [{ nodeId: 'b', reason: 'pending', typeUrls: [CDS] }] });
  });
});

describe('LineageProgressSchema', () => {
  const item = build([at('a', 5), at('b', 2), envoy('c', {})], [mark(5)]);

  it('accepts what progressFromStates builds', () => {
    expect(LineageProgressSchema.safeParse(item)).toEqual({ success: true, data: item });
  });

  it.each<[string, (i: LineageProgress) => LineageProgress, string]>([
    ['members not the sum of the counts', (i) => ({ ...i, members: i.members + 1 }), 'is not the sum'],
    ['anchors not ascending', (i) => ({ ...i, anchors: [5, 3] }), 'anchors are not ascending'],
    ['a stuck count off the anchors', (i) => ({ ...i, stuck: [[4, 1]] }), 'not at an anchor'],
    ['more stuck than can be', (i) => ({ ...i, stuck: [[5, 3]] }), 'more stuck members'],
    ['a member listed twice', (i) => ({ ...i, listed: [i.listed[0]!, i.listed[0]!] }), 'listed twice'],
  ])('rejects an item with %s', (_name, corrupt, message) => {
    const parsed = LineageProgressSchema.safeParse(corrupt(item));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message).join('; ')).toContain(message);
  });
});
