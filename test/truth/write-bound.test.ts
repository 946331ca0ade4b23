// Invariant 4 as the truth checker judges it (checker.ts `checkWriteCounts`): writes that change
// status or reason are bounded per object generation; message-only rewrites are the status writer's
// refresh, allowed at most once per interval while not True, and a violation otherwise.
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../common/core/status-update';
import { checkWriteCounts, REFRESH_SLACK_MS } from './checker';
import type { ConditionWrite } from './observer';

const R = DEFAULT_MESSAGE_REFRESH_MS;
const write = (at: number, status: string, reason: string, message: string, observedGeneration = 2, name = 'sample-0'): ConditionWrite => ({
  name,
  at,
  generation: observedGeneration,
  condition: { status, reason, message, observedGeneration },
});

describe('invariant 4: bounded condition writes', () => {
  it('a generation Pending for 25 s may refresh its counts twice, then go True: no violation', () => {
    const writes = [
      write(0, 'False', 'Pending', '0/10'),
      write(R + 40, 'False', 'Pending', '6/10'),
      write(2 * R + 900, 'False', 'Pending', '9/10'),
      write(25_000, 'True', 'Programmed', '10/10'),
    ];
    expect(checkWriteCounts(writes, 2)).toEqual({ violations: [], max: 2, refreshes: 2 });
  });

  it('a message rewritten sooner than the interval is a violation (a write per ACK)', () => {
    const writes = [write(0, 'False', 'Pending', '0/10'), write(3_000, 'False', 'Pending', '4/10'), write(3_200, 'False', 'Pending', '5/10')];
    const { violations } = checkWriteCounts(writes, 6);
    expect(violations).toHaveLength(2);
    expect(violations[0]?.detail).toContain('sample-0@2: message rewritten 3000 ms after the previous write');
    // Within the slack of the interval is not.
    expect(checkWriteCounts([write(0, 'False', 'Pending', 'a'), write(R - REFRESH_SLACK_MS + 1, 'False', 'Pending', 'b')], 6).violations).toEqual([]);
  });

  it('a message rewritten after True is a violation', () => {
    const writes = [write(0, 'True', 'Programmed', '5/5'), write(2 * R, 'True', 'Programmed', '6/6')];
    expect(checkWriteCounts(writes, 6).violations.map((v) => v.detail)).toEqual(['sample-0@2: message rewritten after True ("5/5" → "6/6")']);
  });

  it('a repair is the previous write of the next one, and neither is churn', () => {
    // Pending, then (after a competitor removed it) our Rejected put back, then Pending again 2 s later:
    // a verdict change from the repair, not a message refresh 2 s after the first Pending.
    const repaired = write(1_000, 'False', 'Rejected', 'envoy-4 rejected CDS: x');
    const writes = [write(0, 'False', 'Pending', '3/9'), repaired, write(3_000, 'False', 'Pending', '8/9')];
    expect(checkWriteCounts(writes, 6, R, (w) => w === repaired)).toEqual({ violations: [], max: 2, refreshes: 0 });
    // Judged without knowing the repair, the last write looks like a refresh 3 s after the first.
    expect(checkWriteCounts(writes.filter((w) => w !== repaired), 6).violations).toHaveLength(1);
  });

  it('verdict writes beyond the bound are a violation, per object generation', () => {
    const flapping = ['Pending', 'Stuck', 'Pending', 'Rejected'].map((reason, i) => write(i * 100, 'False', reason, reason));
    const other = [write(0, 'False', 'Pending', 'x', 3), write(50, 'True', 'Programmed', 'y', 3)];
    const { violations, max } = checkWriteCounts([...flapping, ...other], 3);
    expect(max).toBe(4);
    expect(violations.map((v) => v.detail)).toEqual(['sample-0@2: 4 condition writes changing status or reason (bound 3)']);
  });
});
