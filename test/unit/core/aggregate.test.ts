// Aggregate shards, table-driven: members ordered by rev, incremental counts, tombstones, removal,
// the stable shard hash and member summaries.
import {
  appliedMembers,
  applyMember,
  buildCondition,
  DENOMINATOR_IN_TRANSIT,
  DENOMINATOR_UNKNOWN,
  evaluateFromAggregates,
  emptyShard,
  goneMember,
  memberFromEnvoyState,
  memberOf,
  recount,
  removeMember,
  shardOf,
  type AggregateShard,
  type LineageAggregate,
  type Member,
} from '../../../common/core';
import { CDS, envoy, L1, L2, LDS, T0 } from './fixtures';

const m = (t: number, r: number, live = true): Member => ({ t, r, live, s: T0 });

function applyAll(updates: [string, Member][]): AggregateShard {
  return updates.reduce((shard, [nodeId, member]) => applyMember(shard, nodeId, member).shard, emptyShard(L1, 0));
}

describe('applyMember', () => {
  it.each<[string, [string, Member][], Record<string, number>, number, number]>([
    ['one member', [['a', m(5, 1)]], { '5': 1 }, 1, 1],
    ['newer rev replaces', [['a', m(5, 1)], ['a', m(7, 2)]], { '7': 1 }, 1, 2],
    ['older rev ignored', [['a', m(7, 2)], ['a', m(5, 1)]], { '7': 1 }, 1, 1],
    ['same rev ignored (redelivery)', [['a', m(5, 1)], ['a', m(5, 1)], ['a', m(9, 1)]], { '5': 1 }, 1, 1],
    ['expired leaves the counts', [['a', m(5, 1)], ['b', m(5, 1)], ['a', m(5, 2, false)]], { '5': 1 }, 1, 3],
    ['tombstone leaves the counts', [['a', m(5, 1)], ['a', goneMember(2, T0)]], {}, 0, 2],
    ['older record cannot undo a tombstone', [['a', goneMember(2, T0)], ['a', m(5, 1)]], {}, 0, 1],
    ['not programmed counts under -1', [['a', m(-1, 0)], ['b', m(3, 0)]], { '-1': 1, '3': 1 }, 2, 2],
  ])('%s', (_name, updates, counts, live, v) => {
    const shard = applyAll(updates);
    expect(shard.counts).toEqual(counts);
    expect(shard.live).toBe(live);
    expect(shard.v).toBe(v);
    expect(recount(shard.members)).toEqual({ counts, live });
  });
});

describe('node ids that name inherited properties', () => {
  // A node id is the Envoy's own choice: `constructor` or `toString` must be a member like any other,
  // not read as one that is already there (which would drop the first state and keep its lineage's
  // denominator short of the gateway's count for ever).
  it.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'])('%s is applied, counted and tombstoned', (nodeId) => {
    const shard = applyMember(emptyShard(L1, 0), nodeId, m(5, 1)).shard;
    expect(Object.keys(shard.members)).toEqual([nodeId]);
    expect({ live: shard.live, counts: shard.counts }).toEqual({ live: 1, counts: { '5': 1 } });
    expect(appliedMembers({ lineage: L1, shards: [shard], envoysRecorded: 1 })).toBe(1);
    expect(memberOf(emptyShard(L1, 0), nodeId)).toBeUndefined();
    expect(removeMember(emptyShard(L1, 0), nodeId, 3, T0).shard.members[nodeId]?.deleted).toBe(true);
  });
});

