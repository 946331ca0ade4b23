// Regression test for the truth checker's invariant-3 failure after a gateway SIGKILL
// (docs/RELIABILITY.md, "Findings"): an Envoy vanishes, the object waits for it (Pending), the
// Envoy's TTL runs out and expire marks it EXPIRED, yet the condition stayed Pending forever.
//
// The mechanism: a decision write is conditional on its freshness token not being older than the
// stored decision's. That token used to be one number, the sum of the shard versions of the lineages
// read, and the set of lineages read is "heartbeat within 2 × TTL". When the killed gateway's old
// lineage aged out of that window between two evaluations, the sum dropped by that lineage's
// versions, and every later (newer) decision was refused as stale until the surviving lineages'
// shards had been written as many times again: minutes with a small fleet. The token is now kept per
// lineage with the registry version the live set came from; a decision is stale only if its registry
// read is older or some lineage it read is behind the stored one's (and Programmed stays final).
//
// Time: every function here runs on the test's clock (`clock.now`), moved forward by hand.

import { applyDisconnect, applyExpire, applyHeartbeat, decisionFromConvergence, isStaleDecision, type Decision } from '../../../common/core';
import type { FunctionContext } from '../../../functions/lib/context';
import { runExpire } from '../../../functions/lib/expire-run';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, decisionOf, FakeEnvoy, FakeGateway, type HandClockedWorld, LDS, objectRef, shardsOf, startHandClockedWorld, waitForDecision, type World } from './convergence-support';

const TTL_MS = 4_000;
const OLD_LINEAGE = 'gw-v.boot1.edge';
const NEW_LINEAGE = 'gw-v.boot2.edge';

