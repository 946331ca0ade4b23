// Pure logic: the soak's RSS slope (bench/support/soak-rss.ts) and its fault-time budget (soak-faults.ts).
import { leastSquaresSlope, summarizeRss, type RssSample } from '../../../bench/support/soak-rss';
import { faultTimeWithin } from '../../../bench/support/soak-faults';

describe('soak RSS summary', () => {
  test('least-squares slope: exact on a line, NaN without enough points or spread', () => {
    expect(leastSquaresSlope([{ x: 0, y: 1 }, { x: 1, y: 3 }, { x: 2, y: 5 }])).toBeCloseTo(2);
    expect(leastSquaresSlope([{ x: 0, y: 4 }, { x: 1, y: 4 }, { x: 2, y: 4 }])).toBe(0);
    expect(leastSquaresSlope([{ x: 0, y: 1 }, { x: 1, y: 2 }])).toBeNaN();
    expect(leastSquaresSlope([{ x: 1, y: 1 }, { x: 1, y: 2 }, { x: 1, y: 3 }])).toBeNaN();
  });

  test('slope over the second half only; the gateway over its longest lifetime there', () => {
    const hour = 3_600_000;
    // system: grows 100 MiB/h during warm-up (first half), flat after; gateway: 10 MiB/h per lifetime, restarted at 0.75 h.
    const samples: RssSample[] = [];
    for (let step = 0; step <= 20; step++) {
      const atMs = (step / 20) * hour;
      const system = atMs < hour / 2 ? 200 + (atMs / hour) * 100 : 250;
      const boot = atMs < 0.75 * hour ? 'b1' : 'b2';
      const gateway = boot === 'b1' ? 100 + (atMs / hour) * 10 : 100 + ((atMs - 0.75 * hour) / hour) * 10;
      samples.push({ atMs, rssMiB: { system, gateway }, gatewayBootId: boot });
    }
    const summary = summarizeRss(samples, hour / 2);
    expect(summary.system).toMatchObject({ firstMiB: 200, lastMiB: 250, maxMiB: 250, slopeMiBPerHour: 0 });
    expect(summary.gateway?.slopeMiBPerHour).toBeCloseTo(10);
    expect(summary.gateway?.slopeOver?.bootId).toBe('b2');
    expect(summary.fleet).toBeUndefined();
  });

  test('fault time within a span: overlaps clipped, an open window runs to the end', () => {
    const windows = [
      { kind: 'dynamo-throttle' as const, startedAt: 100, endedAt: 200 },
      { kind: 'gateway-kill' as const, startedAt: 150, endedAt: 400 },
      { kind: 'gateway-restart' as const, startedAt: 900 },
    ];
    expect(faultTimeWithin(windows, 0, 1000)).toBe(100 + 250 + 100);
    expect(faultTimeWithin(windows, 180, 300)).toBe(20 + 120);
    expect(faultTimeWithin(windows, 500, 800)).toBe(0);
  });
});
