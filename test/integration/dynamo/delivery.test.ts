// Event-source-mapping semantics of createStreamDelivery against a real local DynamoDB: retries,
// batchItemFailures, bisection, drops to the on-failure destination, batching, draining, trimming.
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  createStreamDelivery,
  type DroppedBatch,
  type StreamDelivery,
} from '../../../infra/local/dynamo';
import { silentLogger, useDeliveryDynamo } from '../../support/dynamo-local';

const local = useDeliveryDynamo({ shardCount: 4, tablePrefix: 'table' });
const { freshTable } = local;

/** Puts items pk=`pk`, sk=0..n-1 (one partition key, hence one shard, in this order). */
async function putItems(table: string, pk: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await local.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: String(i) }, i: { N: String(i) } } }));
  }
}

const seqs = (records: DynamoDBRecord[]): string[] => records.map((r) => r.dynamodb?.SequenceNumber ?? '');
const sks = (records: DynamoDBRecord[]): string[] => records.map((r) => r.dynamodb?.Keys?.['sk']?.S ?? '');

function start(opts: Omit<Parameters<typeof createStreamDelivery>[0], 'logger' | 'retryBackoff'>): StreamDelivery {
  const delivery = createStreamDelivery({ ...opts, logger: silentLogger, retryBackoff: { initialMs: 5, maxMs: 20 } });
  local.deliveries.push(delivery);
  return delivery;
}

test('a handler that throws once receives the same batch again', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 5);
  const events: DynamoDBStreamEvent[] = [];
  let failed = false;
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 10,
    handler: async (event) => {
      events.push(event);
      if (!failed) {
        failed = true;
        throw new Error('transient');
      }
    },
  });
  await delivery.idle();
  expect(events).toHaveLength(2);
  expect(events[1]).toEqual(events[0]);
  expect(sks(events[0]?.Records ?? [])).toEqual(['0', '1', '2', '3', '4']);
  expect(delivery.stats).toMatchObject({ invocations: 2, failedInvocations: 1, deliveredRecords: 5, droppedRecords: 0 });
});

test('batchItemFailures: delivery resumes from the lowest failed record', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 6);
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 10,
    handler: async (event): Promise<DynamoDBBatchResponse> => {
      events.push(event);
      if (events.length > 1) return { batchItemFailures: [] };
      // Name two failures out of order: the checkpoint is the lower one (record 2).
      const [r2, r4] = [event.Records[2], event.Records[4]];
      return {
        batchItemFailures: [
          { itemIdentifier: r4?.dynamodb?.SequenceNumber ?? '' },
          { itemIdentifier: r2?.dynamodb?.SequenceNumber ?? '' },
        ],
      };
    },
  });
  await delivery.idle();
  expect(events).toHaveLength(2);
  expect(sks(events[0]?.Records ?? [])).toEqual(['0', '1', '2', '3', '4', '5']);
  expect(sks(events[1]?.Records ?? [])).toEqual(['2', '3', '4', '5']);
  expect(seqs(events[1]?.Records ?? [])).toEqual(seqs(events[0]?.Records ?? []).slice(2));
  expect(delivery.stats.deliveredRecords).toBe(6);
});

test('an unknown itemIdentifier fails the whole batch', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 3);
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    handler: async (event): Promise<DynamoDBBatchResponse> => {
      events.push(event);
      return { batchItemFailures: events.length === 1 ? [{ itemIdentifier: 'not-a-sequence-number' }] : [] };
    },
  });
  await delivery.idle();
  expect(events.map((e) => e.Records.length)).toEqual([3, 3]);
});

test('after maximumRetryAttempts the batch goes to onDropped and later records still flow', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 3);
  const dropped: DroppedBatch[] = [];
  const seen: string[][] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 3,
    maximumRetryAttempts: 2,
    onDropped: (batch) => {
      dropped.push(batch);
    },
    handler: async (event) => {
      seen.push(sks(event.Records));
      if (event.Records.some((r) => r.dynamodb?.NewImage?.['i']?.N === '1')) throw new Error('poison');
    },
  });
  await delivery.idle();
  await putItems(table, 'p2', 1);
  await delivery.idle();
  // First try plus two retries, then the drop; then the next record.
  expect(seen).toEqual([['0', '1', '2'], ['0', '1', '2'], ['0', '1', '2'], ['0']]);
  expect(dropped).toHaveLength(1);
  expect(dropped[0]).toMatchObject({ attempts: 3, reason: 'function-error', streamArn: local.dynamo.tableStreams.get(table).streamArn });
  expect(sks(dropped[0]?.records ?? [])).toEqual(['0', '1', '2']);
  expect(dropped[0]?.startSequenceNumber).toBe(dropped[0]?.records[0]?.dynamodb?.SequenceNumber);
  expect(delivery.stats.droppedRecords).toBe(3);
});

test('bisectBatchOnFunctionError isolates the poison record', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 4);
  const dropped: DroppedBatch[] = [];
  const delivered: string[] = [];
  const batches: string[][] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 4,
    maximumRetryAttempts: 0,
    bisectBatchOnFunctionError: true,
    onDropped: (batch) => {
      dropped.push(batch);
    },
    handler: async (event) => {
      batches.push(sks(event.Records));
      if (event.Records.some((r) => r.dynamodb?.Keys?.['sk']?.S === '1')) throw new Error('poison');
      delivered.push(...sks(event.Records));
    },
  });
  await delivery.idle();
  expect(batches).toEqual([['0', '1', '2', '3'], ['0', '1'], ['0'], ['1'], ['2', '3']]);
  expect(delivered).toEqual(['0', '2', '3']);
  expect(dropped.map((d) => sks(d.records))).toEqual([['1']]);
});

