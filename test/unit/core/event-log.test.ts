// The event log's pure rules (common/core/event-log.ts): what a STATE write carries, when events move
// to event-log items, how they are grouped and keyed, and which states may be held for their ACK.
import fc from 'fast-check';
import {
  DEFAULT_EVENT_LOG_LIMITS,
  applyAck,
  applySent,
  awaitsAnswerOnly,
  carriedEventIdentity,
  checkCarriedEvent,
  dedupeEvents,
  eventLogBatches,
  fromCarriedEvent,
  mergeCarried,
  planCarry,
  toCarriedEvent,
  withoutCarried,
  withoutExpired,
  type CarriedEvent,
  type EnvoyEvent,
} from '../../../common/core';
import { eventLogKeyOf, parseItem, toEnvoyEventLogItem, toEnvoyStateItem } from '../../../common/store';
import { CDS, EDS, L1, L2, LDS, RDS, T0, envoy } from './fixtures';

const TTL = 1_800_000_000;

function ack(seq: number, typeUrl = CDS, lineage = L1): CarriedEvent {
  return { o: 'ACK', l: lineage, q: seq, u: typeUrl, a: T0 + seq, x: TTL };
}

describe('carried events', () => {
  it('round-trip with the full event record, truncating nothing that fits', () => {
    const events: EnvoyEvent[] = [
      { nodeId: 'n', outcome: 'ACK', lineage: L1, seq: 3, typeUrl: CDS, at: T0, ttl: TTL },
      { nodeId: 'n', outcome: 'NACK', lineage: L1, seq: 4, typeUrl: LDS, at: T0, message: 'bad listener', ttl: TTL },
      { nodeId: 'n', outcome: 'STUCK', lineage: L2, seq: 5, typeUrl: RDS, at: T0, sentAt: T0 - 10_000, ttl: TTL },
    ];
    for (const event of events) expect(fromCarriedEvent('n', toCarriedEvent(event))).toEqual(event);
  });

  it('store well-known types by short name, any other type URL as is, and read both back the same', () => {
    const rds = toCarriedEvent({ nodeId: 'n', outcome: 'ACK', lineage: L1, seq: 3, typeUrl: RDS, at: T0, ttl: TTL });
    expect(rds).toMatchObject({ k: 'RDS' });
    expect(rds).not.toHaveProperty('u');
    const runtime = 'type.googleapis.com/envoy.service.runtime.v3.Runtime';
    expect(toCarriedEvent({ nodeId: 'n', outcome: 'ACK', lineage: L1, seq: 3, typeUrl: runtime, at: T0, ttl: TTL })).toMatchObject({ u: runtime });
    // A bogus type URL that happens to read "CDS" stays a URL: never confused with the cluster type.
    const bare = toCarriedEvent({ nodeId: 'n', outcome: 'ACK', lineage: L1, seq: 3, typeUrl: 'CDS', at: T0, ttl: TTL });
    expect(bare).toMatchObject({ u: 'CDS' });
    expect(carriedEventIdentity(bare)).not.toBe(carriedEventIdentity({ ...bare, u: undefined, k: 'CDS' }));
    expect(carriedEventIdentity(rds)).toBe(carriedEventIdentity({ ...rds, k: undefined, u: RDS }));
    expect(checkCarriedEvent({ ...rds, u: RDS })).toMatch(/exactly one/);
  });

  it.each<[string, CarriedEvent, RegExp | undefined]>([
    ['a valid ACK', ack(1), undefined],
    ['a NACK without message', { o: 'NACK', l: L1, q: 1, u: CDS, a: T0, x: TTL }, /message/],
    ['a bad lineage', { ...ack(1), l: 'Not A Lineage' }, /lineage/],
    ['a malformed type URL', { ...ack(1), u: 'not a type url' }, /type URL/],
    ['a negative seq', { ...ack(1), q: -1 }, /q/],
  ])('checkCarriedEvent: %s', (_name, event, problem) => {
    const result = checkCarriedEvent(event);
    if (problem === undefined) expect(result).toBeUndefined();
    else expect(result).toMatch(problem);
  });

  it('merge keeps order and one copy per identity; removal and expiry filter', () => {
    const merged = mergeCarried([ack(1), ack(2)], [ack(2), ack(3), { ...ack(1), a: T0 + 999 }]);
    expect(merged.map((e) => e.q)).toEqual([1, 2, 3]);
    expect(merged[0]?.a).toBe(T0 + 1); // the stored copy wins: a replay changes nothing
    expect(withoutCarried(merged, new Set([carriedEventIdentity(ack(2))])).map((e) => e.q)).toEqual([1, 3]);
    expect(withoutExpired([{ ...ack(1), x: 100 }, { ...ack(2), x: 101 }], 100_500).map((e) => e.q)).toEqual([2]);
  });
});

