// A connected Envoy whose own refresh lags stays in the denominator while its gateway heartbeats
// (docs/CONVERGENCE.md, "Expiry and stuck Envoys"; core staleness.ts lastVouchedAt). The gateway
// refreshes an idle Envoy's lastSeenAt on a per-Envoy tick, and the refresh reaches the aggregates
// through the stream; when it lags past the TTL while the lineage's heartbeat is fresh, the Envoy is
// still connected. Judged on its own stamp alone it left the denominator and the generation was
// decided without it: the false True the truth checker's 1,000-schedule run found (docs/RELIABILITY.md).
//
// Real DynamoDB stand-in (dynalite) with its stream, the real convergence and expire functions; time
// runs on the test's clock, moved by hand.

import { applyDisconnect } from '../../../common/core';
import { runExpire } from '../../../functions/lib/expire-run';
import { decisionOf, FakeEnvoy, FakeGateway, LDS, objectRef, startHandClockedWorld, waitForDecision, type HandClockedWorld } from './convergence-support';

const TTL_MS = 4_000;

describe('a CONNECTED Envoy with a stale lastSeenAt on a heartbeating lineage', () => {
  let hand: HandClockedWorld;

  beforeAll(async () => {
    hand = await startHandClockedWorld('vouched', TTL_MS);
  });

  afterAll(() => hand.close());

  it('blocks the generation it has not ACKed until its gateway records it gone, then leaves a TTL later', async () => {
    const { world, delivery, clock } = hand;
    const t0 = Date.now();
    clock.now = t0;
    const gateway = new FakeGateway(world, 'gw-vouched.boot1.edge', t0);
    gateway.change(LDS);
    await gateway.save(t0);
    const fast = new FakeEnvoy(world, gateway, 'envoy-fast', t0, [LDS]);
    const idle = new FakeEnvoy(world, gateway, 'envoy-idle', t0, [LDS]);
    await fast.ackAll(t0);
    await idle.ackAll(t0);
    const ref = objectRef('vouched');
    await gateway.watermark(ref, 1, t0);
    await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed' && d.total === 2, 'generation 1 Programmed 2/2');

    // Past the TTL: the gateway heartbeats its lineage and envoy-fast ACKs the new version;
    // envoy-idle's stamp is still t0 (its refresh has not landed) and it has not ACKed.
    const t1 = t0 + TTL_MS + 1_000;
    clock.now = t1;
    gateway.change(LDS);
    await gateway.save(t1);
    await fast.ackAll(t1);
    await gateway.watermark(ref, 2, t1);
    const pending = await waitForDecision(world, ref, 2, (d) => d.total === 2, 'generation 2 decided with envoy-idle counted');
    expect(pending).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
    expect(pending.blockers).toEqual([expect.objectContaining({ nodeId: 'envoy-idle', reason: 'pending' })]);

    // Expire leaves it alone: a CONNECTED Envoy on a live gateway is the gateway's to judge.
    await delivery.idle();
    expect(await runExpire(hand.context().deps)).toMatchObject({ expired: 0 });
    await delivery.idle();
    expect(await decisionOf(world, ref, 2)).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });

    // Its stream closes and the gateway records it: judged on its own stamp from then on, it
    // leaves the denominator a TTL later and the generation is Programmed without it.
    await idle.write((s) => applyDisconnect(s, t1));
    // Expire ticks every second meanwhile (the table clock runs only on completed ticks), the gateway
    // heartbeats and refreshes envoy-fast.
    let expired = 0;
    for (let at = t1 + 1_000; at <= t1 + TTL_MS + 1_000; at += 1_000) {
      clock.now = at;
      await gateway.save(at);
      await fast.write((s) => ({ ...s, lastSeenAt: at }));
      await delivery.idle();
      expired += (await runExpire(hand.context().deps)).expired;
      if (at - t1 < TTL_MS) expect(await decisionOf(world, ref, 2)).toMatchObject({ state: 'Pending', total: 2 });
    }
    expect(expired).toBe(1);
    const decided = await waitForDecision(world, ref, 2, (d) => d.state === 'Programmed', 'Programmed once envoy-idle left');
    expect(decided).toMatchObject({ programmed: 1, total: 1 });
  });
});
