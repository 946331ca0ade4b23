// The expire function against the local DynamoDB stream: a DISCONNECTED Envoy not seen for the TTL
// becomes EXPIRED (conditional on its rev), the stream updates the aggregates and the generation it
// was blocking is decided again; an Envoy that never answers a response is reported stuck.
//
// Time: the functions take `now` as a parameter. The expire tick runs with a clock moved past the TTL;
// the Envoys that must stay live were last seen "in the future" (a gateway heartbeat the test
// writes ahead of time), so the shifted clock only ages the ones under test.
import pino from 'pino';

import { applyDisconnect } from '../../../common/core';
import { handler } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { runExpire } from '../../../functions/lib/expire-run';
import { fromLambdaHandler, type StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, deliver, FakeEnvoy, FakeGateway, LDS, liveCount, objectRef, startWorld, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-e.boot1.edge';
const TTL_MS = 60_000;
const AHEAD_MS = 10 * 60_000;

describe('expire function', () => {
  let world: World;
  let delivery: StreamDelivery;
  let gateway: FakeGateway;
  let contexts: FunctionContext[] = [];

  function expireAt(now: number): Promise<Awaited<ReturnType<typeof runExpire>>> {
    // Ticks run at chosen times, up to a TTL apart, not on a schedule: the table clock's stall bound
    // covers that (core table-clock.ts), so no tick here is a gap.
    const context = buildFunctionContext({ ...world.env, EXPIRE_STALL_MS: String(2 * TTL_MS) }, pino({ level: 'silent' }), () => now);
    contexts.push(context);
    return runExpire(context.deps);
  }

  beforeAll(async () => {
    world = await startWorld('expire', TTL_MS);
    Object.assign(process.env, world.env);
    delivery = deliver(world, fromLambdaHandler(handler, { functionName: 'convergence' }));
    gateway = new FakeGateway(world, LINEAGE, Date.now());
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(Date.now() + AHEAD_MS);
  });

  afterAll(async () => {
    for (const context of contexts) context.close();
    contexts = [];
    await delivery.stop();
    await world.close();
  });

  it('expires a disconnected Envoy after the TTL; it stops blocking', async () => {
    const now = Date.now();
    const healthy = [new FakeEnvoy(world, gateway, 'envoy-a', now), new FakeEnvoy(world, gateway, 'envoy-b', now)];
    const leaving = new FakeEnvoy(world, gateway, 'envoy-gone', now);
    for (const envoy of [...healthy, leaving]) await envoy.ackAll(now);
    await delivery.idle();
    const ref = objectRef('expiry');
    gateway.change(CDS);
    await gateway.save(now + AHEAD_MS);
    await gateway.watermark(ref, 1, now);
    for (const envoy of healthy) await envoy.ackAll(now + AHEAD_MS);
    await leaving.nack(CDS, 'cluster "old": unknown field', now);
    await leaving.write((s) => applyDisconnect(s, now));
    const rejected = await waitForDecision(world, ref, 1, (d) => d.state === 'Rejected' && d.total === 3, 'Rejected by the leaving Envoy');
    expect(rejected.programmed).toBe(2);

    // Within the TTL nothing expires.
    expect((await expireAt(now + TTL_MS / 2)).expired).toBe(0);
    const report = await expireAt(now + TTL_MS + 1_000);
    expect(report).toMatchObject({ expired: 1, conflicts: 0 });
    await leaving.refresh();
    expect(leaving.state.status).toBe('EXPIRED');
    const decided = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed without the expired Envoy');
    expect(decided).toMatchObject({ programmed: 2, total: 2 });
    await delivery.idle();
    expect(await liveCount(world, LINEAGE)).toBe(2);
    // Idempotent: the next tick finds nothing to do.
    expect((await expireAt(now + TTL_MS + 2_000)).expired).toBe(0);
  });

  it('reports a connected Envoy that never answers as stuck', async () => {
    const now = Date.now();
    const silent = new FakeEnvoy(world, gateway, 'envoy-silent', now);
    await silent.ackAll(now + AHEAD_MS); // alive (heartbeats), and then…
    await delivery.idle();
    gateway.change(LDS);
    await gateway.save(now + AHEAD_MS);
    const ref2 = objectRef('stuck-2');
    await gateway.watermark(ref2, 1, now);
    await silent.send(LDS, now); // …a response it never ACKs nor NACKs
    await waitForDecision(world, ref2, 1, (d) => d.state === 'Pending' && d.blockers.some((b) => b.nodeId === 'envoy-silent'), 'Pending on the silent Envoy');
    await delivery.idle();
    const report = await expireAt(now + 31_000);
    expect(report.expired).toBe(0);
    const stuck = await waitForDecision(world, ref2, 1, (d) => d.state === 'Stuck', 'Stuck');
    expect(stuck.blockers.find((b) => b.nodeId === 'envoy-silent')).toEqual({ nodeId: 'envoy-silent', reason: 'stuck', typeUrls: [LDS], since: now });
  });
});
