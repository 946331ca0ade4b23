// The denominator race (invariant 1, docs/ARCHITECTURE.md), deterministically, through the real pipeline: local
// DynamoDB (with its sharded change log), Lambda-style stream delivery and the convergence handler.
//
// DynamoDB Streams order records per item only: an Envoy's STATE record can reach the aggregates after
// the records of every other Envoy and of the watermark. Here the change-log shard carrying one Envoy's
// state is paused (the handler holds any batch containing it, exactly what a slow or retrying shard
// does), while everything else lives on the other shard. The held Envoy is connected and below the
// watermark; the others reach it. Evaluation must not say Programmed: the gateway's envoysRecorded (3)
// exceeds the members applied (2). Released, the held Envoy blocks until it ACKs; then Programmed.
import type { DynamoDBStreamEvent } from 'aws-lambda';

import { DENOMINATOR_IN_TRANSIT, type ObjectRef } from '../../../common/core';
import { envoyStateKey, ITEM_KIND, lineageStateKey, objectPartitionKey, pendingKey, toObjectGenerationItem } from '../../../common/store';
import { handleConvergence } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { shardIndex } from '../../../infra/local/dynamo/change-log';
import { CDS, LDS, deliver, FakeEnvoy, FakeGateway, objectRef, silentLogger, startWorld, waitFor, waitForDecision, type World } from './convergence-support';

const LINEAGE = 'gw-a.boot1.edge';
/** startWorld's local DynamoDB splits the change log into this many shards. */
const CHANGE_LOG_SHARDS = 2;

const logShardOf = (pk: string): number => shardIndex({ S: pk }, CHANGE_LOG_SHARDS);

/** The first name `make(i)` whose partition key lands on the wanted change-log shard. */
function nameOn<T>(shard: number, make: (i: number) => T, pkOf: (value: T) => string, skip: ReadonlySet<string> = new Set()): T {
  for (let i = 0; i < 10_000; i++) {
    const value = make(i);
    if (logShardOf(pkOf(value)) === shard && !skip.has(pkOf(value))) return value;
  }
  throw new Error('no name found on that shard');
}

