// Fuzzing the stream-triggered functions (convergence, status) with randomly damaged copies of real
// stream records (test/fixtures/events/, and OBJECT items read back from the local DynamoDB). The
// backends are healthy, so nothing is retryable: whatever the damage, the handler must return (never
// throw: a thrown batch is retried whole, and a poison record would block its shard until it
// expires), report no `batchItemFailures`, and still process the undamaged records of the batch.
// FUZZ_RUNS raises the number of runs (default 200).
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import fc from 'fast-check';
import pino from 'pino';

import { type ObjectRef } from '../../common/core';
import { objectGenerationKey } from '../../common/store';
import { handleConvergence } from '../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../functions/lib/context';
import { createStatusHandler } from '../../functions/status';
import recorded from '../fixtures/events/convergence-batch.json';
import { decisionOf, objectRef, startWorld, type World } from '../integration/functions/convergence-support';
import { createWidget, decisions, getWidget, putDecision, startStatusWorld, widgetRef, type StatusWorld } from '../integration/functions/status-support';
import { mutate, mutationArb } from './functions-stream-mutations';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 200);
const NOW = 1_795_000_000_400;
const silent = pino({ level: 'silent' });
const fixture = recorded as unknown as DynamoDBStreamEvent;

describe('convergence handler under damaged stream records', () => {
  let world: World;
  let context: FunctionContext;

  beforeAll(async () => {
    world = await startWorld('fuzz-conv');
    context = buildFunctionContext(world.env, silent, () => NOW);
  });
  afterAll(async () => {
    context.close();
    await world.close();
  });

  it('never throws and fails no record when only the data is bad', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutationArb, { minLength: 1, maxLength: 4 }), async (mutations) => {
        const records = mutate(fixture.Records, mutations);
        const response = await handleConvergence({ Records: records }, context);
        expect(response.batchItemFailures).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  }, 180_000);

  it('survives records that are not objects at all, and still decides from the good ones', async () => {
    const fresh = await startWorld('fuzz-conv-good');
    const ctx = buildFunctionContext(fresh.env, silent, () => NOW);
    try {
      const objectRecord = fixture.Records.find((r) => r.dynamodb?.Keys?.['pk']?.S?.startsWith('OBJECT#')) as DynamoDBRecord;
      // The OBJECT item exists in the table, as when the fixture was recorded.
      await putObjectImage(fresh, objectRecord);
      const junk = [null, {}, { dynamodb: null }, { dynamodb: { NewImage: null, OldImage: 7 } }, { eventName: 'INSERT', dynamodb: { Keys: { pk: { S: 'ENVOY#x' }, sk: { S: 'STATE' } }, NewImage: [] } },
        // A key of the wrong type, and a kind too large for a JS number (parseItem quotes it with JSON.stringify).
        { eventName: 'INSERT', dynamodb: { SequenceNumber: '7', Keys: { pk: { N: '1' }, sk: { S: 'STATE' } }, NewImage: { pk: { N: '1' } } } },
        { eventName: 'INSERT', dynamodb: { Keys: { pk: { S: 'ENVOY#y' }, sk: { S: 'STATE' } }, NewImage: { pk: { S: 'ENVOY#y' }, sk: { S: 'STATE' }, kind: { N: '99999999999999999999' } } } }] as unknown as DynamoDBRecord[];
      const response = await handleConvergence({ Records: [...junk, ...fixture.Records] }, ctx);
      expect(response.batchItemFailures).toEqual([]);
      expect((await decisionOf(fresh, objectRef('checkout'), 4))?.state).toBe('Rejected');
    } finally {
      ctx.close();
      await fresh.close();
    }
  });
});

async function putObjectImage(world: World, record: DynamoDBRecord): Promise<void> {
  const { unmarshall } = await import('@aws-sdk/util-dynamodb');
  const image = unmarshall(record.dynamodb?.NewImage as unknown as Parameters<typeof unmarshall>[0]);
  await world.table.rawItems.putItem(image);
}

describe('status handler under damaged stream records', () => {
  let world: StatusWorld;
  let handler: ReturnType<typeof createStatusHandler>;

  /** The INSERT record the stream carries for an OBJECT generation item, built from the stored item. */
  async function objectRecord(ref: ObjectRef, generation: number, sequenceNumber: string): Promise<DynamoDBRecord> {
    const key = objectGenerationKey(ref, generation);
    const stored = await world.table.rawItems.getItem(key);
    if (stored === undefined) throw new Error('item missing');
    return {
      eventID: `e-${sequenceNumber}`,
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        Keys: marshall(key) as NonNullable<DynamoDBRecord['dynamodb']>['Keys'],
        NewImage: marshall(stored, { removeUndefinedValues: true }) as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'],
        SequenceNumber: sequenceNumber,
        SizeBytes: 100,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
  }

  beforeAll(async () => {
    world = await startStatusWorld();
    handler = createStatusHandler({ env: { ...world.env, LOG_LEVEL: 'silent' }, logger: silent, now: () => NOW });
  });
  afterAll(async () => {
    await world.close();
  });

  it('never throws and fails no record when only the data is bad; the undamaged record is written', async () => {
    await createWidget(world, 'fuzz-target');
    await createWidget(world, 'fuzz-good');
    await putDecision(world, widgetRef('fuzz-target'), 1, decisions.pending3of5);
    await putDecision(world, widgetRef('fuzz-good'), 1, decisions.programmed);
    const damaged = await objectRecord(widgetRef('fuzz-target'), 1, '100');
    const good = await objectRecord(widgetRef('fuzz-good'), 1, '200');
    await fc.assert(
      fc.asyncProperty(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), async (mutations) => {
        const records = [...mutate([damaged], mutations), good];
        const response = await handler({ Records: records });
        expect(response.batchItemFailures).toEqual([]);
      }),
      { numRuns: RUNS },
    );
    const written = (await getWidget(world, 'fuzz-good'))?.status?.conditions?.find((c) => c['type'] === 'EnvoyProgrammed');
    expect(written).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 1 });
  }, 180_000);

  it('a record whose image cannot be unmarshalled is skipped, and the rest of the batch is written (regression)', async () => {
    await createWidget(world, 'after-corrupt');
    await putDecision(world, widgetRef('after-corrupt'), 1, decisions.programmed);
    const good = await objectRecord(widgetRef('after-corrupt'), 1, '300');
    const corrupt = await objectRecord(widgetRef('fuzz-target'), 1, '299');
    // An attribute value of no DynamoDB type: unmarshall throws on it.
    (corrupt.dynamodb?.NewImage as Record<string, unknown>)['decision'] = {};
    const response = await handler({ Records: [corrupt, good] });
    expect(response.batchItemFailures).toEqual([]);
    const written = (await getWidget(world, 'after-corrupt'))?.status?.conditions?.find((c) => c['type'] === 'EnvoyProgrammed');
    expect(written).toMatchObject({ status: 'True', observedGeneration: 1 });
  });
});
