import {
  computeConvergence,
  hasReachedWatermark,
  isLive,
  isStuck,
  shouldExpire,
  stuckTypes,
  watermarkOf,
  watermarkProgress,
  type EnvoyState,
  type Watermark,
} from '../../../common/core';
import { CDS, EDS, L1, L2, LDS, RDS, T0, envoy } from './fixtures';

const object = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const wm: Watermark = { observable: true, lineages: { [L1]: { seq: 10, types: { [CDS]: 8, [LDS]: 3, [RDS]: 10 }, at: T0 } } };

describe('hasReachedWatermark', () => {
  it.each<[string, EnvoyState, Watermark, boolean]>([
    ['all subscribed types at or past', envoy('e', { [CDS]: { acked: 8 }, [LDS]: { acked: 9 }, [RDS]: { acked: 10 } }), wm, true],
    ['one type behind', envoy('e', { [CDS]: { acked: 8 }, [LDS]: { acked: 9 }, [RDS]: { acked: 9 } }), wm, false],
    ['one type never ACKed', envoy('e', { [CDS]: { acked: 8 }, [RDS]: {} }), wm, false],
    ['only subscribed types matter', envoy('e', { [CDS]: { acked: 8 }, [RDS]: { acked: 1, subscribed: false } }), wm, true],
    ['a type the watermark does not list needs some ACK', envoy('e', { [CDS]: { acked: 8 }, [EDS]: { acked: 0 } }), wm, true],
    ['... and not none', envoy('e', { [CDS]: { acked: 8 }, [EDS]: {} }), wm, false],
    ['lineage with no watermark entry has not reached it', envoy('e', { [CDS]: { acked: 100, lineage: L2 } }), wm, false],
    ['types on two lineages, both marked', envoy('e', { [CDS]: { acked: 8 }, [RDS]: { acked: 4, lineage: L2 } }),
      { observable: true, lineages: { ...(wm.observable ? wm.lineages : {}), [L2]: { seq: 4, types: { [RDS]: 4 }, at: T0 } } }, true],
    ['no subscribed types', envoy('e', {}), wm, false],
    ['names added and not yet served: behind whatever the version', envoy('e', { [CDS]: { acked: 8 }, [EDS]: { acked: 100, namesChange: { at: T0, sent: true } } }), wm, false],
    ['not observable', envoy('e', { [CDS]: { acked: 100 } }), { observable: false, reason: 'r' }, false],
  ])('%s', (_name, state, watermark, expected) => {
    expect(hasReachedWatermark(state, watermark)).toBe(expected);
  });

  it('requiredTypeUrls: a half-subscribed Envoy is behind', () => {
    const state = envoy('e', { [CDS]: { acked: 8 } });
    expect(watermarkProgress(state, wm, { requiredTypeUrls: [CDS, LDS] })).toEqual({ reached: false, behindTypes: [LDS], missingLineages: [] });
  });

  it('watermarkOf maps the stored generation', () => {
    expect(watermarkOf({ object, generation: 1, watermarks: {}, firstSeenAt: T0, notObservable: 'no signal' })).toEqual({ observable: false, reason: 'no signal' });
    expect(watermarkOf({ object, generation: 1, watermarks: { [L1]: { seq: 1, types: {}, at: T0 } }, firstSeenAt: T0 })).toEqual({ observable: true, lineages: { [L1]: { seq: 1, types: {}, at: T0 } } });
  });
});