describe('removeMember', () => {
  it.each([
    ['tombstones at or below the deleted rev', 3, true],
    ['keeps a newer member', 1, false],
  ])('%s', (_name, deletedRev, changed) => {
    const shard = applyAll([['a', m(5, 2)]]);
    const result = removeMember(shard, 'a', deletedRev, T0);
    expect(result.changed).toBe(changed);
    // Never removed: the number of distinct members only grows (the denominator check needs it).
    expect(result.shard.members['a']).toBeDefined();
    expect(result.shard.members['a']?.deleted === true).toBe(changed);
    expect(result.shard.live).toBe(changed ? 0 : 1);
    expect({ counts: result.shard.counts, live: result.shard.live }).toEqual(recount(result.shard.members));
  });
  it('absent member: a tombstone, so a later old record cannot add it back', () => {
    const result = removeMember(emptyShard(L1, 0), 'x', 5, T0);
    expect(result.shard.members['x']).toMatchObject({ gone: true, deleted: true, r: 5 });
    expect(applyMember(result.shard, 'x', m(3, 4)).changed).toBe(false);
  });
  it('a state re-created after deletion (rev restarts, seen later) replaces the tombstone', () => {
    const deleted = removeMember(applyAll([['a', m(5, 7)]]), 'a', 7, T0).shard;
    const recreated = applyMember(deleted, 'a', { ...m(2, 0), s: T0 + 1 });
    expect(recreated.changed).toBe(true);
    expect(recreated.shard.live).toBe(1);
    expect(applyMember(deleted, 'a', { ...m(2, 0), s: T0 }).changed).toBe(false);
  });
});

describe('goneMember', () => {
  it.each<[string, number | undefined, Member]>([
    ['first incarnation: no k', undefined, { t: -1, r: 4, live: false, s: T0, gone: true }],
    ['incarnation 1 spelled as absent', 1, { t: -1, r: 4, live: false, s: T0, gone: true }],
    ['keeps a later incarnation of the state it replaces', 3, { t: -1, r: 4, live: false, s: T0, gone: true, k: 3 }],
  ])('%s', (_name, incarnation, expected) => {
    expect(goneMember(4, T0, incarnation)).toEqual(expected);
  });
});

describe('shardOf', () => {
  it('is stable and in range', () => {
    expect(shardOf('envoy-1', 16)).toBe(shardOf('envoy-1', 16));
    for (let i = 0; i < 200; i++) {
      const shard = shardOf(`node-${i}`, 16);
      expect(shard).toBeGreaterThanOrEqual(0);
      expect(shard).toBeLessThan(16);
    }
  });
  it('spreads nodes over the shards', () => {
    const used = new Set(Array.from({ length: 400 }, (_, i) => shardOf(`envoy-${i}.edge`, 16)));
    expect(used.size).toBe(16);
  });
  it('known value (FNV-1a): changing the hash would reshuffle every stored aggregate', () => {
    expect(shardOf('', 1_000_000)).toBe(0x811c9dc5 % 1_000_000);
  });
});

describe('memberFromEnvoyState', () => {
  it.each<[string, ReturnType<typeof envoy>, Partial<Member>]>([
    ['programmed', envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4, rev: 2 }), { t: 4, r: 2, live: true, a: { CDS: 3 } }],
    ['nothing acked', envoy('a', { [CDS]: {} }), { t: -1, a: { CDS: -1 } }],
    ['expired', envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4, status: 'EXPIRED' }), { t: 4, live: false }],
    ['NACK kept', envoy('a', { [CDS]: { acked: 1, nack: { seq: 3, message: 'bad', at: T0 } } }, { programmedThrough: 2 }), { t: 2, b: { n: [{ u: CDS, q: 3, m: 'bad', a: T0 }] } }],
    ['waiting type', envoy('a', { [CDS]: { acked: 1, pending: { seq: 3, sentAt: T0 } } }, { programmedThrough: 2 }), { t: 2, b: { w: [{ u: CDS, s: T0, a: 1 }] } }],
    ['split across lineages', envoy('a', { [CDS]: { acked: 1 }, [LDS]: { acked: 1, lineage: L2 } }, { programmedThrough: 2 }), { t: 2, a: { CDS: 1 }, b: { split: [L1, L2] } }],
    ['no subscription', envoy('a', {}), { t: -1, b: { none: true } }],
  ])('%s', (_name, state, expected) => {
    expect(memberFromEnvoyState(state)).toMatchObject(expected);
  });
  it('a required type not subscribed keeps it unprogrammed', () => {
    expect(memberFromEnvoyState(envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4 }), [CDS, LDS])).toMatchObject({ t: -1, b: { req: [LDS] } });
  });
  it('bounds the NACK message', () => {
    const member = memberFromEnvoyState(envoy('a', { [CDS]: { nack: { seq: 3, message: 'x'.repeat(5000), at: T0 } } }));
    expect(member.b?.n?.[0]?.m.length).toBe(256);
  });
});