test('the batching window waits for a batch to fill, and a full batch goes at once', async () => {
  const table = await freshTable();
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    batchSize: 5,
    maximumBatchingWindowMs: 30_000,
    handler: async (event) => {
      events.push(event);
    },
  });
  await putItems(table, 'p', 1);
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Rewrites sk=0 unchanged (no record), then adds sk=1..4: the fifth record fills the batch. Without
  // the window the first record would have gone alone; without "full batch goes at once" this would
  // wait 30 s and time out.
  await putItems(table, 'p', 5);
  await delivery.idle();
  expect(events).toHaveLength(1);
  expect(sks(events[0]?.Records ?? [])).toEqual(['0', '1', '2', '3', '4']);
});

test('stop() delivers what is already in the log before it resolves', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 3);
  await putItems(table, 'q', 3);
  const received: DynamoDBRecord[] = [];
  const delivery = createStreamDelivery({
    source: local.dynamo.tableStreams.get(table),
    maximumBatchingWindowMs: 60_000,
    logger: silentLogger,
    handler: async (event) => {
      received.push(...event.Records);
    },
  });
  await delivery.stop();
  expect(received).toHaveLength(6);
});

test('the log keeps only what some reader has not passed', async () => {
  const table = await freshTable();
  const log = local.dynamo.tableStreams.get(table);
  const slow = log.openReader('TRIM_HORIZON');
  const delivery = start({ source: log, handler: async () => undefined });
  await putItems(table, 'p', 4);
  await putItems(table, 'q', 4);
  await delivery.idle();
  // The idle second reader still holds every record.
  expect(log.retainedRecords).toBe(8);
  slow.close();
  expect(log.retainedRecords).toBe(0);
  // With the delivery stopped and no reader, records are retained for a later TRIM_HORIZON reader;
  // a LATEST reader starts after them.
  await delivery.stop();
  await putItems(table, 'r', 2);
  expect(log.retainedRecords).toBe(2);
  const latest = log.openReader('LATEST');
  const horizon = log.openReader('TRIM_HORIZON');
  const pending = (reader: typeof latest): number => log.shardIds.reduce((n, _, i) => n + reader.pending(i), 0);
  expect(pending(latest)).toBe(0);
  expect(pending(horizon)).toBe(2);
  latest.close();
  horizon.close();
});

test('a malformed handler response is a failure and is retried', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 2);
  let calls = 0;
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    handler: (async () => {
      calls++;
      return calls === 1 ? { batchItemFailures: 'everything' } : undefined;
    }) as unknown as (e: DynamoDBStreamEvent) => Promise<void>,
  });
  await delivery.idle();
  expect(calls).toBe(2);
  expect(delivery.stats.deliveredRecords).toBe(2);
});

test('stop() gives up draining after its timeout when the handler keeps failing', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 2);
  const dropped: DroppedBatch[] = [];
  let calls = 0;
  const delivery = createStreamDelivery({
    source: local.dynamo.tableStreams.get(table),
    logger: silentLogger,
    retryBackoff: { initialMs: 5, maxMs: 10 },
    onDropped: (batch) => {
      dropped.push(batch);
    },
    handler: async () => {
      calls++;
      throw new Error('always');
    },
  });
  await delivery.stop({ drainTimeoutMs: 500 });
  expect(calls).toBeGreaterThan(1);
  // Infinite retries (the default): nothing dropped, and the records are still in the log.
  expect(dropped).toEqual([]);
  expect(delivery.stats.deliveredRecords).toBe(0);
  expect(local.dynamo.tableStreams.get(table).retainedRecords).toBe(2);
});

test('two deliveries on one table each receive every record (two event source mappings)', async () => {
  const table = await freshTable();
  const first: string[] = [];
  const second: string[] = [];
  const a = start({ source: local.dynamo.tableStreams.get(table), handler: async (e) => void first.push(...sks(e.Records)) });
  const b = start({ source: local.dynamo.tableStreams.get(table), batchSize: 1, handler: async (e) => void second.push(...sks(e.Records)) });
  await putItems(table, 'p', 4);
  await a.idle();
  await b.idle();
  expect(first).toEqual(['0', '1', '2', '3']);
  expect(second).toEqual(['0', '1', '2', '3']);
  expect(b.stats.invocations).toBe(4);
  expect(local.dynamo.tableStreams.get(table).retainedRecords).toBe(0);
});

test('an invocation past functionTimeoutMs is a failure and the batch is retried', async () => {
  const table = await freshTable();
  await putItems(table, 'p', 1);
  let calls = 0;
  let releaseHung: () => void = () => undefined;
  const delivery = start({
    source: local.dynamo.tableStreams.get(table),
    functionTimeoutMs: 50,
    handler: async () => {
      calls++;
      // The first invocation hangs until the test lets it go.
      if (calls === 1) await new Promise<void>((resolve) => (releaseHung = resolve));
    },
  });
  await delivery.idle();
  releaseHung();
  expect(calls).toBe(2);
  expect(delivery.stats).toMatchObject({ failedInvocations: 1, deliveredRecords: 1 });
});