describe('the denominator: an Envoy whose state has not reached the aggregates', () => {
  let world: World;
  let context: FunctionContext;
  let delivery: StreamDelivery;
  let releaseHeld: () => void = () => undefined;
  const heldBatches: number[] = [];

  // Everything the decision needs lives on the free shard; only the held Envoy's state is on the other.
  const freeShard = logShardOf(lineageStateKey(LINEAGE).pk);
  const heldShard = 1 - freeShard;
  const heldId = nameOn(heldShard, (i) => `held-${i}`, (id) => envoyStateKey(id).pk);
  const firstId = nameOn(freeShard, (i) => `envoy-${i}`, (id) => envoyStateKey(id).pk);
  const secondId = nameOn(freeShard, (i) => `envoy-${i}`, (id) => envoyStateKey(id).pk, new Set([envoyStateKey(firstId).pk]));
  const ref: ObjectRef = nameOn(freeShard, (i) => objectRef(`race-${i}`), objectPartitionKey);

  beforeAll(async () => {
    world = await startWorld('denominator');
    context = buildFunctionContext(world.env, silentLogger);
    const gate = new Promise<void>((resolve) => (releaseHeld = resolve));
    const heldPk = envoyStateKey(heldId).pk;
    // A paused stream shard: any batch carrying the held Envoy's record waits (and so does the rest
    // of that shard, in order), the other shard is delivered as usual.
    const handler = async (event: DynamoDBStreamEvent) => {
      if ((event.Records ?? []).some((record) => record.dynamodb?.Keys?.['pk']?.S === heldPk)) {
        heldBatches.push(event.Records.length);
        await gate;
      }
      return handleConvergence(event, context);
    };
    delivery = deliver(world, handler);
  });

  afterAll(async () => {
    releaseHeld();
    await delivery.stop();
    context.close();
    await world.close();
  });

  it('places the keys as the scenario needs (the test checks its own premise)', () => {
    expect(new Set([envoyStateKey(firstId).pk, envoyStateKey(secondId).pk, lineageStateKey(LINEAGE).pk, objectPartitionKey(ref)].map(logShardOf))).toEqual(new Set([freeShard]));
    expect(logShardOf(envoyStateKey(heldId).pk)).toBe(heldShard);
  });

  it('stays Pending while a recorded Envoy is missing from the aggregates; Programmed once it is there and at the watermark', async () => {
    const now = Date.now();
    const gateway = new FakeGateway(world, LINEAGE, now);
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(now);
    const first = new FakeEnvoy(world, gateway, firstId, now);
    const second = new FakeEnvoy(world, gateway, secondId, now);
    const held = new FakeEnvoy(world, gateway, heldId, now);
    await first.ackAll(now);
    await second.ackAll(now);
    // The held Envoy connects and has ACKed only the old config: it is live and below the watermark.
    // The gateway counts it (envoysRecorded 3) before writing its state; that state is held back.
    await held.ackAll(now);

    // Generation 1 changes the clusters; the two visible Envoys ACK it.
    gateway.change(CDS);
    await gateway.save(Date.now());
    await gateway.watermark(ref, 1, Date.now());
    await first.ackAll(Date.now());
    await second.ackAll(Date.now());

    const whileHeld = await waitForDecision(world, ref, 1, (d) => d.programmed === 2, 'both visible Envoys programmed');
    expect(heldBatches.length).toBeGreaterThan(0); // the premise: the held state really was held
    expect(whileHeld).toMatchObject({ state: 'Pending', programmed: 2, total: 3 });
    expect(whileHeld.blockers).toEqual([{ nodeId: `1 Envoy state of gateway lineage ${LINEAGE}`, reason: 'pending', typeUrls: [DENOMINATOR_IN_TRANSIT] }]);

    const pendingEntry = async () => await world.table.rawItems.getItem(pendingKey(LINEAGE, 3, ref, 1), { consistent: true });
    expect(await pendingEntry()).toMatchObject({ kind: ITEM_KIND.pendingGeneration, seq: 3, generation: 1 });

    // Released: the held Envoy is in the aggregates, below the watermark, so it blocks by name.
    releaseHeld();
    const named = await waitForDecision(world, ref, 1, (d) => d.total === 3 && d.blockers.some((b) => b.nodeId === heldId), 'the held Envoy named');
    expect(named).toMatchObject({ state: 'Pending', programmed: 2 });
    expect(named.blockers).toEqual([{ nodeId: heldId, reason: 'pending', typeUrls: [CDS] }]);

    await held.ackAll(Date.now());
    const done = await waitForDecision(world, ref, 1, (d) => d.state === 'Programmed', 'Programmed');
    expect(done).toMatchObject({ programmed: 3, total: 3, blockers: [] });

    // Resolved: its pending-index entry is deleted (DeleteItem), not left behind marked done.
    await waitFor('the pending entry deleted', async () => ((await pendingEntry()) === undefined ? true : undefined));
  });

  it('an OBJECT item whose stored decision is invalid stays readable and is re-decided', async () => {
    const broken = objectRef('broken-decision');
    const item = toObjectGenerationItem({ object: broken, generation: 1, watermarks: { [LINEAGE]: { seq: 1, types: {}, at: Date.now() } }, firstSeenAt: Date.now() });
    await world.table.rawItems.putItem({ ...item, decision: { state: 'Maybe', programmed: -1 } });
    const decided = await waitForDecision(world, broken, 1, (d) => d.state === 'Programmed', 'a valid decision replacing the invalid one');
    expect(decided).toMatchObject({ programmed: 3, total: 3 });
  });

  it('a whole-table scan reads the aggregate items as items of their own kinds (none reported corrupt)', async () => {
    const kinds = new Set<string>();
    let corrupt = 0;
    for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
      const page = await world.store.scanItems(cursor === undefined ? {} : { cursor });
      for (const item of page.items) kinds.add(item.kind);
      corrupt += page.corrupt.length;
      cursor = page.nextCursor;
    }
    expect(corrupt).toBe(0);
    // (Pending entries may be there too, until their generation's decision deletes them.)
    expect([...kinds]).toEqual(expect.arrayContaining([ITEM_KIND.envoyState, ITEM_KIND.aggregateShard, ITEM_KIND.lineageRegistry, ITEM_KIND.lineageState, ITEM_KIND.objectGeneration]));
  });
});