describe('evaluateFromAggregates', () => {
  const object = { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'r' };
  const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
  const mark = { seq: 5, types: { [CDS]: 5 }, at: T0 };
  const watermark = { observable: true as const, lineages: { [L1]: mark } };
  const at = (members: Record<string, Member>, lineage = L1, envoysRecorded: number | undefined = Object.values(members).reduce((sum, member) => sum + (member.k ?? 1), 0)) => ({ lineage, envoysRecorded, shards: [{ ...emptyShard(lineage, 0), members, ...recount(members) }] });
  const member = (state: Parameters<typeof memberFromEnvoyState>[0]): Member => memberFromEnvoyState(state);
  const programmedA = (): Member => member(envoy('a', { [CDS]: { acked: 5 } }, { programmedThrough: 5 }));
  const evaluate = (aggregates: LineageAggregate[], w: Parameters<typeof evaluateFromAggregates>[0]['watermark'] = watermark, now = T0) =>
    evaluateFromAggregates({ object, generation: 2, watermark: w, aggregates, now, policy });

  it.each<[string, ReturnType<typeof at>[], string, number, number, string[]]>([
    ['all at the watermark', [at({ a: member(envoy('a', { [CDS]: { acked: 5 } }, { programmedThrough: 5 })) })], 'Programmed', 1, 1, []],
    ['one behind', [at({ a: member(envoy('a', { [CDS]: { acked: 5 } }, { programmedThrough: 5 })), b: member(envoy('b', { [CDS]: { acked: 3 } }, { programmedThrough: 4 })) })], 'Pending', 1, 2, ['b:pending']],
    ['NACK wins', [at({ a: member(envoy('a', { [CDS]: { acked: 3, nack: { seq: 5, message: 'no', at: T0 } } }, { programmedThrough: 4 })), b: member(envoy('b', { [CDS]: { acked: 3 } }, { programmedThrough: 4 })) })], 'Rejected', 0, 2, ['a:nacked', 'b:pending']],
    ['stuck after the ACK timeout', [at({ a: member(envoy('a', { [CDS]: { acked: 3, pending: { seq: 5, sentAt: T0 - 40_000 } } }, { programmedThrough: 4 })) })], 'Stuck', 0, 1, ['a:stuck']],
    ['past the timeout only by the reader\'s clock (the member lags) is pending, not stuck', [at({ a: member(envoy('a', { [CDS]: { acked: 3, pending: { seq: 5, sentAt: T0 - 40_000 } } }, { programmedThrough: 4, lastSeenAt: T0 - 39_000 })) })], 'Pending', 0, 1, ['a:pending']],
    ['expired members leave the denominator', [at({ a: member(envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4, status: 'EXPIRED' })) })], 'NoEnvoys', 0, 0, []],
    ['not seen for the TTL', [at({ a: member(envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4, lastSeenAt: T0 - 61_000 })) })], 'NoEnvoys', 0, 0, []],
    ['tombstones do not count', [at({ a: goneMember(3, T0) })], 'NoEnvoys', 0, 0, []],
    ['lineage without a watermark', [at({ a: member(envoy('a', { [CDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5, lineage: L2 })) }, L2)], 'Pending', 0, 1, ['a:noWatermark']],
    ['split across live lineages blocks (safe)', [at({ a: member(envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5 })) }), at({}, L2)], 'Pending', 0, 1, ['a:pending']],
    ['a foreign lineage not known dead still blocks (safe)', [at({ a: member(envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5 })) })], 'Pending', 0, 1, ['a:pending']],
  ])('%s', (_name, aggregates, state, programmed, total, blockers) => {
    const result = evaluate(aggregates);
    expect(result.state).toBe(state);
    expect(result.programmed).toBe(programmed);
    expect(result.total).toBe(total);
    expect(result.blockers.map((b) => `${b.nodeId}:${b.reason}`)).toEqual(blockers);
  });

  it('a type on a lineage known dead (out of the live set) no longer counts', () => {
    const result = evaluateFromAggregates({ object, generation: 2, watermark, aggregates: [at({ a: member(envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5 })) })], now: T0, policy, deadLineages: new Set([L2]) });
    expect(result).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
  });

  it('after a table gap longer than the TTL, a member whose refresh has not landed still counts (table clock)', () => {
    // The expire function last completed a tick 120 s ago; a has been refreshed since the table came
    // back, b (behind) not yet. On wall time b is gone and the generation Programmed: a false True.
    const aggregates = [at({ a: member(envoy('a', { [CDS]: { acked: 5 } }, { programmedThrough: 5, lastSeenAt: T0 })), b: member(envoy('b', { [CDS]: { acked: 3 } }, { programmedThrough: 4, lastSeenAt: T0 - 125_000 })) })];
    const tableClock = { clock: { tickAt: T0 - 120_000, gaps: [] }, stallMs: 10_000 };
    expect(evaluateFromAggregates({ object, generation: 2, watermark, aggregates, now: T0, policy })).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    expect(evaluateFromAggregates({ object, generation: 2, watermark, aggregates, now: T0, policy, tableClock })).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
  });

  it('a CONNECTED member counts while its lineage heartbeats, though its own refresh has not reached the shard', () => {
    // b (behind) was last stamped 61 s ago, past the TTL; its gateway heartbeated its lineage 1 s ago
    // and has written no DISCONNECTED for it: b is connected. Judged on `s` alone: Programmed 1/1, a false True.
    const stale = { programmedThrough: 4, lastSeenAt: T0 - 61_000 };
    const connected = [{ ...at({ a: programmedA(), b: member(envoy('b', { [CDS]: { acked: 3 } }, stale)) }), heartbeatAt: T0 - 1_000 }];
    expect(evaluate(connected)).toMatchObject({ state: 'Pending', programmed: 1, total: 2, blockers: [{ nodeId: 'b', reason: 'pending' }] });
    expect(evaluate([{ ...connected[0]!, heartbeatAt: undefined }])).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    // Its gateway's heartbeat stopped a TTL ago too (the gateway died): b leaves.
    expect(evaluate([{ ...connected[0]!, heartbeatAt: T0 - 61_000 }])).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    // A DISCONNECTED one is judged on its own stamp: the heartbeat does not vouch for it.
    const disconnected = [{ ...at({ a: programmedA(), b: member(envoy('b', { [CDS]: { acked: 3 } }, { ...stale, status: 'DISCONNECTED' })) }), heartbeatAt: T0 - 1_000 }];
    expect(evaluate(disconnected)).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
  });

  it('names the split limitation in the blocker', () => {
    const result = evaluate([at({ a: member(envoy('a', { [CDS]: { acked: 5 }, [LDS]: { acked: 5, lineage: L2 } }, { programmedThrough: 5 })) }), at({}, L2)]);
    expect(result.blockers[0]).toEqual({ nodeId: 'a', reason: 'pending', typeUrls: [`split across gateway instances (${L1}, ${L2})`] });
  });

  describe('the denominator: envoysRecorded against the members applied', () => {
    it('a recorded Envoy not yet applied keeps it Pending and counts in the total', () => {
      const result = evaluate([at({ a: programmedA() }, L1, 3)]);
      expect(result).toMatchObject({ state: 'Pending', programmed: 1, total: 3 });
      expect(result.blockers).toEqual([{ nodeId: `2 Envoy states of gateway lineage ${L1}`, reason: 'pending', typeUrls: [DENOMINATOR_IN_TRANSIT] }]);
    });
    it('states in transit of Envoys already there count once: the total is Envoys, not incarnations', () => {
      // a and b are members; the count is 2 ahead: two new incarnations (a reconnect, a names hold
      // lowering programmedThrough) of those same two nodes. Counting states showed 0/4 for 2 Envoys.
      const behind = member(envoy('b', { [CDS]: { acked: 3 } }, { programmedThrough: 4 }));
      const reincarnated = { ...at({ a: programmedA(), b: behind }, L1, 4), envoyNodesRecorded: 2 };
      expect(evaluate([reincarnated])).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
      expect(evaluate([reincarnated]).blockers.at(-1)).toEqual({ nodeId: `2 Envoy states of gateway lineage ${L1}`, reason: 'pending', typeUrls: [DENOMINATOR_IN_TRANSIT] });
      // One of the two is a node the aggregate has no member for yet: one more Envoy.
      expect(evaluate([{ ...reincarnated, envoyNodesRecorded: 3 }])).toMatchObject({ state: 'Pending', total: 3 });
      // Never more than the states in transit, whatever the node count says.
      expect(evaluate([{ ...reincarnated, envoyNodesRecorded: 9 }])).toMatchObject({ total: 4 });
      // An older gateway's item (no node count): every state counts, as before.
      expect(evaluate([{ ...reincarnated, envoyNodesRecorded: undefined }])).toMatchObject({ total: 4 });
    });
    it('nothing applied yet: Pending, not NoEnvoys', () => {
      expect(evaluate([at({}, L1, 1)])).toMatchObject({ state: 'Pending', programmed: 0, total: 1 });
    });
    it('an unknown count (LINEAGE item missing, corrupt or from an older gateway) is never Programmed', () => {
      const result = evaluate([{ ...at({ a: programmedA() }), envoysRecorded: undefined as number | undefined }]);
      expect(result.state).toBe('Pending');
      expect(result.blockers[0]).toMatchObject({ reason: 'pending', typeUrls: [DENOMINATOR_UNKNOWN] });
    });
    it('tombstones and expired members count as applied (they came from recorded states)', () => {
      const expired = member(envoy('b', { [CDS]: { acked: 3 } }, { programmedThrough: 4, status: 'EXPIRED' }));
      expect(evaluate([at({ a: programmedA(), b: expired, c: goneMember(3, T0) }, L1, 3)]).state).toBe('Programmed');
    });
    it('a NACK still wins over Envoys in transit', () => {
      const nacked = member(envoy('a', { [CDS]: { acked: 3, nack: { seq: 5, message: 'no', at: T0 } } }, { programmedThrough: 4 }));
      expect(evaluate([at({ a: nacked }, L1, 2)]).state).toBe('Rejected');
    });
    it('the condition says what it waits for', () => {
      const draft = buildCondition(evaluate([at({ a: programmedA() }, L1, 2)]));
      expect(draft).toMatchObject({ status: 'False', reason: 'Pending' });
      expect(draft.message).toContain(`waiting for 1 Envoy state of gateway lineage ${L1} (${DENOMINATOR_IN_TRANSIT})`);
    });
  });

  it('not observable: counts live Envoys, no blockers', () => {
    const result = evaluate([at({ a: member(envoy('a', { [CDS]: { acked: 3 } }, { programmedThrough: 4 })) })], { observable: false, reason: 'no status' });
    expect(result).toMatchObject({ state: 'GenerationNotObservable', total: 1, blockers: [], notObservableReason: 'no status' });
  });
});
