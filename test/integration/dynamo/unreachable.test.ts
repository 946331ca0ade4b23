// The front's `unreachable` fault: while on, every connection is reset (the SDK sees ECONNRESET, not
// a DynamoDB error reply, and retries it as a transient network error), nothing reaches dynalite, and
// stream delivery pauses; records written before the outage are delivered once it ends.
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { streamFaultsFor } from '../../../infra/local/dynamo/stream-faults';
import { clientFor, createTestTable, pkOf, silentLogger } from '../../support/dynamo-local';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let tableCount = 0;

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: silentLogger });
  client = clientFor(dynamo.endpoint, 2);
});

afterEach(() => dynamo.faults.clear());

afterAll(async () => {
  client.destroy();
  await dynamo.close();
});

async function freshTable(): Promise<string> {
  const name = `unreachable${++tableCount}`;
  await createTestTable(client, name);
  return name;
}

const put = (table: string, pk: string): PutItemCommand => new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: 'x' } } });

test('while unreachable, requests fail with a reset connection (retried by the SDK), not a DynamoDB error, and nothing is applied', async () => {
  const table = await freshTable();
  // A kept-alive connection exists from the table's creation: it must be reset too.
  await client.send(put(table, 'before'));
  const requestsBefore = dynamo.stats.requests;
  dynamo.faults.set({ unreachable: true });
  const failure = await client.send(put(table, 'during')).then(
    () => undefined,
    (error: unknown) => error as Error & { $metadata?: { attempts?: number; httpStatusCode?: number } },
  );
  expect(failure).toBeDefined();
  // A network error: no HTTP status, no DynamoDB error type; the SDK's retry ran (maxAttempts 2).
  // (Under jest the SDK wraps the socket error, which comes from another realm; its text names the code.)
  expect(failure?.message).toMatch(/ECONNRESET|EPIPE/);
  expect(failure?.$metadata?.httpStatusCode).toBeUndefined();
  expect(failure?.$metadata?.attempts).toBe(2);
  expect(dynamo.faults.counts.resetConnections).toBeGreaterThanOrEqual(2);
  // No request got as far as being handled (so none reached dynalite).
  expect(dynamo.stats.requests).toBe(requestsBefore);

  dynamo.faults.clear();
  await client.send(put(table, 'after'));
  const during = await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'during' }, sk: { S: 'x' } }, ConsistentRead: true }));
  expect(during.Item).toBeUndefined();
});

test('stream delivery pauses while unreachable and delivers every earlier record when it returns', async () => {
  const table = await freshTable();
  const delivered: DynamoDBRecord[] = [];
  const delivery = createStreamDelivery({
    source: dynamo.tableStreams.get(table),
    logger: silentLogger,
    // A batching window keeps the later records in the log when the outage begins.
    maximumBatchingWindowMs: 1000,
    handler: async (event) => {
      delivered.push(...event.Records);
    },
  });
  try {
    await client.send(put(table, 'k0'));
    await delivery.idle();
    expect(delivered.map(pkOf)).toEqual(['k0']);

    // Records already in the log when the outage begins wait for it to end. (They are appended by
    // writes made before it: none can be made during it.)
    for (let i = 1; i <= 5; i++) await client.send(put(table, `k${i}`));
    dynamo.faults.set({ unreachable: true });
    // Past the batching window: nothing delivered while unreachable, the records still pending.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(delivered.map(pkOf)).toEqual(['k0']);
    await expect(delivery.idle(200)).rejects.toThrow(/not idle/);

    dynamo.faults.clear();
    await delivery.idle();
    // Shards are delivered in parallel: every record once (cross-item order is not promised).
    expect(delivered.map(pkOf).sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
  } finally {
    await delivery.stop();
  }
});

test('a paused delivery holds records appended before it started, and a table first used during the outage is paused too', async () => {
  const table = await freshTable();
  for (let i = 0; i < 3; i++) await client.send(put(table, `p${i}`));
  dynamo.faults.set({ unreachable: true });
  const delivered: DynamoDBRecord[] = [];
  const delivery = createStreamDelivery({
    source: dynamo.tableStreams.get(table),
    logger: silentLogger,
    handler: async (event) => {
      delivered.push(...event.Records);
    },
  });
  const otherTable = dynamo.tableStreams.get('never-written-before-the-outage');
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered).toHaveLength(0);
    expect(streamFaultsFor(otherTable).paused).toBe(true);
    dynamo.faults.clear();
    expect(streamFaultsFor(otherTable).paused).toBe(false);
    await delivery.idle();
    expect(delivered.map(pkOf).sort()).toEqual(['p0', 'p1', 'p2']);
  } finally {
    await delivery.stop();
  }
});
