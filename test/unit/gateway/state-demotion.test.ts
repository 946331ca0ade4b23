// --state-writes class-changes (xds-gateway/tracking/progress/state-demotion.ts): which Envoy states
// the recorder is still handed when PROGRESS carries the progress.
import { memberFromEnvoyState } from '../../../common/core';
import { envoyStateClassKey, StateDemotion } from '../../../xds-gateway/tracking/progress/state-demotion';
import { CDS, EDS, L1, L2, LDS, RDS, T0, envoy } from '../core/fixtures';

const ACK_TIMEOUT = 1_000;
const REFRESH = 60_000;

function demotion(requiredTypeUrls: readonly string[] = []): StateDemotion {
  return new StateDemotion({ refreshMs: REFRESH, ackTimeoutMs: ACK_TIMEOUT, requiredTypeUrls });
}

const programmed = (seq: number, extra: Partial<Parameters<typeof envoy>[2]> = {}) =>
  envoy('e', { [CDS]: { acked: seq }, [EDS]: { acked: seq }, [LDS]: { acked: seq }, [RDS]: { acked: seq } }, { programmedThrough: seq, ...extra });

it('writes the first state, then demotes states that only move progress (ACKs, a response sent, lastSeenAt)', () => {
  const filter = demotion();
  expect(filter.admit(programmed(3), T0)).toBe(true);
  // A change wave: a response sent (a wait under the ACK timeout), then its ACK, then a heartbeat.
  const sent = envoy('e', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 + 10 } }, [EDS]: { acked: 3 }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } }, { programmedThrough: 3, lastSeenAt: T0 + 10 });
  expect(filter.admit(sent, T0 + 10)).toBe(false);
  expect(filter.admit(programmed(4, { lastSeenAt: T0 + 20 }), T0 + 20)).toBe(false);
  expect(filter.admit(programmed(4, { lastSeenAt: T0 + 5_000 }), T0 + 5_000)).toBe(false);
  expect(filter.stats()).toEqual({ offered: 4, written: 1, demoted: 3, writtenBy: { first: 1, class: 0, refresh: 0, coalesced: 0 } });
});

it('writes a state at once when a NACK appears, changes or clears', () => {
  const filter = demotion();
  filter.admit(programmed(3), T0);
  const nacked = envoy('e', { [CDS]: { acked: 3, nack: { seq: 4, message: 'bad cluster', at: T0 + 1 } }, [EDS]: { acked: 4 }, [LDS]: { acked: 4 }, [RDS]: { acked: 4 } }, { programmedThrough: 3 });
  expect(filter.admit(nacked, T0 + 1)).toBe(true);
  // The same NACK standing while other types move on: demoted.
  expect(filter.admit({ ...nacked, lastSeenAt: T0 + 2 }, T0 + 2)).toBe(false);
  const renacked = envoy('e', { [CDS]: { acked: 3, nack: { seq: 5, message: 'bad cluster again', at: T0 + 3 } }, [EDS]: { acked: 5 }, [LDS]: { acked: 5 }, [RDS]: { acked: 5 } }, { programmedThrough: 3 });
  expect(filter.admit(renacked, T0 + 3)).toBe(true);
  // An ACK past the rejected seq clears it (invariant 2's rule, core isUnresolvedNack).
  expect(filter.admit(programmed(5), T0 + 4)).toBe(true);
  expect(filter.stats().writtenBy.class).toBe(3);
});

it('writes a state at once when a wait passes the ACK timeout (STUCK), judged at its own lastSeenAt', () => {
  const filter = demotion();
  filter.admit(programmed(3), T0);
  const waiting = (lastSeenAt: number) => envoy('e', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 } }, [EDS]: { acked: 3 }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } }, { programmedThrough: 3, lastSeenAt });
  expect(filter.admit(waiting(T0 + ACK_TIMEOUT - 1), T0 + 5_000)).toBe(false);
  // The tracker's STUCK report vouches for the Envoy at the detection (lastSeenAt = now).
  expect(filter.admit(waiting(T0 + ACK_TIMEOUT), T0 + ACK_TIMEOUT)).toBe(true);
});

