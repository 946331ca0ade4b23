// The VersionLog port on dynalite (common/store/version-log.ts): chunks put with BatchWriteItem and
// read back by lineage, type and seq range; a re-put of the same chunk is harmless; pages follow the
// key order and their tokens are refused by another range; a corrupt item is reported with its key and
// the reason, and the rest of the page is still read.
import {
  CDS_TYPE_URL,
  ChunkBuilder,
  LDS_TYPE_URL,
  memberAnswers,
  newEnvoyState,
  type ChunkEntry,
  type VersionChunk,
} from '../../../common/core';
import { CHUNK_ENTRIES_ATTRIBUTE, InvalidPageTokenError, iteratePages, toVersionLogChunkItem, versionLogChunkKey, versionLogMemberKey, versionLogPartitionKey, type TableAccess } from '../../../common/store';
import { DynamoVersionLog } from '../../../common/store/version-log';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs, type CapturedLog } from '../../support/store-logger';

const LINEAGE = 'gw-1.boot-a.default';
const OTHER_LINEAGE = 'gw-2.boot-b.default';
const T0 = 1_780_000_000_000;
const TTL = Math.ceil(T0 / 1000) + 86_400;

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

async function harness(): Promise<{ log: DynamoVersionLog; table: TableAccess; logs: CapturedLog }> {
  const tableName = await fixture.newTable();
  const logs = captureLogs();
  const table = fixture.openTable(tableName, logs.logger);
  return { log: table.versionLog, table, logs };
}

function chunk(seq: number, ordinal: number, entries: ChunkEntry[], typeUrl = CDS_TYPE_URL, lineage = LINEAGE): VersionChunk {
  return { lineage, typeUrl, seq, chunk: ordinal, baseAt: Math.min(...entries.map((entry) => entry.at)), ttl: TTL, entries };
}

const acks = (members: number[], at = T0): ChunkEntry[] => members.map((member, i) => ({ member, outcome: 'ACK', at: at + i }));

async function allChunks(log: DynamoVersionLog, lineage: string, range: { typeUrl: string; fromSeq: number; toSeq: number }, limit?: number): Promise<VersionChunk[]> {
  const chunks: VersionChunk[] = [];
  for await (const c of iteratePages((cursor) => log.listChunks(lineage, range, { consistent: true, ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) }))) chunks.push(c);
  return chunks;
}

