// The aggregate store skips validating a shard it already parsed or wrote at the same version (issue
// 9). What it returns must still be exactly what is stored: another writer's newer version, or a
// corrupt item, is never answered from the cache.
import pino from 'pino';

import { emptyShard, applyMember, type AggregateShard, type Member } from '../../../common/core';
import { aggregateShardKey } from '../../../common/store';
import { DynamoAggregateStore } from '../../../common/store/aggregates';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';

const LINEAGE = 'gw-c.boot1.edge';
const logger = pino({ level: 'silent' });

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

const member = (t: number, r: number): Member => ({ t, r, s: 1_000 + r, live: true, k: 1 });

function withMembers(count: number, from: AggregateShard = emptyShard(LINEAGE, 3)): AggregateShard {
  let shard = from;
  for (let i = 0; i < count; i++) shard = applyMember(shard, `n${i}`, member(5, shard.v + 1)).shard;
  return shard;
}

test('a written shard reads back equal and frozen; another writer\'s newer version is read, not the cached one', async () => {
  const tableName = await fixture.newTable();
  const ours = new DynamoAggregateStore({ tableName, operations: fixture.operations(), logger });
  const theirs = new DynamoAggregateStore({ tableName, operations: fixture.operations(), logger });

  const first = withMembers(3);
  expect(await ours.putShard(first, undefined)).toBe('written');
  const read = await ours.getShard(LINEAGE, 3);
  expect(read).toEqual({ status: 'found', value: first });
  expect(ours.shardParsesSkipped).toBe(1); // the text read back is the text written
  expect(read.status === 'found' && Object.isFrozen(read.value.members)).toBe(true);

  // Another container writes the next version: ours must see it.
  const seen = await theirs.getShard(LINEAGE, 3);
  if (seen.status !== 'found') throw new Error('expected the shard');
  const next = applyMember(seen.value, 'n9', member(7, 99)).shard;
  expect(await theirs.putShard(next, seen.value.v)).toBe('written');
  expect(await ours.getShard(LINEAGE, 3)).toEqual({ status: 'found', value: next });
  expect(ours.shardParsesSkipped).toBe(1);
  const listed = await ours.getLineageShards(LINEAGE);
  expect(listed.shards).toEqual([next]);
  expect(ours.shardParsesSkipped).toBe(2); // parsed once above, then the same text
});

test('a corrupt item at a cached version is reported corrupt, not answered from the cache', async () => {
  const tableName = await fixture.newTable();
  const operations = fixture.operations();
  const store = new DynamoAggregateStore({ tableName, operations, logger });
  const shard = withMembers(2);
  expect(await store.putShard(shard, undefined)).toBe('written');
  // Someone overwrites the item with the same version and a member that is not a member.
  const raw = { ...aggregateShardKey(LINEAGE, 3), kind: 'AggregateShard', schemaVersion: 1, ...shard, members: { ...shard.members, n1: { t: 'x' } } };
  await operations.put({ TableName: tableName, Item: raw });
  const read = await store.getShard(LINEAGE, 3);
  expect(read.status).toBe('corrupt');
});
