// Regression test for the truth checker's invariant-3 finding "grpc-0 split across lineages"
// (docs/RELIABILITY.md, "Findings"): after a gateway SIGKILL, a client reconnected to the restarted
// gateway and subscribed there to some types only. The recorder's merge kept the type it held from
// the killed gateway's lineage, so its member was "split across gateway instances" and blocked every
// generation forever. Now a type on a lineage out of the live set no longer counts (core
// memberBlocker), while a type on another *live* lineage still blocks (safe).
//
// Real DynamoDB stand-in (dynalite) with its stream, the real convergence and expire functions, the
// gateway's real merge; time runs on the test's clock (`clock.now`), moved forward by hand.

import { applyAck, applyHeartbeat, applySent, applySubscribe, newEnvoyState, withProgrammedThrough, type Decision, type EnvoyState } from '../../../common/core';
import type { FunctionContext } from '../../../functions/lib/context';
import { runExpire } from '../../../functions/lib/expire-run';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { mergeEnvoyState } from '../../../xds-gateway/tracking/envoy-state-merge';
import { CDS, decisionOf, FakeEnvoy, FakeGateway, type HandClockedWorld, LDS, objectRef, startHandClockedWorld, waitForDecision, type World } from './convergence-support';

const TTL_MS = 4_000;
const KILLED_LINEAGE = 'gw-s.boot1.edge';
const NEW_LINEAGE = 'gw-s.boot2.edge';

