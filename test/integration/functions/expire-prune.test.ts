// The expire function forgets lineages that can no longer matter (core lineage-registry.ts): silent
// for PRUNE_AFTER_TTLS × TTL with no live member. Without it the registry keeps every lineage any
// gateway start ever made, and every tick reads the shards of all of them.
//
// Time: ticks run at chosen times (the functions take `now`), with a stall bound longer than the test
// so no jump between ticks is a gap in the table clock.
import pino from 'pino';

import { applyDisconnect, PRUNE_AFTER_TTLS } from '../../../common/core';
import { registerLineageHeartbeats } from '../../../common/store';
import { handler } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { runExpire } from '../../../functions/lib/expire-run';
import { fromLambdaHandler, type StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, deliver, FakeEnvoy, FakeGateway, LDS, liveCount, startWorld, waitFor, type World } from './convergence-support';

const TTL_MS = 60_000;

describe('expire prunes the lineage registry', () => {
  let world: World;
  let delivery: StreamDelivery;
  const contexts: FunctionContext[] = [];

  function expireAt(now: number): ReturnType<typeof runExpire> {
    const context = buildFunctionContext({ ...world.env, EXPIRE_STALL_MS: String(100 * TTL_MS) }, pino({ level: 'silent' }), () => now);
    contexts.push(context);
    return runExpire(context.deps);
  }

  async function registered(): Promise<string[]> {
    return Object.keys((await world.aggregates.getLineageRegistry()).lineages).sort();
  }

  beforeAll(async () => {
    world = await startWorld('expire-prune', TTL_MS);
    Object.assign(process.env, world.env);
    delivery = deliver(world, fromLambdaHandler(handler, { functionName: 'convergence' }));
  });

  afterAll(async () => {
    for (const context of contexts) context.close();
    await delivery.stop();
    await world.close();
  });

  it('drops a lineage silent for 10 TTLs once no member of it is live, and only then', async () => {
    const t0 = Date.now();
    // A gateway that stays alive through the test (heartbeat ahead of every tick), with one Envoy.
    const alive = new FakeGateway(world, 'gw-alive.boot1.edge', t0);
    alive.change(CDS);
    alive.change(LDS);
    await alive.save(t0 + 30 * TTL_MS);
    await new FakeEnvoy(world, alive, 'envoy-alive', t0).ackAll(t0 + 30 * TTL_MS);
    // A gateway that died at t0 leaving a disconnected Envoy behind, last seen at t0 + 12 TTLs (a
    // stamp ahead of time stands for an Envoy that stays live past the lineage's pruning bound).
    const left = new FakeGateway(world, 'gw-left.boot1.edge', t0);
    left.change(CDS);
    await left.save(t0);
    const leftBehind = new FakeEnvoy(world, left, 'envoy-left', t0, [CDS]);
    await leftBehind.ackAll(t0);
    await leftBehind.write((state) => applyDisconnect(state, t0 + 12 * TTL_MS));
    // Lineages with no Envoy at all: one silent since t0, one silent since t0 + 5 TTLs.
    await registerLineageHeartbeats(world.aggregates, new Map([['gw-empty.boot1.edge', t0], ['gw-recent.boot1.edge', t0 + 5 * TTL_MS]]));
    await delivery.idle();
    await waitFor('both gateways registered', async () => ((await registered()).length === 4 ? true : undefined));
    expect(await liveCount(world, 'gw-left.boot1.edge')).toBe(1);

    // Just inside the bound nothing goes.
    expect(await expireAt(t0 + PRUNE_AFTER_TTLS * TTL_MS)).toMatchObject({ lineagesRead: 4, lineagesPruned: 0 });
    expect(await registered()).toEqual(['gw-alive.boot1.edge', 'gw-empty.boot1.edge', 'gw-left.boot1.edge', 'gw-recent.boot1.edge']);

    // Past it: the empty lineage goes; the left one stays while its Envoy is live.
    expect(await expireAt(t0 + (PRUNE_AFTER_TTLS + 1) * TTL_MS)).toMatchObject({ expired: 0, lineagesPruned: 1, failed: 0 });
    expect(await registered()).toEqual(['gw-alive.boot1.edge', 'gw-left.boot1.edge', 'gw-recent.boot1.edge']);

    // The Envoy expires (its shard still says live on this tick, so the lineage stays once more)…
    const expiring = t0 + 13.5 * TTL_MS;
    expect(await expireAt(expiring)).toMatchObject({ expired: 1, lineagesPruned: 0, failed: 0 });
    expect(await registered()).toEqual(['gw-alive.boot1.edge', 'gw-left.boot1.edge', 'gw-recent.boot1.edge']);
    // …and once the stream has taken the expiry into the shard, nothing live is left on it: it goes.
    await delivery.idle();
    expect(await liveCount(world, 'gw-left.boot1.edge')).toBe(0);
    expect((await expireAt(expiring + 1_000)).lineagesPruned).toBe(1);
    expect(await registered()).toEqual(['gw-alive.boot1.edge', 'gw-recent.boot1.edge']);

    // The one silent since t0 + 5 TTLs goes 10 TTLs after that; the live gateway stays.
    expect((await expireAt(t0 + (PRUNE_AFTER_TTLS + 6) * TTL_MS)).lineagesPruned).toBe(1);
    // What the next tick reads is what is left: the live gateway's lineage alone.
    expect((await expireAt(t0 + (PRUNE_AFTER_TTLS + 6) * TTL_MS + 1_000)).lineagesRead).toBe(1);
    expect(await registered()).toEqual(['gw-alive.boot1.edge']);
    expect(await liveCount(world, 'gw-alive.boot1.edge')).toBe(1);
  });
});
