// Time the gateway did not read an Envoy's answers (backpressure) is credited to its waits
// (common/core/staleness.ts creditUnreadTime), so it is not found stuck for answers nobody read.
import { creditUnreadTime, stuckTypes } from '../../../common/core';
import { CDS, EDS, LDS, RDS, T0, envoy } from './fixtures';

const ACK_TIMEOUT = 1_000;

it('moves waits begun before the unread span by the credit, and waits begun inside it to its end', () => {
  const state = envoy('e', {
    [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 } },
    [EDS]: { acked: 3, namesChange: { at: T0 + 10, sent: false } },
    // Sent after the pause began: its answer is not read either, so its wait starts when the span ends
    // (it used to start at T0 + 600, and a heartbeat written during a long pause showed it stuck).
    [LDS]: { acked: 3, pending: { seq: 5, sentAt: T0 + 600 } },
    // Begun after the span: not touched.
    [RDS]: { acked: 3, pending: { seq: 5, sentAt: T0 + 2_600 } },
  });
  const credited = creditUnreadTime(state, { creditMs: 2_000, before: T0 + 500 });
  expect(credited.types[CDS]?.pending).toEqual({ seq: 4, sentAt: T0 + 2_000 });
  expect(credited.types[EDS]?.namesChange).toEqual({ at: T0 + 2_010, sent: false });
  expect(credited.types[LDS]?.pending).toEqual({ seq: 5, sentAt: T0 + 2_500 });
  expect(credited.types[RDS]?.pending).toEqual({ seq: 5, sentAt: T0 + 2_600 });
  // Judged 1.5 s after the first response went out: without the credit CDS and EDS look stuck.
  expect(stuckTypes(state, T0 + 1_500, ACK_TIMEOUT)).toEqual([CDS, EDS].sort());
  expect(stuckTypes(credited, T0 + 1_500, ACK_TIMEOUT)).toEqual([]);
  // An answer still missing a full timeout after its credited wait is stuck.
  expect(stuckTypes(credited, T0 + 3_000, ACK_TIMEOUT)).toEqual([CDS]);
  expect(stuckTypes(credited, T0 + 3_500, ACK_TIMEOUT)).toEqual([CDS, EDS, LDS].sort());
});

it('returns the same state when nothing waits or nothing is credited', () => {
  const idle = envoy('e', { [CDS]: { acked: 3 } });
  expect(creditUnreadTime(idle, { creditMs: 5_000, before: T0 })).toBe(idle);
  const waiting = envoy('e', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 } } });
  expect(creditUnreadTime(waiting, { creditMs: 0, before: T0 + 1 })).toBe(waiting);
});