it('writes connects, disconnects, reconnects, lineage moves and subscription changes at once', () => {
  const filter = demotion();
  filter.admit(programmed(3), T0);
  expect(filter.admit(programmed(3, { status: 'DISCONNECTED' }), T0 + 1)).toBe(true);
  expect(filter.admit(programmed(3, { status: 'DISCONNECTED', lastSeenAt: T0 + 2 }), T0 + 2)).toBe(false);
  expect(filter.admit(programmed(3, { connectedAt: T0 + 3 }), T0 + 3)).toBe(true);
  // A new stream without a DISCONNECTED state between them (the old stream replaced at once).
  expect(filter.admit(programmed(3, { connectedAt: T0 + 4 }), T0 + 4)).toBe(true);
  const onL2 = (types: Record<string, { acked: number; subscribed?: boolean; lineage?: string }>) => envoy('e', Object.fromEntries(Object.entries(types).map(([url, type]) => [url, { lineage: L2, ...type }])), { programmedThrough: 3, connectedAt: T0 + 4, lineage: L2 });
  expect(filter.admit(onL2({ [CDS]: { acked: 3 }, [EDS]: { acked: 3 }, [LDS]: { acked: 3 }, [RDS]: { acked: 3 } }), T0 + 5)).toBe(true);
  expect(filter.admit(onL2({ [CDS]: { acked: 3 }, [EDS]: { acked: 3 }, [LDS]: { acked: 3 }, [RDS]: { acked: 3, subscribed: false } }), T0 + 6)).toBe(true);
  // EDS served by another gateway's lineage (per-type streams): a split member.
  const splitType = onL2({ [CDS]: { acked: 3 }, [EDS]: { acked: 3, lineage: L1 }, [LDS]: { acked: 3 } });
  expect(filter.admit(splitType, T0 + 7)).toBe(true);
});

it('demotes a state less programmed than the last one written too (a names change on every route change)', () => {
  const filter = demotion();
  filter.admit(programmed(5), T0);
  expect(filter.admit(programmed(6), T0 + 1)).toBe(false);
  // A new cluster's EDS names: not programmed for a moment, then programmed again.
  const namesChange = envoy('e', { [CDS]: { acked: 7 }, [EDS]: { acked: 6, namesChange: { at: T0 + 2, sent: true } }, [LDS]: { acked: 7 }, [RDS]: { acked: 7 } }, { lastSeenAt: T0 + 2 });
  expect(filter.admit(namesChange, T0 + 2)).toBe(false);
  expect(filter.admit(programmed(7), T0 + 3)).toBe(false);
});

it('writes a state that only moved progress once the refresh is due, and a forgotten node starts over', () => {
  const filter = demotion();
  filter.admit(programmed(3), T0);
  expect(filter.admit(programmed(4), T0 + REFRESH - 1)).toBe(false);
  expect(filter.admit(programmed(4), T0 + REFRESH)).toBe(true);
  expect(filter.admit(programmed(5), T0 + REFRESH + 1)).toBe(false);
  filter.forget('e');
  expect(filter.admit(programmed(5), T0 + REFRESH + 2)).toBe(true);
  expect(filter.stats().writtenBy).toEqual({ first: 2, class: 0, refresh: 1, coalesced: 0 });
});

it('counts a required type missing as part of the class', () => {
  const filter = demotion([RDS]);
  const withoutRds = envoy('e', { [CDS]: { acked: 3 }, [EDS]: { acked: 3 }, [LDS]: { acked: 3 } }, { programmedThrough: 3 });
  filter.admit(withoutRds, T0);
  expect(filter.admit(programmed(3), T0 + 1)).toBe(true);
});

it('hands the recorder a state that moved only progress while it still holds an earlier one unwritten (one write, the answers in it)', () => {
  const filter = demotion();
  filter.admit(programmed(3), T0);
  expect(filter.admit(programmed(4), T0 + 1, true)).toBe(true);
  expect(filter.admit(programmed(5), T0 + 2, false)).toBe(false);
  // Coalescing does not restart the refresh clock: the refresh is still due REFRESH after the write.
  expect(filter.admit(programmed(6), T0 + REFRESH, false)).toBe(true);
  expect(filter.stats().writtenBy).toEqual({ first: 1, class: 0, refresh: 1, coalesced: 1 });
});

it("takes the PROGRESS publisher's member summary for the class key: the same key as its own (the incarnation it stamps does not enter the blockers)", () => {
  const required = [CDS, EDS, LDS, RDS];
  const policy = { ackTimeoutMs: ACK_TIMEOUT, requiredTypeUrls: required };
  const states = [
    programmed(3),
    envoy('e', { [CDS]: { acked: 3, nack: { seq: 4, message: 'bad cluster', at: T0 + 1 } }, [EDS]: { acked: 4 } }, { programmedThrough: 3 }),
    envoy('e', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 - 5_000 } }, [EDS]: { acked: 3, lineage: L2 } }, { programmedThrough: 3, lastSeenAt: T0 }),
    envoy('e', {}, {}),
  ];
  for (const state of states) {
    const summary = memberFromEnvoyState({ ...state, incarnation: 7 }, required);
    expect(envoyStateClassKey(state, policy, summary)).toBe(envoyStateClassKey(state, policy));
  }
});
