// The version log (docs/ARCHITECTURE.md, "Design: work per change proportional to gateways, not
// Envoys", `VLOG#<lineage>`): the ACK/NACK/STUCK answers of a lineage's members packed per type and
// seq into chunks, so an answer costs a few bytes of a shared item instead of an item write of its
// own (today's per-Envoy event log, event-log.ts). Three parts, all pure:
// - the chunk and the binary encoding of its entries (a corrupt chunk decodes to an error value);
// - ChunkBuilder, the accumulator that decides when a chunk is cut (entries, age, on demand);
// - memberAnswers, which reads one member's answers back out of chunks ("the ACKs of Envoy E").
// The VersionLog port (below) is what common/store implements over the table.
import { z } from 'zod';
import type { Page, PageRequest } from './ports';
import type { EnvoyEvent, EventOutcome } from './envoy-event';
import { epochMsSchema, lineageSchema, nodeIdSchema, seqSchema, typeUrlSchema } from './record-fields';
import { parsedError, parsedOk, type Parsed } from './result';
import { ttlEpochSeconds } from './ttl';
import { isValidTypeUrl } from './type-urls';
import { isValidLineage, isValidSeq, type Lineage } from './version';

// ---------------------------------------------------------------------------------------------
// The chunk

/** One member's answer to one (type, seq): who (member index in the lineage), what, when (epoch ms). */
export interface ChunkEntry {
  member: number;
  outcome: EventOutcome;
  at: number;
}

/**
 * The answers of a lineage's members to one type at one seq, as one stored item. `chunk` is the
 * chunk's ordinal on its lineage (ChunkBuilder counts them), so it names the chunk uniquely within the
 * lineage's partition: retrying a put rewrites the same key with the same bytes.
 */
export interface VersionChunk {
  lineage: Lineage;
  typeUrl: string;
  seq: number;
  chunk: number;
  /** Epoch ms of the earliest entry: entries store milliseconds since it. */
  baseAt: number;
  /** Epoch seconds (the table's `ttl`): the latest entry's time plus the retention. */
  ttl: number;
  /** In canonical order (canonicalEntries): by member, then time, then outcome. */
  entries: ChunkEntry[];
}

/** A chunk's fields other than its entries: what a stored item carries as plain attributes. */
export type VersionChunkHeader = Omit<VersionChunk, 'entries'>;

/** Entries per chunk at most (the design's cut at 1,000; also the decoder's bound). */
export const MAX_CHUNK_ENTRIES = 1000;
/**
 * Largest member index: indices are never reused within a lineage (an old answer would be read as a
 * new member's), so they grow with churn over the lineage's life, not with its size.
 */
export const MAX_MEMBER_INDEX = 2 ** 32 - 1;
/** Largest gap between a chunk's earliest and latest entry (~49 days; chunks are cut after 1 s). */
export const MAX_CHUNK_SPAN_MS = 2 ** 32;

const chunkOrdinalSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** The header as an item stores it (common/store validates items with it before decoding the entries). */
export const versionChunkHeaderShape = {
  lineage: lineageSchema,
  typeUrl: typeUrlSchema,
  seq: seqSchema,
  chunk: chunkOrdinalSchema,
  baseAt: epochMsSchema,
  ttl: z.number().int().positive(),
};
export const VersionChunkHeaderSchema = z.object(versionChunkHeaderShape);

// ---------------------------------------------------------------------------------------------
// Encoding of the entries
//
// Bytes: format byte, count (varint), then per entry `member delta` (varint) and
// `offset ms × 4 + outcome code` (varint), entries in canonical order so the member index is a
// difference from the previous entry's (sorted indices of one version's answerers are dense: the delta
// is usually one byte) and the offset from `baseAt` fits two bytes for the ~1 s a chunk gathers.
// Varints are unsigned LEB128, minimal (no trailing zero groups), so a chunk has exactly one encoding:
// equal chunks give equal bytes, and decoding then encoding any accepted bytes gives them back.

/** The first byte of every encoded chunk; any other value is refused. */
export const CHUNK_FORMAT = 1;

