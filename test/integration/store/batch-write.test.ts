// batchPut against real dynalite: chunking, replay idempotency, UnprocessedItems retries (injected
// by wrapping the real client), throttling retried by the SDK (injected at the HTTP layer).

import { batchPut, fullJitterDelay, UnwrittenItemsError, type KeyedItem } from '../../../common/store/batch-write';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { ThrottlingHttpHandler, withUnprocessedItems } from '../../support/store-faults';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

const noSleep = async (): Promise<void> => {};

function events(count: number, pk = 'ENVOY#n1'): KeyedItem[] {
  return Array.from({ length: count }, (_, i) => ({
    pk,
    sk: `EVENT#${String(i).padStart(4, '0')}`,
    kind: 'test',
    n: i,
  }));
}

async function listPartition(tableName: string, pk: string, operations = fixture.operations()): Promise<KeyedItem[]> {
  const items: KeyedItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await operations.query({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ExclusiveStartKey: start,
    });
    items.push(...((page.Items ?? []) as KeyedItem[]));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

test('writes 60 items in chunks of at most 25 and they read back intact', async () => {
  const tableName = await fixture.newTable();
  const real = fixture.operations();
  const sizes: number[] = [];
  const counting = { ...real, batchWrite: (input: Parameters<typeof real.batchWrite>[0]) => {
    sizes.push(input.RequestItems?.[tableName]?.length ?? 0);
    return real.batchWrite(input);
  } };
  const report = await batchPut(counting, events(60), { tableName });
  expect(report).toEqual({ written: 60, calls: 3, retries: 0 });
  expect(sizes.sort((a, b) => a - b)).toEqual([10, 25, 25]);
  const stored = await listPartition(tableName, 'ENVOY#n1');
  expect(stored).toHaveLength(60);
  expect(stored.map((item) => item.n)).toEqual(Array.from({ length: 60 }, (_, i) => i));
});

test('duplicate keys in one input are collapsed (BatchWriteItem rejects duplicates), last wins', async () => {
  const tableName = await fixture.newTable();
  const ops = fixture.operations();
  const first = { pk: 'ENVOY#d', sk: 'EVENT#1', kind: 'test', n: 1 };
  const second = { ...first, n: 2 };
  const report = await batchPut(ops, [first, second], { tableName });
  expect(report.written).toBe(1);
  expect(await listPartition(tableName, 'ENVOY#d')).toEqual([second]);
});

test('replaying the same batch writes the same items (count unchanged)', async () => {
  const tableName = await fixture.newTable();
  const ops = fixture.operations();
  await batchPut(ops, events(30), { tableName });
  await batchPut(ops, events(30), { tableName });
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(30);
});

test('UnprocessedItems are retried with backoff until every item lands', async () => {
  const tableName = await fixture.newTable();
  const fault = withUnprocessedItems(fixture.operations(), 4);
  const delays: number[] = [];
  const report = await batchPut(fault.operations, events(60), {
    tableName,
    concurrency: 1,
    baseDelayMs: 10,
    maxDelayMs: 1_000,
    random: () => 0.999,
    sleep: async (ms) => {
      delays.push(ms);
    },
  });
  expect(fault.reportedUnprocessed()).toBeGreaterThan(0);
  expect(report.written).toBe(60);
  expect(report.retries).toBe(4);
  expect(report.calls).toBe(7);
  // The first chunk was refused half-way four times: the backoff cap doubles each retry.
  expect(delays).toEqual([9, 19, 39, 79]);
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(60);
});

test('after the bounded attempts, the unwritten items are returned in the error, none dropped', async () => {
  const tableName = await fixture.newTable();
  // Every call writes nothing and reports everything unprocessed.
  const fault = withUnprocessedItems(fixture.operations(), 1_000, () => 0);
  const input = events(30);
  const error = await batchPut(fault.operations, input, { tableName, maxAttempts: 3, sleep: noSleep }).catch(
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UnwrittenItemsError);
  const unwritten = (error as UnwrittenItemsError).unwritten;
  expect(unwritten.map((item) => item.sk).sort()).toEqual(input.map((item) => item.sk).sort());
  expect((error as UnwrittenItemsError).report).toEqual({ written: 0, calls: 6, retries: 4 });
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(0);
});

test('a partially failing batch reports exactly the items that did not land', async () => {
  const tableName = await fixture.newTable();
  // Each call writes only its first 5 requests: with 3 attempts per chunk, 15 of 25 land.
  const fault = withUnprocessedItems(fixture.operations(), 1_000, (n) => Math.min(5, n));
  const error = (await batchPut(fault.operations, events(25), { tableName, maxAttempts: 3, sleep: noSleep }).catch(
    (caught: unknown) => caught,
  )) as UnwrittenItemsError;
  expect(error).toBeInstanceOf(UnwrittenItemsError);
  const stored = await listPartition(tableName, 'ENVOY#n1');
  expect(stored).toHaveLength(15);
  const storedKeys = new Set(stored.map((item) => item.sk));
  expect(error.unwritten).toHaveLength(10);
  expect(error.unwritten.every((item) => !storedKeys.has(item.sk))).toBe(true);
});

test('throttling: the SDK retries ProvisionedThroughputExceededException and the write lands once', async () => {
  const tableName = await fixture.newTable();
  const handler = new ThrottlingHttpHandler(2, 'BatchWriteItem');
  const ops = fixture.operations({ requestHandler: handler });
  const report = await batchPut(ops, events(1), { tableName });
  expect(handler.throttled).toBe(2);
  // One BatchWriteItem reached dynalite; the adapter saw a single successful call.
  expect(handler.forwarded.get('BatchWriteItem')).toBe(1);
  expect(report).toEqual({ written: 1, calls: 1, retries: 0 });
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(1);
});

test('throttling beyond the SDK attempts is retried by the adapter, then lands once', async () => {
  const tableName = await fixture.newTable();
  // SDK maxAttempts 2: two throttles exhaust the SDK once; the adapter's own retry then succeeds.
  const handler = new ThrottlingHttpHandler(2, 'BatchWriteItem');
  const ops = fixture.operations({ requestHandler: handler }, 2);
  const report = await batchPut(ops, events(3), { tableName, sleep: noSleep });
  expect(handler.throttled).toBe(2);
  expect(handler.forwarded.get('BatchWriteItem')).toBe(1);
  expect(report).toEqual({ written: 3, calls: 2, retries: 1 });
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(3);
});

test('an error other than throttling is not retried here; the items come back marked retryable', async () => {
  const tableName = await fixture.newTable();
  const ops = fixture.operations();
  const error = (await batchPut(ops, events(2), { tableName: 'no-such-table', sleep: noSleep }).catch(
    (caught: unknown) => caught,
  )) as UnwrittenItemsError;
  expect(error).toBeInstanceOf(UnwrittenItemsError);
  expect(error.unwritten).toHaveLength(2);
  expect(error.report.calls).toBe(1);
  expect(error.causes.join()).toMatch(/ResourceNotFoundException/);
  // Not the items' fault: the caller may send them again (e.g. once the table exists).
  expect(error.failures.every((failure) => failure.retryable)).toBe(true);
  expect(await listPartition(tableName, 'ENVOY#n1')).toHaveLength(0);
});

test('one item DynamoDB refuses (over 400 KB) fails alone: the chunk is split and the rest land', async () => {
  const tableName = await fixture.newTable();
  const ops = fixture.operations();
  const input = events(25);
  const oversize = { ...input[17], pk: 'ENVOY#n1', sk: 'EVENT#0017', blob: 'x'.repeat(410 * 1024) };
  input[17] = oversize;
  const error = (await batchPut(ops, input, { tableName, sleep: noSleep }).catch((caught: unknown) => caught)) as UnwrittenItemsError;
  expect(error).toBeInstanceOf(UnwrittenItemsError);
  expect(error.failures).toHaveLength(1);
  expect(error.failures[0]).toMatchObject({ item: { sk: 'EVENT#0017' }, retryable: false });
  expect(error.failures[0]?.cause).toMatch(/ValidationException/);
  expect(error.report.written).toBe(24);
  const stored = await listPartition(tableName, 'ENVOY#n1');
  expect(stored).toHaveLength(24);
  expect(stored.some((item) => item.sk === 'EVENT#0017')).toBe(false);
});

test('full jitter stays within [0, min(max, base * 2^retry))', () => {
  expect(fullJitterDelay(0, 50, 5_000, () => 0)).toBe(0);
  expect(fullJitterDelay(3, 50, 5_000, () => 0.5)).toBe(200);
  expect(fullJitterDelay(20, 50, 5_000, () => 0.999999)).toBeLessThan(5_000);
});
