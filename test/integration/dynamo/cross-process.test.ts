// Writes made by another OS process through the front arrive at a Lambda-style handler in this
// process as DynamoDB stream records with the right images, in per-key order.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo, type StreamDelivery } from '../../../infra/local/dynamo';
import { shardIndex } from '../../../infra/local/dynamo/change-log';
import { byPartitionKey, clientFor, createTestTable, runWriterProcess, silentLogger } from '../../support/dynamo-local';

let dynamo: LocalDynamo;
let client: DynamoDBClient;

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: silentLogger, shardCount: 4 });
  client = clientFor(dynamo.endpoint);
});

afterAll(async () => {
  client.destroy();
  await dynamo.close();
});

function collect(): { records: DynamoDBRecord[]; events: DynamoDBStreamEvent[]; handler: (e: DynamoDBStreamEvent) => Promise<void> } {
  const records: DynamoDBRecord[] = [];
  const events: DynamoDBStreamEvent[] = [];
  return {
    records,
    events,
    handler: async (event) => {
      events.push(event);
      records.push(...event.Records);
    },
  };
}

describe('cross-process writes reach the stream', () => {
  let delivery: StreamDelivery | undefined;
  afterEach(async () => {
    await delivery?.stop();
    delivery = undefined;
  });

  test('Put, Update, Delete and BatchWrite from a child process become exact INSERT/MODIFY/REMOVE records', async () => {
    await createTestTable(client, 'crud');
    const sink = collect();
    delivery = createStreamDelivery({
      source: dynamo.tableStreams.get('crud'),
      handler: sink.handler,
      batchSize: 10,
      maximumBatchingWindowMs: 20,
      logger: silentLogger,
    });

    const lines = await runWriterProcess([dynamo.endpoint, 'crud', 'crud']);
    await delivery.idle();
    expectCrudStream(lines, sink, 'crud');
  });

  test('the same writes under throttling and 5xx faults stream exactly the same records', async () => {
    await createTestTable(client, 'crud-faults');
    const sink = collect();
    delivery = createStreamDelivery({ source: dynamo.tableStreams.get('crud-faults'), handler: sink.handler, batchSize: 10, logger: silentLogger });
    dynamo.faults.set({ throttleRate: 0.3, errorRate: 0.2, seed: 5 });
    try {
      const lines = await runWriterProcess([dynamo.endpoint, 'crud-faults', 'crud']);
      expect(dynamo.faults.counts.throttled + dynamo.faults.counts.errored).toBeGreaterThan(0);
      await delivery.idle();
      expectCrudStream(lines, sink, 'crud-faults');
    } finally {
      dynamo.faults.clear();
    }
  });

  function expectCrudStream(lines: string[], sink: ReturnType<typeof collect>, table: string): void {
    expect(lines.map((l) => JSON.parse(l) as { step: string; outcome: string })).toContainEqual({
      step: 'conditional put b',
      outcome: 'ConditionalCheckFailedException',
    });

    const groups = byPartitionKey(sink.records);
    const a = groups.get('a') ?? [];
    expect(a.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
    expect(a[0]?.dynamodb?.OldImage).toBeUndefined();
    expect(a[0]?.dynamodb?.NewImage).toEqual({ pk: { S: 'a' }, sk: { S: '1' }, v: { N: '1' } });
    expect(a[1]?.dynamodb?.OldImage).toEqual({ pk: { S: 'a' }, sk: { S: '1' }, v: { N: '1' } });
    expect(a[1]?.dynamodb?.NewImage).toEqual({ pk: { S: 'a' }, sk: { S: '1' }, v: { N: '2' }, tag: { S: 'x' } });
    expect(a[2]?.dynamodb?.OldImage).toEqual({ pk: { S: 'a' }, sk: { S: '1' }, v: { N: '2' }, tag: { S: 'x' } });
    expect(a[2]?.dynamodb?.NewImage).toBeUndefined();

    const b = groups.get('b') ?? [];
    // The failed conditional put left no record; the item kept w = 1 until it was deleted.
    expect(b.map((r) => r.eventName)).toEqual(['INSERT', 'REMOVE']);
    expect(b[1]?.dynamodb?.OldImage).toEqual({ pk: { S: 'b' }, sk: { S: '1' }, w: { N: '1' } });

    const c = groups.get('c') ?? [];
    expect(c.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY']);
    expect(c[1]?.dynamodb?.OldImage?.['w']).toEqual({ N: '2' });
    expect(c[1]?.dynamodb?.NewImage?.['w']).toEqual({ N: '3' });
    expect(c[1]?.dynamodb?.NewImage?.['set']?.SS?.slice().sort()).toEqual(['p', 'q']);

    // No record for the unchanged put or the delete of a missing item: 7 changes in all.
    expect(sink.records).toHaveLength(7);

    for (const record of sink.records) {
      expect(record).toMatchObject({
        eventSource: 'aws:dynamodb',
        eventVersion: '1.1',
        awsRegion: 'us-east-1',
        eventSourceARN: dynamo.tableStreams.get(table).streamArn,
      });
      expect(record.eventSourceARN).toMatch(new RegExp(`^arn:aws:dynamodb:us-east-1:\\d{12}:table/${table}/stream/`));
      expect(record.eventID).toMatch(/^[0-9a-f]{32}$/);
      expect(record.dynamodb?.StreamViewType).toBe('NEW_AND_OLD_IMAGES');
      expect(record.dynamodb?.SequenceNumber).toMatch(/^\d{21}$/);
      expect(record.dynamodb?.SizeBytes).toBeGreaterThan(0);
      expect(Number.isInteger(record.dynamodb?.ApproximateCreationDateTime)).toBe(true);
      expect(record.dynamodb?.Keys).toEqual({ pk: record.dynamodb?.Keys?.['pk'], sk: { S: '1' } });
    }
    // Sequence numbers are unique and, within a key, increasing.
    const seqs = sink.records.map((r) => r.dynamodb?.SequenceNumber ?? '');
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const group of groups.values()) {
      const groupSeqs = group.map((r) => r.dynamodb?.SequenceNumber ?? '');
      expect([...groupSeqs].sort()).toEqual(groupSeqs);
    }
    // Batching respected.
    for (const event of sink.events) expect(event.Records.length).toBeLessThanOrEqual(10);
  }

  test('per-key order holds with concurrent writers in two processes colliding on shared keys', async () => {
    await createTestTable(client, 'counters');
    const sink = collect();
    delivery = createStreamDelivery({
      source: dynamo.tableStreams.get('counters'),
      handler: sink.handler,
      batchSize: 25,
      logger: silentLogger,
    });
    // Few enough keys that writers collide on them all the time (the case the front's key locks exist
    // for), enough that they spread over the shards.
    const keys = 8;
    const writers = 6;
    const updates = 30;
    await Promise.all([
      runWriterProcess([dynamo.endpoint, 'counters', 'counters', String(keys), String(writers), String(updates), 'k']),
      runWriterProcess([dynamo.endpoint, 'counters', 'counters', String(keys), String(writers), String(updates), 'k']),
    ]);
    await delivery.idle();

    expect(sink.records).toHaveLength(2 * writers * updates);
    const groups = byPartitionKey(sink.records);
    expect(groups.size).toBeGreaterThan(1);
    let total = 0;
    for (const [pk, group] of groups) {
      // Each record of a key sees the previous one's new image as its old image: n goes 1, 2, 3, ...
      group.forEach((record, i) => {
        expect({ pk, i, event: record.eventName }).toEqual({ pk, i, event: i === 0 ? 'INSERT' : 'MODIFY' });
        expect(record.dynamodb?.NewImage?.['n']).toEqual({ N: String(i + 1) });
        if (i > 0) expect(record.dynamodb?.OldImage?.['n']).toEqual({ N: String(i) });
      });
      total += group.length;
    }
    expect(total).toBe(2 * writers * updates);
    // Keys hash to several shards, and every invocation carries the records of one shard only.
    const shardOfKey = (pk: string): number => shardIndex({ S: pk }, 4);
    expect(new Set([...groups.keys()].map(shardOfKey)).size).toBeGreaterThan(1);
    for (const event of sink.events) {
      expect(new Set(event.Records.map((r) => shardOfKey(r.dynamodb?.Keys?.['pk']?.S ?? ''))).size).toBe(1);
    }
  });
});
