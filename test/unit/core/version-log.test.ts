// The version log's pure parts (common/core/version-log.ts): the entry encoding and what its decoder
// refuses, when ChunkBuilder cuts a chunk, and reading one member's answers back out of chunks. The
// sizes measured here are the design's "~6 B an entry" (docs/ARCHITECTURE.md, `VLOG#<lineage>`).
import {
  CDS_TYPE_URL,
  CHUNK_FORMAT,
  ChunkBuilder,
  LDS_TYPE_URL,
  MAX_CHUNK_ENTRIES,
  MAX_CHUNK_SPAN_MS,
  chunkFromStored,
  decodeChunkEntries,
  encodeChunkEntries,
  memberAnswers,
  type ChunkEntry,
  type Parsed,
  type VersionChunk,
} from '../../../common/core';

const LINEAGE = 'gw-1.boot-a.default';
const OTHER_LINEAGE = 'gw-2.boot-b.default';
const T0 = 1_780_000_000_000;
const DAY_MS = 86_400_000;

function ok<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new Error(`expected ok, got: ${parsed.error}`);
  return parsed.value;
}

function errorOf<T>(parsed: Parsed<T>): string {
  if (parsed.ok) throw new Error('expected an error value');
  return parsed.error;
}

/** A deterministic generator (the sizes below must not vary between runs). */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** `count` distinct members of a lineage of `members`, answering within `spreadMs` of T0, `nackEvery`-th a NACK. */
function realisticEntries(count: number, members: number, spreadMs: number, seed = 1, nackEvery = 50): ChunkEntry[] {
  const random = lcg(seed);
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(Math.floor(random() * members));
  // The first answer is at T0 itself, the rest spread after it.
  return [...chosen].map((member, i): ChunkEntry => ({ member, outcome: i % nackEvery === 0 ? 'NACK' : 'ACK', at: i === 0 ? T0 : T0 + Math.floor(random() * spreadMs) }));
}

function sizeOf(entries: ChunkEntry[]): number {
  const base = Math.min(...entries.map((entry) => entry.at));
  return ok(encodeChunkEntries(base, entries)).length;
}

// Measured once at load so the figures can be in the test names (deterministic inputs).
const FULL_FROM_5000 = sizeOf(realisticEntries(1000, 5000, 1000));
const FULL_FROM_1000 = sizeOf(realisticEntries(1000, 1000, 1000));
const BURST_FROM_5000 = sizeOf(realisticEntries(1000, 5000, 30));
const SPARSE_FROM_1M = sizeOf(realisticEntries(1000, 1_000_000, 1000));

