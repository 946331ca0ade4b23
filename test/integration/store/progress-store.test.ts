// The ProgressStore port on dynalite (common/store/progress-store.ts): a lineage's PROGRESS item is
// written only over the `v` before it (absent for v 1), read back strongly consistent as it was
// built, and read for many lineages at once with BatchGetItem (at most 100 keys a call, UnprocessedKeys
// read again), in the order asked; a missing or corrupt item reads as no progress, the corrupt one
// logged with its key. A progress that fails LineageProgressSchema is refused before any I/O.
import { LineageProgressSchema, progressFromStates, type EnvoyState, type LineageProgress, type LineageWatermark } from '../../../common/core';
import {
  BATCH_GET_MAX_KEYS,
  DynamoProgressStore,
  InvalidStoreInputError,
  ITEM_KIND,
  iteratePages,
  lineageProgressKey,
  toLineageProgressItem,
  type DocumentOperations,
  type TableAccess,
} from '../../../common/store';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs, type CapturedLog } from '../../support/store-logger';
import { CDS, envoy, L1, L2, LDS, T0 } from '../../unit/core/fixtures';

const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };
const CORRUPT_IN_BATCH = 'invalid lineage PROGRESS item; read as missing';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

/** The store's calls, counted per operation, and the keys of each BatchGetItem call. */
interface Counted {
  operations: DocumentOperations;
  calls: Record<string, number>;
  batchGetKeys: number[];
}

function counting(real: DocumentOperations, unprocessedCalls = 0): Counted {
  const calls: Record<string, number> = {};
  const batchGetKeys: number[] = [];
  const operations = Object.fromEntries(
    Object.entries(real).map(([name, operation]) => [
      name,
      (input: unknown) => {
        calls[name] = (calls[name] ?? 0) + 1;
        return (operation as (input: unknown) => Promise<unknown>)(input);
      },
    ]),
  ) as unknown as DocumentOperations;
  // dynalite never answers with UnprocessedKeys: the first `unprocessedCalls` calls read the first
  // half of their keys for real and hand the rest back, as DynamoDB does when throttled.
  operations.batchGet = async (input) => {
    calls['batchGet'] = (calls['batchGet'] ?? 0) + 1;
    const [table, request] = Object.entries(input.RequestItems ?? {})[0] ?? [];
    if (table === undefined || request === undefined) throw new Error('BatchGetItem without a table');
    const keys = request.Keys ?? [];
    batchGetKeys.push(keys.length);
    if (calls['batchGet'] > unprocessedCalls || keys.length < 2) return real.batchGet(input);
    const half = Math.floor(keys.length / 2);
    const output = await real.batchGet({ ...input, RequestItems: { [table]: { ...request, Keys: keys.slice(0, half) } } });
    return { ...output, UnprocessedKeys: { [table]: { ...request, Keys: keys.slice(half) } } };
  };
  return { operations, calls, batchGetKeys };
}

async function harness(unprocessedCalls = 0): Promise<{ progress: DynamoProgressStore; table: TableAccess; logs: CapturedLog; counted: Counted }> {
  const tableName = await fixture.newTable();
  const logs = captureLogs();
  const table = fixture.openTable(tableName, logs.logger);
  const counted = counting(fixture.operations(), unprocessedCalls);
  const progress = new DynamoProgressStore({ tableName, operations: counted.operations, logger: logs.logger, batch: { sleep: () => Promise.resolve() } });
  return { progress, table, logs, counted };
}

/** An Envoy on `lineage` with CDS ACKed at `t`. */
function at(nodeId: string, t: number, lineage = L1): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked: t, lineage } }, { programmedThrough: t, lineage });
}

/** A small consistent item: `members` Envoys programmed through 5. */
function simple(lineage: string, v: number, members = 1): LineageProgress {
  const states = Array.from({ length: members }, (_, i) => at(`e${i}`, 5, lineage));
  return progressFromStates({ lineage, v, heartbeatAt: T0 + v, states, openWatermarks: [], requiredTypeUrls: [], policy });
}

const mark = (seq: number, types: Record<string, number>): LineageWatermark => ({ seq, types, at: T0 });

