// createStreamDelivery's `filter` (Lambda event filtering) and the per-invocation record copies:
// discarded records never reach the handler, an emptied batch calls nothing and is checkpointed,
// batchItemFailures still checkpoint in shard order, and a handler that mutates its event changes
// neither its retry nor another mapping's view of the same records.
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createStreamDelivery, type StreamDelivery } from '../../../infra/local/dynamo';
import { copyRecords } from '../../../infra/local/dynamo/record-copy';
import { silentLogger, useDeliveryDynamo } from '../../support/dynamo-local';

const local = useDeliveryDynamo({ shardCount: 1, tablePrefix: 'filter' });
const { freshTable } = local;

async function put(table: string, pk: string, sk: string): Promise<void> {
  await local.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: sk }, v: { S: `${pk}/${sk}` } } }));
}

function start(opts: Omit<Parameters<typeof createStreamDelivery>[0], 'logger' | 'retryBackoff'>): StreamDelivery {
  const delivery = createStreamDelivery({ ...opts, logger: silentLogger, retryBackoff: { initialMs: 5, maxMs: 20 } });
  local.deliveries.push(delivery);
  return delivery;
}

const pkOf = (r: DynamoDBRecord): string => r.dynamodb?.Keys?.['pk']?.S ?? '';
const keysOf = (records: DynamoDBRecord[]): string[] => records.map((r) => `${pkOf(r)}/${r.dynamodb?.Keys?.['sk']?.S ?? ''}`);

test('discarded records never reach the handler; a batch left empty calls nothing and is checkpointed', async () => {
  const table = await freshTable();
  // Batch 1 (size 3): skip, keep, skip. Batch 2: skip, skip, skip (emptied). Batch 3: keep.
  for (const [pk, sk] of [['skip', '1'], ['keep', '1'], ['skip', '2'], ['skip', '3'], ['skip', '4'], ['skip', '5'], ['keep', '2']] as const) await put(table, pk, sk);
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 3,
    filter: (record) => pkOf(record) === 'keep',
    handler: async (event) => {
      events.push(event);
    },
  });
  await delivery.idle();
  expect(events.map((e) => keysOf(e.Records))).toEqual([['keep/1'], ['keep/2']]);
  expect(delivery.stats).toMatchObject({ invocations: 3, emptiedBatches: 1, filteredRecords: 5, deliveredRecords: 7, failedInvocations: 0 });
});

test('batchItemFailures of a filtered batch checkpoint in shard order, discarded records included', async () => {
  const table = await freshTable();
  for (const [pk, sk] of [['keep', '1'], ['skip', '1'], ['keep', '2'], ['skip', '2'], ['keep', '3']] as const) await put(table, pk, sk);
  const seen: string[][] = [];
  let failOnce = true;
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 10,
    filter: (record) => pkOf(record) === 'keep',
    handler: async (event): Promise<DynamoDBBatchResponse> => {
      seen.push(keysOf(event.Records));
      if (!failOnce) return { batchItemFailures: [] };
      failOnce = false;
      // keep/2 failed: keep/1 and skip/1 (before it in the shard) are done; delivery resumes at keep/2.
      const failed = event.Records.find((r) => r.dynamodb?.Keys?.['sk']?.S === '2');
      return { batchItemFailures: [{ itemIdentifier: failed?.dynamodb?.SequenceNumber ?? '' }] };
    },
  });
  await delivery.idle();
  expect(seen).toEqual([
    ['keep/1', 'keep/2', 'keep/3'],
    ['keep/2', 'keep/3'],
  ]);
});

test('a handler that mutates its records changes neither its retry nor another mapping on the stream', async () => {
  const table = await freshTable();
  await put(table, 'a', '1');
  await put(table, 'b', '1');
  const firstViews: string[][] = [];
  let attempts = 0;
  const mutating = start({
    source: local.dynamo.tableStreams.get(table),
    handler: async (event) => {
      attempts++;
      firstViews.push(event.Records.map((r) => r.dynamodb?.NewImage?.['v']?.S ?? ''));
      for (const record of event.Records) {
        if (record.dynamodb?.NewImage) record.dynamodb.NewImage['v'] = { S: 'mutated' };
        record.eventName = 'REMOVE';
      }
      event.Records.pop();
      if (attempts === 1) throw new Error('fail once after mutating');
    },
  });
  const otherViews: DynamoDBRecord[] = [];
  const other = start({
    source: local.dynamo.tableStreams.get(table),
    handler: async (event) => {
      // Let the mutating mapping go first, then look.
      await mutating.idle();
      otherViews.push(...event.Records);
    },
  });
  await mutating.idle();
  await other.idle();
  expect(attempts).toBe(2);
  expect(firstViews).toEqual([
    ['a/1', 'b/1'],
    ['a/1', 'b/1'],
  ]);
  expect(otherViews.map((r) => [r.eventName, r.dynamodb?.NewImage?.['v']?.S])).toEqual([
    ['INSERT', 'a/1'],
    ['INSERT', 'b/1'],
  ]);
});

test('copies are deep and equal to the original', () => {
  const original: DynamoDBRecord = {
    eventID: 'e1',
    eventName: 'MODIFY',
    dynamodb: { Keys: { pk: { S: 'p' } }, NewImage: { list: { L: [{ M: { n: { N: '1' } } }] }, set: { SS: ['a', 'b'] } }, SequenceNumber: '1', SizeBytes: 10 },
  };
  const [first] = copyRecords([original]);
  const [second] = copyRecords([original]);
  expect(first).toEqual(original);
  expect(first).not.toBe(original);
  (first?.dynamodb?.NewImage?.['list']?.L?.[0]?.M as Record<string, unknown>)['n'] = { N: '2' };
  expect(second?.dynamodb?.NewImage?.['list']?.L?.[0]?.M?.['n']).toEqual({ N: '1' });
  expect(original.dynamodb?.NewImage?.['list']?.L?.[0]?.M?.['n']).toEqual({ N: '1' });
});