/**
 * Outcome codes as stored (written out, not derived from EVENT_OUTCOMES: reordering that list must not
 * change what stored bytes mean). Two bits; code 3 is unused and refused.
 */
const OUTCOME_OF_CODE: readonly EventOutcome[] = ['ACK', 'NACK', 'STUCK'];
const OUTCOME_CODE: Readonly<Record<EventOutcome, number>> = { ACK: 0, NACK: 1, STUCK: 2 };
/** The offset is shifted past the outcome's two bits: `offset × 4 + code`. */
const OUTCOME_SLOTS = 4;
/** Varint groups at most: 8 × 7 bits hold every safe integer. */
const MAX_VARINT_BYTES = 8;

function compareEntries(a: ChunkEntry, b: ChunkEntry): number {
  return a.member - b.member || a.at - b.at || OUTCOME_CODE[a.outcome] - OUTCOME_CODE[b.outcome];
}

/** The entries in the order a chunk stores them: by member index, then time, then outcome. */
export function canonicalEntries(entries: readonly ChunkEntry[]): ChunkEntry[] {
  return [...entries].sort(compareEntries);
}

function pushVarint(bytes: number[], value: number): void {
  // Arithmetic, not bit operations: JavaScript's bitwise operators are 32-bit.
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) + 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
}

function entryProblem(entry: ChunkEntry, baseAt: number): string | undefined {
  if (!Number.isSafeInteger(entry.member) || entry.member < 0 || entry.member > MAX_MEMBER_INDEX) return `member index ${String(entry.member)} is not an integer in 0..${MAX_MEMBER_INDEX}`;
  if (!Object.hasOwn(OUTCOME_CODE, entry.outcome)) return `unknown outcome ${JSON.stringify(entry.outcome)}`;
  if (!Number.isSafeInteger(entry.at) || entry.at < baseAt) return `time ${String(entry.at)} is not an integer at or after the base time ${baseAt}`;
  if (entry.at - baseAt > MAX_CHUNK_SPAN_MS) return `time ${entry.at} is more than ${MAX_CHUNK_SPAN_MS} ms after the base time ${baseAt}`;
  return undefined;
}

/**
 * The entries' bytes. Refuses (an error value) what no decoder would accept: no entries or more than
 * MAX_CHUNK_ENTRIES, a bad member index, outcome or time, or a `baseAt` other than the earliest entry's
 * time (so that one chunk has one encoding). The entries may come in any order.
 */
export function encodeChunkEntries(baseAt: number, entries: readonly ChunkEntry[]): Parsed<Uint8Array> {
  if (!Number.isSafeInteger(baseAt) || baseAt < 0) return parsedError(`base time ${String(baseAt)} is not a non-negative integer`);
  if (entries.length === 0 || entries.length > MAX_CHUNK_ENTRIES) return parsedError(`a chunk holds 1..${MAX_CHUNK_ENTRIES} entries, not ${entries.length}`);
  const bytes: number[] = [CHUNK_FORMAT];
  pushVarint(bytes, entries.length);
  let previousMember = 0;
  let earliest = Number.MAX_SAFE_INTEGER;
  for (const [index, entry] of canonicalEntries(entries).entries()) {
    const problem = entryProblem(entry, baseAt);
    if (problem !== undefined) return parsedError(`entry ${index}: ${problem}`);
    pushVarint(bytes, entry.member - previousMember);
    pushVarint(bytes, (entry.at - baseAt) * OUTCOME_SLOTS + OUTCOME_CODE[entry.outcome]);
    previousMember = entry.member;
    earliest = Math.min(earliest, entry.at);
  }
  if (earliest !== baseAt) return parsedError(`base time ${baseAt} is not the earliest entry's time ${earliest}`);
  return parsedOk(Uint8Array.from(bytes));
}