describe('DynamoVersionLog on dynalite', () => {
  it('puts chunks and reads them back as they were, entries and all', async () => {
    const { log } = await harness();
    const chunks = [
      chunk(5, 0, [{ member: 9, outcome: 'NACK', at: T0 + 3 }, { member: 2, outcome: 'ACK', at: T0 }, { member: 9, outcome: 'STUCK', at: T0 + 3 }]),
      chunk(5, 1, acks([4000, 4001])),
      chunk(5, 2, acks([1]), LDS_TYPE_URL),
    ];
    expect(await log.putChunks(chunks)).toEqual({ written: 3, failed: [] });
    const read = await allChunks(log, LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 0, toSeq: 10 });
    expect(read).toEqual([
      { ...chunks[0], entries: [{ member: 2, outcome: 'ACK', at: T0 }, { member: 9, outcome: 'NACK', at: T0 + 3 }, { member: 9, outcome: 'STUCK', at: T0 + 3 }] },
      chunks[1],
    ]);
    expect([...memberAnswers(read, LINEAGE, 9)].map((answer) => answer.outcome)).toEqual(['NACK', 'STUCK']);
  });

  it('stores the entries as one binary attribute under the chunk key', async () => {
    const { log, table } = await harness();
    const stored = chunk(7, 3, acks([10, 11, 12]));
    await log.putChunks([stored]);
    const raw = await table.rawItems.getItem(versionLogChunkKey(LINEAGE, CDS_TYPE_URL, 7, 3), { consistent: true });
    expect(raw?.[CHUNK_ENTRIES_ATTRIBUTE]).toBeInstanceOf(Uint8Array);
    expect((raw?.[CHUNK_ENTRIES_ATTRIBUTE] as Uint8Array).length).toBe(2 + 3 * 2);
    expect(raw).toMatchObject({ kind: 'VersionLogChunk', lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 7, chunk: 3, baseAt: T0, ttl: TTL });
  });

  it('a re-put of the same chunk (a retry) leaves one identical item', async () => {
    const { log, table } = await harness();
    const stored = chunk(5, 0, acks([1, 2, 3]));
    await log.putChunks([stored]);
    const before = await table.rawItems.queryPartition(versionLogPartitionKey(LINEAGE));
    expect(await log.putChunks([stored, stored])).toEqual({ written: 2, failed: [] });
    const after = await table.rawItems.queryPartition(versionLogPartitionKey(LINEAGE));
    expect(after).toHaveLength(1);
    expect(after).toEqual(before);
    expect(await allChunks(log, LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 5, toSeq: 5 })).toEqual([stored]);
  });

  it('reads a seq range of one type and lineage in key order, page by page, bounds included', async () => {
    const { log } = await harness();
    const builder = new ChunkBuilder({ lineage: LINEAGE, retentionMs: 86_400_000, limits: { maxEntries: 2, maxAgeMs: 1000 } });
    const cut: VersionChunk[] = [];
    for (let seq = 1; seq <= 6; seq++) {
      for (let member = 0; member < 5; member++) {
        for (const typeUrl of [CDS_TYPE_URL, LDS_TYPE_URL]) {
          const added = builder.add({ typeUrl, seq, member, outcome: 'ACK', at: T0 + seq * 100 + member }, T0 + seq * 100 + member);
          if (!added.ok) throw new Error(added.error);
          cut.push(...added.value);
        }
      }
    }
    cut.push(...builder.flush());
    const other = chunk(3, 0, acks([0]), CDS_TYPE_URL, OTHER_LINEAGE);
    expect(await log.putChunks([...cut, other])).toEqual({ written: cut.length + 1, failed: [] });

    const expected = cut.filter((c) => c.typeUrl === CDS_TYPE_URL && c.seq >= 2 && c.seq <= 4).sort((a, b) => a.seq - b.seq || a.chunk - b.chunk);
    expect(expected).toHaveLength(9); // 5 answers a seq in chunks of 2: three chunks per seq
    const firstPage = await log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 2, toSeq: 4 }, { limit: 4, consistent: true });
    expect(firstPage.items).toEqual(expected.slice(0, 4));
    expect(firstPage.nextCursor).toBeDefined();
    expect(await allChunks(log, LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 2, toSeq: 4 }, 4)).toEqual(expected);
    expect(await allChunks(log, LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 3, toSeq: 3 }, 1)).toEqual(expected.filter((c) => c.seq === 3));
    expect(await allChunks(log, OTHER_LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 0, toSeq: 100 })).toEqual([other]);
    // "The ACKs of Envoy 4" over seqs 2..4 of CDS: one per seq.
    expect([...memberAnswers(await allChunks(log, LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 2, toSeq: 4 }), LINEAGE, 4)].map((a) => a.seq)).toEqual([2, 3, 4]);
    // A page token belongs to its range.
    await expect(log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 5, toSeq: 6 }, { cursor: firstPage.nextCursor! })).rejects.toThrow(InvalidPageTokenError);
  });

  it('reports a corrupt item with its key and the reason, and still reads the rest of the page', async () => {
    const { log, table, logs } = await harness();
    const good = [chunk(5, 0, acks([1, 2])), chunk(5, 2, acks([3]))];
    await log.putChunks(good);
    const truncated = toVersionLogChunkItem(chunk(5, 1, acks([7, 8, 9])));
    if (!truncated.ok) throw new Error(truncated.error);
    const bytes = truncated.item[CHUNK_ENTRIES_ATTRIBUTE];
    await table.rawItems.putItem({ ...truncated.item, [CHUNK_ENTRIES_ATTRIBUTE]: bytes.slice(0, bytes.length - 1) });
    // And one whose content disagrees with its key (seq 6 stored under seq 5's key).
    const misplaced = toVersionLogChunkItem(chunk(6, 3, acks([4])));
    if (!misplaced.ok) throw new Error(misplaced.error);
    await table.rawItems.putItem({ ...misplaced.item, ...versionLogChunkKey(LINEAGE, CDS_TYPE_URL, 5, 3) });

    const page = await log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 5, toSeq: 5 }, { consistent: true });
    expect(page.items).toEqual(good);
    expect(page.corrupt).toEqual([
      { key: versionLogChunkKey(LINEAGE, CDS_TYPE_URL, 5, 1), error: expect.stringMatching(/entries \(7 bytes\): .*need at least|ends inside a varint/) },
      { key: versionLogChunkKey(LINEAGE, CDS_TYPE_URL, 5, 3), error: expect.stringMatching(/key does not match content/) },
    ]);
    expect(page.corrupt[0]!.error).toContain(`item ${versionLogPartitionKey(LINEAGE)} / ${versionLogChunkKey(LINEAGE, CDS_TYPE_URL, 5, 1).sk}`);
    expect(logs.lines().filter((line) => line['msg'] === 'skipping invalid version-log chunk')).toHaveLength(2);
  });

  it('refuses a chunk that cannot be encoded without writing it, and writes the others', async () => {
    const { log, table } = await harness();
    const bad = { ...chunk(5, 0, acks([1])), baseAt: T0 - 1 };
    const good = chunk(5, 1, acks([2]));
    const result = await log.putChunks([bad, good]);
    expect(result.written).toBe(1);
    expect(result.failed).toEqual([{ chunk: bad, error: expect.stringMatching(/not the earliest/), retryable: false }]);
    expect(await table.rawItems.queryPartition(versionLogPartitionKey(LINEAGE))).toHaveLength(1);
  });

  it('stores a full chunk (1,000 answers, members 5 apart, 1 ms apart) in ~3.2 KB: 4 write units', async () => {
    const { log, table } = await harness();
    const builder = new ChunkBuilder({ lineage: LINEAGE, retentionMs: 86_400_000 });
    let full: VersionChunk | undefined;
    for (let i = 0; i < 1000 && full === undefined; i++) {
      const added = builder.add({ typeUrl: CDS_TYPE_URL, seq: 12345, member: i * 5, outcome: 'ACK', at: T0 + i }, T0 + i);
      if (!added.ok) throw new Error(added.error);
      full = added.value[0];
    }
    expect(full?.entries).toHaveLength(1000);
    await log.putChunks([full!]);
    const [raw] = await table.rawItems.queryPartition(versionLogPartitionKey(LINEAGE));
    const entryBytes = (raw![CHUNK_ENTRIES_ATTRIBUTE] as Uint8Array).length;
    // DynamoDB's item size: attribute names plus values (strings as UTF-8, numbers ~1 B per 2 digits + 1).
    let itemBytes = 0;
    for (const [name, value] of Object.entries(raw!)) {
      itemBytes += name.length;
      if (typeof value === 'string') itemBytes += Buffer.byteLength(value);
      else if (typeof value === 'number') itemBytes += Math.ceil(String(value).length / 2) + 1;
      else if (value instanceof Uint8Array) itemBytes += value.length;
    }
    // Measured: 2,971 B of entries (2.97 B an answer) + 269 B of key and header = 3,240 B, 4 write units
    // (3.2 B an answer stored; the design's estimate was ~6 B).
    expect(entryBytes).toBeLessThanOrEqual(3100);
    expect(itemBytes - entryBytes).toBeLessThan(400);
    expect(Math.ceil(itemBytes / 1024)).toBe(4);
  });

  it('lists a lineage\'s chunks of a type newest first with `descending`', async () => {
    const { log } = await harness();
    await log.putChunks([chunk(3, 0, acks([1])), chunk(4, 1, acks([1])), chunk(4, 2, acks([2])), chunk(9, 3, acks([1])), chunk(9, 4, acks([1]), LDS_TYPE_URL)]);
    const newest = await log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER }, { descending: true, limit: 3, consistent: true });
    expect(newest.items.map((c) => [c.seq, c.chunk])).toEqual([[9, 3], [4, 2], [4, 1]]);
    // A descending page's token continues the descending listing, and is refused by the ascending one.
    const rest = await log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER }, { descending: true, consistent: true, cursor: newest.nextCursor! });
    expect(rest.items.map((c) => [c.seq, c.chunk])).toEqual([[3, 0]]);
    await expect(log.listChunks(LINEAGE, { typeUrl: CDS_TYPE_URL, fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER }, { cursor: newest.nextCursor! })).rejects.toThrow(InvalidPageTokenError);
  });

  it('puts memberships under the Envoy\'s key and lists them; a corrupt one is reported, an invalid one refused', async () => {
    const { log, table, logs } = await harness();
    const members = [
      { nodeId: 'envoy-a', lineage: LINEAGE, member: 0, joinedAt: T0, ttl: TTL },
      { nodeId: 'envoy-a', lineage: OTHER_LINEAGE, member: 17, joinedAt: T0 + 5, ttl: TTL },
      { nodeId: 'envoy-b', lineage: LINEAGE, member: 1, joinedAt: T0, ttl: TTL },
    ];
    expect(await log.putMembers(members)).toEqual({ written: 3, failed: [] });
    expect((await log.listMembers('envoy-a')).items).toEqual(members.slice(0, 2));
    expect((await log.listMembers('envoy-b')).items).toEqual(members.slice(2));
    expect((await log.listMembers('envoy-c')).items).toEqual([]);
    // Memberships share the Envoy's partition with its STATE and event log; neither listing sees the other.
    await table.store.updateEnvoyState({ ...newEnvoyState({ identity: { nodeId: 'envoy-a', cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now: T0 }), rev: 1 }, undefined);
    expect((await log.listMembers('envoy-a')).items).toHaveLength(2);
    expect((await table.store.listEnvoyEvents('envoy-a')).items).toEqual([]);

    const invalid = { nodeId: 'envoy-a', lineage: 'Not A Lineage', member: 1, joinedAt: T0, ttl: TTL };
    const refused = await log.putMembers([invalid]);
    expect(refused.written).toBe(0);
    expect(refused.failed).toEqual([expect.objectContaining({ member: invalid, retryable: false })]);
    expect(logs.lines().some((line) => line['msg'] === 'refusing to write version-log membership')).toBe(true);

    await table.rawItems.putItem({ ...versionLogMemberKey('envoy-a', LINEAGE, 5), kind: 'VersionLogMember', schemaVersion: 1, nodeId: 'envoy-a', lineage: LINEAGE, member: 6, joinedAt: T0, ttl: TTL });
    const page = await log.listMembers('envoy-a');
    expect(page.items).toHaveLength(2);
    expect(page.corrupt).toEqual([expect.objectContaining({ key: versionLogMemberKey('envoy-a', LINEAGE, 5), error: expect.stringContaining('key does not match content') })]);
  });

  it('is read by the whole-table scan as its own kinds, not as corrupt items', async () => {
    const { log, table } = await harness();
    await log.putChunks([chunk(5, 0, acks([1, 2]))]);
    await log.putMembers([{ nodeId: 'envoy-a', lineage: LINEAGE, member: 1, joinedAt: T0, ttl: TTL }]);
    const page = await table.store.scanItems({});
    expect(page.corrupt).toEqual([]);
    expect(page.items.map((item) => item.kind).sort()).toEqual(['VersionLogChunk', 'VersionLogMember']);
    expect((await table.store.scanItems({ kind: 'VersionLogMember' })).items).toEqual([expect.objectContaining({ nodeId: 'envoy-a', lineage: LINEAGE, member: 1 })]);
  });
});