describe('encoding of chunk entries', () => {
  const entries: ChunkEntry[] = [
    { member: 7, outcome: 'ACK', at: T0 + 12 },
    { member: 3, outcome: 'NACK', at: T0 },
    { member: 7, outcome: 'STUCK', at: T0 + 12 },
    { member: 300, outcome: 'ACK', at: T0 + 999 },
  ];

  it('decodes what it encodes, in canonical order (member, time, outcome)', () => {
    const bytes = ok(encodeChunkEntries(T0, entries));
    expect(ok(decodeChunkEntries(bytes, T0))).toEqual([
      { member: 3, outcome: 'NACK', at: T0 },
      { member: 7, outcome: 'ACK', at: T0 + 12 },
      { member: 7, outcome: 'STUCK', at: T0 + 12 },
      { member: 300, outcome: 'ACK', at: T0 + 999 },
    ]);
  });

  it('writes the bytes it documents: format, count, then member delta and offset × 4 + outcome as varints', () => {
    const bytes = ok(encodeChunkEntries(T0, [{ member: 3, outcome: 'NACK', at: T0 }, { member: 200, outcome: 'STUCK', at: T0 + 40 }]));
    // 200 - 3 = 197 = 0xc5 → [0xc5, 0x01]; 40 × 4 + 2 = 162 = 0xa2 → [0xa2, 0x01].
    expect([...bytes]).toEqual([CHUNK_FORMAT, 2, 3, 1, 0xc5, 0x01, 0xa2, 0x01]);
  });

  it('gives the same bytes for the same entries in any order', () => {
    expect(ok(encodeChunkEntries(T0, [...entries].reverse()))).toEqual(ok(encodeChunkEntries(T0, entries)));
  });

  it.each([
    ['no entries', T0, []],
    ['too many entries', T0, Array.from({ length: MAX_CHUNK_ENTRIES + 1 }, (_, member): ChunkEntry => ({ member, outcome: 'ACK', at: T0 }))],
    ['a base time that is not the earliest entry', T0 - 1, [{ member: 1, outcome: 'ACK', at: T0 }]],
    ['an entry before the base time', T0 + 1, [{ member: 1, outcome: 'ACK', at: T0 + 1 }, { member: 2, outcome: 'ACK', at: T0 }]],
    ['a negative member index', T0, [{ member: -1, outcome: 'ACK', at: T0 }]],
    ['a fractional member index', T0, [{ member: 1.5, outcome: 'ACK', at: T0 }]],
    ['an unknown outcome', T0, [{ member: 1, outcome: 'toString' as ChunkEntry['outcome'], at: T0 }]],
    ['a span over the limit', T0, [{ member: 1, outcome: 'ACK', at: T0 }, { member: 2, outcome: 'ACK', at: T0 + MAX_CHUNK_SPAN_MS + 1 }]],
  ])('refuses %s (an error value)', (_name, baseAt, bad) => {
    expect(encodeChunkEntries(baseAt, bad as ChunkEntry[]).ok).toBe(false);
  });

  it(`measures ${FULL_FROM_5000} B per 1,000-entry chunk from 5,000 members over 1 s (${(FULL_FROM_5000 / 1000).toFixed(2)} B an entry); ${FULL_FROM_1000} B from 1,000 members; ${BURST_FROM_5000} B when the answers come within 30 ms; ${SPARSE_FROM_1M} B from 1,000,000 member indices`, () => {
    // The design's estimate is ~6 B an entry; the delta-coded member index and the 2-bit outcome
    // folded into the offset do better. Plus the item's own attributes (~350 B: common/store test).
    expect(FULL_FROM_5000).toBeLessThanOrEqual(3.5 * 1000);
    expect(FULL_FROM_1000).toBeLessThanOrEqual(3.1 * 1000);
    expect(BURST_FROM_5000).toBeLessThanOrEqual(2.5 * 1000);
    expect(SPARSE_FROM_1M).toBeLessThanOrEqual(5 * 1000);
  });
});

describe('the decoder refuses corrupt bytes with a reason, never throwing', () => {
  const good = ok(encodeChunkEntries(T0, [{ member: 3, outcome: 'ACK', at: T0 }, { member: 9, outcome: 'ACK', at: T0 + 5 }]));
  const withBytes = (bytes: number[]) => Uint8Array.from(bytes);

  it.each<[string, Uint8Array, number, RegExp]>([
    ['empty', withBytes([]), T0, /no bytes/],
    ['another format', withBytes([2, ...good.slice(1)]), T0, /format byte 2/],
    ['truncated inside a varint', withBytes([CHUNK_FORMAT, 1, 0x80, 0x80]), T0, /ends inside a varint/],
    ['truncated: fewer bytes than entries', good.slice(0, good.length - 2), T0, /need at least|ends inside/],
    ['trailing bytes', withBytes([...good, 0]), T0, /bytes after the last/],
    ['a zero count', withBytes([CHUNK_FORMAT, 0]), T0, /entry count 0/],
    ['a count over the maximum', withBytes([CHUNK_FORMAT, 0xe9, 0x07, ...new Array<number>(2002).fill(0)]), T0, /entry count 1001/],
    ['a non-minimal varint', withBytes([CHUNK_FORMAT, 1, 0x83, 0x00, 0]), T0, /not minimal/],
    ['an unused outcome code', withBytes([CHUNK_FORMAT, 1, 0, 3]), T0, /unknown outcome code 3/],
    ['no entry at the base time (offsets start above 0)', withBytes([CHUNK_FORMAT, 1, 0, 4]), T0, /not the earliest/],
    ['entries out of order (same member, earlier time)', withBytes([CHUNK_FORMAT, 2, 1, 8, 0, 0]), T0, /out of canonical order/],
    ['a varint past the safe integers', withBytes([CHUNK_FORMAT, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0]), T0, /safe integer range|member index/],
    ['a base time that is not an integer', good, T0 + 0.5, /base time/],
  ])('%s', (_name, bytes, baseAt, reason) => {
    let result: Parsed<ChunkEntry[]> | undefined;
    expect(() => {
      result = decodeChunkEntries(bytes, baseAt);
    }).not.toThrow();
    expect(errorOf(result!)).toMatch(reason);
  });

  it('checks the header too when building a chunk from stored parts', () => {
    const header = { lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 4, chunk: 0, baseAt: T0, ttl: 1 };
    expect(ok(chunkFromStored(header, good)).entries).toHaveLength(2);
    expect(errorOf(chunkFromStored({ ...header, lineage: 'not a lineage' }, good))).toMatch(/lineage/);
    expect(errorOf(chunkFromStored({ ...header, typeUrl: 'has#hash' }, good))).toMatch(/typeUrl/);
  });
});