/** Reads varints off a byte array; every failure names the byte offset. */
class VarintReader {
  offset = 0;
  constructor(private readonly bytes: Uint8Array) {}

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  read(what: string): Parsed<number> {
    const start = this.offset;
    let value = 0;
    let scale = 1;
    for (let group = 0; group < MAX_VARINT_BYTES; group++) {
      const byte = this.bytes[this.offset];
      if (byte === undefined) return parsedError(`${what} at byte ${start}: the data ends inside a varint`);
      this.offset++;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (byte === 0 && group > 0) return parsedError(`${what} at byte ${start}: varint is not minimal`);
        if (!Number.isSafeInteger(value)) return parsedError(`${what} at byte ${start}: varint exceeds the safe integer range`);
        return parsedOk(value);
      }
      scale *= 0x80;
    }
    return parsedError(`${what} at byte ${start}: varint longer than ${MAX_VARINT_BYTES} bytes`);
  }
}

/**
 * The entries of `bytes` (as encodeChunkEntries wrote them for `baseAt`), validated: the format byte,
 * every varint, the count against the bytes present (no missing entries, no trailing bytes), member
 * indices, outcome codes, times, canonical order, and that the earliest entry is at `baseAt`. Anything
 * else is an error value naming what is wrong and where; it never throws.
 */
export function decodeChunkEntries(bytes: Uint8Array, baseAt: number): Parsed<ChunkEntry[]> {
  if (!Number.isSafeInteger(baseAt) || baseAt < 0) return parsedError(`base time ${String(baseAt)} is not a non-negative integer`);
  if (bytes.length === 0) return parsedError('no bytes');
  if (bytes[0] !== CHUNK_FORMAT) return parsedError(`format byte ${String(bytes[0])} (this reader knows ${CHUNK_FORMAT})`);
  const reader = new VarintReader(bytes);
  reader.offset = 1;
  const count = reader.read('entry count');
  if (!count.ok) return count;
  if (count.value < 1 || count.value > MAX_CHUNK_ENTRIES) return parsedError(`entry count ${count.value} is not in 1..${MAX_CHUNK_ENTRIES}`);
  // Each entry takes at least two bytes: a shorter input is truncated, whatever its varints say.
  if (reader.remaining < 2 * count.value) return parsedError(`${count.value} entries need at least ${2 * count.value} bytes, ${reader.remaining} remain`);
  const entries: ChunkEntry[] = [];
  let member = 0;
  let earliest = Number.MAX_SAFE_INTEGER;
  for (let index = 0; index < count.value; index++) {
    const delta = reader.read(`entry ${index} member`);
    if (!delta.ok) return delta;
    const packed = reader.read(`entry ${index} offset`);
    if (!packed.ok) return packed;
    member += delta.value;
    const outcome = OUTCOME_OF_CODE[packed.value % OUTCOME_SLOTS];
    if (outcome === undefined) return parsedError(`entry ${index}: unknown outcome code ${packed.value % OUTCOME_SLOTS}`);
    const entry: ChunkEntry = { member, outcome, at: baseAt + Math.floor(packed.value / OUTCOME_SLOTS) };
    const problem = entryProblem(entry, baseAt);
    if (problem !== undefined) return parsedError(`entry ${index}: ${problem}`);
    const previous = entries[entries.length - 1];
    if (previous !== undefined && compareEntries(previous, entry) > 0) return parsedError(`entry ${index}: out of canonical order (member, time, outcome)`);
    entries.push(entry);
    earliest = Math.min(earliest, entry.at);
  }
  if (reader.remaining > 0) return parsedError(`${reader.remaining} bytes after the last of ${count.value} entries`);
  if (earliest !== baseAt) return parsedError(`base time ${baseAt} is not the earliest entry's time ${earliest}`);
  return parsedOk(entries);
}

