// When the publisher writes a lineage's PROGRESS item (xds-gateway/tracking/progress/progress-timing.ts):
// at once for what can change a verdict, after the refresh for counts alone, else with the heartbeat.
// Items are built by the core builder from fixture states, as the publisher builds them.
import { progressFromStates, type EnvoyState, type LineageProgress, type LineageWatermark } from '../../../common/core';
import { fullyProgrammedAnchors, progressWriteDue } from '../../../xds-gateway/tracking/progress/progress-timing';
import { CDS, envoy, L1, L2, T0 } from '../core/fixtures';

const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const timing = { refreshMs: 2_000, heartbeatMs: 5_000 };

function mark(seq: number): LineageWatermark {
  return { seq, types: { [CDS]: seq }, at: T0 };
}

/** An Envoy of L1 whose CDS is ACKed at `acked` (programmed through it). */
function at(nodeId: string, acked: number, overrides: Partial<EnvoyState> = {}): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked } }, { programmedThrough: acked, ...overrides });
}

function build(states: EnvoyState[], marks: LineageWatermark[] = [mark(3)]): LineageProgress {
  return progressFromStates({ lineage: L1, v: 1, heartbeatAt: T0, states, openWatermarks: marks, requiredTypeUrls: [], policy });
}

describe('progressWriteDue', () => {
  const written = build([at('a', 3), at('b', 1)]);
  const writtenAt = T0;

  it('writes the first item at once', () => {
    expect(progressWriteDue(undefined, undefined, written, timing)).toEqual({ kind: 'now', why: 'first' });
  });

  it('writes at once when a member joins or leaves', () => {
    expect(progressWriteDue(written, writtenAt, build([at('a', 3), at('b', 1), at('c', 1)]), timing)).toEqual({ kind: 'now', why: 'members' });
    expect(progressWriteDue(written, writtenAt, build([at('a', 3)]), timing)).toEqual({ kind: 'now', why: 'members' });
  });

  it('writes a move of incarnations alone (a dip, a reconnect) with the counts refresh, not at once: evaluation does not read it', () => {
    const renewed = { ...written, incarnations: written.incarnations + 1 };
    expect(progressWriteDue(written, writtenAt, renewed, timing)).toEqual({ kind: 'at', at: writtenAt + timing.refreshMs, why: 'counts' });
  });

  it('writes at once when a watermark becomes an anchor', () => {
    expect(progressWriteDue(written, writtenAt, build([at('a', 3), at('b', 1)], [mark(3), mark(5)]), timing)).toEqual({ kind: 'now', why: 'anchors' });
  });

  it('writes at once when the last member behind an anchor reaches it', () => {
    const next = build([at('a', 3), at('b', 3)]);
    expect(fullyProgrammedAnchors(written)).toEqual([]);
    expect(fullyProgrammedAnchors(next)).toEqual([3]);
    expect(progressWriteDue(written, writtenAt, next, timing)).toEqual({ kind: 'now', why: 'programmed' });
  });

  it('writes at once when a NACK appears', () => {
    const nacked = envoy('b', { [CDS]: { acked: 1, nack: { seq: 2, message: 'bad cluster', at: T0 } } }, { programmedThrough: 1 });
    expect(progressWriteDue(written, writtenAt, build([at('a', 3), nacked]), timing)).toEqual({ kind: 'now', why: 'blockers' });
  });

  it('waits for the refresh when only a listed member\'s waiting responses move (every ACK of a wave), not when a standing blocker does', () => {
    const waiting = (sentAt: number) => envoy('b', { [CDS]: { acked: 1, pending: { seq: 2, sentAt } } }, { programmedThrough: 1 });
    const before = build([at('a', 3), waiting(T0)]);
    expect(before.listed.some(([nodeId, member]) => nodeId === 'b' && member.b?.w !== undefined)).toBe(true);
    expect(progressWriteDue(before, writtenAt, build([at('a', 3), waiting(T0 + 500)]), timing)).toEqual({ kind: 'at', at: writtenAt + timing.refreshMs, why: 'counts' });
    expect(progressWriteDue(before, writtenAt, build([at('a', 3), at('b', 1)]), timing)).toEqual({ kind: 'at', at: writtenAt + timing.refreshMs, why: 'counts' });
    const nacked = envoy('b', { [CDS]: { acked: 1, pending: { seq: 2, sentAt: T0 }, nack: { seq: 2, message: 'bad cluster', at: T0 } } }, { programmedThrough: 1 });
    expect(progressWriteDue(before, writtenAt, build([at('a', 3), nacked]), timing)).toEqual({ kind: 'now', why: 'blockers' });
  });

  it('waits for the refresh when only counts below an anchor move', () => {
    expect(progressWriteDue(written, writtenAt, build([at('a', 3), at('b', 2)]), timing)).toEqual({ kind: 'at', at: writtenAt + timing.refreshMs, why: 'counts' });
  });

  it('never waits past the heartbeat, even for a longer refresh: readers drop an item at heartbeatAt + TTL', () => {
    const slowRefresh = { refreshMs: 10_000, heartbeatMs: 5_000 };
    expect(progressWriteDue(written, writtenAt, build([at('a', 3), at('b', 2)]), slowRefresh)).toEqual({ kind: 'at', at: writtenAt + slowRefresh.heartbeatMs, why: 'heartbeat' });
  });

  it('writes with the heartbeat when nothing moved (heartbeatAt and v are not content)', () => {
    const again = { ...build([at('a', 3), at('b', 1)]), v: 2, heartbeatAt: T0 + 4_000 };
    expect(progressWriteDue(written, writtenAt, again, timing)).toEqual({ kind: 'at', at: writtenAt + timing.heartbeatMs, why: 'heartbeat' });
  });

  it('counts split members as reaching an anchor too', () => {
    // b's LDS is on L2: a split member, counted in its own group.
    const split = (acked: number): EnvoyState => envoy('b', { [CDS]: { acked }, 'type.googleapis.com/envoy.config.listener.v3.Listener': { lineage: L2, acked: 7 } }, { programmedThrough: acked });
    const before = build([at('a', 3), split(1)]);
    const after = build([at('a', 3), split(3)]);
    expect(before.split).toHaveLength(1);
    expect(fullyProgrammedAnchors(before)).toEqual([]);
    expect(fullyProgrammedAnchors(after)).toEqual([3]);
  });
});
