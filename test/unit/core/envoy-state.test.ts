import {
  applyAck,
  applyConnect,
  applyDisconnect,
  applyExpire,
  applyHeartbeat,
  applyNamesAdded,
  applyNack,
  applySent,
  applySubscribe,
  applyUnsubscribe,
  newEnvoyState,
  withProgrammedThrough,
  utf8Length,
  type EnvoyState,
} from '../../../common/core';
import { CDS, EDS, L1, L2, LDS, RDS, T0, envoy } from './fixtures';

const v = (seq: number, lineage = L1) => ({ lineage, seq });

describe('Envoy state transitions', () => {
  it('newEnvoyState starts connected with nothing subscribed', () => {
    const state = newEnvoyState({ identity: { nodeId: 'e1', cluster: 'edge', metadata: { a: 1 } }, group: 'edge', lineage: L1, now: T0 });
    expect(state).toEqual({ nodeId: 'e1', cluster: 'edge', group: 'edge', metadata: { a: 1 }, lineage: L1, status: 'CONNECTED', connectedAt: T0, lastSeenAt: T0, types: {}, rev: 0 });
  });

  it.each<[string, EnvoyState, (s: EnvoyState) => EnvoyState, EnvoyState['types']]>([
    ['subscribe fresh', envoy('e', {}), (s) => applySubscribe(s, { typeUrl: CDS, lineage: L1, now: T0 }), { [CDS]: { lineage: L1, subscribed: true } }],
    ['subscribe resuming our version (SotW version_info)', envoy('e', {}), (s) => applySubscribe(s, { typeUrl: CDS, lineage: L1, resume: v(7), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 7 } }],
    ['subscribe resuming another lineage: nothing known', envoy('e', {}), (s) => applySubscribe(s, { typeUrl: CDS, lineage: L1, resume: v(7, L2), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true } }],
    ['resubscribe after Envoy restart forgets the old ACK', envoy('e', { [CDS]: { acked: 9 } }), (s) => applySubscribe(s, { typeUrl: CDS, lineage: L1, now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true } }],
    ['resubscribe keeps an unresolved NACK', envoy('e', { [CDS]: { acked: 5, nack: { seq: 6, message: 'm', at: T0 } } }),
      (s) => applySubscribe(s, { typeUrl: CDS, lineage: L1, resume: v(5), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 5, nack: { seq: 6, message: 'm', at: T0 } } }],
    ['sent sets pending', envoy('e', { [CDS]: { acked: 1 } }), (s) => applySent(s, { typeUrl: CDS, version: v(3), now: T0 + 5 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1, pending: { seq: 3, sentAt: T0 + 5 } } }],
    ['sent again keeps the oldest sentAt', envoy('e', { [CDS]: { acked: 1, pending: { seq: 3, sentAt: T0 } } }), (s) => applySent(s, { typeUrl: CDS, version: v(4), now: T0 + 9 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1, pending: { seq: 4, sentAt: T0 } } }],
    ['sent on a new lineage resets the type', envoy('e', { [CDS]: { acked: 9 } }), (s) => applySent(s, { typeUrl: CDS, version: v(2, L2), now: T0 }),
      { [CDS]: { lineage: L2, subscribed: true, pending: { seq: 2, sentAt: T0 } } }],
    ['ACK clears covered pending', envoy('e', { [CDS]: { acked: 1, pending: { seq: 3, sentAt: T0 } } }), (s) => applyAck(s, { typeUrl: CDS, version: v(3), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 3 } }],
    ['ACK never moves acked backwards', envoy('e', { [CDS]: { acked: 5 } }), (s) => applyAck(s, { typeUrl: CDS, version: v(2), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 5 } }],
    ['ACK of an older version keeps newer pending', envoy('e', { [CDS]: { acked: 1, pending: { seq: 4, sentAt: T0 } } }), (s) => applyAck(s, { typeUrl: CDS, version: v(2), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 2, pending: { seq: 4, sentAt: T0 } } }],
    ['ACK from another lineage is ignored', envoy('e', { [CDS]: { acked: 1 } }), (s) => applyAck(s, { typeUrl: CDS, version: v(9, L2), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1 } }],
    ['ACK of the NACKed version or newer clears the NACK', envoy('e', { [CDS]: { acked: 1, nack: { seq: 2, message: 'm', at: T0 } } }), (s) => applyAck(s, { typeUrl: CDS, version: v(3), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 3 } }],
    ['ACK older than the NACK keeps it', envoy('e', { [CDS]: { acked: 1, nack: { seq: 4, message: 'm', at: T0 } } }), (s) => applyAck(s, { typeUrl: CDS, version: v(3), now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 3, nack: { seq: 4, message: 'm', at: T0 } } }],
    ['NACK keeps acked, records message, clears pending', envoy('e', { [CDS]: { acked: 1, pending: { seq: 2, sentAt: T0 } } }),
      (s) => applyNack(s, { typeUrl: CDS, version: v(2), message: 'unknown cluster', now: T0 + 1 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1, nack: { seq: 2, message: 'unknown cluster', at: T0 + 1 } } }],
    ['NACK from another lineage is ignored', envoy('e', { [CDS]: { acked: 1 } }), (s) => applyNack(s, { typeUrl: CDS, version: v(2, L2), message: 'x', now: T0 }),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1 } }],
    ['unsubscribe', envoy('e', { [CDS]: { acked: 1, pending: { seq: 2, sentAt: T0 } } }), (s) => applyUnsubscribe(s, { typeUrl: CDS, now: T0 }),
      { [CDS]: { lineage: L1, subscribed: false, acked: 1 } }],
    ['disconnect keeps ACKs, drops pending', envoy('e', { [CDS]: { acked: 1, pending: { seq: 2, sentAt: T0 } }, [LDS]: { acked: 2 } }), (s) => applyDisconnect(s, T0),
      { [CDS]: { lineage: L1, subscribed: true, acked: 1 }, [LDS]: { lineage: L1, subscribed: true, acked: 2 } }],
  ])('%s', (_name, before, transition, expectedTypes) => {
    const frozen = JSON.stringify(before);
    const after = transition(before);
    expect(after.types).toEqual(expectedTypes);
    expect(JSON.stringify(before)).toBe(frozen); // immutable: input unchanged
  });

  it('names added: the ACKed version does not count until a response sent after the change is ACKed', () => {
    const v = (seq: number) => ({ lineage: L1, seq });
    let state = envoy('e', { [EDS]: { acked: 5 } });
    state = applyNamesAdded(state, { typeUrl: EDS, lineage: L1, now: T0 + 1 });
    expect(state.types[EDS]).toEqual({ lineage: L1, subscribed: true, acked: 5, namesChange: { at: T0 + 1, sent: false } });
    // An ACK before anything new was sent cannot carry the new names.
    state = applyAck(state, { typeUrl: EDS, version: v(5), now: T0 + 2 });
    expect(state.types[EDS]?.namesChange).toEqual({ at: T0 + 1, sent: false });
    // A second change keeps the first time (stuck is measured from the oldest wait).
    state = applyNamesAdded(state, { typeUrl: EDS, lineage: L1, now: T0 + 3 });
    expect(state.types[EDS]?.namesChange).toEqual({ at: T0 + 1, sent: false });
    state = applySent(state, { typeUrl: EDS, version: v(5), now: T0 + 4 });
    expect(state.types[EDS]?.namesChange).toEqual({ at: T0 + 1, sent: true });
    // A NACK of that response keeps waiting.
    const nacked = applyNack(state, { typeUrl: EDS, version: v(5), message: 'm', now: T0 + 5 });
    expect(nacked.types[EDS]?.namesChange).toBeDefined();
    // Reconnecting with version_info does not prove the names arrived.
    const resumed = applySubscribe(applyDisconnect(state, T0 + 5), { typeUrl: EDS, lineage: L1, resume: v(5), now: T0 + 6 });
    expect(resumed.types[EDS]?.namesChange).toEqual({ at: T0 + 1, sent: false });
    // The ACK of the response sent after the change clears it.
    state = applyAck(state, { typeUrl: EDS, version: v(5), now: T0 + 6 });
    expect(state.types[EDS]).toEqual({ lineage: L1, subscribed: true, acked: 5 });
  });

  it('truncates NACK messages', () => {
    const after = applyNack(envoy('e', { [CDS]: {} }), { typeUrl: CDS, version: v(1), message: 'x'.repeat(10_000), now: T0 });
    expect(utf8Length(after.types[CDS]!.nack!.message)).toBeLessThanOrEqual(4096);
  });

  it.each<[string, EnvoyState, (s: EnvoyState) => EnvoyState, Partial<EnvoyState>]>([
    ['disconnect', envoy('e', {}), (s) => applyDisconnect(s, T0 + 10), { status: 'DISCONNECTED', lastSeenAt: T0 + 10 }],
    ['expire', envoy('e', {}, { status: 'DISCONNECTED' }), (s) => applyExpire(s), { status: 'EXPIRED', lastSeenAt: T0 }],
    ['disconnect after expiry stays expired', envoy('e', {}, { status: 'EXPIRED' }), (s) => applyDisconnect(s, T0 + 10), { status: 'EXPIRED', lastSeenAt: T0 }],
    ['reconnect', envoy('e', {}, { status: 'EXPIRED' }), (s) => applyConnect(s, { lineage: L2, now: T0 + 50 }), { status: 'CONNECTED', lineage: L2, connectedAt: T0 + 50, lastSeenAt: T0 + 50 }],
    ['second stream of a connected Envoy keeps connectedAt', envoy('e', {}), (s) => applyConnect(s, { lineage: L1, now: T0 + 50 }), { status: 'CONNECTED', connectedAt: T0, lastSeenAt: T0 + 50 }],
    ['heartbeat', envoy('e', {}), (s) => applyHeartbeat(s, T0 + 30), { lastSeenAt: T0 + 30 }],
    ['heartbeat ignored when disconnected', envoy('e', {}, { status: 'DISCONNECTED' }), (s) => applyHeartbeat(s, T0 + 30), { lastSeenAt: T0 }],
    ['lastSeenAt never goes back', envoy('e', {}, { lastSeenAt: T0 + 100 }), (s) => applyAck(s, { typeUrl: CDS, version: v(1), now: T0 }), { lastSeenAt: T0 + 100 }],
  ])('%s', (_name, before, transition, expected) => {
    expect(transition(before)).toMatchObject(expected);
  });

  it.each<[string, EnvoyState, number | undefined]>([
    ['all types at latest', envoy('e', { [CDS]: { acked: 4 }, [RDS]: { acked: 5 } }), 6],
    ['RDS behind', envoy('e', { [CDS]: { acked: 4 }, [RDS]: { acked: 3 } }), 4],
    ['unsubscribed types do not count', envoy('e', { [CDS]: { acked: 4 }, [RDS]: { subscribed: false } }), 6],
    ['a type on another lineage: unknown', envoy('e', { [CDS]: { acked: 4 }, [RDS]: { acked: 5, lineage: L2 } }), undefined],
    ['nothing ACKed', envoy('e', { [CDS]: {} }), undefined],
    ['names added and not yet served', envoy('e', { [CDS]: { acked: 4 }, [RDS]: { acked: 5, namesChange: { at: T0, sent: true } } }), undefined],
  ])('withProgrammedThrough: %s', (_name, state, expected) => {
    const result = withProgrammedThrough({ ...state, programmedThrough: 99 }, { [CDS]: [1, 4], [RDS]: [3, 5], other: [6] });
    expect(result.programmedThrough).toBe(expected);
  });
});
