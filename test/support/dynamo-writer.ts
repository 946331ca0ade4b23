// A separate OS process that writes to the local DynamoDB front with the real AWS SDK, so the tests
// prove that writes from any process reach the stream. Usage:
//   node --import tsx test/support/dynamo-writer.ts <endpoint> <table> <scenario> [args...]
// Prints one JSON line per operation and exits 0 when the scenario ran as expected.
import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';

const [endpoint, table, scenario, ...args] = process.argv.slice(2);
if (!endpoint || !table || !scenario) {
  console.error('usage: dynamo-writer.ts <endpoint> <table> <crud|counters> [args]');
  process.exit(2);
}

const client = new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  maxAttempts: 10,
});

function report(step: string, outcome: string): void {
  console.log(JSON.stringify({ step, outcome }));
}

// The fixed sequence whose stream records test/integration/dynamo/cross-process.test.ts expects.
async function crud(t: string): Promise<void> {
  await client.send(new PutItemCommand({ TableName: t, Item: { pk: { S: 'a' }, sk: { S: '1' }, v: { N: '1' } } }));
  report('put a', 'ok');
  await client.send(
    new UpdateItemCommand({
      TableName: t,
      Key: { pk: { S: 'a' }, sk: { S: '1' } },
      UpdateExpression: 'SET v = v + :one, tag = :tag',
      ExpressionAttributeValues: { ':one': { N: '1' }, ':tag': { S: 'x' } },
    }),
  );
  report('update a', 'ok');
  // Identical to the stored item: DynamoDB Streams write no record for it.
  await client.send(
    new PutItemCommand({ TableName: t, Item: { tag: { S: 'x' }, pk: { S: 'a' }, sk: { S: '1' }, v: { N: '2' } } }),
  );
  report('put a unchanged', 'ok');
  await client.send(
    new BatchWriteItemCommand({
      RequestItems: {
        [t]: [
          { PutRequest: { Item: { pk: { S: 'b' }, sk: { S: '1' }, w: { N: '1' } } } },
          { PutRequest: { Item: { pk: { S: 'c' }, sk: { S: '1' }, w: { N: '2' }, set: { SS: ['p', 'q'] } } } },
          { DeleteRequest: { Key: { pk: { S: 'a' }, sk: { S: '1' } } } },
        ],
      },
    }),
  );
  report('batch', 'ok');
  await client.send(new DeleteItemCommand({ TableName: t, Key: { pk: { S: 'a' }, sk: { S: '1' } } }));
  report('delete missing a', 'ok');
  try {
    await client.send(
      new PutItemCommand({
        TableName: t,
        Item: { pk: { S: 'b' }, sk: { S: '1' }, w: { N: '99' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    report('conditional put b', 'unexpected success');
    process.exitCode = 1;
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
    report('conditional put b', 'ConditionalCheckFailedException');
  }
  await client.send(
    new UpdateItemCommand({
      TableName: t,
      Key: { pk: { S: 'c' }, sk: { S: '1' } },
      UpdateExpression: 'SET w = :three',
      ExpressionAttributeValues: { ':three': { N: '3' } },
    }),
  );
  report('update c', 'ok');
  await client.send(new DeleteItemCommand({ TableName: t, Key: { pk: { S: 'b' }, sk: { S: '1' } } }));
  report('delete b', 'ok');
}

// `writers` concurrent loops, each incrementing counter `n` of random keys `updates` times.
async function counters(t: string, keys: number, writers: number, updates: number, prefix: string): Promise<void> {
  const loops = Array.from({ length: writers }, async (_, w) => {
    for (let i = 0; i < updates; i++) {
      const k = (w * 7919 + i * 104729) % keys;
      await client.send(
        new UpdateItemCommand({
          TableName: t,
          Key: { pk: { S: `${prefix}${k}` }, sk: { S: 'counter' } },
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        }),
      );
    }
  });
  await Promise.all(loops);
  report('counters', `ok ${writers * updates}`);
}

async function main(): Promise<void> {
  if (scenario === 'crud') await crud(table!);
  else if (scenario === 'counters') {
    const [keys, writers, updates, prefix] = args;
    await counters(table!, Number(keys), Number(writers), Number(updates), prefix ?? 'k');
  } else throw new Error(`unknown scenario ${scenario}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => client.destroy());
