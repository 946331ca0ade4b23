// Pure pieces of the local DynamoDB: change classification, canonical images, key locks, shard
// hashing, the seeded fault random source, the change log's cursors.
import fc from 'fast-check';
import { SequenceCounter, shardIndex, TableChangeLog } from '../../../infra/local/dynamo/change-log';
import { mulberry32 } from '../../../infra/local/dynamo/faults';
import { fromLambdaHandler } from '../../../infra/local/dynamo/lambda-handler';
import { KeyLocks } from '../../../infra/local/dynamo/key-lock';
import { canonicalJson, classifyChange, formatSequenceNumber } from '../../../infra/local/dynamo/stream-record';
import type { AttributeMap } from '../../../infra/local/dynamo/wire';

describe('classifyChange', () => {
  const a: AttributeMap = { pk: { S: 'a' }, v: { N: '1' }, s: { SS: ['x', 'y'] } };
  const cases: [string, AttributeMap | undefined, AttributeMap | undefined, string | undefined][] = [
    ['insert', undefined, a, 'INSERT'],
    ['remove', a, undefined, 'REMOVE'],
    ['modify', a, { ...a, v: { N: '2' } }, 'MODIFY'],
    ['unchanged', a, { s: { SS: ['y', 'x'] }, v: { N: '1' }, pk: { S: 'a' } }, undefined],
    ['nothing', undefined, undefined, undefined],
  ];
  test.each(cases)('%s', (_, before, after, expected) => {
    expect(classifyChange(before, after)).toBe(expected);
  });

  test('list order matters, set order does not', () => {
    expect(canonicalJson({ L: [{ S: 'a' }, { S: 'b' }] })).not.toBe(canonicalJson({ L: [{ S: 'b' }, { S: 'a' }] }));
    expect(canonicalJson({ NS: ['1', '2'] })).toBe(canonicalJson({ NS: ['2', '1'] }));
  });
});

test('sequence numbers compare as strings in numeric order', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.bigInt({ min: 0n, max: 10n ** 20n }), (x, y) => {
      const [sx, sy] = [formatSequenceNumber(x), formatSequenceNumber(y)];
      expect(sx < sy).toBe(x < y);
    }),
  );
  const counter = new SequenceCounter();
  expect(counter.take() < counter.take()).toBe(true);
});

test('shardIndex is stable and in range', () => {
  fc.assert(
    fc.property(fc.string(), fc.integer({ min: 1, max: 64 }), (s, n) => {
      const i = shardIndex({ S: s }, n);
      expect(i).toBeGreaterThanOrEqual(0);
      expect(i).toBeLessThan(n);
      expect(shardIndex({ S: s }, n)).toBe(i);
    }),
  );
});

test('KeyLocks serialise one key and let other keys through', async () => {
  const locks = new KeyLocks();
  const order: string[] = [];
  const releaseA1 = await locks.acquire('a');
  const a2 = locks.acquire('a').then((release) => {
    order.push('a2');
    release();
  });
  const releaseB = await locks.acquire('b'); // not blocked by a
  order.push('b');
  releaseB();
  await Promise.resolve();
  expect(order).toEqual(['b']);
  releaseA1();
  await a2;
  expect(order).toEqual(['b', 'a2']);
  expect(locks.size).toBe(0);
});

test('KeyLocks.acquireAll on overlapping key sets does not deadlock', async () => {
  const locks = new KeyLocks();
  let done = 0;
  await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      const keys = i % 2 === 0 ? ['x', 'y', 'z'] : ['z', 'y', 'x'];
      const release = await locks.acquireAll(keys);
      await new Promise((resolve) => setImmediate(resolve));
      done++;
      release();
    }),
  );
  expect(done).toBe(50);
  expect(locks.size).toBe(0);
});

test('mulberry32 replays the same sequence for a seed', () => {
  const a = mulberry32(9);
  const b = mulberry32(9);
  const xs = Array.from({ length: 5 }, () => a());
  expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
  expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
});

test('a change log without readers keeps a bounded tail', () => {
  const log = new TableChangeLog({
    tableName: 'bounded',
    region: 'us-east-1',
    shardCount: 1,
    sequence: new SequenceCounter(),
    now: () => 0,
    maxUnreadRecordsPerShard: 3,
  });
  for (let i = 0; i < 5; i++) log.append({ keys: { pk: { S: 'p' } }, oldImage: undefined, newImage: { pk: { S: 'p' }, i: { N: String(i) } } }, 'pk');
  expect(log.retainedRecords).toBe(3);
  const reader = log.openReader();
  expect(reader.peek(0, 10).map((r) => r.dynamodb?.NewImage?.['i']?.N)).toEqual(['2', '3', '4']);
  reader.advance(0, 2);
  expect(log.retainedRecords).toBe(1);
  reader.close();
});

test('records passed by every reader are compacted away (bounded memory)', () => {
  const log = new TableChangeLog({
    tableName: 'compact',
    region: 'us-east-1',
    shardCount: 2,
    sequence: new SequenceCounter(),
    now: () => 0,
    maxUnreadRecordsPerShard: 100_000,
  });
  const reader = log.openReader();
  for (let i = 0; i < 10_000; i++) {
    log.append({ keys: { pk: { S: `p${i % 7}` } }, oldImage: undefined, newImage: { pk: { S: `p${i % 7}` }, i: { N: String(i) } } }, 'pk');
    for (let shard = 0; shard < 2; shard++) reader.advance(shard, reader.pending(shard));
  }
  expect(log.retainedRecords).toBe(0);
  expect(log.storedRecords).toBeLessThanOrEqual(2 * 1024);
  reader.close();
});

describe('fromLambdaHandler', () => {
  const event = { Records: [] };
  test('async handlers resolve with their batch response', async () => {
    const wrapped = fromLambdaHandler(async (_e, context) => {
      expect(context.functionName).toBe('convergence');
      expect(context.invokedFunctionArn).toBe('arn:aws:lambda:us-east-1:000000000000:function:convergence');
      expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
      return { batchItemFailures: [{ itemIdentifier: '1' }] };
    }, { functionName: 'convergence' });
    await expect(wrapped(event)).resolves.toEqual({ batchItemFailures: [{ itemIdentifier: '1' }] });
  });
  test('callback handlers and errors (thrown, rejected, called back) are honoured', async () => {
    await expect(fromLambdaHandler((_e, _c, cb) => cb(null, { batchItemFailures: [] }), { functionName: 'f' })(event)).resolves.toEqual({ batchItemFailures: [] });
    await expect(fromLambdaHandler((_e, _c, cb) => cb('bad'), { functionName: 'f' })(event)).rejects.toThrow('bad');
    await expect(fromLambdaHandler(() => { throw new Error('sync'); }, { functionName: 'f' })(event)).rejects.toThrow('sync');
    await expect(fromLambdaHandler(async () => { throw new Error('async'); }, { functionName: 'f' })(event)).rejects.toThrow('async');
  });
});
