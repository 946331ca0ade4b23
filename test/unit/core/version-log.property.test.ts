// Properties of the version log (common/core/version-log.ts), fast-check:
// - encoding: any valid entries decode back to themselves in canonical order, and any bytes the
//   decoder accepts re-encode to the same bytes (one chunk, one encoding); arbitrary and mutated bytes
//   never make it throw;
// - cutting: under random answers, clock steps, cutDue calls and flushes, every answer lands in exactly
//   one chunk, no chunk exceeds maxEntries or mixes types and seqs, a chunk is cut by `add` only when
//   full, by `cutDue` only when due, nothing stays open past its due time after cutDue, ordinals count
//   up by one, and every chunk encodes.
import fc from 'fast-check';

import {
  CDS_TYPE_URL,
  ChunkBuilder,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  MAX_CHUNK_ENTRIES,
  MAX_CHUNK_SPAN_MS,
  MAX_MEMBER_INDEX,
  canonicalEntries,
  decodeChunkEntries,
  encodeChunkEntries,
  memberAnswers,
  type ChunkEntry,
  type EventOutcome,
  type VersionChunk,
} from '../../../common/core';

const LINEAGE = 'gw-1.boot-a.default';
const T0 = 1_780_000_000_000;
const outcome = fc.constantFrom<EventOutcome>('ACK', 'NACK', 'STUCK');

/** Valid entries: the first is at the base time, the others within the span after it. */
const entriesArb = fc
  .tuple(
    fc.nat(Number.MAX_SAFE_INTEGER - MAX_CHUNK_SPAN_MS),
    fc.array(
      fc.record({
        member: fc.oneof(fc.nat(50), fc.nat(MAX_MEMBER_INDEX)),
        outcome,
        offset: fc.oneof(fc.nat(1500), fc.nat(MAX_CHUNK_SPAN_MS)),
      }),
      { minLength: 1, maxLength: 300 },
    ),
  )
  .map(([baseAt, raw]) => ({
    baseAt,
    entries: raw.map((entry, i): ChunkEntry => ({ member: entry.member, outcome: entry.outcome, at: baseAt + (i === 0 ? 0 : entry.offset) })),
  }));

describe('version-log encoding', () => {
  it('decodes what it encodes, in canonical order', () => {
    fc.assert(
      fc.property(entriesArb, ({ baseAt, entries }) => {
        const bytes = encodeChunkEntries(baseAt, entries);
        if (!bytes.ok) throw new Error(bytes.error);
        const decoded = decodeChunkEntries(bytes.value, baseAt);
        expect(decoded).toEqual({ ok: true, value: canonicalEntries(entries) });
      }),
      { numRuns: 300 },
    );
  });

  it('the full 1,000 entries round-trip too', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ member: fc.nat(5000), outcome, offset: fc.nat(1000) }), { minLength: MAX_CHUNK_ENTRIES - 1, maxLength: MAX_CHUNK_ENTRIES - 1 }), (raw) => {
        const entries = [{ member: 0, outcome: 'ACK' as const, at: T0 }, ...raw.map(({ member, outcome: o, offset }) => ({ member, outcome: o, at: T0 + offset }))];
        const bytes = encodeChunkEntries(T0, entries);
        if (!bytes.ok) throw new Error(bytes.error);
        expect(decodeChunkEntries(bytes.value, T0)).toEqual({ ok: true, value: canonicalEntries(entries) });
      }),
      { numRuns: 20 },
    );
  });

  it('never throws on arbitrary or mutated bytes, and whatever it accepts re-encodes to the same bytes', () => {
    const valid = entriesArb.map(({ baseAt, entries }) => {
      const bytes = encodeChunkEntries(baseAt, entries);
      if (!bytes.ok) throw new Error(bytes.error);
      return { baseAt, bytes: bytes.value };
    });
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), value: fc.nat(255) }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('append' as const), value: fc.nat(255) }),
    );
    const mutated = fc.tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([{ baseAt, bytes }, mutations]) => {
      let out = [...bytes];
      for (const m of mutations) {
        if (m.kind === 'flip' && out.length > 0) out[m.at % out.length] = m.value;
        if (m.kind === 'truncate') out = out.slice(0, m.at % (out.length + 1));
        if (m.kind === 'append') out.push(m.value);
      }
      return { baseAt, bytes: Uint8Array.from(out) };
    });
    const arbitrary = fc.record({ baseAt: fc.nat(Number.MAX_SAFE_INTEGER), bytes: fc.uint8Array({ maxLength: 64 }) });
    fc.assert(
      fc.property(fc.oneof(valid, mutated, arbitrary), ({ baseAt, bytes }) => {
        const decoded = decodeChunkEntries(bytes, baseAt);
        if (!decoded.ok) {
          expect(decoded.error.length).toBeGreaterThan(0);
          return;
        }
        const again = encodeChunkEntries(baseAt, decoded.value);
        if (!again.ok) throw new Error(`accepted bytes do not re-encode: ${again.error}`);
        expect([...again.value]).toEqual([...bytes]);
      }),
      { numRuns: 1000 },
    );
  });
});

