// The convergence handler on a recorded stream batch (test/fixtures/events/convergence-batch.json,
// captured from the local DynamoDB stream: a lineage, two Envoys, a corrupt state item, an item of an
// unknown kind, an ACK event, a watermark, an ACK and a NACK). Invoked directly, twice (redelivery);
// then many invocations at once on one aggregate shard.
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import pino from 'pino';

import { shardOf } from '../../../common/core';
import { handleConvergence } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { processConvergenceBatch } from '../../../functions/lib/convergence-batch';
import recorded from '../../fixtures/events/convergence-batch.json';
import { CDS, decisionOf, liveCount, objectRef, SHARDS, shardsOf, startWorld, type World } from './convergence-support';

const event = recorded as unknown as DynamoDBStreamEvent;
const LINEAGE = 'gw-0.boot-1.edge';
/** Just after the last recorded write (the fixture's clock). */
const NOW = 1_795_000_000_400;

describe('convergence handler on a recorded batch', () => {
  let world: World;
  let context: FunctionContext;

  beforeAll(async () => {
    world = await startWorld('fixtures');
    context = buildFunctionContext(world.env, pino({ level: 'silent' }), () => NOW);
    // The OBJECT item the batch refers to exists in the table (as it did when it was recorded).
    const objectRecord = event.Records.find((r) => r.dynamodb?.Keys?.['pk']?.S?.startsWith('OBJECT#'));
    const image = unmarshall(objectRecord!.dynamodb!.NewImage as unknown as Record<string, AttributeValue>);
    await world.table.rawItems.putItem(image);
  });

  afterAll(async () => {
    context.close();
    await world.close();
  });

  it('skips corrupt and unknown records, updates aggregates and decides, without failing the batch', async () => {
    const { response, report } = await processConvergenceBatch(event, context.deps);
    expect(response.batchItemFailures).toEqual([]);
    expect(report).toMatchObject({ envoyRecords: 4, skipped: 2, failed: 0 });
    const members = Object.assign({}, ...(await shardsOf(world, LINEAGE)).map((s) => s.members)) as Record<string, { t: number; r: number; b?: { n?: { m: string }[] } }>;
    expect(Object.keys(members).sort()).toEqual(['envoy-a', 'envoy-b']);
    expect(members['envoy-a']).toMatchObject({ t: 3, r: 1 });
    expect(members['envoy-b']?.b?.n?.[0]?.m).toBe('cluster "checkout-v2": no healthy upstream');
    const decision = await decisionOf(world, objectRef('checkout'), 4);
    expect(decision).toMatchObject({ state: 'Rejected', programmed: 1, total: 2, decidedAt: NOW });
    expect(decision?.blockers[0]).toMatchObject({ nodeId: 'envoy-b', reason: 'nacked', nacks: [{ typeUrl: CDS, seq: 3 }] });
  });

  it('is idempotent when the same batch is delivered again', async () => {
    const before = await shardsOf(world, LINEAGE);
    const response = await handleConvergence(event, context);
    expect(response.batchItemFailures).toEqual([]);
    expect(await shardsOf(world, LINEAGE)).toEqual(before);
    expect(await liveCount(world, LINEAGE)).toBe(2);
    expect((await decisionOf(world, objectRef('checkout'), 4))?.state).toBe('Rejected');
  });
});

describe('concurrent invocations on the same aggregate shard', () => {
  let world: World;
  let context: FunctionContext;

  beforeAll(async () => {
    world = await startWorld('concurrent');
    context = buildFunctionContext(world.env, pino({ level: 'silent' }), () => NOW);
  });

  afterAll(async () => {
    context.close();
    await world.close();
  });

  it('every batch lands (conditional write on the shard version, re-read and retry on conflict)', async () => {
    // Envoy records rewritten for nodes that all hash to one shard, split into 8 batches run at once.
    const template = event.Records.find((r) => r.dynamodb?.Keys?.['pk']?.S === 'ENVOY#envoy-a' && r.eventName === 'INSERT')!;
    const image = unmarshall(template.dynamodb!.NewImage as unknown as Record<string, AttributeValue>);
    const target = shardOf('envoy-a', SHARDS);
    const nodeIds = Array.from({ length: 400 }, (_, i) => `node-${i}`).filter((id) => shardOf(id, SHARDS) === target).slice(0, 40);
    const records = nodeIds.map((nodeId, i) => ({
      ...template,
      eventID: `concurrent-${i}`,
      dynamodb: {
        ...template.dynamodb,
        Keys: { pk: { S: `ENVOY#${nodeId}` }, sk: { S: 'STATE' } },
        NewImage: marshall({ ...image, pk: `ENVOY#${nodeId}`, nodeId }, { removeUndefinedValues: true }) as unknown as NonNullable<typeof template.dynamodb>['NewImage'],
        SequenceNumber: String(i + 1).padStart(21, '0'),
      },
    }));
    const batches = Array.from({ length: 8 }, (_, b) => ({ Records: records.filter((_, i) => i % 8 === b) }) as DynamoDBStreamEvent);
    const results = await Promise.all(batches.map((batch) => processConvergenceBatch(batch, context.deps)));
    for (const { response } of results) expect(response.batchItemFailures).toEqual([]);
    const shard = (await shardsOf(world, LINEAGE)).find((s) => s.shard === target)!;
    expect(Object.keys(shard.members).sort()).toEqual([...nodeIds].sort());
    expect(shard.live).toBe(nodeIds.length);
    expect(await liveCount(world, LINEAGE)).toBe(nodeIds.length);
  });
});