describe('a type held from a dead lineage stops blocking; from a live one it blocks', () => {
  let hand: HandClockedWorld;
  let world: World;
  let delivery: StreamDelivery;
  let clock: { now: number };
  const context = (): FunctionContext => hand.context();

  beforeAll(async () => {
    // Expire ticks run at chosen times, up to 2 TTLs apart, not on a schedule: the table clock's stall
    // bound covers that (core table-clock.ts), so no tick here is a gap.
    hand = await startHandClockedWorld('split', TTL_MS, { EXPIRE_STALL_MS: String(3 * TTL_MS) });
    ({ world, delivery, clock } = hand);
  });

  afterAll(() => hand.close());

  /** What the restarted gateway writes for a client that re-subscribed to CDS only: its own view merged with the stored one. */
  async function reconnectOnCdsOnly(gateway: FakeGateway, nodeId: string, at: number, change: (state: EnvoyState) => EnvoyState = (s) => s): Promise<EnvoyState> {
    let ours = applySubscribe(newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: gateway.lineage, now: at }), { typeUrl: CDS, lineage: gateway.lineage, now: at });
    const version = { lineage: gateway.lineage, seq: gateway.version(CDS) };
    ours = withProgrammedThrough(applyAck(applySent(ours, { typeUrl: CDS, version, now: at }), { typeUrl: CDS, version, now: at }), gateway.state.typeHistory, { currentSeq: gateway.state.currentSeq });
    ours = change(ours);
    await gateway.recordEnvoy(nodeId);
    const read = await world.store.getEnvoyState(nodeId);
    const stored = read.status === 'found' ? read.value : undefined;
    const merged = { ...mergeEnvoyState(ours, stored), rev: (stored?.rev ?? -1) + 1 };
    const written = await world.store.updateEnvoyState(merged, stored?.rev);
    if (!written.ok) throw new Error(`state write conflict for ${nodeId}`);
    return merged;
  }

  it('Pending while the killed lineage is live, Programmed once it left the live set', async () => {
    const t0 = Date.now();
    clock.now = t0;
    // The first life: grpc-0 holds CDS and LDS on the lineage about to be killed.
    const killed = new FakeGateway(world, KILLED_LINEAGE, t0);
    killed.change(CDS);
    killed.change(LDS);
    await killed.save(t0);
    const before = new FakeEnvoy(world, killed, 'grpc-0', t0, [CDS, LDS]);
    await before.ackAll(t0);

    // SIGKILL; the restarted gateway (new lineage) serves envoy-a fully and grpc-0 on CDS only.
    const t1 = t0 + 500;
    clock.now = t1;
    const restarted = new FakeGateway(world, NEW_LINEAGE, t1);
    restarted.change(CDS);
    await restarted.save(t1);
    const healthy = new FakeEnvoy(world, restarted, 'envoy-a', t1, [CDS]);
    await healthy.ackAll(t1);
    const split = await reconnectOnCdsOnly(restarted, 'grpc-0', t1);
    // The precondition of the finding: the merge kept LDS from the killed lineage.
    expect(split.types[LDS]?.lineage).toBe(KILLED_LINEAGE);
    expect(split.programmedThrough).toBe(restarted.state.currentSeq);

    const ref = objectRef('split-dead');
    await restarted.watermark(ref, 1, t1);
    // The watermark and grpc-0's state are on different stream shards: a batch may decide from the
    // watermark before grpc-0's state reaches the aggregates (Pending, "not yet in the aggregates").
    // Wait for the decision once both are in, then check it exactly.
    const splitBlocker = (d: Decision): boolean => d.blockers.some((b) => b.nodeId === 'grpc-0' && b.reason === 'pending' && b.typeUrls.some((t) => t.startsWith('split across')));
    const pending = await waitForDecision(world, ref, 1, (d) => d.state === 'Pending' && d.programmed === 1 && splitBlocker(d), 'Pending on grpc-0 while the killed lineage is live');
    expect(pending.blockers).toEqual([{ nodeId: 'grpc-0', reason: 'pending', typeUrls: [`split across gateway instances (${KILLED_LINEAGE}, ${NEW_LINEAGE})`] }]);

    // Time passes; the restarted gateway heartbeats itself and its Envoys (more often than the TTL,
    // as the real one does). While the killed lineage's last heartbeat is within the live-set window
    // (2 × TTL), grpc-0 stays blocked; once it is older, LDS from there no longer counts.
    const heartbeatAll = async (at: number): Promise<void> => {
      clock.now = at;
      await restarted.save(at);
      await healthy.write((s) => applyHeartbeat(s, at));
      await reconnectOnCdsOnly(restarted, 'grpc-0', at, (s) => applyHeartbeat(s, at));
      await delivery.idle();
      await runExpire(context().deps);
      await delivery.idle();
    };
    await heartbeatAll(t0 + 3_000);
    await heartbeatAll(t0 + 6_000);
    expect(await decisionOf(world, ref, 1)).toMatchObject({ state: 'Pending', programmed: 1, total: 2 });
    await heartbeatAll(t0 + 2 * TTL_MS + 1_000);
    const decided = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed once the killed lineage is dead');
    expect(decided).toMatchObject({ programmed: 2, total: 2 });
  });

  it('a type held on another live lineage keeps blocking (per-type streams to two live gateways)', async () => {
    const t0 = clock.now + 1_000;
    clock.now = t0;
    const other = new FakeGateway(world, 'gw-t.boot1.edge', t0);
    other.change(CDS);
    other.change(LDS);
    await other.save(t0);
    const before = new FakeEnvoy(world, other, 'grpc-1', t0, [CDS, LDS]);
    await before.ackAll(t0);
    const mine = new FakeGateway(world, 'gw-u.boot1.edge', t0);
    mine.change(CDS);
    await mine.save(t0);
    await reconnectOnCdsOnly(mine, 'grpc-1', t0);
    const ref = objectRef('split-live');
    await mine.watermark(ref, 1, t0);
    const pending = await waitForDecision(world, ref, 1, (d) => d.state === 'Pending' && d.blockers.some((b) => b.nodeId === 'grpc-1'), 'Pending on grpc-1');
    expect(pending.blockers.find((b) => b.nodeId === 'grpc-1')).toMatchObject({ reason: 'pending', typeUrls: [expect.stringContaining('split across gateway instances')] });
    // Both gateways keep heartbeating: still Pending after an expire tick re-evaluates.
    clock.now = t0 + 1_000;
    await other.save(clock.now);
    await mine.save(clock.now);
    await before.refresh();
    await delivery.idle();
    await runExpire(context().deps);
    await delivery.idle();
    const later = await waitForDecision(world, ref, 1, (d) => d.state !== 'Programmed', 'still not Programmed');
    expect(later.blockers.find((b) => b.nodeId === 'grpc-1')).toBeDefined();
  });
});
