// Local TTL: the sweeper deletes expired items through the front, streaming REMOVE records marked
// with the DynamoDB service principal as AWS does for TTL deletions.
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { clientFor, createTestTable, pkOf, silentLogger } from '../../support/dynamo-local';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let nowMs = Date.UTC(2026, 0, 1);

beforeAll(async () => {
  // A long interval: the test triggers sweeps itself, with a clock it controls.
  dynamo = await startLocalDynamo({ logger: silentLogger, ttl: { sweepIntervalMs: 3_600_000 }, now: () => nowMs });
  client = clientFor(dynamo.endpoint);
});

afterAll(async () => {
  client.destroy();
  await dynamo.close();
});

test('expired items are removed with a service-principal REMOVE record; others stay', async () => {
  await createTestTable(client, 'ttl-table');
  const nowSeconds = Math.floor(nowMs / 1000);
  const item = (pk: string, ttl?: number): PutItemCommand =>
    new PutItemCommand({
      TableName: 'ttl-table',
      Item: { pk: { S: pk }, sk: { S: 's' }, ...(ttl === undefined ? {} : { ttl: { N: String(ttl) } }) },
    });
  await client.send(item('expired', nowSeconds - 10));
  await client.send(item('future', nowSeconds + 100));
  await client.send(item('forever'));

  expect(await dynamo.ttl?.sweep()).toBe(1);
  nowMs += 200_000;
  expect(await dynamo.ttl?.sweep()).toBe(1);
  expect(await dynamo.ttl?.sweep()).toBe(0);

  const forever = await client.send(new GetItemCommand({ TableName: 'ttl-table', Key: { pk: { S: 'forever' }, sk: { S: 's' } } }));
  expect(forever.Item).toBeDefined();

  const records: DynamoDBRecord[] = [];
  const delivery = createStreamDelivery({
    source: dynamo.tableStreams.get('ttl-table'),
    logger: silentLogger,
    handler: async (event) => {
      records.push(...event.Records);
    },
  });
  await delivery.stop();
  const removes = records.filter((r) => r.eventName === 'REMOVE');
  expect(removes.map(pkOf)).toEqual(['expired', 'future']);
  for (const remove of removes) {
    expect(remove.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
    expect(remove.dynamodb?.OldImage?.['ttl']).toBeDefined();
  }
  // Client writes carry no userIdentity.
  expect(records.filter((r) => r.eventName === 'INSERT').every((r) => r.userIdentity === undefined)).toBe(true);
});
