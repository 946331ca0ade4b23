// The stream delivery fault seam (infra/local/dynamo/stream-faults.ts): injected duplicates really
// reach the handler twice, injected reorders never swap two records of one item, and both keep the
// event-source-mapping rules (partial failures checkpoint by sequence number, nothing is lost).
import { BatchWriteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import fc from 'fast-check';
import { createStreamDelivery, type StreamDelivery } from '../../../infra/local/dynamo';
import { itemIdentity, reorderAcrossItems, streamFaultsFor, StreamFaultSeam } from '../../../infra/local/dynamo/stream-faults';
import { mulberry32 } from '../../../infra/local/dynamo/faults';
import { silentLogger, useDeliveryDynamo } from '../../support/dynamo-local';

const local = useDeliveryDynamo({ shardCount: 1, tablePrefix: 'faulted' });
const { freshTable } = local;

const seq = (record: DynamoDBRecord): string => record.dynamodb?.SequenceNumber ?? '';
const version = (record: DynamoDBRecord): number => Number(record.dynamodb?.NewImage?.['v']?.N ?? '-1');

/** `items` items, each written `versions` times (v = 0..versions-1), interleaved, in one batch write per round. */
async function writeRounds(table: string, items: number, versions: number): Promise<void> {
  for (let v = 0; v < versions; v++) {
    await local.client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [table]: Array.from({ length: items }, (_, i) => ({ PutRequest: { Item: { pk: { S: `item-${i}` }, sk: { S: 'STATE' }, v: { N: String(v) } } } })),
        },
      }),
    );
  }
}

function start(opts: Omit<Parameters<typeof createStreamDelivery>[0], 'logger' | 'retryBackoff'>): StreamDelivery {
  const delivery = createStreamDelivery({ ...opts, logger: silentLogger, retryBackoff: { initialMs: 5, maxMs: 20 } });
  local.deliveries.push(delivery);
  return delivery;
}

/** Within each invocation, an item's records must come in increasing sequence order. */
function itemOrderViolations(events: DynamoDBStreamEvent[]): string[] {
  const problems: string[] = [];
  for (const [index, event] of events.entries()) {
    const last = new Map<string, string>();
    for (const record of event.Records) {
      const item = itemIdentity(record);
      const previous = last.get(item);
      if (previous !== undefined && previous >= seq(record)) problems.push(`invocation ${index}: ${item} got ${seq(record)} after ${previous}`);
      last.set(item, seq(record));
    }
  }
  return problems;
}

describe('reorderAcrossItems (pure)', () => {
  const record = (item: number, n: number): DynamoDBRecord => ({
    dynamodb: { Keys: { pk: { S: `i${item}` }, sk: { S: 'STATE' } }, SequenceNumber: String(n).padStart(6, '0') },
  });

  test('is a permutation that keeps every item\'s records in order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 40 }), fc.integer(), (items, seed) => {
        const records = items.map((item, n) => record(item, n));
        const shuffled = reorderAcrossItems(records, mulberry32(seed));
        expect([...shuffled].sort((a, b) => seq(a).localeCompare(seq(b)))).toEqual(records);
        expect(itemOrderViolations([{ Records: shuffled }])).toEqual([]);
      }),
    );
  });

  test('does reorder records of different items', () => {
    const records = Array.from({ length: 20 }, (_, n) => record(n % 5, n));
    const shuffled = reorderAcrossItems(records, mulberry32(3));
    expect(shuffled.map(seq)).not.toEqual(records.map(seq));
  });

  test('never moves records of a single item', () => {
    const records = Array.from({ length: 10 }, (_, n) => record(1, n));
    expect(reorderAcrossItems(records, mulberry32(5)).map(seq)).toEqual(records.map(seq));
  });

  test('rates outside 0..1 are clamped, non-numbers refused', () => {
    const seam = new StreamFaultSeam();
    seam.set({ duplicateRate: 7, reorderRate: -1 });
    expect(seam.active).toBe(true);
    expect(() => seam.set({ duplicateRate: Number.NaN })).toThrow(/duplicateRate/);
  });
});

