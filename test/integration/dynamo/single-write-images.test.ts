// The front takes a single-item write's images from the write's own reply (ReturnValues) instead of
// reading before and after: the records, and the replies the client sees, must be exactly as with reads.
import { DeleteItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { hasOnlyStoredNumbers, planSingleWrite } from '../../../infra/local/dynamo/single-write-images';
import { clientFor, createTestTable, silentLogger } from '../../support/dynamo-local';

describe('planSingleWrite', () => {
  const item = { pk: { S: 'p' }, sk: { S: 's' }, n: { N: '12' } };
  const key = { pk: { S: 'p' }, sk: { S: 's' } };
  test.each([
    ['PutItem, no ReturnValues', 'PutItem', { TableName: 't', Item: item }, { returns: 'ALL_OLD', clientWantsAttributes: false, knownNewImage: { image: item } }],
    ['PutItem, ALL_OLD asked', 'PutItem', { TableName: 't', Item: item, ReturnValues: 'ALL_OLD' }, { returns: 'ALL_OLD', clientWantsAttributes: true }],
    ['PutItem, a number not in stored form', 'PutItem', { TableName: 't', Item: { ...item, n: { N: '1e3' } } }, { returns: 'ALL_OLD', knownNewImage: undefined }],
    ['DeleteItem', 'DeleteItem', { TableName: 't', Key: key, ReturnValues: 'NONE' }, { returns: 'ALL_OLD', clientWantsAttributes: false, knownNewImage: { image: undefined } }],
    ['UpdateItem', 'UpdateItem', { TableName: 't', Key: key, UpdateExpression: 'SET a = :a' }, { returns: 'ALL_NEW', clientWantsAttributes: false, knownNewImage: undefined }],
    ['UpdateItem, ALL_NEW asked', 'UpdateItem', { TableName: 't', Key: key, ReturnValues: 'ALL_NEW' }, { returns: 'ALL_NEW', clientWantsAttributes: true }],
  ])('%s', (_, operation, body, expected) => {
    const plan = planSingleWrite(operation, body);
    const { knownNewImage, ...rest } = expected as typeof expected & { knownNewImage?: unknown };
    expect(plan).toMatchObject(rest);
    if ('knownNewImage' in expected) expect(plan?.knownNewImage).toEqual(knownNewImage);
    expect(JSON.parse(plan?.body.toString('utf8') ?? '{}')).toEqual({ ...body, ReturnValues: expected.returns });
  });

  test.each([
    ['UpdateItem UPDATED_NEW', 'UpdateItem', { TableName: 't', Key: key, ReturnValues: 'UPDATED_NEW' }],
    ['UpdateItem ALL_OLD', 'UpdateItem', { TableName: 't', Key: key, ReturnValues: 'ALL_OLD' }],
    ['PutItem ALL_NEW (invalid: dynalite answers it)', 'PutItem', { TableName: 't', Item: item, ReturnValues: 'ALL_NEW' }],
    ['PutItem without an Item', 'PutItem', { TableName: 't' }],
    ['ReturnValues not a string', 'DeleteItem', { TableName: 't', Key: key, ReturnValues: 3 }],
    ['BatchWriteItem', 'BatchWriteItem', { RequestItems: {} }],
    ['not an object', 'PutItem', 'x'],
  ])('%s keeps the read-write-read path', (_, operation, body) => {
    expect(planSingleWrite(operation, body)).toBeUndefined();
  });

  test.each([
    ['0', true], ['-7', true], ['12.5', true], ['-0.25', true],
    ['-0', false], ['1e3', false], ['1.50', false], ['007', false], ['.5', false], ['5.', false],
  ])('number %s is in stored form: %s', (text, expected) => {
    expect(hasOnlyStoredNumbers({ a: { N: text } })).toBe(expected);
    expect(hasOnlyStoredNumbers({ a: { M: { b: { L: [{ S: 'x' }, { NS: ['1', text] }] } } } })).toBe(expected);
  });
});

describe('the front, single-item writes', () => {
  let dynamo: LocalDynamo;
  let client: DynamoDBClient;
  beforeAll(async () => {
    dynamo = await startLocalDynamo({ logger: silentLogger });
    client = clientFor(dynamo.endpoint);
    await createTestTable(client, 'single');
  });
  afterAll(async () => {
    client.destroy();
    await dynamo.close();
  });

  const key = (pk: string) => ({ pk: { S: pk }, sk: { S: 's' } });
  function recordsOf(pk: string): DynamoDBRecord[] {
    const reader = dynamo.tableStreams.get('single').openReader();
    try {
      return reader.shardIds
        .flatMap((_, i) => reader.peek(i, 1000))
        .filter((r) => r.dynamodb?.Keys?.['pk']?.S === pk)
        .sort((a, b) => ((a.dynamodb?.SequenceNumber ?? '') < (b.dynamodb?.SequenceNumber ?? '') ? -1 : 1));
    } finally {
      reader.close();
    }
  }
  const images = (records: DynamoDBRecord[]) => records.map((r) => [r.eventName, r.dynamodb?.OldImage, r.dynamodb?.NewImage]);

  test('puts, an unchanged put, an update and a delete give the records DynamoDB Streams would', async () => {
    const first = await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('a'), v: { N: '1' } } }));
    expect(first.Attributes).toBeUndefined();
    await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('a'), v: { N: '1' } } })); // no change: no record
    const second = await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('a'), v: { N: '2' } } }));
    expect(second.Attributes).toBeUndefined(); // the client did not ask for them
    const updated = await client.send(
      new UpdateItemCommand({ TableName: 'single', Key: key('a'), UpdateExpression: 'SET w = :w', ExpressionAttributeValues: { ':w': { S: 'x' } } }),
    );
    expect(updated.Attributes).toBeUndefined();
    const deleted = await client.send(new DeleteItemCommand({ TableName: 'single', Key: key('a') }));
    expect(deleted.Attributes).toBeUndefined();
    await client.send(new DeleteItemCommand({ TableName: 'single', Key: key('a') })); // nothing there: no record
    expect(images(recordsOf('a'))).toEqual([
      ['INSERT', undefined, { ...key('a'), v: { N: '1' } }],
      ['MODIFY', { ...key('a'), v: { N: '1' } }, { ...key('a'), v: { N: '2' } }],
      ['MODIFY', { ...key('a'), v: { N: '2' } }, { ...key('a'), v: { N: '2' }, w: { S: 'x' } }],
      ['REMOVE', { ...key('a'), v: { N: '2' }, w: { S: 'x' } }, undefined],
    ]);
  });

  test('the client gets the Attributes it asked for, and only those', async () => {
    await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('b'), v: { N: '1' } } }));
    const old = await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('b'), v: { N: '2' } }, ReturnValues: 'ALL_OLD' }));
    expect(old.Attributes).toEqual({ ...key('b'), v: { N: '1' } });
    const allNew = await client.send(
      new UpdateItemCommand({ TableName: 'single', Key: key('b'), UpdateExpression: 'ADD v :one', ExpressionAttributeValues: { ':one': { N: '1' } }, ReturnValues: 'ALL_NEW' }),
    );
    expect(allNew.Attributes).toEqual({ ...key('b'), v: { N: '3' } });
    const updatedNew = await client.send(
      new UpdateItemCommand({ TableName: 'single', Key: key('b'), UpdateExpression: 'ADD v :one', ExpressionAttributeValues: { ':one': { N: '1' } }, ReturnValues: 'UPDATED_NEW' }),
    );
    expect(updatedNew.Attributes).toEqual({ v: { N: '4' } });
    const gone = await client.send(new DeleteItemCommand({ TableName: 'single', Key: key('b'), ReturnValues: 'ALL_OLD' }));
    expect(gone.Attributes).toEqual({ ...key('b'), v: { N: '4' } });
    expect(recordsOf('b').map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY', 'MODIFY', 'REMOVE']);
  });

  test('a put whose numbers dynalite rewrites records the stored image', async () => {
    await client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('c'), v: { N: '1.50' }, e: { N: '1e3' } } }));
    expect(images(recordsOf('c'))).toEqual([['INSERT', undefined, { ...key('c'), v: { N: '1.5' }, e: { N: '1000' } }]]);
  });

  test('a failed conditional write records nothing and the client sees the condition failure', async () => {
    await expect(
      client.send(new PutItemCommand({ TableName: 'single', Item: { ...key('d') }, ConditionExpression: 'attribute_exists(pk)' })),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(recordsOf('d')).toEqual([]);
    expect(dynamo.stats.lostRecords).toBe(0);
  });
});
