// The message refresh rule end to end (docs/CONVERGENCE.md, "Freshness of the message"): real local
// DynamoDB with its stream, the real convergence handler (handoff and refresh sweep on) and status
// handler, the local Kubernetes API server, a gateway-shaped writer heartbeating every 5 s as the
// real gateway does. A generation that stays Pending: the count changes right after the first write,
// no Envoy record follows, and the object's message must still be corrected by the sweep, in one
// write, no sooner than the interval; a later change that arrives when a write is due is written
// alone; the object's Kubernetes writes stay within the bound. How long each step takes is measured
// by `npm run bench -- message-refresh` (bench/message-refresh.ts), not asserted here.
import { DEFAULT_MESSAGE_REFRESH_MS } from '../../../common/core/status-update';
import { messageOf, runMessageRefreshTimeline, type MessageRefreshTimeline } from './message-refresh-timeline';
import { startRefreshWorld, type RefreshWorld } from './status-refresh-support';

jest.setTimeout(120_000);

const R = DEFAULT_MESSAGE_REFRESH_MS;
const HEARTBEAT_MS = 5000;

describe('a not-True condition tells its own counts (message refresh)', () => {
  let w: RefreshWorld;

  beforeAll(async () => {
    w = await startRefreshWorld({ envoys: 10, heartbeatMs: HEARTBEAT_MS });
    await w.idle();
  });
  afterAll(async () => {
    await w?.close();
  });

  const summary = (run: MessageRefreshTimeline['final']): string[] => run.map((write) => `${String(write.condition?.['reason'])} ${messageOf(write.condition).split(' ')[0] ?? ''}`);

  it('corrects a stale message with one write no sooner than the interval, writes a due change alone, and stays within 2 + one per interval', async () => {
    const run = await runMessageRefreshTimeline(w, 'slow', HEARTBEAT_MS);
    const [first] = run.afterFirstWrite;
    expect(run.afterFirstWrite).toHaveLength(1);
    expect(first?.condition).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
    const firstAt = first?.at ?? 0;

    // The decision said 8/10, but our last write was younger than the interval: no write yet (≤ 1 per interval).
    expect(run.heldBack.writes).toHaveLength(1);
    expect(run.heldBack.message).toContain('0/10 Envoys programmed');

    // With no Envoy record after that, the sweep corrected it: one write, the counts of the stored decision.
    expect(run.afterRefresh).toHaveLength(2);
    const refresh = run.afterRefresh[1];
    expect(refresh?.condition).toMatchObject({ status: 'False', reason: 'Pending', observedGeneration: 1 });
    expect(messageOf(refresh?.condition)).toMatch(/^8\/10 Envoys programmed at generation 1; waiting for envoy-008 \(CDS\), envoy-009 \(CDS\)$/);
    // Spaced from the previous write by the interval.
    expect((refresh?.at ?? 0) - firstAt).toBeGreaterThanOrEqual(R - 50);
    // What was written is recorded on the item, with its time (what the next refresh is spaced from).
    expect(run.refreshedItem?.lastCondition?.message).toBe(messageOf(refresh?.condition));
    expect(run.refreshedItem?.conditionWrittenAt).toBeGreaterThanOrEqual(run.staleFrom);

    // The change that arrived once a write was due: one more write, with its counts, nothing between.
    expect(summary(run.afterDueChange)).toEqual(['Pending 0/10', 'Pending 8/10', 'Pending 9/10']);

    // The last Envoy: True, and nothing after it.
    expect(summary(run.final)).toEqual(['Pending 0/10', 'Pending 8/10', 'Pending 9/10', 'Programmed 10/10']);
    const duration = (run.final[run.final.length - 1]?.at ?? 0) - firstAt;
    expect(run.final.length).toBeLessThanOrEqual(2 + Math.floor(duration / R));
    // Each write's time is recorded on the item: what the next refresh is spaced from.
    expect(typeof run.item?.conditionWrittenAt).toBe('number');
  });
});
