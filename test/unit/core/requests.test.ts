import {
  applyAck,
  applyClassifiedRequest,
  applyExpire,
  applyHeartbeat,
  applySent,
  classifyRequest,
  stuckEvents,
  type RequestClass,
} from '../../../common/core';
import { parseItem, toEnvoyEventItem } from '../../../common/store';
import { CDS, L1, L2, RDS, T0, envoy } from './fixtures';

const context = { typeUrl: RDS, lineage: L1, now: T0 + 1000, eventRetentionMs: 86_400_000 };
const ttl = Math.ceil((T0 + 1000 + 86_400_000) / 1000);

describe('applyClassifiedRequest', () => {
  const state = envoy('e1', { [RDS]: { acked: 4, pending: { seq: 6, sentAt: T0 } } });

  it('an Envoy the gateway has sent nothing claims a version of its lineage: not counted', () => {
    const fresh = envoy('e2', {});
    const outcome = applyClassifiedRequest(fresh, { kind: 'initial', versionInfo: `xp1:${L1}:3` }, context);
    expect(outcome.state.types[RDS]).toEqual({ lineage: L1, subscribed: true });
    expect(outcome.ignored).toMatch(/was not served to this Envoy \(nothing served yet\)/);
  });

  it.each<[string, RequestClass, Record<string, unknown>, Record<string, unknown> | undefined, RegExp | undefined]>([
    ['initial with our version resumes it', { kind: 'initial', versionInfo: `xp1:${L1}:5` }, { lineage: L1, subscribed: true, acked: 5 }, undefined, undefined],
    ['initial with no version', { kind: 'initial', versionInfo: '' }, { lineage: L1, subscribed: true }, undefined, undefined],
    ['initial with an upstream UUID', { kind: 'initial', versionInfo: '6d1e3c1a-uuid' }, { lineage: L1, subscribed: true }, undefined, /not a version of lineage/],
    ['initial with another lineage', { kind: 'initial', versionInfo: `xp1:${L2}:5` }, { lineage: L1, subscribed: true }, undefined, /not a version of lineage/],
    // A claimed version counts only if this gateway sent it (or later) to this Envoy: one it never
    // received would otherwise count as programmed.
    ['initial claiming a version never sent to it', { kind: 'initial', versionInfo: `xp1:${L1}:7` }, { lineage: L1, subscribed: true }, undefined, /was not served to this Envoy \(served through seq 6\)/],
    ['ack', { kind: 'ack', nonce: 'n', version: `xp1:${L1}:6` }, { lineage: L1, subscribed: true, acked: 6 },
      { nodeId: 'e1', outcome: 'ACK', lineage: L1, seq: 6, typeUrl: RDS, at: T0 + 1000, ttl }, undefined],
    ['nack', { kind: 'nack', nonce: 'n', version: `xp1:${L1}:6`, message: 'dup vhost', lastAcceptedVersionInfo: `xp1:${L1}:4` },
      { lineage: L1, subscribed: true, acked: 4, nack: { seq: 6, message: 'dup vhost', at: T0 + 1000 } },
      { nodeId: 'e1', outcome: 'NACK', lineage: L1, seq: 6, typeUrl: RDS, at: T0 + 1000, message: 'dup vhost', ttl }, undefined],
    ['ack of a version we cannot parse', { kind: 'ack', nonce: 'n', version: 'uuid' }, { lineage: L1, subscribed: true, acked: 4, pending: { seq: 6, sentAt: T0 } }, undefined, /cannot order/],
    ['stale', { kind: 'stale', nonce: 'old' }, { lineage: L1, subscribed: true, acked: 4, pending: { seq: 6, sentAt: T0 } }, undefined, /stale nonce/],
    ['update after a NACK', { kind: 'update', nonce: 'n', reason: 'versionNotAccepted' }, { lineage: L1, subscribed: true, acked: 4, pending: { seq: 6, sentAt: T0 } }, undefined, /acknowledges nothing \(versionNotAccepted\)/],
    ['unknown nonce', { kind: 'unknownNonce', nonce: 'zz' }, { lineage: L1, subscribed: true, acked: 4, pending: { seq: 6, sentAt: T0 } }, undefined, /unknown nonce/],
  ])('%s', (_name, request, type, event, ignored) => {
    const outcome = applyClassifiedRequest(state, request, context);
    expect(outcome.state.types[RDS]).toEqual(type);
    expect(outcome.state.lastSeenAt).toBe(T0 + 1000);
    expect(outcome.event).toEqual(event);
    if (ignored === undefined) expect(outcome.ignored).toBeUndefined();
    else expect(outcome.ignored).toMatch(ignored);
    // Every event produced is a valid table item.
    if (outcome.event !== undefined) expect(parseItem(toEnvoyEventItem(outcome.event)).ok).toBe(true);
  });

  it.each<[string, RequestClass, boolean]>([
    ['ack', { kind: 'ack', nonce: 'n', version: `xp1:${L1}:6` }, true],
    ['stale', { kind: 'stale', nonce: 'n' }, true],
    ['update', { kind: 'update', nonce: 'n', reason: 'acklessUpdate' }, true],
    ['initial (a fresh subscription is behind anyway)', { kind: 'initial', versionInfo: '' }, false],
  ])('namesAdded on %s', (_name, request, marked) => {
    const outcome = applyClassifiedRequest(state, request, { ...context, namesAdded: true });
    expect(outcome.state.types[RDS]?.namesChange !== undefined).toBe(marked);
  });

  it('end to end with classifyRequest: a NACK stays a NACK', () => {
    const sent = { sent: [{ nonce: 'n1', version: `xp1:${L1}:6` }] };
    const request = classifyRequest({ protocol: 'sotw', typeUrl: RDS, responseNonce: 'n1', versionInfo: `xp1:${L1}:4`, errorDetail: { message: 'bad' } }, sent);
    const outcome = applyClassifiedRequest(state, request, context);
    expect(outcome.event?.outcome).toBe('NACK');
    expect(outcome.state.types[RDS]?.acked).toBe(4);
  });
});