describe('staleness', () => {
  it.each<[string, EnvoyState, number, boolean, boolean]>([
    ['just seen', envoy('e', {}), T0, false, true],
    ['seen exactly TTL ago', envoy('e', {}), T0 + 60_000, false, true],
    ['seen more than TTL ago', envoy('e', {}), T0 + 60_001, true, false],
    ['disconnected, within TTL', envoy('e', {}, { status: 'DISCONNECTED' }), T0 + 1000, false, true],
    ['already expired', envoy('e', {}, { status: 'EXPIRED' }), T0 + 999_999, false, false],
  ])('%s', (_name, state, now, expire, live) => {
    expect(shouldExpire(state, now, policy.ttlMs)).toBe(expire);
    expect(isLive(state, now, policy.ttlMs)).toBe(live);
  });

  it.each<[string, EnvoyState, number, string[], boolean]>([
    ['no pending', envoy('e', { [CDS]: { acked: 1 } }), T0 + 99_999, [], false],
    ['pending, young', envoy('e', { [CDS]: { pending: { seq: 2, sentAt: T0 } } }), T0 + 29_999, [], false],
    ['pending at the timeout', envoy('e', { [CDS]: { pending: { seq: 2, sentAt: T0 } } }), T0 + 30_000, [CDS], true],
    ['two stuck, sorted', envoy('e', { [RDS]: { pending: { seq: 2, sentAt: T0 } }, [CDS]: { pending: { seq: 3, sentAt: T0 } } }), T0 + 40_000, [CDS, RDS].sort(), true],
    ['names added long ago, never served', envoy('e', { [EDS]: { acked: 1, namesChange: { at: T0, sent: false } } }), T0 + 30_000, [EDS], true],
    ['names added recently', envoy('e', { [EDS]: { acked: 1, namesChange: { at: T0, sent: false } } }), T0 + 29_000, [], false],
    ['unsubscribed type is not stuck', envoy('e', { [CDS]: { subscribed: false, pending: { seq: 2, sentAt: T0 } } }), T0 + 40_000, [], false],
    ['disconnected is not stuck', envoy('e', { [CDS]: { pending: { seq: 2, sentAt: T0 } } }, { status: 'DISCONNECTED' }), T0 + 40_000, [CDS], false],
  ])('%s', (_name, state, now, types, stuck) => {
    expect(stuckTypes(state, now, policy.ackTimeoutMs)).toEqual(types);
    expect(isStuck(state, now, policy.ackTimeoutMs)).toBe(stuck);
  });
});

const good = (nodeId: string, overrides: Partial<EnvoyState> = {}): EnvoyState =>
  envoy(nodeId, { [CDS]: { acked: 8 }, [LDS]: { acked: 3 }, [RDS]: { acked: 10 } }, overrides);