describe('planCarry', () => {
  const limits = { maxCarriedEvents: 3, maxCarriedChars: 10_000 };
  it.each<[string, CarriedEvent[], CarriedEvent[], number[], number[]]>([
    ['nothing', [], [], [], []],
    ['below the bound: all carried', [ack(1)], [ack(2)], [], [1, 2]],
    ['at the bound: all carried', [ack(1), ack(2)], [ack(3)], [], [1, 2, 3]],
    ['over the bound: everything moves to the log', [ack(1), ack(2), ack(3)], [ack(4)], [1, 2, 3, 4], []],
    ['a replayed event does not count twice', [ack(1), ack(2), ack(3)], [ack(3)], [], [1, 2, 3]],
  ])('%s', (_name, stored, added, logged, carried) => {
    const plan = planCarry(stored, added, limits);
    expect(plan.log.map((e) => e.q)).toEqual(logged);
    expect(plan.carry.map((e) => e.q)).toEqual(carried);
  });

  it('moves a large NACK message at once (size bound)', () => {
    const nack: CarriedEvent = { o: 'NACK', l: L1, q: 9, u: LDS, a: T0, m: 'x'.repeat(4000), x: TTL };
    expect(planCarry([], [nack]).log).toEqual([nack]);
  });

  it('never loses or invents an event (property)', () => {
    const event = fc.record({ q: fc.integer({ min: 0, max: 40 }), t: fc.constantFrom(CDS, EDS, LDS, RDS) }).map(({ q, t }) => ack(q, t));
    fc.assert(
      fc.property(fc.array(event, { maxLength: 12 }), fc.array(event, { maxLength: 12 }), (stored, added) => {
        const plan = planCarry(stored, added);
        const all = new Set([...stored, ...added].map(carriedEventIdentity));
        const out = [...plan.log, ...plan.carry].map(carriedEventIdentity);
        expect(new Set(out)).toEqual(all);
        expect(out.length).toBe(all.size);
        expect(plan.carry.length).toBeLessThanOrEqual(DEFAULT_EVENT_LOG_LIMITS.maxCarriedEvents);
      }),
    );
  });
});

describe('event-log items', () => {
  it('one item per lineage, deterministic keys that depend on every event', () => {
    const events = [ack(5, CDS, L1), ack(3, EDS, L2), ack(7, LDS, L1)];
    const batches = eventLogBatches('n', events);
    expect(batches.map((b) => [b.lineage, b.events.map((e) => e.q)])).toEqual([[L1, [5, 7]], [L2, [3]]]);
    const key = eventLogKeyOf('n', L1, [ack(5, CDS), ack(7, LDS)]);
    expect(key.pk).toBe('ENVOY#n');
    expect(key.sk).toMatch(new RegExp(`^EVENT#${L1.replace(/\./g, '\\.')}#0000000000000005#LOG#0000000000000007#2#[0-9a-f]{16}$`));
    // Same events in another order: same item. One event more or different: another item.
    expect(eventLogKeyOf('n', L1, [ack(7, LDS), ack(5, CDS)])).toEqual(key);
    expect(eventLogKeyOf('n', L1, [ack(5, CDS), ack(7, RDS)]).sk).not.toBe(key.sk);
    expect(eventLogKeyOf('n', L1, [ack(5, CDS), ack(6, CDS), ack(7, LDS)]).sk).not.toBe(key.sk);
  });

  it('chunks a long run so no item nears the size limit', () => {
    const many = Array.from({ length: 250 }, (_, i) => ack(i + 1));
    const batches = eventLogBatches('n', many);
    expect(batches.map((b) => b.events.length)).toEqual([100, 100, 50]);
    expect(batches.flatMap((b) => b.events)).toEqual(many);
  });

  it('parseItem accepts a log item and refuses one whose key or content was altered', () => {
    const item = toEnvoyEventLogItem('n', L1, [ack(5), { o: 'NACK', l: L1, q: 6, u: LDS, a: T0, m: 'bad', x: TTL + 5 }]);
    expect(item.ttl).toBe(TTL + 5);
    expect(parseItem(item as unknown as Record<string, unknown>)).toEqual({ ok: true, item });
    const tampered = { ...item, events: [ack(5), ack(6)] };
    expect(parseItem(tampered)).toMatchObject({ ok: false, error: expect.stringMatching(/key does not match/) as unknown });
    const foreign = { ...item, events: [ack(5, CDS, L2)] };
    expect(parseItem(foreign)).toMatchObject({ ok: false, error: expect.stringMatching(/lineage/) as unknown });
    expect(parseItem({ ...item, events: [] })).toMatchObject({ ok: false });
  });

  it('a state carrying events parses, and a corrupt carried event makes the state item invalid', () => {
    const state = { ...envoy('n', { [CDS]: { acked: 5 } }), unlogged: [ack(5)] };
    expect(parseItem(toEnvoyStateItem(state))).toMatchObject({ ok: true });
    expect(parseItem({ ...toEnvoyStateItem(state), unlogged: [{ o: 'ACK', q: 'five' }] })).toMatchObject({ ok: false });
  });
});

