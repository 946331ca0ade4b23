// The change log of one table: the local stand-in for a DynamoDB stream. Records are split into
// shards by a hash of the partition key, so the records of one item are always in one shard, in the
// order their writes were applied, while different items can be delivered in parallel (as with
// DynamoDB Streams, where per-item order is guaranteed and cross-item order is not).
import type { DynamoDBRecord } from 'aws-lambda';
import { buildStreamRecord, classifyChange, formatSequenceNumber, type ItemChange } from './stream-record';
import { canonicalJson } from './stream-record';

export type StartingPosition = 'TRIM_HORIZON' | 'LATEST';

/**
 * When each record was appended (Date.now()), for the deliveries' iterator age (Lambda's IteratorAge
 * metric). Kept beside the record, not in it: the record is what the handler receives.
 */
const appendedAtByRecord = new WeakMap<DynamoDBRecord, number>();

/** When `record` was appended to its shard (undefined for a record that did not come from a change log). */
export function appendedAt(record: DynamoDBRecord): number | undefined {
  return appendedAtByRecord.get(record);
}

/** A monotonic sequence shared by every table of one local DynamoDB. */
export class SequenceCounter {
  private next = 1n;
  take(): string {
    return formatSequenceNumber(this.next++);
  }
}

class Shard {
  /** Physical storage; records[0] is at absolute position `base`. */
  private records: DynamoDBRecord[] = [];
  private base = 0;
  /** Absolute position of the oldest retained record; positions never reuse, so cursors stay valid. */
  start = 0;
  readonly cursors = new Set<ShardCursor>();
  private readonly listeners = new Set<() => void>();

  constructor(readonly shardId: string) {}

  get end(): number {
    return this.base + this.records.length;
  }

  get retained(): number {
    return this.end - this.start;
  }

  /** Records physically held (retained plus passed ones awaiting compaction). */
  get stored(): number {
    return this.records.length;
  }

  append(record: DynamoDBRecord, maxUnread: number): void {
    appendedAtByRecord.set(record, Date.now());
    this.records.push(record);
    if (this.cursors.size === 0 && this.retained > maxUnread) {
      // No reader: keep a bounded tail, as AWS keeps 24 hours. A reader opened later at TRIM_HORIZON
      // starts at the oldest record still kept.
      this.dropBefore(this.end - maxUnread);
    }
    for (const listener of [...this.listeners]) listener();
  }

  read(from: number, max: number): DynamoDBRecord[] {
    const offset = Math.max(from, this.start) - this.base;
    return this.records.slice(offset, offset + max);
  }

  /** Drops the records every reader has passed (bounded memory). */
  trim(): void {
    if (this.cursors.size === 0) return;
    let min = Number.POSITIVE_INFINITY;
    for (const cursor of this.cursors) min = Math.min(min, cursor.position);
    this.dropBefore(Math.min(min, this.end));
  }

  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private dropBefore(position: number): void {
    if (position <= this.start) return;
    this.start = position;
    // Compact in chunks: splicing the array head on every checkpoint would cost O(n) each time.
    const dead = this.start - this.base;
    if (dead >= 1024 || dead * 2 >= this.records.length) {
      this.records.splice(0, dead);
      this.base = this.start;
    }
  }
}

interface ShardCursor {
  position: number;
}

export interface ChangeLogOptions {
  tableName: string;
  region: string;
  shardCount: number;
  sequence: SequenceCounter;
  now: () => number;
  /** Records kept per shard while no reader is open. */
  maxUnreadRecordsPerShard: number;
}

export class TableChangeLog {
  readonly tableName: string;
  readonly streamArn: string;
  private readonly shards: Shard[];
  private readonly opts: ChangeLogOptions;

  constructor(opts: ChangeLogOptions) {
    this.opts = opts;
    this.tableName = opts.tableName;
    const label = new Date(opts.now()).toISOString().replace('Z', '');
    this.streamArn = `arn:aws:dynamodb:${opts.region}:000000000000:table/${opts.tableName}/stream/${label}`;
    this.shards = Array.from(
      { length: Math.max(1, opts.shardCount) },
      (_, i) => new Shard(`shardId-${String(i + 1).padStart(20, '0')}-local`),
    );
  }

  get shardIds(): string[] {
    return this.shards.map((s) => s.shardId);
  }

  /**
   * Appends the record for one observed change, or nothing when the item did not change. Callers hold
   * the item's key lock, so appends for one item happen in write order.
   */
  append(change: ItemChange, partitionKeyName: string): DynamoDBRecord | undefined {
    const kind = classifyChange(change.oldImage, change.newImage);
    if (!kind) return undefined;
    const record = buildStreamRecord(kind, change, {
      region: this.opts.region,
      streamArn: this.streamArn,
      sequenceNumber: this.opts.sequence.take(),
      nowMs: this.opts.now(),
    });
    const shard = this.shards[shardIndex(change.keys[partitionKeyName], this.shards.length)];
    shard?.append(record, this.opts.maxUnreadRecordsPerShard);
    return record;
  }

  /** Opens a reader with one cursor per shard (one event source mapping). */
  openReader(startingPosition: StartingPosition = 'TRIM_HORIZON'): ChangeLogReader {
    return new ChangeLogReader(this.shards, startingPosition);
  }

  /** Records currently retained (all shards), for tests of the bounded-memory rule. */
  get retainedRecords(): number {
    return this.shards.reduce((n, s) => n + s.retained, 0);
  }

  /** Records physically held, including passed ones not yet compacted away. */
  get storedRecords(): number {
    return this.shards.reduce((n, s) => n + s.stored, 0);
  }
}

export class ChangeLogReader {
  private readonly cursors: ShardCursor[];
  private closed = false;

  constructor(
    private readonly shards: Shard[],
    startingPosition: StartingPosition,
  ) {
    this.cursors = shards.map((shard) => {
      const cursor = { position: startingPosition === 'LATEST' ? shard.end : shard.start };
      shard.cursors.add(cursor);
      return cursor;
    });
  }

  get shardIds(): string[] {
    return this.shards.map((s) => s.shardId);
  }

  /** Records past the cursor of shard `i` not yet delivered. */
  pending(i: number): number {
    const shard = this.shards[i];
    const cursor = this.cursors[i];
    return shard && cursor ? shard.end - cursor.position : 0;
  }

  /** Up to `max` records from the cursor of shard `i`, without moving it. */
  peek(i: number, max: number): DynamoDBRecord[] {
    const shard = this.shards[i];
    const cursor = this.cursors[i];
    return shard && cursor ? shard.read(cursor.position, max) : [];
  }

  /** Checkpoints `count` records of shard `i` as done. */
  advance(i: number, count: number): void {
    const shard = this.shards[i];
    const cursor = this.cursors[i];
    if (!shard || !cursor) return;
    cursor.position = Math.min(shard.end, cursor.position + count);
    shard.trim();
  }

  /** Calls `listener` on each append to shard `i`; returns the unsubscribe function. */
  onAppend(i: number, listener: () => void): () => void {
    const shard = this.shards[i];
    return shard ? shard.onAppend(listener) : () => undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.shards.forEach((shard, i) => {
      const cursor = this.cursors[i];
      if (cursor) shard.cursors.delete(cursor);
      shard.trim();
    });
  }
}

// FNV-1a over the canonical partition key value: stable across processes and runs.
export function shardIndex(partitionKeyValue: unknown, shardCount: number): number {
  const text = canonicalJson(partitionKeyValue ?? null);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shardCount;
}
