// The table clock (common/core/table-clock.ts): staleness stands still while the expire function
// completes no tick, and a recorded gap never counts towards a stamp's age.
import fc from 'fast-check';
import { advanceTableClock, isLiveMember, seenWithin, tableAge, tableTime, type TableClock, type TableClockView } from '../../../common/core';

const TTL = 30_000;
const STALL = 6_000;

function view(clock: TableClock | undefined): TableClockView {
  return { clock, stallMs: STALL };
}

test('without a recorded tick it is wall time', () => {
  expect(tableTime(undefined, 1234)).toBe(1234);
  expect(tableAge(view(undefined), 1000, 5000)).toBe(4000);
  expect(seenWithin(0, TTL + 1, TTL, view(undefined))).toBe(false);
});

test('ticks on time: wall time, no gap recorded', () => {
  let clock: TableClock | undefined;
  for (let t = 0; t <= 60_000; t += 2_000) clock = advanceTableClock(clock, t, { stallMs: STALL, ttlMs: TTL });
  expect(clock).toEqual({ tickAt: 60_000, gaps: [] });
  expect(tableAge(view(clock), 10_000, 61_000)).toBe(51_000);
});

test('an outage longer than the TTL: no stamp from before it goes stale during it or at its end', () => {
  // Ticks until 100 s; the table is unreachable until 250 s (150 s, five TTLs).
  const before = advanceTableClock(undefined, 100_000, { stallMs: STALL, ttlMs: TTL });
  const lastSeen = 95_000;
  for (const now of [110_000, 150_000, 249_000]) {
    expect(seenWithin(lastSeen, now, TTL, view(before))).toBe(true);
    expect(tableAge(view(before), lastSeen, now)).toBe(100_000 + STALL - lastSeen);
  }
  // The first tick after the return records the gap; the stamp is as old as it was when the clock stopped.
  const after = advanceTableClock(before, 250_000, { stallMs: STALL, ttlMs: TTL });
  expect(after.gaps).toEqual([{ from: 106_000, to: 250_000 }]);
  expect(tableAge(view(after), lastSeen, 250_000)).toBe(11_000);
  // With ticks on time again, it goes stale a TTL of table time later (its refresh never came: gone);
  // a refreshed one does not.
  const staleAt = 250_000 + TTL - 11_000;
  let ticking = after;
  for (let t = 252_000; t <= staleAt; t += 2_000) ticking = advanceTableClock(ticking, t, { stallMs: STALL, ttlMs: TTL });
  expect(seenWithin(lastSeen, staleAt, TTL, view(ticking))).toBe(true);
  expect(seenWithin(lastSeen, staleAt + 1, TTL, view(ticking))).toBe(false);
  expect(seenWithin(251_000, staleAt + 1, TTL, view(ticking))).toBe(true);
  // Without ticks after it, the clock stands still again from 256 s: still counted.
  expect(seenWithin(lastSeen, staleAt + 1, TTL, view(after))).toBe(true);
  // On wall time it would have been stale from 125 s on: the hole the clock closes.
  expect(seenWithin(lastSeen, 250_000, TTL)).toBe(false);
});

test('the member rule takes the clock: a live member stays counted through a gap', () => {
  const clock = advanceTableClock(undefined, 100_000, { stallMs: STALL, ttlMs: TTL });
  const member = { t: 5, r: 1, live: true, s: 95_000 };
  expect(isLiveMember(member, 200_000, TTL)).toBe(false);
  expect(isLiveMember(member, 200_000, TTL, view(clock))).toBe(true);
});

test('a tick that is not later than the last one changes nothing (overlapping invocations)', () => {
  const clock = advanceTableClock(undefined, 100_000, { stallMs: STALL, ttlMs: TTL });
  expect(advanceTableClock(clock, 100_000, { stallMs: STALL, ttlMs: TTL })).toBe(clock);
  expect(advanceTableClock(clock, 90_000, { stallMs: STALL, ttlMs: TTL })).toBe(clock);
});

test('old gaps are dropped once no stamp within twice the TTL can be younger for them', () => {
  let clock = advanceTableClock(undefined, 0, { stallMs: STALL, ttlMs: TTL });
  clock = advanceTableClock(clock, 20_000, { stallMs: STALL, ttlMs: TTL });
  expect(clock.gaps).toHaveLength(1);
  for (let t = 22_000; t <= 20_000 + 2 * TTL + 4_000; t += 2_000) clock = advanceTableClock(clock, t, { stallMs: STALL, ttlMs: TTL });
  expect(clock.gaps).toHaveLength(0);
});

describe('properties over random tick schedules', () => {
  const schedule = fc.array(fc.integer({ min: 1, max: 3 * TTL }), { minLength: 1, maxLength: 40 });

  function run(steps: number[]): { clock: TableClock; ticks: number[] } {
    let clock: TableClock | undefined;
    let t = 0;
    const ticks: number[] = [];
    for (const step of steps) {
      t += step;
      ticks.push(t);
      clock = advanceTableClock(clock, t, { stallMs: STALL, ttlMs: TTL });
    }
    return { clock: clock!, ticks };
  }

  test('table time never runs backwards and never runs faster than wall time', () => {
    fc.assert(
      fc.property(schedule, fc.integer({ min: 0, max: 200 * TTL }), fc.integer({ min: 0, max: 10 * TTL }), (steps, a, d) => {
        const { clock } = run(steps);
        const age = tableAge(view(clock), a, a + d);
        expect(age).toBeGreaterThanOrEqual(0);
        expect(age).toBeLessThanOrEqual(d);
      }),
    );
  });

  test('between two ticks at most the stall apart, table time is wall time', () => {
    fc.assert(
      fc.property(schedule, (steps) => {
        const { clock, ticks } = run(steps);
        for (let i = 1; i < ticks.length; i++) {
          const [from, to] = [ticks[i - 1]!, ticks[i]!];
          const kept = clock.gaps.every((gap) => gap.to <= from || gap.from >= to);
          if (to - from <= STALL && kept) expect(tableAge(view(clock), from, to)).toBe(to - from);
        }
      }),
    );
  });

  test('a stamp taken at a tick and never refreshed is stale at most a TTL after the stall, per gap it lived through', () => {
    fc.assert(
      fc.property(schedule, (steps) => {
        const { clock, ticks } = run(steps);
        const last = ticks.at(-1)!;
        // Whatever the gaps, a TTL + stall of steady ticks later the stamp is stale.
        let later = clock;
        for (let t = last + 1000; t <= last + TTL + STALL + 2000; t += 1000) later = advanceTableClock(later, t, { stallMs: STALL, ttlMs: TTL });
        expect(seenWithin(last, last + TTL + STALL + 2000, TTL, view(later))).toBe(false);
      }),
    );
  });
});
