// Front behaviours beyond the basics: multi-table batches, replies relayed unchanged, persistence.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BatchWriteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { startLocalDynamo } from '../../../infra/local/dynamo';
import { clientFor, createTestTable, pkOf, silentLogger } from '../../support/dynamo-local';

test('a BatchWriteItem over two tables records into each table stream; ReturnValues are relayed', async () => {
  const dynamo = await startLocalDynamo({ logger: silentLogger });
  const client = clientFor(dynamo.endpoint);
  try {
    await createTestTable(client, 'left');
    await createTestTable(client, 'right');
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          left: [{ PutRequest: { Item: { pk: { S: 'l1' }, sk: { S: 's' } } } }],
          right: [
            { PutRequest: { Item: { pk: { S: 'r1' }, sk: { S: 's' } } } },
            { PutRequest: { Item: { pk: { S: 'r2' }, sk: { S: 's' } } } },
          ],
        },
      }),
    );
    const old = await client.send(
      new PutItemCommand({ TableName: 'left', Item: { pk: { S: 'l1' }, sk: { S: 's' }, x: { N: '1' } }, ReturnValues: 'ALL_OLD' }),
    );
    expect(old.Attributes).toEqual({ pk: { S: 'l1' }, sk: { S: 's' } });
    const updated = await client.send(
      new UpdateItemCommand({
        TableName: 'right',
        Key: { pk: { S: 'r1' }, sk: { S: 's' } },
        UpdateExpression: 'ADD n :one',
        ExpressionAttributeValues: { ':one': { N: '1' } },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    expect(updated.Attributes).toEqual({ n: { N: '1' } });

    const left = dynamo.tableStreams.get('left').openReader();
    const right = dynamo.tableStreams.get('right').openReader();
    const all = (reader: typeof left): ReturnType<typeof left.peek> =>
      reader.shardIds.flatMap((_, i) => reader.peek(i, 100)).sort((a, b) => ((a.dynamodb?.SequenceNumber ?? '') < (b.dynamodb?.SequenceNumber ?? '') ? -1 : 1));
    expect(all(left).map((r) => [r.eventName, pkOf(r)])).toEqual([['INSERT', 'l1'], ['MODIFY', 'l1']]);
    expect(all(right).map((r) => [r.eventName, pkOf(r)]).sort()).toEqual([['INSERT', 'r1'], ['INSERT', 'r2'], ['MODIFY', 'r1']].sort());
    expect(dynamo.stats).toMatchObject({ records: 5, lostRecords: 0 });
    left.close();
    right.close();
  } finally {
    client.destroy();
    await dynamo.close();
  }
});

test('with a path, items survive a restart (the change log does not)', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'local-dynamo-'));
  try {
    const first = await startLocalDynamo({ logger: silentLogger, path: dir });
    const client1 = clientFor(first.endpoint);
    await createTestTable(client1, 'kept');
    await client1.send(new PutItemCommand({ TableName: 'kept', Item: { pk: { S: 'p' }, sk: { S: 's' }, v: { S: 'durable' } } }));
    client1.destroy();
    await first.close();

    const second = await startLocalDynamo({ logger: silentLogger, path: dir });
    const client2 = clientFor(second.endpoint);
    try {
      const got = await client2.send(new GetItemCommand({ TableName: 'kept', Key: { pk: { S: 'p' }, sk: { S: 's' } }, ConsistentRead: true }));
      expect(got.Item?.['v']).toEqual({ S: 'durable' });
      expect(second.tableStreams.get('kept').retainedRecords).toBe(0);
    } finally {
      client2.destroy();
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
