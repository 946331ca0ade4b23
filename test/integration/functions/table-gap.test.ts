// Staleness across a table gap (docs/CONVERGENCE.md; core table-clock.ts). After DynamoDB was
// unreachable for longer than the TTL, every Envoy's lastSeenAt is older than the TTL, and the
// gateway's refreshes land one by one. Judged on wall time, an Envoy whose refresh had not landed yet
// left the denominator while a refreshed one counted: the generation was decided without it, a false
// True if it is the one behind. On the table clock the gap does not age anyone: the Envoy still
// blocks until its refresh lands, and one whose refresh never comes leaves a TTL of ticks later.
//
// Real DynamoDB stand-in (dynalite) with its stream, the real convergence and expire functions; time
// runs on the test's clock (`clock.now`), moved by hand; the outage is the time no expire tick completes.

import { applyDisconnect } from '../../../common/core';
import { LINEAGE_REGISTRY_KEY } from '../../../common/store';
import type { FunctionContext } from '../../../functions/lib/context';
import { runExpire } from '../../../functions/lib/expire-run';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { decisionOf, FakeEnvoy, FakeGateway, type HandClockedWorld, LDS, objectRef, startHandClockedWorld, waitForDecision, type World } from './convergence-support';

const TTL_MS = 4_000;
const STALL_MS = 2_000;
const OUTAGE_MS = 5 * TTL_MS;

describe('a table gap longer than the TTL', () => {
  let hand: HandClockedWorld;
  let world: World;
  let delivery: StreamDelivery;
  let clock: { now: number };
  const context = (): FunctionContext => hand.context();

  beforeAll(async () => {
    hand = await startHandClockedWorld('gap', TTL_MS, { EXPIRE_STALL_MS: String(STALL_MS) });
    ({ world, delivery, clock } = hand);
  });

  afterAll(() => hand.close());

  async function expireTick(at: number): Promise<Awaited<ReturnType<typeof runExpire>>> {
    clock.now = at;
    await delivery.idle();
    const report = await runExpire(context().deps);
    await delivery.idle();
    return report;
  }

  it('keeps an Envoy whose refresh has not landed in the denominator; drops one whose refresh never comes a TTL of ticks later', async () => {
    const t0 = Date.now();
    clock.now = t0;
    const gateway = new FakeGateway(world, 'gw-gap.boot1.edge', t0);
    gateway.change(LDS);
    await gateway.save(t0);
    const fast = new FakeEnvoy(world, gateway, 'envoy-fast', t0, [LDS]);
    const slow = new FakeEnvoy(world, gateway, 'envoy-slow', t0, [LDS]);
    const gone = new FakeEnvoy(world, gateway, 'envoy-gone', t0, [LDS]);
    for (const envoy of [fast, slow, gone]) await envoy.ackAll(t0);
    const ref = objectRef('gap');
    await gateway.watermark(ref, 1, t0);
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed' && d.total === 3, 'generation 1 Programmed 3/3');
    // envoy-gone's stream closes just before the outage and the gateway records it: a CONNECTED state
    // would stay vouched for by the lineage's heartbeat (core lastVouchedAt), a DISCONNECTED one ages.
    await gone.write((s) => applyDisconnect(s, t0));
    expect((await expireTick(t0)).gapEndedMs).toBe(0);

    // The table is unreachable for five TTLs: no expire tick completes, nobody writes. It comes back
    // with a change: the gateway's lineage heartbeat and envoy-fast's refresh (it ACKed the new
    // version) land first; envoy-slow's and envoy-gone's have not landed.
    const t1 = t0 + OUTAGE_MS;
    clock.now = t1;
    gateway.change(LDS);
    await gateway.save(t1);
    await fast.ackAll(t1);
    await gateway.watermark(ref, 2, t1);
    const pending = await waitForDecision(world, ref, 2, (d) => d.programmed === 1 && d.total === 3, 'generation 2 decided with every Envoy counted');
    expect(pending).toMatchObject({ state: 'Pending', programmed: 1, total: 3 });
    expect(pending.blockers.map((b) => b.nodeId).sort()).toEqual(['envoy-gone', 'envoy-slow']);

    // The first tick after the return records the gap and expires nobody.
    const resumed = await expireTick(t1);
    expect(resumed).toMatchObject({ expired: 0, gapEndedMs: OUTAGE_MS - STALL_MS });
    expect(await decisionOf(world, ref, 2)).toMatchObject({ state: 'Pending', programmed: 1, total: 3 });

    // envoy-slow's refresh lands (it ACKed too); envoy-gone's never does.
    clock.now = t1 + 500;
    await slow.ackAll(t1 + 500);
    await waitForDecision(world, ref, 2, (d) => d.programmed === 2 && d.total === 3, 'envoy-slow counted as programmed');
    // envoy-gone was last seen STALL_MS of table time before the return: it leaves a TTL of table time
    // after its last stamp, with ticks on time (every second here).
    await expireTick(t1 + 1_000);
    expect(await decisionOf(world, ref, 2)).toMatchObject({ state: 'Pending', programmed: 2, total: 3 });
    await gateway.save(t1 + 1_500);
    await fast.write((s) => ({ ...s, lastSeenAt: t1 + 1_500 }));
    await slow.write((s) => ({ ...s, lastSeenAt: t1 + 1_500 }));
    await expireTick(t1 + 2_000);
    await expireTick(t1 + TTL_MS - STALL_MS + 500);
    const decided = await waitForDecision(world, ref, 2, (d) => d.state === 'Programmed', 'Programmed once envoy-gone left');
    expect(decided).toMatchObject({ programmed: 2, total: 2 });
  });

  it('a tick that hung through an outage in the SDK\'s retries records it as a gap (its end, not its start)', async () => {
    const start = clock.now + 1_000;
    await expireTick(start);
    // This tick starts, then its requests wait 60 s (the table unreachable), then it completes.
    clock.now = start + 2_000;
    const context = hand.context();
    let reads = 0;
    const hung = { ...context.deps, now: () => (reads++ === 0 ? start + 2_000 : start + 62_000) };
    await runExpire(hung);
    expect((await world.aggregates.getLineageRegistry()).clock).toMatchObject({ tickAt: start + 62_000, gaps: expect.arrayContaining([{ from: start + STALL_MS, to: start + 62_000 }]) });
  });

  it('a corrupt clock costs only the clock: the lineages are kept and the next tick writes a fresh one', async () => {
    const before = await world.aggregates.getLineageRegistry();
    expect(Object.keys(before.lineages)).toContain('gw-gap.boot1.edge');
    await world.table.rawItems.setAttributes(LINEAGE_REGISTRY_KEY, { clock: { tickAt: 'yesterday', gaps: 'none' } });
    const corrupt = await world.aggregates.getLineageRegistry();
    expect(corrupt.lineages).toEqual(before.lineages);
    expect(corrupt.clock).toBeUndefined();
    const at = clock.now + 1_000;
    await expireTick(at);
    expect((await world.aggregates.getLineageRegistry()).clock).toEqual({ tickAt: at, gaps: [] });
  });
});