describe('a vanished Envoy stops blocking after a gateway restart retired the old lineage', () => {
  let hand: HandClockedWorld;
  let world: World;
  let delivery: StreamDelivery;
  let clock: { now: number };
  const context = (): FunctionContext => hand.context();

  beforeAll(async () => {
    hand = await startHandClockedWorld('vanish', TTL_MS);
    ({ world, delivery, clock } = hand);
  });

  afterAll(() => hand.close());

  async function versionSum(lineage: string): Promise<number> {
    return (await shardsOf(world, lineage)).reduce((sum, shard) => sum + shard.v, 0);
  }

  it('decides Programmed once the Envoy expired, although the old lineage left the live set meanwhile', async () => {
    const t0 = Date.now();
    clock.now = t0;

    // The gateway's first life: a lineage whose shards saw many writes (ACKs, heartbeats).
    const oldGateway = new FakeGateway(world, OLD_LINEAGE, t0);
    oldGateway.change(CDS);
    oldGateway.change(LDS);
    await oldGateway.save(t0);
    const oldFleet = ['old-a', 'old-b', 'old-c'].map((id) => new FakeEnvoy(world, oldGateway, id, t0));
    for (const envoy of oldFleet) await envoy.ackAll(t0);
    for (let beat = 1; beat <= 15; beat++) for (const envoy of oldFleet) await envoy.write((s) => applyHeartbeat(s, t0 + beat));
    // SIGKILL: those Envoys left the old lineage (here: their states there are no longer live).
    for (const envoy of oldFleet) await envoy.write((s) => applyExpire(s));

    // The restarted gateway: a new lineage, three Envoys, one of which is about to vanish.
    const t1 = t0 + 1_000;
    clock.now = t1;
    const newGateway = new FakeGateway(world, NEW_LINEAGE, t1);
    newGateway.change(CDS);
    newGateway.change(LDS);
    await newGateway.save(t1);
    const healthy = ['envoy-a', 'envoy-b'].map((id) => new FakeEnvoy(world, newGateway, id, t1));
    const vanishing = new FakeEnvoy(world, newGateway, 'envoy-vanishing', t1);
    for (const envoy of [...healthy, vanishing]) await envoy.ackAll(t1);
    await delivery.idle();

    // A spec change reaches the new lineage; the healthy Envoys ACK it, the vanishing one is gone
    // before it does (its stream was cancelled: DISCONNECTED, counted until the TTL).
    const ref = objectRef('after-restart');
    newGateway.change(CDS);
    await newGateway.save(t1 + 100);
    await newGateway.watermark(ref, 1, t1 + 100);
    for (const envoy of healthy) await envoy.ackAll(t1 + 100);
    await vanishing.write((s) => applyDisconnect(s, t1 + 100));
    const pending = await waitForDecision(world, ref, 1, (d) => d.state === 'Pending' && d.programmed === 2, 'Pending on the vanished Envoy only');
    expect(pending).toMatchObject({ total: 3, blockers: [{ nodeId: 'envoy-vanishing', reason: 'pending' }] });
    await delivery.idle();
    // The precondition of the old failure: the old lineage (still live when that decision was made)
    // carries more shard versions than the new one.
    expect(await versionSum(OLD_LINEAGE)).toBeGreaterThan(await versionSum(NEW_LINEAGE));

    // Later: the old lineage's heartbeat is older than 2 × TTL (it leaves the live set), the vanished
    // Envoy was last seen more than a TTL ago, the healthy ones are still heartbeating.
    clock.now = t0 + 2 * TTL_MS + 1_000;
    await newGateway.save(clock.now);
    for (const envoy of healthy) await envoy.write((s) => applyHeartbeat(s, clock.now));
    await delivery.idle();
    const report = await runExpire(context().deps);
    expect(report.expired).toBe(1);
    await vanishing.refresh();
    expect(vanishing.state.status).toBe('EXPIRED');

    const decided: Decision = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed without the expired Envoy');
    expect(decided).toMatchObject({ programmed: 2, total: 2 });
    // And a tick after that has nothing left to decide for this generation.
    await delivery.idle();
    const next = await runExpire(context().deps);
    expect(Object.keys(next.outcomes)).not.toContain(`${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}@1`);
  });

  it('the store refuses exactly the decisions core isStaleDecision calls stale', async () => {
    const ref = objectRef('freshness');
    await world.store.putWatermark(ref, 1, NEW_LINEAGE, { seq: 1, types: {}, at: 1 });
    const decision = (revs: Record<string, number> | undefined, total: number, programmed: number, registryVersion = 10, state: Decision['state'] = 'Pending'): Decision =>
      decisionFromConvergence({ object: ref, generation: 1, state, programmed, total: 3, blockers: [] }, 1_000 + programmed, total, revs === undefined ? undefined : { revs, registryVersion });
    // Each write against what the previous steps stored; `programmed` tells the writes apart.
    const steps: Array<[Decision, 'written' | 'stale']> = [
      [decision({ [OLD_LINEAGE]: 500, [NEW_LINEAGE]: 5 }, 505, 1), 'written'],
      [decision({ [NEW_LINEAGE]: 9 }, 9, 2, 11), 'written'], // the old lineage left the set: not older
      [decision({ [NEW_LINEAGE]: 8 }, 8, 3, 11), 'stale'], // behind on the live lineage
      [decision({ [NEW_LINEAGE]: 9 }, 9, 3, 10), 'stale'], // an older registry read
      [decision({ [NEW_LINEAGE]: 9, 'gw-v.boot3.edge': 1 }, 10, 1, 12), 'written'],
      [decision(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`gw-v.many${i}.edge`, i])), 780, 2, 13), 'written'], // beyond the checked cap: still a valid condition
      [decision(undefined, 0, 3), 'stale'], // a writer without per-lineage revs: the total decides
      [decision({}, 0, 2, 14, 'Programmed'), 'written'], // no live lineage read: nothing to be behind on
      [decision({ 'gw-v.boot9.edge': 99 }, 99, 1, 15), 'stale'], // Programmed is final
      [{ ...decision({ 'gw-v.boot9.edge': 99 }, 99, 1, 15), supersededBy: 2 }, 'written'], // except for a supersession
    ];
    for (const [ours, expected] of steps) {
      const stored = await decisionOf(world, ref, 1);
      expect(isStaleDecision(stored, ours)).toBe(expected === 'stale');
      expect(await world.aggregates.writeDecision(ref, 1, ours)).toBe(expected);
      expect((await decisionOf(world, ref, 1))?.programmed).toBe(expected === 'written' ? ours.programmed : stored?.programmed);
    }
  });
});
