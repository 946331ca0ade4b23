// Property: whatever concurrent writers do through the front, the stream is a faithful history.
// Per key, each record's OldImage is the previous record's NewImage (nothing missed, nothing out of
// order), and replaying the stream reproduces the table exactly.
import {
  BatchWriteItemCommand,
  DeleteItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import fc from 'fast-check';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { canonicalJson } from '../../../infra/local/dynamo/stream-record';
import { clientFor, createTestTable, silentLogger } from '../../support/dynamo-local';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let runs = 0;

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: silentLogger, shardCount: 3 });
  client = clientFor(dynamo.endpoint);
});

afterAll(async () => {
  client.destroy();
  await dynamo.close();
});

const KEYS = ['a', 'b', 'c', 'd'];
const keyArb = fc.constantFrom(...KEYS);
type Op =
  | { kind: 'put'; pk: string; v: number }
  | { kind: 'putIfAbsent'; pk: string; v: number }
  | { kind: 'add'; pk: string; n: number }
  | { kind: 'removeAttr'; pk: string }
  | { kind: 'delete'; pk: string }
  | { kind: 'batch'; puts: string[]; deletes: string[] };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), pk: keyArb, v: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('putIfAbsent' as const), pk: keyArb, v: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('add' as const), pk: keyArb, n: fc.integer({ min: -2, max: 2 }) }),
  fc.record({ kind: fc.constant('removeAttr' as const), pk: keyArb }),
  fc.record({ kind: fc.constant('delete' as const), pk: keyArb }),
  fc.uniqueArray(keyArb, { minLength: 1, maxLength: 4 }).chain((keys) =>
    fc.integer({ min: 0, max: keys.length }).map((cut) => ({ kind: 'batch' as const, puts: keys.slice(0, cut), deletes: keys.slice(cut) })),
  ),
);

async function apply(table: string, op: Op): Promise<void> {
  const key = (pk: string): { pk: { S: string }; sk: { S: string } } => ({ pk: { S: pk }, sk: { S: 's' } });
  switch (op.kind) {
    case 'put':
      await client.send(new PutItemCommand({ TableName: table, Item: { ...key(op.pk), v: { N: String(op.v) } } }));
      return;
    case 'putIfAbsent':
      await client
        .send(new PutItemCommand({ TableName: table, Item: { ...key(op.pk), v: { N: String(op.v) } }, ConditionExpression: 'attribute_not_exists(pk)' }))
        .catch((err: unknown) => {
          if (!(err instanceof Error) || err.name !== 'ConditionalCheckFailedException') throw err;
        });
      return;
    case 'add':
      await client.send(
        new UpdateItemCommand({ TableName: table, Key: key(op.pk), UpdateExpression: 'ADD n :n', ExpressionAttributeValues: { ':n': { N: String(op.n) } } }),
      );
      return;
    case 'removeAttr':
      await client.send(new UpdateItemCommand({ TableName: table, Key: key(op.pk), UpdateExpression: 'REMOVE v' }));
      return;
    case 'delete':
      await client.send(new DeleteItemCommand({ TableName: table, Key: key(op.pk) }));
      return;
    case 'batch':
      await client.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [table]: [
              ...op.puts.map((pk) => ({ PutRequest: { Item: { ...key(pk), b: { S: 'batch' } } } })),
              ...op.deletes.map((pk) => ({ DeleteRequest: { Key: key(pk) } })),
            ],
          },
        }),
      );
      return;
  }
}

test('concurrent writes: per-key image chains are unbroken and replay equals the table', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (lanes) => {
      const table = `replay${++runs}`;
      await createTestTable(client, table);
      const records: DynamoDBRecord[] = [];
      const delivery = createStreamDelivery({
        source: dynamo.tableStreams.get(table),
        batchSize: 7,
        logger: silentLogger,
        handler: async (event) => {
          records.push(...event.Records);
        },
      });
      // Lanes run concurrently; operations within a lane in order.
      await Promise.all(lanes.map(async (lane) => {
        for (const op of lane) await apply(table, op);
      }));
      await delivery.stop();

      const replayed = new Map<string, string>();
      const last = new Map<string, DynamoDBRecord>();
      for (const record of records) {
        const pk = record.dynamodb?.Keys?.['pk']?.S ?? '';
        const previous = last.get(pk);
        const expectedOld = previous?.dynamodb?.NewImage;
        expect(canonicalJson(record.dynamodb?.OldImage ?? null)).toBe(canonicalJson(expectedOld ?? null));
        if (previous) expect((record.dynamodb?.SequenceNumber ?? '') > (previous.dynamodb?.SequenceNumber ?? '')).toBe(true);
        last.set(pk, record);
        const image = record.dynamodb?.NewImage;
        if (image) replayed.set(pk, canonicalJson(image));
        else replayed.delete(pk);
      }
      const scan = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
      const actual = new Map((scan.Items ?? []).map((item) => [item['pk']?.S ?? '', canonicalJson(item)]));
      expect(new Map([...replayed].sort())).toEqual(new Map([...actual].sort()));
    }),
    { numRuns: 25 },
  );
});