describe('dedupeEvents', () => {
  it('sorts by lineage, seq, type, outcome and keeps one per identity', () => {
    const e = (lineage: string, seq: number, typeUrl: string, outcome: EnvoyEvent['outcome'] = 'ACK'): EnvoyEvent =>
      fromCarriedEvent('n', { o: outcome, l: lineage, q: seq, u: typeUrl, a: T0, x: TTL, ...(outcome === 'NACK' ? { m: 'bad' } : {}) });
    const events = [e(L2, 1, CDS), e(L1, 10, CDS), e(L1, 2, RDS, 'NACK'), e(L1, 10, CDS), e(L1, 9, CDS, 'STUCK')];
    expect(dedupeEvents(events).map((x) => `${x.lineage === L1 ? 'L1' : 'L2'}:${x.seq}:${x.outcome}`)).toEqual(['L1:2:NACK', 'L1:9:STUCK', 'L1:10:ACK', 'L2:1:ACK']);
    expect(dedupeEvents(events, true).map((x) => x.seq)).toEqual([1, 10, 9, 2]);
  });
});

describe('awaitsAnswerOnly (which states the recorder may hold for their ACK)', () => {
  const base = envoy('n', { [CDS]: { acked: 3 }, [EDS]: { acked: 3 } }, { programmedThrough: 3 });
  const sent = applySent(base, { typeUrl: CDS, version: { lineage: L1, seq: 4 }, now: T0 + 5 });
  it.each<[string, ReturnType<typeof envoy> | undefined, ReturnType<typeof envoy>, boolean]>([
    ['nothing stored yet: write', undefined, sent, false],
    ['a response sent: hold', base, sent, true],
    ['a second response sent: hold', base, applySent(sent, { typeUrl: EDS, version: { lineage: L1, seq: 4 }, now: T0 + 6 }), true],
    ['the ACK: write', base, applyAck(sent, { typeUrl: CDS, version: { lineage: L1, seq: 4 }, now: T0 + 9 }), false],
    ['a heartbeat (lastSeenAt): write', base, { ...base, lastSeenAt: base.lastSeenAt + 1 }, false],
    ['a new connection: write', base, { ...sent, connectedAt: base.connectedAt + 1 }, false],
    ['a status change: write', base, { ...sent, status: 'DISCONNECTED' }, false],
    ['a new type subscribed: write', base, applySent(base, { typeUrl: LDS, version: { lineage: L1, seq: 4 }, now: T0 + 5 }), false],
    ['only recorder stamps differ (rev, incarnation, unlogged): hold', { ...base, rev: 7, incarnation: 2, unlogged: [ack(3)] }, sent, true],
  ])('%s', (_name, stored, next, expected) => {
    expect(awaitsAnswerOnly(stored, next)).toBe(expected);
  });
});