describe('stuckEvents', () => {
  it('emits one STUCK per stuck type, keyed by the pending version', () => {
    const state = applySent(applySent(envoy('e1', { [CDS]: { acked: 1 }, [RDS]: {} }), { typeUrl: CDS, version: { lineage: L1, seq: 3 }, now: T0 }), { typeUrl: RDS, version: { lineage: L1, seq: 4 }, now: T0 + 20_000 });
    const events = stuckEvents(state, T0 + 31_000, 30_000, 1000);
    expect(events).toEqual([{ nodeId: 'e1', outcome: 'STUCK', lineage: L1, seq: 3, typeUrl: CDS, at: T0 + 31_000, sentAt: T0, ttl: Math.ceil((T0 + 32_000) / 1000) }]);
    expect(stuckEvents(state, T0 + 51_000, 30_000, 1000).map((e) => e.typeUrl)).toEqual([CDS, RDS].sort());
    expect(stuckEvents(applyAck(state, { typeUrl: CDS, version: { lineage: L1, seq: 3 }, now: T0 + 32_000 }), T0 + 32_000, 30_000, 1000)).toEqual([]);
  });
});

describe('an expired Envoy that is heard from again is back in the denominator', () => {
  it.each([
    ['ACK', (s: ReturnType<typeof envoy>) => applyAck(s, { typeUrl: RDS, version: { lineage: L1, seq: 1 }, now: T0 + 5 })],
    ['heartbeat', (s: ReturnType<typeof envoy>) => applyHeartbeat(s, T0 + 5)],
    ['request', (s: ReturnType<typeof envoy>) => applyClassifiedRequest(s, { kind: 'initial', versionInfo: '' }, context).state],
  ])('%s', (_name, transition) => {
    const expired = applyExpire(envoy('e1', { [RDS]: {} }));
    expect(expired.status).toBe('EXPIRED');
    expect(transition(expired).status).toBe('CONNECTED');
  });
});