describe('ChunkBuilder: when a chunk is cut', () => {
  const builder = (maxEntries = 3, maxAgeMs = 1000) => new ChunkBuilder({ lineage: LINEAGE, retentionMs: DAY_MS, limits: { maxEntries, maxAgeMs } });
  const answer = (member: number, at = T0, seq = 5, typeUrl = CDS_TYPE_URL) => ({ typeUrl, seq, member, outcome: 'ACK' as const, at });

  it('cuts at once on the answer that fills a chunk, with the next ordinal', () => {
    const b = builder(3);
    expect(ok(b.add(answer(1), T0))).toEqual([]);
    expect(ok(b.add(answer(2, T0 + 1), T0 + 1))).toEqual([]);
    const [cut, ...more] = ok(b.add(answer(0, T0 + 2), T0 + 2));
    expect(more).toEqual([]);
    expect(cut).toEqual({
      lineage: LINEAGE,
      typeUrl: CDS_TYPE_URL,
      seq: 5,
      chunk: 0,
      baseAt: T0,
      ttl: Math.ceil((T0 + 2 + DAY_MS) / 1000),
      entries: [answer(0, T0 + 2), answer(1), answer(2, T0 + 1)].map(({ member, outcome, at }) => ({ member, outcome, at })),
    });
    expect(b.openEntries).toBe(0);
    ok(b.add(answer(4), T0 + 3));
    expect(b.flush().map((chunk) => chunk.chunk)).toEqual([1]);
  });

  it('keeps one open chunk per type and seq', () => {
    const b = builder(2);
    ok(b.add(answer(1, T0, 5, CDS_TYPE_URL), T0));
    ok(b.add(answer(1, T0, 5, LDS_TYPE_URL), T0));
    ok(b.add(answer(1, T0, 6, CDS_TYPE_URL), T0));
    expect(b.openEntries).toBe(3);
    const flushed = b.flush();
    expect(flushed.map((chunk) => [chunk.typeUrl, chunk.seq, chunk.entries.length])).toEqual([
      [CDS_TYPE_URL, 5, 1],
      [LDS_TYPE_URL, 5, 1],
      [CDS_TYPE_URL, 6, 1],
    ]);
    expect(b.flush()).toEqual([]);
  });

  it('cuts a chunk maxAgeMs after its first answer was added, not before, and says when', () => {
    const b = builder(100, 1000);
    expect(b.nextDueAt()).toBeUndefined();
    ok(b.add(answer(1), T0));
    ok(b.add(answer(2), T0 + 600));
    ok(b.add(answer(1, T0 + 700, 6), T0 + 700));
    expect(b.nextDueAt()).toBe(T0 + 1000);
    expect(b.cutDue(T0 + 999)).toEqual([]);
    const due = b.cutDue(T0 + 1000);
    expect(due.map((chunk) => [chunk.seq, chunk.entries.length])).toEqual([[5, 2]]);
    expect(b.nextDueAt()).toBe(T0 + 1700);
    expect(b.cutDue(T0 + 1699)).toEqual([]);
    expect(b.cutDue(T0 + 1700).map((chunk) => chunk.seq)).toEqual([6]);
  });

  it('cuts the open chunk first when an answer would stretch it past the span an entry offset can hold', () => {
    const b = builder(100);
    ok(b.add(answer(1, T0), T0));
    const cut = ok(b.add(answer(2, T0 + MAX_CHUNK_SPAN_MS + 1), T0 + 1));
    expect(cut.map((chunk) => chunk.entries.map((entry) => entry.member))).toEqual([[1]]);
    expect(b.flush().map((chunk) => chunk.entries.map((entry) => entry.member))).toEqual([[2]]);
  });

  it.each([
    ['a type URL with #', { typeUrl: 'a#b' }],
    ['a negative seq', { seq: -1 }],
    ['a member index past the maximum', { member: 2 ** 32 }],
    ['a fractional time', { at: T0 + 0.5 }],
    ['an unknown outcome', { outcome: 'MAYBE' }],
  ])('refuses %s without adding it', (_name, override) => {
    const b = builder();
    const added = b.add({ ...answer(1), ...override } as ReturnType<typeof answer>, T0);
    expect(added.ok).toBe(false);
    expect(b.openEntries).toBe(0);
  });

  it('refuses limits it cannot keep', () => {
    expect(() => builder(0)).toThrow(/maxEntries/);
    expect(() => builder(MAX_CHUNK_ENTRIES + 1)).toThrow(/maxEntries/);
    expect(() => new ChunkBuilder({ lineage: 'bad', retentionMs: 1 })).toThrow(/lineage/);
  });
});

