// The live lineages' PROGRESS items as evaluation reads them (functions/lib/progress-snapshot.ts), on
// dynalite: a BatchGetItem reads each item on its own, so a node moving from L1 to L2 (L2's item
// counting it stored first, then L1's without it) can be missed by a read that takes L2 before the
// move and L1 after it. Read twice, compared by `v`, the snapshot is one the table really held; items
// that never stop moving are read as unknown (evaluation's Pending), never mixed.
import pino from 'pino';
import { progressFromStates, type EnvoyState, type LineageProgress, type LineageProgressRead, type ProgressStore } from '../../../common/core';
import { MAX_PROGRESS_READS, readProgressSnapshot } from '../../../functions/lib/progress-snapshot';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs } from '../../support/store-logger';
import { CDS, envoy, L1, L2, T0 } from '../../unit/core/fixtures';

const policy = { ttlMs: 60_000, ackTimeoutMs: 30_000 };

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

function on(lineage: string, nodeId: string): EnvoyState {
  return envoy(nodeId, { [CDS]: { acked: 5, lineage } }, { programmedThrough: 5, lineage });
}

function item(lineage: string, v: number, nodeIds: readonly string[]): LineageProgress {
  return progressFromStates({ lineage, v, heartbeatAt: T0 + v, states: nodeIds.map((nodeId) => on(lineage, nodeId)), openWatermarks: [], requiredTypeUrls: [], policy });
}

/** The members every read item counts, over all lineages. */
function counted(reads: readonly LineageProgressRead[]): string[] {
  return reads.flatMap((read) => read.progress?.listed.map(([nodeId]) => nodeId) ?? []).sort();
}

async function storeWith(items: readonly LineageProgress[]): Promise<{ progress: ProgressStore; close(): void }> {
  const table = fixture.openTable(await fixture.newTable(), captureLogs().logger);
  for (const stored of items) expect(await table.progress.putProgress(stored)).toBe('written');
  return { progress: table.progress, close: () => table.close() };
}

test('a read mixing moments misses a moving node; the snapshot does not', async () => {
  const { progress, close } = await storeWith([item(L1, 1, ['a', 'b']), item(L2, 1, ['c'])]);
  try {
    // b moves from L1 to L2 as the gateway stores it: L2 counting it first, then L1 without it.
    const move = async (): Promise<void> => {
      expect(await progress.putProgress(item(L2, 2, ['b', 'c']))).toBe('written');
      expect(await progress.putProgress(item(L1, 2, ['a']))).toBe('written');
    };
    // The first read takes L2 before the move and L1 after it, as one BatchGetItem may.
    let calls = 0;
    const interleaved: Pick<ProgressStore, 'getProgresses'> = {
      async getProgresses(lineages) {
        calls++;
        if (calls > 1) return progress.getProgresses(lineages);
        const [l2] = await progress.getProgresses([L2]);
        await move();
        const [l1] = await progress.getProgresses([L1]);
        return lineages.map((lineage) => (lineage === L1 ? l1! : l2!));
      },
    };
    const snapshot = await readProgressSnapshot(interleaved, [L1, L2], pino({ level: 'silent' }));
    expect(counted(snapshot)).toEqual(['a', 'b', 'c']);
    expect(snapshot.map((read) => read.progress?.v)).toEqual([2, 2]);
    expect(calls).toBe(3);
    // What the first read alone held: b in neither item.
    expect(counted([{ lineage: L1, progress: item(L1, 2, ['a']) }, { lineage: L2, progress: item(L2, 1, ['c']) }])).toEqual(['a', 'c']);
  } finally {
    close();
  }
});

test('two equal reads are enough; items that keep moving are read as unknown, the still ones kept', async () => {
  const { progress, close } = await storeWith([item(L1, 1, ['a']), item(L2, 1, ['c'])]);
  try {
    let calls = 0;
    const still: Pick<ProgressStore, 'getProgresses'> = {
      getProgresses: (lineages) => {
        calls++;
        return progress.getProgresses(lineages);
      },
    };
    expect(counted(await readProgressSnapshot(still, [L1, L2], pino({ level: 'silent' })))).toEqual(['a', 'c']);
    expect(calls).toBe(2);

    // L1's gateway writes between every two reads.
    let v = 1;
    const moving: Pick<ProgressStore, 'getProgresses'> = {
      async getProgresses(lineages) {
        const reads = await progress.getProgresses(lineages);
        v++;
        expect(await progress.putProgress(item(L1, v, ['a']))).toBe('written');
        return reads;
      },
    };
    const logs = captureLogs();
    const reads = await readProgressSnapshot(moving, [L1, L2], logs.logger);
    expect(v - 1).toBe(MAX_PROGRESS_READS);
    expect(reads.find((read) => read.lineage === L1)?.progress).toBeUndefined();
    expect(reads.find((read) => read.lineage === L2)?.progress?.v).toBe(1);
    expect(logs.lines().some((line) => /kept changing/.test(String(line['msg'])))).toBe(true);
  } finally {
    close();
  }
});

test('one lineage is read once, however often its gateway writes: one item read is already a moment the table held', async () => {
  const { progress, close } = await storeWith([item(L1, 1, ['a', 'b'])]);
  try {
    let calls = 0;
    let v = 1;
    const moving: Pick<ProgressStore, 'getProgresses'> = {
      async getProgresses(lineages) {
        calls++;
        const reads = await progress.getProgresses(lineages);
        v++;
        expect(await progress.putProgress(item(L1, v, ['a', 'b']))).toBe('written');
        return reads;
      },
    };
    const logs = captureLogs();
    const reads = await readProgressSnapshot(moving, [L1, L1], logs.logger);
    expect({ calls, v: reads.map((read) => read.progress?.v), counted: counted(reads.slice(0, 1)) }).toEqual({ calls: 1, v: [1, 1], counted: ['a', 'b'] });
    expect(logs.lines().some((line) => /kept changing/.test(String(line['msg'])))).toBe(false);
  } finally {
    close();
  }
});