test('duplicate: every record reaches the handler twice, in per-item order, and the faults are counted', async () => {
  const table = await freshTable();
  const source = local.dynamo.tableStreams.get(table);
  const seam = streamFaultsFor(source);
  seam.set({ duplicateRate: 1, seed: 11 });
  await writeRounds(table, 3, 4);
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({ source, batchSize: 5, handler: async (event) => void events.push(event) });
  await delivery.idle();
  const seen = new Map<string, number>();
  for (const record of events.flatMap((e) => e.Records)) seen.set(seq(record), (seen.get(seq(record)) ?? 0) + 1);
  expect(seen.size).toBe(12);
  // Batch size 5 over 12 records: the first delivery and the one redelivery of each batch start.
  for (const count of seen.values()) expect(count).toBeGreaterThanOrEqual(2);
  expect(itemOrderViolations(events)).toEqual([]);
  expect(seam.counts.duplicatedBatches).toBeGreaterThanOrEqual(3);
  expect(seam.counts.duplicatedRecords).toBeGreaterThanOrEqual(12);
  expect(delivery.stats.droppedRecords).toBe(0);
  seam.clear();
  expect(seam.active).toBe(false);
});

test('reorder: batches are shuffled across items only; every record delivered once', async () => {
  const table = await freshTable();
  const source = local.dynamo.tableStreams.get(table);
  const seam = streamFaultsFor(source);
  seam.set({ reorderRate: 1, seed: 21 });
  await writeRounds(table, 6, 5);
  const events: DynamoDBStreamEvent[] = [];
  const delivery = start({ source, batchSize: 100, maximumBatchingWindowMs: 50, handler: async (event) => void events.push(event) });
  await delivery.idle();
  const records = events.flatMap((e) => e.Records);
  expect(records).toHaveLength(30);
  expect(new Set(records.map(seq)).size).toBe(30);
  expect(itemOrderViolations(events)).toEqual([]);
  // Each item's versions arrive 0, 1, 2, 3, 4: what a handler keeping "latest per item" relies on.
  for (let i = 0; i < 6; i++) {
    expect(records.filter((r) => r.dynamodb?.Keys?.['pk']?.S === `item-${i}`).map(version)).toEqual([0, 1, 2, 3, 4]);
  }
  const delivered = records.map(seq);
  expect(delivered).not.toEqual([...delivered].sort());
  expect(seam.counts.reorderedBatches).toBeGreaterThanOrEqual(1);
  expect(seam.counts.reorderedRecords).toBeGreaterThan(0);
  seam.clear();
});

test('reorder + partial failure: the checkpoint follows sequence numbers, not the shuffled positions', async () => {
  const table = await freshTable();
  const source = local.dynamo.tableStreams.get(table);
  const seam = streamFaultsFor(source);
  seam.set({ reorderRate: 1, seed: 33 });
  await writeRounds(table, 4, 3);
  const events: DynamoDBStreamEvent[] = [];
  let failedOnce = false;
  const delivery = start({
    source,
    batchSize: 100,
    maximumBatchingWindowMs: 50,
    handler: async (event) => {
      events.push(event);
      if (failedOnce) return undefined;
      failedOnce = true;
      // Fail the second half of the batch *in the order the handler saw it*: whatever the shuffle,
      // Lambda checkpoints below the lowest failed sequence number and resumes there.
      const failed = event.Records.slice(Math.floor(event.Records.length / 2));
      return { batchItemFailures: failed.map((r) => ({ itemIdentifier: seq(r) })) };
    },
  });
  await delivery.idle();
  const first = events[0]?.Records ?? [];
  const lowestFailed = first.slice(Math.floor(first.length / 2)).map(seq).sort()[0] ?? '';
  const retried = (events[1]?.Records ?? []).map(seq).sort();
  // Redelivery starts exactly at the lowest failed sequence number and includes everything after it.
  expect(retried[0]).toBe(lowestFailed);
  expect(retried).toEqual(first.map(seq).filter((s) => s >= lowestFailed).sort());
  // Nothing lost: every record delivered at least once, none dropped.
  expect(new Set(events.flatMap((e) => e.Records).map(seq)).size).toBe(12);
  expect(delivery.stats.droppedRecords).toBe(0);
  seam.clear();
});

test('a seam passed explicitly overrides the table\'s, and an inactive seam changes nothing', async () => {
  const table = await freshTable();
  const source = local.dynamo.tableStreams.get(table);
  const own = new StreamFaultSeam();
  own.set({ duplicateRate: 1, seed: 2 });
  await local.client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'a' }, sk: { S: 'STATE' }, v: { N: '1' } } }));
  const plain: DynamoDBStreamEvent[] = [];
  const faulted: DynamoDBStreamEvent[] = [];
  const a = start({ source, handler: async (event) => void plain.push(event) });
  const b = start({ source, handler: async (event) => void faulted.push(event), faults: own });
  await Promise.all([a.idle(), b.idle()]);
  expect(plain.flatMap((e) => e.Records)).toHaveLength(1);
  expect(faulted.flatMap((e) => e.Records)).toHaveLength(2);
  expect(own.counts.duplicatedBatches).toBe(1);
  expect(streamFaultsFor(source).counts.duplicatedBatches).toBe(0);
});