describe('memberAnswers: the answers of one Envoy', () => {
  const chunk = (over: Partial<VersionChunk>): VersionChunk => ({ lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 5, chunk: 0, baseAt: T0, ttl: 1, entries: [], ...over });
  const chunks = [
    chunk({ chunk: 0, seq: 5, entries: [{ member: 1, outcome: 'ACK', at: T0 }, { member: 2, outcome: 'ACK', at: T0 + 1 }] }),
    chunk({ chunk: 1, seq: 5, typeUrl: LDS_TYPE_URL, entries: [{ member: 2, outcome: 'NACK', at: T0 + 2 }] }),
    chunk({ chunk: 2, seq: 6, entries: [{ member: 2, outcome: 'STUCK', at: T0 + 3 }, { member: 2, outcome: 'ACK', at: T0 + 9 }, { member: 3, outcome: 'ACK', at: T0 + 4 }] }),
    chunk({ chunk: 0, seq: 5, lineage: OTHER_LINEAGE, entries: [{ member: 2, outcome: 'ACK', at: T0 }] }),
  ];

  it("yields the member's entries of its lineage, chunk by chunk", () => {
    expect([...memberAnswers(chunks, LINEAGE, 2)]).toEqual([
      { typeUrl: CDS_TYPE_URL, seq: 5, outcome: 'ACK', at: T0 + 1, chunk: 0, ttl: chunks[0]!.ttl },
      { typeUrl: LDS_TYPE_URL, seq: 5, outcome: 'NACK', at: T0 + 2, chunk: 1, ttl: chunks[1]!.ttl },
      { typeUrl: CDS_TYPE_URL, seq: 6, outcome: 'STUCK', at: T0 + 3, chunk: 2, ttl: chunks[2]!.ttl },
      { typeUrl: CDS_TYPE_URL, seq: 6, outcome: 'ACK', at: T0 + 9, chunk: 2, ttl: chunks[2]!.ttl },
    ]);
    expect([...memberAnswers(chunks, OTHER_LINEAGE, 2)]).toHaveLength(1);
    expect([...memberAnswers(chunks, LINEAGE, 99)]).toEqual([]);
  });

  it('reads a chunk seen twice once', () => {
    expect([...memberAnswers([...chunks, ...chunks], LINEAGE, 1)]).toHaveLength(1);
  });
});
