// The front's fault seam and failure paths: throttling and 5xx make the SDK retry and the write still
// streams exactly once; failed writes stream nothing; an applied-then-500 write retried by the SDK
// streams once when the write is idempotent.
import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { clientFor, createTestTable, pkOf, silentLogger } from '../../support/dynamo-local';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let tableCount = 0;

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: silentLogger });
  client = clientFor(dynamo.endpoint, 10);
});

afterEach(() => dynamo.faults.clear());

afterAll(async () => {
  client.destroy();
  await dynamo.close();
});

async function freshTable(): Promise<string> {
  const name = `faults${++tableCount}`;
  await createTestTable(client, name);
  return name;
}

async function drain(table: string): Promise<DynamoDBRecord[]> {
  const records: DynamoDBRecord[] = [];
  const delivery = createStreamDelivery({
    source: dynamo.tableStreams.get(table),
    logger: silentLogger,
    handler: async (event) => {
      records.push(...event.Records);
    },
  });
  await delivery.stop();
  return records;
}

const put = (table: string, pk: string, extra: Record<string, { S: string }> = {}): PutItemCommand =>
  new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: 'x' }, ...extra } });

test('throttling makes the SDK retry; each write lands in the stream exactly once', async () => {
  const table = await freshTable();
  dynamo.faults.set({ throttleRate: 0.4, seed: 42, operations: ['PutItem'] });
  const outputs = await Promise.all(Array.from({ length: 16 }, (_, i) => client.send(put(table, `k${i}`))));
  const throttled = dynamo.faults.counts.throttled;
  expect(throttled).toBeGreaterThan(0);
  // The SDK saw the throttles and retried (attempts > 1 on some request).
  expect(outputs.reduce((n, o) => n + (o.$metadata.attempts ?? 1) - 1, 0)).toBe(throttled);
  const records = await drain(table);
  expect(records.map(pkOf).sort()).toEqual(Array.from({ length: 16 }, (_, i) => `k${i}`).sort());
  expect(records.every((r) => r.eventName === 'INSERT')).toBe(true);
});

test('the throttle reply has the DynamoDB error shape', async () => {
  const table = await freshTable();
  dynamo.faults.setHook(({ operation }) => (operation === 'PutItem' ? 'throttle' : 'none'));
  const noRetry = clientFor(dynamo.endpoint, 1);
  try {
    await expect(noRetry.send(put(table, 'a'))).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
      $metadata: { httpStatusCode: 400 },
    });
  } finally {
    noRetry.destroy();
  }
  dynamo.faults.setHook(() => 'error');
  const noRetry2 = clientFor(dynamo.endpoint, 1);
  try {
    await expect(noRetry2.send(put(table, 'a'))).rejects.toMatchObject({
      name: 'InternalServerError',
      $metadata: { httpStatusCode: 500 },
    });
  } finally {
    noRetry2.destroy();
  }
  dynamo.faults.clear();
  expect(await drain(table)).toEqual([]);
});

test('5xx errors are retried by the SDK and stream once', async () => {
  const table = await freshTable();
  dynamo.faults.set({ errorRate: 0.3, seed: 3 });
  await Promise.all(Array.from({ length: 10 }, (_, i) => client.send(put(table, `e${i}`))));
  expect(dynamo.faults.counts.errored).toBeGreaterThan(0);
  expect((await drain(table)).map(pkOf).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `e${i}`).sort());
});

test('an applied write answered 500 is retried; an idempotent put streams once', async () => {
  const table = await freshTable();
  let faulted = 0;
  // Exactly the first PutItem of each key is applied and then answered 500.
  dynamo.faults.setHook(({ operation }) => (operation === 'PutItem' && faulted++ < 1 ? 'errorAfterWrite' : 'none'));
  const output = await client.send(put(table, 'once', { v: { S: 'same' } }));
  expect(output.$metadata.attempts).toBe(2);
  const records = await drain(table);
  expect(records.map((r) => r.eventName)).toEqual(['INSERT']);
});

test('conditional-check failures and validation errors produce no record', async () => {
  const table = await freshTable();
  await client.send(put(table, 'c', { v: { S: '1' } }));
  await expect(
    client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'c' }, sk: { S: 'x' } }, ConditionExpression: 'attribute_not_exists(pk)' })),
  ).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  await expect(
    client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'c' }, sk: { S: 'x' } },
        UpdateExpression: 'SET v = :v',
        ConditionExpression: 'v = :other',
        ExpressionAttributeValues: { ':v': { S: '2' }, ':other': { S: 'nope' } },
      }),
    ),
  ).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  // Missing sort key: dynalite's ValidationException passes through unchanged.
  await expect(client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'd' } } }))).rejects.toMatchObject({
    name: 'ValidationException',
  });
  // A key of the wrong type: dynalite's ValidationException, not an error of the front.
  await expect(client.send(new PutItemCommand({ TableName: table, Item: { pk: { N: '1' }, sk: { S: 'x' } } }))).rejects.toMatchObject({
    name: 'ValidationException',
  });
  await expect(client.send(new DeleteItemCommand({ TableName: 'no-such-table', Key: { pk: { S: 'd' }, sk: { S: 'x' } } }))).rejects.toMatchObject({
    name: 'ResourceNotFoundException',
  });
  const records = await drain(table);
  expect(records.map((r) => [r.eventName, pkOf(r)])).toEqual([['INSERT', 'c']]);
});

test('latency is added and requests still succeed', async () => {
  const table = await freshTable();
  dynamo.faults.set({ latencyMs: 20 });
  await client.send(put(table, 'slow'));
  expect((await drain(table)).map(pkOf)).toEqual(['slow']);
});

test('unprocessed items: only the applied part streams, the retried rest streams once', async () => {
  const table = await freshTable();
  dynamo.faults.set({ unprocessedRate: 1, seed: 11 });
  const requests = Array.from({ length: 25 }, (_, i) => ({ PutRequest: { Item: { pk: { S: `u${i}` }, sk: { S: 'x' } } } }));
  const first = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
  const left = first.UnprocessedItems?.[table] ?? [];
  expect(left.length).toBeGreaterThan(0);
  expect(left.length).toBeLessThan(25);
  expect(dynamo.tableStreams.get(table).retainedRecords).toBe(25 - left.length);
  // The caller's retry loop, as the store adapter does it.
  let pending = first.UnprocessedItems ?? {};
  let rounds = 0;
  while (Object.keys(pending).length > 0 && rounds++ < 50) {
    pending = (await client.send(new BatchWriteItemCommand({ RequestItems: pending }))).UnprocessedItems ?? {};
  }
  expect(pending).toEqual({});
  expect(dynamo.faults.counts.unprocessedItems).toBeGreaterThanOrEqual(left.length);
  const records = await drain(table);
  expect(records.map(pkOf).sort()).toEqual(requests.map((r) => r.PutRequest.Item.pk.S).sort());
});

test('fault rates are validated', () => {
  expect(() => dynamo.faults.set({ throttleRate: 2 })).toThrow(/throttleRate/);
});

test('the front relays non-API requests (dynalite health check) unchanged', async () => {
  const response = await fetch(dynamo.endpoint);
  expect(response.status).toBe(200);
  expect(await response.text()).toMatch(/^healthy: /);
  const bad = await fetch(dynamo.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' },
    body: '{not json',
  });
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ __type: expect.stringContaining('SerializationException') });
});