describe('computeConvergence', () => {
  it.each<[string, EnvoyState[], Watermark, number, Partial<ReturnType<typeof computeConvergence>>]>([
    ['all programmed', [good('a'), good('b')], wm, T0, { state: 'Programmed', programmed: 2, total: 2, blockers: [] }],
    ['no envoys', [], wm, T0, { state: 'NoEnvoys', programmed: 0, total: 0 }],
    ['only expired envoys', [good('a', { status: 'EXPIRED' })], wm, T0, { state: 'NoEnvoys', total: 0 }],
    ['not observable', [good('a')], { observable: false, reason: 'kind has no status' }, T0,
      { state: 'GenerationNotObservable', notObservableReason: 'kind has no status', total: 1 }],
    ['one behind → Pending with the types', [good('a'), envoy('b', { [CDS]: { acked: 8 }, [RDS]: { acked: 9, pending: { seq: 10, sentAt: T0 } } })], wm, T0,
      { state: 'Pending', programmed: 1, total: 2, blockers: [{ nodeId: 'b', reason: 'pending', typeUrls: [RDS] }] }],
    ['pending too long, as the gateway vouched at its lastSeenAt → Stuck', [good('a'), envoy('b', { [RDS]: { acked: 9, pending: { seq: 10, sentAt: T0 } } }, { lastSeenAt: T0 + 30_500 })], wm, T0 + 31_000,
      { state: 'Stuck', programmed: 1, blockers: [{ nodeId: 'b', reason: 'stuck', typeUrls: [RDS], since: T0 }] }],
    ['a reference hold past the timeout → Stuck, named as unrequested', [good('a'), envoy('b', { [CDS]: { acked: 8 }, [RDS]: { acked: 10 }, [EDS]: { acked: 10, namesChange: { at: T0, sent: false, reference: true } } }, { lastSeenAt: T0 + 30_500 })], wm, T0 + 31_000,
      { state: 'Stuck', programmed: 1, blockers: [{ nodeId: 'b', reason: 'stuck', typeUrls: [EDS], since: T0, unrequested: [EDS] }] }],
    ['past the timeout only by the reader\'s clock (the stored state lags) → Pending, never a false Stuck', [good('a'), envoy('b', { [RDS]: { acked: 9, pending: { seq: 10, sentAt: T0 } } }, { lastSeenAt: T0 + 5_000 })], wm, T0 + 31_000,
      { state: 'Pending', programmed: 1, blockers: [{ nodeId: 'b', reason: 'pending', typeUrls: [RDS] }] }],
    ['a stuck type that is not behind does not block', [envoy('a', { [CDS]: { acked: 8, pending: { seq: 11, sentAt: T0 } }, [RDS]: { acked: 10 } })], wm, T0 + 31_000,
      { state: 'Programmed', programmed: 1 }],
    ['NACK → Rejected with the message, even if a newer ACK covers the watermark for other types', [good('a'), envoy('b', { [CDS]: { acked: 8 }, [RDS]: { acked: 9, nack: { seq: 10, message: 'duplicate route', at: T0 } } })], wm, T0,
      { state: 'Rejected', programmed: 1, blockers: [{ nodeId: 'b', reason: 'nacked', nacks: [{ typeUrl: RDS, seq: 10, message: 'duplicate route', at: T0 }] }] }],
    ['NACK of a version newer than the watermark still blocks (never laundered)', [envoy('a', { [CDS]: { acked: 8 }, [RDS]: { acked: 10, nack: { seq: 11, message: 'bad', at: T0 } } })], wm, T0,
      { state: 'Rejected', programmed: 0 }],
    ['no watermark for the lineage', [good('a'), envoy('b', { [CDS]: { acked: 50, lineage: L2 } }, { lineage: L2 })], wm, T0,
      { state: 'Pending', programmed: 1, blockers: [{ nodeId: 'b', reason: 'noWatermark', lineages: [L2] }] }],
    ['vanished Envoy stops blocking after the TTL', [good('a', { lastSeenAt: T0 + 100_000 }), envoy('b', { [CDS]: {} }, { status: 'DISCONNECTED' })], wm, T0 + 60_001 + 40_000,
      { state: 'Programmed', programmed: 1, total: 1 }],
    ['disconnected but within TTL and programmed counts', [good('a'), good('b', { status: 'DISCONNECTED' })], wm, T0 + 1000, { state: 'Programmed', programmed: 2, total: 2 }],
    ['Rejected wins over Stuck and Pending; blockers ordered by severity', [
      envoy('p', { [RDS]: { acked: 1 } }),
      envoy('s', { [RDS]: { acked: 1, pending: { seq: 10, sentAt: T0 } } }),
      envoy('n', { [RDS]: { acked: 1, nack: { seq: 10, message: 'x', at: T0 } } }),
    ], wm, T0 + 40_000, { state: 'Rejected', programmed: 0, total: 3 }],
  ])('%s', (_name, envoys, watermark, now, expected) => {
    expect(computeConvergence({ object, generation: 7, watermark, envoys, now, policy })).toMatchObject(expected);
  });

  it('counts an Envoy once when given several states for it (highest rev wins)', () => {
    const stale = envoy('a', { [RDS]: { acked: 1 } }, { rev: 3 });
    const fresh = { ...good('a'), rev: 4 };
    for (const envoys of [[stale, fresh], [fresh, stale]]) {
      expect(computeConvergence({ object, generation: 7, watermark: wm, envoys, now: T0, policy })).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    }
  });

  it('orders blockers nacked, stuck, noWatermark, pending, then by nodeId', () => {
    const result = computeConvergence({
      object, generation: 7, watermark: wm, now: T0 + 40_000, policy,
      envoys: [
        envoy('p2', { [RDS]: { acked: 1 } }),
        envoy('p1', { [RDS]: { acked: 1 } }),
        envoy('w', { [RDS]: { acked: 1, lineage: L2 } }),
        envoy('s', { [RDS]: { acked: 1, pending: { seq: 10, sentAt: T0 } } }, { lastSeenAt: T0 + 40_000 }),
        envoy('n', { [RDS]: { acked: 1, nack: { seq: 10, message: 'x', at: T0 } } }),
      ],
    });
    expect(result.blockers.map((b) => `${b.reason}:${b.nodeId}`)).toEqual(['nacked:n', 'stuck:s', 'noWatermark:w', 'pending:p1', 'pending:p2']);
  });
});