/** A chunk from its stored header and entry bytes: the header's fields checked, the bytes decoded. */
export function chunkFromStored(header: VersionChunkHeader, bytes: Uint8Array): Parsed<VersionChunk> {
  const checked = VersionChunkHeaderSchema.safeParse(header);
  if (!checked.success) return parsedError(checked.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(header)'}: ${issue.message}`).join('; '));
  const entries = decodeChunkEntries(bytes, header.baseAt);
  if (!entries.ok) return entries;
  return parsedOk({ ...checked.data, entries: entries.value });
}

// ---------------------------------------------------------------------------------------------
// Cutting chunks

/** One answer as the tracker reports it: the member's index on the builder's lineage, the type and seq answered. */
export interface VersionAnswer extends ChunkEntry {
  typeUrl: string;
  seq: number;
}

export interface ChunkLimits {
  /** A chunk is cut when it holds this many entries (1..MAX_CHUNK_ENTRIES). */
  maxEntries: number;
  /** A chunk is due this long after its first entry was added (cutDue); ms, non-negative. */
  maxAgeMs: number;
}

/** The design's rule: cut at 1,000 entries or 1 s. */
export const DEFAULT_CHUNK_LIMITS: ChunkLimits = { maxEntries: MAX_CHUNK_ENTRIES, maxAgeMs: 1000 };

export interface ChunkBuilderOptions {
  lineage: Lineage;
  /** How long chunks are kept (their `ttl`: the latest entry's time plus this); ms, positive. */
  retentionMs: number;
  limits?: ChunkLimits;
  /** The first chunk's ordinal (default 0): the lineage is new with its gateway process, and so is its count. */
  firstChunk?: number;
}

interface OpenChunk {
  typeUrl: string;
  seq: number;
  /** `now` when its first entry was added: its age counts from here. */
  openedAt: number;
  entries: ChunkEntry[];
  earliest: number;
  latest: number;
}

/**
 * Gathers one lineage's answers into chunks, one open chunk per (type, seq), and says when a chunk is
 * cut: on the answer that fills it (`add`), when it has been open `maxAgeMs` (`cutDue`, at the time
 * `nextDueAt` gives), or at once for everything open (`flush`: before a PROGRESS write, since an answer
 * counts only once its chunk is stored). Every chunk it returns encodes (encodeChunkEntries): an answer
 * that could not be encoded is refused by `add`, and one that would stretch a chunk past
 * MAX_CHUNK_SPAN_MS cuts the open chunk first. Chunk ordinals increase by one per cut chunk, so one
 * builder per lineage names every chunk uniquely; retrying a chunk's put is the caller's (it is never
 * cut again). No clock: times come in as arguments.
 */
export class ChunkBuilder {
  readonly lineage: Lineage;
  private readonly limits: ChunkLimits;
  private readonly retentionMs: number;
  private nextChunk: number;
  private readonly open = new Map<string, OpenChunk>();

  constructor(options: ChunkBuilderOptions) {
    const limits = options.limits ?? DEFAULT_CHUNK_LIMITS;
    // Configuration is validated where it is parsed (the gateway's options); a bad value here is a bug.
    if (!isValidLineage(options.lineage)) throw new Error(`invalid lineage ${JSON.stringify(options.lineage)}`);
    if (!Number.isSafeInteger(limits.maxEntries) || limits.maxEntries < 1 || limits.maxEntries > MAX_CHUNK_ENTRIES) throw new Error(`maxEntries must be an integer in 1..${MAX_CHUNK_ENTRIES}`);
    if (!Number.isSafeInteger(limits.maxAgeMs) || limits.maxAgeMs < 0) throw new Error('maxAgeMs must be a non-negative integer');
    if (!Number.isSafeInteger(options.retentionMs) || options.retentionMs < 1) throw new Error('retentionMs must be a positive integer');
    this.lineage = options.lineage;
    this.limits = limits;
    this.retentionMs = options.retentionMs;
    this.nextChunk = options.firstChunk ?? 0;
  }

  /** Answers gathered and not yet cut. */
  get openEntries(): number {
    let count = 0;
    for (const chunk of this.open.values()) count += chunk.entries.length;
    return count;
  }

  /**
   * Adds one answer at time `now`; returns the chunks this cut (the open chunk of its type and seq when
   * the answer fills it, or when the answer is too far in time from it to share a chunk), or an error
   * value when the answer cannot be stored (it is not added).
   */
  add(answer: VersionAnswer, now: number): Parsed<VersionChunk[]> {
    if (!isValidTypeUrl(answer.typeUrl)) return parsedError(`invalid type URL ${JSON.stringify(answer.typeUrl)}`);
    if (!isValidSeq(answer.seq)) return parsedError(`invalid seq ${String(answer.seq)}`);
    const entry: ChunkEntry = { member: answer.member, outcome: answer.outcome, at: answer.at };
    const problem = Number.isSafeInteger(entry.at) && entry.at >= 0 ? entryProblem(entry, entry.at) : `time ${String(entry.at)} is not a non-negative integer`;
    if (problem !== undefined) return parsedError(problem);
    const cut: VersionChunk[] = [];
    const key = `${answer.typeUrl}#${answer.seq}`;
    let chunk = this.open.get(key);
    if (chunk !== undefined && Math.max(chunk.latest, entry.at) - Math.min(chunk.earliest, entry.at) > MAX_CHUNK_SPAN_MS) {
      cut.push(this.cut(key, chunk));
      chunk = undefined;
    }
    if (chunk === undefined) {
      chunk = { typeUrl: answer.typeUrl, seq: answer.seq, openedAt: now, entries: [], earliest: entry.at, latest: entry.at };
      this.open.set(key, chunk);
    }
    chunk.entries.push(entry);
    chunk.earliest = Math.min(chunk.earliest, entry.at);
    chunk.latest = Math.max(chunk.latest, entry.at);
    if (chunk.entries.length >= this.limits.maxEntries) cut.push(this.cut(key, chunk));
    return parsedOk(cut);
  }

  /** The chunks open `maxAgeMs` or longer at `now`, cut (oldest first). */
  cutDue(now: number): VersionChunk[] {
    const cut: VersionChunk[] = [];
    for (const [key, chunk] of [...this.open]) {
      if (now - chunk.openedAt >= this.limits.maxAgeMs) cut.push(this.cut(key, chunk));
    }
    return cut;
  }

  /** When cutDue next has something to cut; undefined when nothing is open. */
  nextDueAt(): number | undefined {
    let due: number | undefined;
    for (const chunk of this.open.values()) due = Math.min(due ?? Number.MAX_SAFE_INTEGER, chunk.openedAt + this.limits.maxAgeMs);
    return due;
  }

  /**
   * The open chunk of `typeUrl` at `seq`, cut now (undefined when none is open): before a write that
   * must not get ahead of the answers in it (the gateway's Envoy STATE).
   */
  cutOpen(typeUrl: string, seq: number): VersionChunk | undefined {
    const key = `${typeUrl}#${seq}`;
    const chunk = this.open.get(key);
    return chunk === undefined ? undefined : this.cut(key, chunk);
  }

  /** Every open chunk, cut now (oldest first). */
  flush(): VersionChunk[] {
    return [...this.open].map(([key, chunk]) => this.cut(key, chunk));
  }

  private cut(key: string, open: OpenChunk): VersionChunk {
    this.open.delete(key);
    return {
      lineage: this.lineage,
      typeUrl: open.typeUrl,
      seq: open.seq,
      chunk: this.nextChunk++,
      baseAt: open.earliest,
      ttl: ttlEpochSeconds(open.latest, this.retentionMs),
      entries: canonicalEntries(open.entries),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Reading a member's answers back

/** One answer of one member, as read from the chunks of its lineage. */
export interface MemberAnswer {
  typeUrl: string;
  seq: number;
  outcome: EventOutcome;
  at: number;
  /** The chunk it was read from. */
  chunk: number;
  /** The chunk's `ttl` (epoch seconds): how long the answer is kept. */
  ttl: number;
}

/**
 * The answers of member `member` of `lineage` in `chunks` (in the chunks' order; the store's range read
 * gives type, then seq, then chunk), entries of the member's only. Member indices are per lineage, so
 * chunks of other lineages are skipped; a chunk seen twice (the same ordinal, e.g. two overlapping reads
 * concatenated) is read once.
 */
export function* memberAnswers(chunks: Iterable<VersionChunk>, lineage: Lineage, member: number): Generator<MemberAnswer, void, undefined> {
  const seen = new Set<number>();
  for (const chunk of chunks) {
    if (chunk.lineage !== lineage || seen.has(chunk.chunk)) continue;
    seen.add(chunk.chunk);
    for (const entry of chunk.entries) {
      if (entry.member === member) yield { typeUrl: chunk.typeUrl, seq: chunk.seq, outcome: entry.outcome, at: entry.at, chunk: chunk.chunk, ttl: chunk.ttl };
    }
  }
}

/**
 * A member's answer as an event of its Envoy (the shape the per-Envoy event log gives readers). A
 * chunk keeps no NACK message and no STUCK `sentAt` (the gateway writes NACKs to the Envoy's own log
 * with their message; docs/GATEWAY.md, "The version log"): a NACK read from a chunk says so.
 */
export function memberAnswerEvent(nodeId: string, lineage: Lineage, answer: MemberAnswer): EnvoyEvent {
  return {
    nodeId,
    outcome: answer.outcome,
    lineage,
    seq: answer.seq,
    typeUrl: answer.typeUrl,
    at: answer.at,
    ttl: answer.ttl,
    ...(answer.outcome === 'NACK' ? { message: '(recorded in the version log without its message)' } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Membership: which index a node has on a lineage

/**
 * That `nodeId` answers as member `member` of `lineage` (from `joinedAt`). Stored under the Envoy's
 * own key, so "the answers of Envoy E" starts from E: its memberships name the lineages and indices
 * whose chunks hold its answers. A node has one index per lineage while the gateway remembers it; if
 * forgotten and back, it gets a new one and a second membership (indices are never reused).
 */
export interface VersionLogMember {
  nodeId: string;
  lineage: Lineage;
  member: number;
  joinedAt: number;
  /** Epoch seconds; rewritten (later) while the member keeps answering past half the retention. */
  ttl: number;
}

export const versionLogMemberShape = {
  nodeId: nodeIdSchema,
  lineage: lineageSchema,
  member: z.number().int().nonnegative().max(MAX_MEMBER_INDEX),
  joinedAt: epochMsSchema,
  ttl: z.number().int().positive(),
};
export const VersionLogMemberSchema = z.object(versionLogMemberShape);

// ---------------------------------------------------------------------------------------------
// The port (common/store/version-log.ts implements it over the table)

/** One type's chunks of a lineage between two seqs, both included. */
export interface ChunkRange {
  typeUrl: string;
  fromSeq: number;
  toSeq: number;
}

export interface PutChunksResult {
  /** Chunks durably written (a retried chunk rewrites the same item with the same bytes). */
  written: number;
  /** Chunks not written; `retryable: false` when the chunk itself is invalid (a retry fails again). */
  failed: { chunk: VersionChunk; error: string; retryable: boolean }[];
}

export interface PutMembersResult {
  written: number;
  failed: { member: VersionLogMember; error: string; retryable: boolean }[];
}

/** The version log's table side: chunks written in batches, read back by lineage, type and seq range. */
export interface VersionLog {
  /** Writes chunks (any lineages); idempotent per chunk. Rejects only on infrastructure failure past the store's retries. */
  putChunks(chunks: readonly VersionChunk[]): Promise<PutChunksResult>;
  /**
   * One page of `lineage`'s chunks of `range`, ascending by seq then ordinal (`descending`: newest
   * first). `limit` bounds the items examined; corrupt items are reported in `corrupt` with their key,
   * never thrown.
   */
  listChunks(lineage: Lineage, range: ChunkRange, page?: PageRequest & { consistent?: boolean; descending?: boolean }): Promise<Page<VersionChunk>>;
  /** Writes memberships (batched, idempotent per node, lineage and index). */
  putMembers(members: readonly VersionLogMember[]): Promise<PutMembersResult>;
  /** One page of a node's memberships (by lineage, then index). */
  listMembers(nodeId: string, page?: PageRequest): Promise<Page<VersionLogMember>>;
}