describe('DynamoProgressStore on dynalite', () => {
  it('writes v 1 only where there is no item, then each v only over the one before it', async () => {
    const { progress, table } = await harness();
    expect(await progress.putProgress(simple(L1, 1))).toBe('written');
    // A second writer of v 1 (or the same gateway's retry after a lost reply) does not overwrite it.
    expect(await progress.putProgress(simple(L1, 1, 2))).toBe('conflict');
    expect(await progress.getProgress(L1)).toEqual({ status: 'found', value: simple(L1, 1) });
    expect(await progress.putProgress(simple(L1, 2, 2))).toBe('written');
    // Stale (v 2 again: written over v 1, which is gone) and ahead (v 4 over a missing v 3) both conflict.
    expect(await progress.putProgress(simple(L1, 2, 3))).toBe('conflict');
    expect(await progress.putProgress(simple(L1, 4, 3))).toBe('conflict');
    expect(await progress.getProgress(L1)).toEqual({ status: 'found', value: simple(L1, 2, 2) });
    expect(await progress.putProgress(simple(L1, 3, 3))).toBe('written');
    expect(await table.rawItems.getItem(lineageProgressKey(L1), { consistent: true })).toMatchObject({ kind: ITEM_KIND.lineageProgress, v: 3, members: 3 });
    // Another lineage's item is its own: v 1 there is no conflict with L1's.
    expect(await progress.putProgress(simple(L2, 1))).toBe('written');
  });

  it('reads one lineage: found, missing, or corrupt with its stored v (so its writer can replace it)', async () => {
    const { progress, table, logs } = await harness();
    await progress.putProgress(simple(L1, 1));
    expect(await progress.getProgress(L1)).toEqual({ status: 'found', value: simple(L1, 1) });
    expect(await progress.getProgress(L2)).toEqual({ status: 'missing' });

    const built = toLineageProgressItem(simple(L2, 7, 2));
    if (!built.ok) throw new Error(built.error);
    await table.rawItems.putItem({ ...built.item, members: 3 }); // counts that no longer add up
    const corrupt = await progress.getProgress(L2);
    expect(corrupt).toEqual({ status: 'corrupt', error: expect.stringMatching(/members \(3\) is not the sum of the counts \(2\)/) as unknown, rev: 7 });
    // The writer replaces it by writing over the v it learned.
    expect(await progress.putProgress(simple(L2, 8, 2))).toBe('written');
    expect(await progress.getProgress(L2)).toEqual({ status: 'found', value: simple(L2, 8, 2) });

    await table.rawItems.putItem({ ...built.item, v: 'seven' });
    expect(await progress.getProgress(L2)).toEqual({ status: 'corrupt', error: expect.stringMatching(/^item AGG#.* \/ PROGRESS: v:/) as unknown });
    // No numeric v to follow: only v 1 may replace it (any other v could never pass its condition).
    expect(await progress.putProgress(simple(L2, 9, 2))).toBe('conflict');
    expect(await progress.putProgress(simple(L2, 1, 2))).toBe('written');
    expect(await progress.getProgress(L2)).toEqual({ status: 'found', value: simple(L2, 1, 2) });
    // A valid item is not replaced by v 1.
    expect(await progress.putProgress(simple(L2, 1, 2))).toBe('conflict');
    await table.rawItems.putItem({ ...built.item, v: 'seven' });
    // Content that belongs under another key is corrupt where it lies.
    const misplaced = toLineageProgressItem(simple(L1, 1));
    if (!misplaced.ok) throw new Error(misplaced.error);
    await table.rawItems.putItem({ ...misplaced.item, ...lineageProgressKey(L2) });
    expect(await progress.getProgress(L2)).toMatchObject({ status: 'corrupt', error: expect.stringMatching(/key does not match content/) as unknown });
    const warnings = logs.lines().filter((line) => line['msg'] === 'invalid lineage PROGRESS item');
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatchObject({ table: table.tableName, key: lineageProgressKey(L2) });
  });

  it('reads 250 lineages in batches of at most 100 keys, in the order asked; missing and corrupt ones read as undefined', async () => {
    const { progress, table, logs, counted } = await harness();
    const lineages = Array.from({ length: 250 }, (_, i) => `gw-n${i}.boot1.edge`);
    const stored = lineages.filter((_, i) => i % 3 !== 0);
    for (let i = 0; i < stored.length; i += 25) {
      const outcomes = await Promise.all(stored.slice(i, i + 25).map((lineage, j) => progress.putProgress(simple(lineage, 1, 1 + ((i + j) % 4)))));
      expect(outcomes.every((outcome) => outcome === 'written')).toBe(true);
    }
    const corruptLineage = lineages[200]!;
    const built = toLineageProgressItem(simple(corruptLineage, 1));
    if (!built.ok) throw new Error(built.error);
    await table.rawItems.putItem({ ...built.item, anchors: [5, 3] });

    // Asked in reverse, one lineage twice: each answer where it was asked.
    const asked = [...lineages].reverse();
    asked.push(lineages[1]!);
    counted.batchGetKeys.length = 0;
    const reads = await progress.getProgresses(asked);
    expect(reads.map((read) => read.lineage)).toEqual(asked);
    for (const read of reads) {
      const i = lineages.indexOf(read.lineage);
      if (i % 3 === 0 || read.lineage === corruptLineage) expect(read.progress).toBeUndefined();
      else expect(read.progress).toEqual(simple(read.lineage, 1, 1 + (stored.indexOf(read.lineage) % 4)));
    }
    expect(counted.batchGetKeys).toEqual([BATCH_GET_MAX_KEYS, BATCH_GET_MAX_KEYS, 50]); // the duplicate read once
    const warnings = logs.lines().filter((line) => line['msg'] === CORRUPT_IN_BATCH);
    expect(warnings).toEqual([expect.objectContaining({ table: table.tableName, key: lineageProgressKey(corruptLineage), reason: expect.stringMatching(/anchors are not ascending/) as unknown })]);
    expect(await progress.getProgresses([])).toEqual([]);
  });

  it('reads again the keys a BatchGetItem hands back unprocessed', async () => {
    const { progress, counted } = await harness(3);
    const lineages = Array.from({ length: 8 }, (_, i) => `gw-u${i}.boot1.edge`);
    for (const lineage of lineages) await progress.putProgress(simple(lineage, 1));
    const reads = await progress.getProgresses(lineages);
    expect(reads).toEqual(lineages.map((lineage) => ({ lineage, progress: simple(lineage, 1) })));
    // 8 keys: 4 read and 4 back, 2 and 2 back, 1 and 1 back, then the last one read.
    expect(counted.batchGetKeys).toEqual([8, 4, 2, 1]);
  });

  it('refuses a progress that fails LineageProgressSchema, and an invalid lineage, before any I/O', async () => {
    const { progress, table, counted } = await harness();
    const good = simple(L1, 1, 2);
    const refused: [LineageProgress, RegExp][] = [
      [{ ...good, members: 3 }, /members \(3\) is not the sum/],
      [{ ...good, listed: [good.listed[0]!, good.listed[0]!] }, /listed twice/],
      [{ ...good, lineage: 'not a lineage' }, /lineage/],
      // No stored v can precede it: it could only ever conflict.
      [{ ...good, v: 0 }, /v must be at least 1/],
    ];
    for (const [bad, reason] of refused) {
      const attempt = progress.putProgress(bad);
      await expect(attempt).rejects.toThrow(InvalidStoreInputError);
      await expect(attempt).rejects.toThrow(reason);
    }
    await expect(progress.getProgress('not a lineage')).rejects.toThrow(InvalidStoreInputError);
    await expect(progress.getProgresses([L1, 'AGG#x'])).rejects.toThrow(InvalidStoreInputError);
    expect(counted.calls).toEqual({});
    expect(await table.rawItems.queryPartition(lineageProgressKey(L1).pk)).toEqual([]);
  });

  it('stores a full item as progressFromStates built it, and scans read it as a LineageProgress item', async () => {
    const { progress, table } = await harness();
    const blame = { basis: 'named' as const, objects: ['x.dev/Route/ns/r'], resources: ['ns/svc/80'] };
    const states: EnvoyState[] = [
      at('a', 7),
      at('b', 5),
      envoy('c', {}),
      envoy('d', { [CDS]: { acked: 5, pending: { seq: 7, sentAt: T0 - 40_000 } }, [LDS]: { acked: 4 } }, { programmedThrough: 4 }),
      envoy('e', { [CDS]: { acked: 3, nack: { seq: 4, message: 'bad cluster', at: T0, blame } } }, { programmedThrough: 3 }),
      envoy('f', { [CDS]: { acked: 3, nack: { seq: 4, message: 'no blame', at: T0 } } }, { programmedThrough: 3 }),
      envoy('g', { [CDS]: { acked: 5 }, [LDS]: { acked: 9, lineage: L2 } }, { programmedThrough: 5 }),
    ];
    const full = progressFromStates({
      lineage: L1,
      v: 1,
      heartbeatAt: T0,
      states,
      openWatermarks: [mark(5, { [CDS]: 5, [LDS]: 4 }), mark(7, { [CDS]: 7, [LDS]: 4 })],
      requiredTypeUrls: [CDS],
      policy,
    });
    // Every part of the item is exercised, so the round trip covers tuples, nested groups and members.
    expect(full).toMatchObject({ members: 7, anchors: [5, 7], none: 1, stuck: [[7, 1]] });
    expect(full.through.length).toBeGreaterThan(1);
    expect(full.nacks).toHaveLength(2);
    expect(full.split).toHaveLength(1);
    expect(full.listed.length).toBeGreaterThan(3);
    expect(LineageProgressSchema.safeParse(full).success).toBe(true);

    expect(await progress.putProgress(full)).toBe('written');
    expect(await progress.getProgress(L1)).toEqual({ status: 'found', value: full });
    expect(await progress.getProgresses([L1])).toEqual([{ lineage: L1, progress: full }]);

    const scanned: unknown[] = [];
    const corrupt: unknown[] = [];
    for await (const item of iteratePages((cursor) => table.store.scanItems({ kind: ITEM_KIND.lineageProgress, ...(cursor === undefined ? {} : { cursor }) }), (bad) => corrupt.push(...bad))) scanned.push(item);
    expect(corrupt).toEqual([]);
    expect(scanned).toEqual([{ ...lineageProgressKey(L1), kind: ITEM_KIND.lineageProgress, schemaVersion: 1, ...full }]);
  });
});
