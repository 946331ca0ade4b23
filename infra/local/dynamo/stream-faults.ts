// A fault seam for stream *delivery*, next to the DynamoDB fault seam (./faults.ts) that acts on
// writes. Two faults, both allowed by what AWS promises, so the functions must tolerate them:
//
// - duplicate: a batch the handler processed successfully is delivered again. Lambda's event source
//   mapping is at-least-once ("Lambda might process a record more than once" — Lambda developer
//   guide, "Using Lambda with DynamoDB"): a checkpoint lost after the invocation means the same
//   records (plus whatever arrived since) come again. Modelled exactly that way: the delivery skips
//   the checkpoint once, so retries, bisection and partial failures still apply to the redelivery.
// - reorder within the rules: DynamoDB Streams guarantee order per item only ("for each item that is
//   modified in a DynamoDB table, the stream records appear in the same sequence as the actual
//   modifications to the item" — DynamoDB developer guide, Change data capture). Records of different
//   items may arrive in any order relative to each other, so a batch is shuffled across items, never
//   reordering two records of one item (same full primary key).
//
// The seam is attached to a table's change log, so every delivery of that table (every "event
// source mapping") sees it without new plumbing; random choices come from a seeded PRNG, and each
// injection is counted.
//
// It also carries the pause of an unreachable DynamoDB (the front's `unreachable` fault, wired by
// startLocalDynamo): while paused no delivery starts an invocation; records stay in the change log
// (DynamoDB Streams keep them 24 hours) and are delivered, in order, once it resumes.
import type { DynamoDBRecord } from 'aws-lambda';
import type { TableChangeLog } from './change-log';
import { mulberry32 } from './faults';
import { canonicalJson } from './stream-record';

export interface StreamFaultSettings {
  /** Probability that a successfully processed batch is not checkpointed, hence delivered again. */
  duplicateRate?: number;
  /** Probability that a batch is shuffled across items before the handler sees it. */
  reorderRate?: number;
  /** Seed of the PRNG behind both choices (default 1). */
  seed?: number;
}

export interface StreamFaultCounts {
  /** Batches whose checkpoint was skipped (each is delivered again from the same record). */
  duplicatedBatches: number;
  /** Records in those batches: each one reaches the handler at least twice. */
  duplicatedRecords: number;
  /** Batches handed to the handler in an order other than the shard's. */
  reorderedBatches: number;
  /** Records whose position in such a batch changed. */
  reorderedRecords: number;
}

export class StreamFaultSeam {
  private duplicateRate = 0;
  private reorderRate = 0;
  private random: () => number = mulberry32(1);
  private pausedValue = false;
  private readonly resumeListeners = new Set<() => void>();
  readonly counts: StreamFaultCounts = { duplicatedBatches: 0, duplicatedRecords: 0, reorderedBatches: 0, reorderedRecords: 0 };

  /** Whether delivery is paused (DynamoDB unreachable): no invocation starts until it resumes. */
  get paused(): boolean {
    return this.pausedValue;
  }

  /** Pauses or resumes every delivery of the table; resuming wakes the waiting ones (onResume). */
  setPaused(paused: boolean): void {
    if (this.pausedValue === paused) return;
    this.pausedValue = paused;
    if (!paused) for (const listener of [...this.resumeListeners]) listener();
  }

  /** Called when a pause ends. Returns the unsubscribe. */
  onResume(listener: () => void): () => void {
    this.resumeListeners.add(listener);
    return () => this.resumeListeners.delete(listener);
  }

  /** Replaces the settings (rates are clamped to 0..1). */
  set(settings: StreamFaultSettings): void {
    this.duplicateRate = clampRate(settings.duplicateRate ?? 0, 'duplicateRate');
    this.reorderRate = clampRate(settings.reorderRate ?? 0, 'reorderRate');
    this.random = mulberry32(settings.seed ?? 1);
  }

  /** Turns both faults off (not a pause, which follows the front's `unreachable`); counts are kept. */
  clear(): void {
    this.duplicateRate = 0;
    this.reorderRate = 0;
  }

  get active(): boolean {
    return this.duplicateRate > 0 || this.reorderRate > 0;
  }

  /** The records as the handler should see them: the shard's order, or a shuffle across items. */
  arrange(records: readonly DynamoDBRecord[]): readonly DynamoDBRecord[] {
    if (this.reorderRate <= 0 || records.length < 2 || this.random() >= this.reorderRate) return records;
    const shuffled = reorderAcrossItems(records, this.random);
    const moved = shuffled.reduce((n, record, index) => n + (record === records[index] ? 0 : 1), 0);
    if (moved > 0) {
      this.counts.reorderedBatches++;
      this.counts.reorderedRecords += moved;
    }
    return shuffled;
  }

  /** After a successful invocation: whether to skip the checkpoint so the batch is delivered again. */
  loseCheckpoint(records: readonly DynamoDBRecord[]): boolean {
    if (this.duplicateRate <= 0 || records.length === 0 || this.random() >= this.duplicateRate) return false;
    this.counts.duplicatedBatches++;
    this.counts.duplicatedRecords += records.length;
    return true;
  }
}

/** The item a record belongs to: its full primary key (the unit of DynamoDB Streams' ordering). */
export function itemIdentity(record: DynamoDBRecord): string {
  return canonicalJson(record.dynamodb?.Keys ?? null);
}

/**
 * A random interleaving of the records that keeps each item's records in their original order:
 * one queue per item, and the next record always comes from the head of a randomly chosen queue.
 */
export function reorderAcrossItems(records: readonly DynamoDBRecord[], random: () => number): DynamoDBRecord[] {
  const queues = new Map<string, DynamoDBRecord[]>();
  for (const record of records) {
    const key = itemIdentity(record);
    const queue = queues.get(key);
    if (queue) queue.push(record);
    else queues.set(key, [record]);
  }
  const open = [...queues.values()];
  const result: DynamoDBRecord[] = [];
  while (open.length > 0) {
    const pick = Math.min(open.length - 1, Math.floor(random() * open.length));
    const queue = open[pick] as DynamoDBRecord[];
    result.push(queue.shift() as DynamoDBRecord);
    if (queue.length === 0) open.splice(pick, 1);
  }
  return result;
}

const seams = new WeakMap<TableChangeLog, StreamFaultSeam>();

/** The delivery fault seam of a table's change log, created (inactive) on first use. */
export function streamFaultsFor(source: TableChangeLog): StreamFaultSeam {
  let seam = seams.get(source);
  if (!seam) {
    seam = new StreamFaultSeam();
    seams.set(source, seam);
  }
  return seam;
}

function clampRate(rate: number, name: string): number {
  if (!Number.isFinite(rate)) throw new Error(`${name} must be a number in 0..1, got ${rate}`);
  return Math.min(1, Math.max(0, rate));
}