type Command =
  | { kind: 'add'; type: number; seq: number; member: number; outcome: EventOutcome; answeredBeforeMs: number; stepMs: number }
  | { kind: 'tick'; stepMs: number }
  | { kind: 'flush' };

const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL];

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('add' as const), type: fc.nat(TYPES.length - 1), seq: fc.nat(3), member: fc.nat(40), outcome, answeredBeforeMs: fc.nat(20), stepMs: fc.nat(400) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), stepMs: fc.nat(1500) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('flush' as const) }) },
);

describe('ChunkBuilder cutting rule', () => {
  it('keeps every answer exactly once, within the limits, cut only when full, due or flushed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 2000 }), fc.array(commandArb, { maxLength: 120 }), (maxEntries, maxAgeMs, commands) => {
        const builder = new ChunkBuilder({ lineage: LINEAGE, retentionMs: 3_600_000, limits: { maxEntries, maxAgeMs } });
        let now = T0;
        const added: string[] = [];
        const chunks: VersionChunk[] = [];
        /** When each open (type, seq) got its first answer, as the model sees it. */
        const openedAt = new Map<string, number>();
        const take = (cut: VersionChunk[], how: 'add' | 'due' | 'flush') => {
          for (const chunk of cut) {
            const key = `${chunk.typeUrl}#${chunk.seq}`;
            const opened = openedAt.get(key);
            expect(opened).toBeDefined();
            if (how === 'add') expect(chunk.entries).toHaveLength(maxEntries); // spans here are far below MAX_CHUNK_SPAN_MS
            if (how === 'due') expect(now - opened!).toBeGreaterThanOrEqual(maxAgeMs);
            openedAt.delete(key);
            chunks.push(chunk);
          }
        };
        for (const command of commands) {
          if (command.kind === 'add') {
            now += command.stepMs;
            const typeUrl = TYPES[command.type]!;
            const key = `${typeUrl}#${command.seq}`;
            if (!openedAt.has(key)) openedAt.set(key, now);
            const at = now - command.answeredBeforeMs;
            const cut = builder.add({ typeUrl, seq: command.seq, member: command.member, outcome: command.outcome, at }, now);
            if (!cut.ok) throw new Error(cut.error);
            added.push(`${typeUrl}|${command.seq}|${command.member}|${command.outcome}|${at}`);
            take(cut.value, 'add');
          } else if (command.kind === 'tick') {
            now += command.stepMs;
            take(builder.cutDue(now), 'due');
            // After cutDue(now), nothing open is due at or before now.
            const due = builder.nextDueAt();
            if (due !== undefined) expect(due).toBeGreaterThan(now);
          } else {
            take(builder.flush(), 'flush');
            expect(builder.openEntries).toBe(0);
            expect(builder.nextDueAt()).toBeUndefined();
          }
          expect(builder.openEntries).toBe(added.length - chunks.reduce((sum, chunk) => sum + chunk.entries.length, 0));
        }
        take(builder.flush(), 'flush');

        // Every answer in exactly one chunk (as a multiset).
        const stored = chunks.flatMap((chunk) => chunk.entries.map((entry) => `${chunk.typeUrl}|${chunk.seq}|${entry.member}|${entry.outcome}|${entry.at}`));
        expect(stored.sort()).toEqual([...added].sort());
        // Ordinals 0, 1, 2, … in cut order; every chunk within the limit, canonical and encodable.
        expect(chunks.map((chunk) => chunk.chunk)).toEqual(chunks.map((_, i) => i));
        for (const chunk of chunks) {
          expect(chunk.entries.length).toBeGreaterThanOrEqual(1);
          expect(chunk.entries.length).toBeLessThanOrEqual(maxEntries);
          const bytes = encodeChunkEntries(chunk.baseAt, chunk.entries);
          if (!bytes.ok) throw new Error(bytes.error);
          expect(decodeChunkEntries(bytes.value, chunk.baseAt)).toEqual({ ok: true, value: chunk.entries });
        }
        // And each member's answers read back are exactly what was added for it.
        for (let member = 0; member <= 40; member++) {
          const read = [...memberAnswers(chunks, LINEAGE, member)].map((a) => `${a.typeUrl}|${a.seq}|${member}|${a.outcome}|${a.at}`);
          expect(read.sort()).toEqual(added.filter((entry) => entry.split('|')[2] === String(member)).sort());
        }
      }),
      { numRuns: 300 },
    );
  });
});
