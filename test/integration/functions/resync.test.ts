// The resync function rebuilds the aggregates from the ENVOY STATE items: drift injected into the
// shards (a ghost member, a wrong member, a lost member, a corrupt shard item) is fixed, the result
// equals a from-scratch recount, a second run finds nothing, and a generation the drift was holding
// back is re-evaluated.
import pino from 'pino';

import { applyMember, emptyShard, memberFromEnvoyState, shardOf, type AggregateShard } from '../../../common/core';
import { aggregateShardKey } from '../../../common/store';
import { handler } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { runResync } from '../../../functions/lib/resync-run';
import { fromLambdaHandler, type StreamDelivery } from '../../../infra/local/dynamo';
import { CDS, deliver, FakeEnvoy, FakeGateway, LDS, liveCount, objectRef, SHARDS, shardsOf, startWorld, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-r.boot1.edge';

describe('resync function', () => {
  let world: World;
  let delivery: StreamDelivery;
  let context: FunctionContext;
  let envoys: FakeEnvoy[];

  beforeAll(async () => {
    world = await startWorld('resync');
    Object.assign(process.env, world.env);
    delivery = deliver(world, fromLambdaHandler(handler, { functionName: 'convergence' }));
    context = buildFunctionContext(world.env, pino({ level: 'silent' }));
    const now = Date.now();
    const gateway = new FakeGateway(world, LINEAGE, now);
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(now);
    envoys = Array.from({ length: 8 }, (_, i) => new FakeEnvoy(world, gateway, `envoy-${i}`, now));
    for (const envoy of envoys) await envoy.ackAll(now);
    await delivery.idle();
  });

  afterAll(async () => {
    context.close();
    await delivery.stop();
    await world.close();
  });

  async function mutateShard(shardIndex: number, change: (shard: AggregateShard) => AggregateShard): Promise<void> {
    const read = await world.aggregates.getShard(LINEAGE, shardIndex);
    const stored = read.status === 'found' ? read.value : emptyShard(LINEAGE, shardIndex);
    const outcome = await world.aggregates.putShard(change(stored), read.status === 'found' ? read.value.v : undefined);
    expect(outcome).toBe('written');
  }

  it('fixes drift and re-evaluates what the drift held back', async () => {
    expect(await liveCount(world, LINEAGE)).toBe(8);
    // A ghost: a live member with no state behind it, stuck behind every watermark.
    const ghostShard = shardOf('ghost', SHARDS);
    await mutateShard(ghostShard, (shard) => applyMember(shard, 'ghost', { t: -1, r: 0, live: true, s: Date.now() }).shard);
    // A lost member and a wrong one.
    const lost = envoys[0]!.state.nodeId;
    await mutateShard(shardOf(lost, SHARDS), (shard) => {
      const { [lost]: _gone, ...members } = shard.members;
      return { ...shard, v: shard.v + 1, members };
    });
    const wrong = envoys[1]!.state;
    await mutateShard(shardOf(wrong.nodeId, SHARDS), (shard) => ({
      ...shard,
      v: shard.v + 1,
      members: { ...shard.members, [wrong.nodeId]: { ...memberFromEnvoyState(wrong), t: 0 } },
      counts: { '0': 99 },
    }));

    const ref = objectRef('drifted');
    const gateway = new FakeGateway(world, LINEAGE, Date.now());
    await gateway.watermark(ref, 1, Date.now()); // seq 0: every real Envoy has reached it
    const held = await waitForDecision(world, ref, 1, (d) => d.state === 'Pending', 'held back by the ghost');
    expect(held.blockers.map((b) => b.nodeId)).toContain('ghost');

    const report = await runResync(context.deps);
    expect(report.states).toBe(8);
    expect(report.shardsFixed).toBeGreaterThanOrEqual(2);
    expect(report.membersFixed).toBeGreaterThanOrEqual(3);
    expect(report.failed).toBe(0);
    const decided = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed after resync');
    expect(decided).toMatchObject({ programmed: 8, total: 8 });

    // The shards now hold exactly the states' members, counted right; a second run changes nothing.
    const members = Object.assign({}, ...(await shardsOf(world, LINEAGE)).map((shard) => shard.members)) as Record<string, unknown>;
    // The ghost (a member with no state) stays as a deletion tombstone: members are never removed,
    // so their number only grows (the denominator check, docs/CONVERGENCE.md).
    expect(Object.keys(members).sort()).toEqual([...envoys.map((e) => e.state.nodeId), 'ghost'].sort());
    expect(members['ghost']).toMatchObject({ gone: true, deleted: true, live: false });
    for (const envoy of envoys) expect(members[envoy.state.nodeId]).toEqual(memberFromEnvoyState(envoy.state));
    expect(await liveCount(world, LINEAGE)).toBe(8);
    expect(await runResync(context.deps)).toMatchObject({ shardsFixed: 0, membersFixed: 0 });
  });

  it('prunes lineages silent for long with no live Envoy from the registry', async () => {
    const registry = await world.aggregates.getLineageRegistry();
    const old = 'gw-old.boot0.edge';
    expect(await world.aggregates.putLineageRegistry({ v: registry.v + 1, lineages: { ...registry.lineages, [old]: 1_000 } }, registry.v)).toBe('written');
    const report = await runResync(context.deps);
    expect(report.lineagesPruned).toBe(1);
    expect(Object.keys((await world.aggregates.getLineageRegistry()).lineages)).toEqual([LINEAGE]);
    expect((await runResync(context.deps)).lineagesPruned).toBe(0);
  });

  it('replaces a corrupt shard item with the rebuilt one', async () => {
    const shardIndex = shardOf(envoys[2]!.state.nodeId, SHARDS);
    await world.table.rawItems.putItem({ ...aggregateShardKey(LINEAGE, shardIndex), v: 41, members: 'not a map' });
    const report = await runResync(context.deps);
    expect(report.shardsFixed).toBe(1);
    expect(await liveCount(world, LINEAGE)).toBe(8);
    const shard = (await shardsOf(world, LINEAGE)).find((s) => s.shard === shardIndex)!;
    expect(shard.v).toBe(42);
    expect(Object.keys(shard.members)).toContain(envoys[2]!.state.nodeId);
  });
});
