// Lambda-style delivery of a table's change log: the local stand-in for an event source mapping
// (AWS Lambda developer guide, "Using Lambda with DynamoDB"). Per shard, one invocation at a time,
// records in order; batches of up to batchSize, waiting up to the batching window to fill; a thrown
// error retries the whole batch after a backoff (at-least-once); with ReportBatchItemFailures the
// handler names failed records and delivery resumes from the lowest-numbered one; after
// maximumRetryAttempts the batch goes to onDropped (the on-failure destination) and delivery moves on.
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import pino, { type Logger } from 'pino';
import { z } from 'zod';
import { appendedAt, type ChangeLogReader, type StartingPosition, type TableChangeLog } from './change-log';
import { copyRecords } from './record-copy';
import { streamFaultsFor, type StreamFaultSeam } from './stream-faults';

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;

export interface DroppedBatch {
  streamArn: string;
  shardId: string;
  /** The records given up on (Lambda's on-failure destination receives only their range). */
  records: DynamoDBRecord[];
  startSequenceNumber: string;
  endSequenceNumber: string;
  /** Invocations of the batch that failed, including the first one. */
  attempts: number;
  reason: 'function-error' | 'partial-batch-failure';
  error?: unknown;
}

export interface StreamDeliveryOptions {
  source: TableChangeLog;
  handler: StreamHandler;
  /** Most records per invocation (AWS default 100). */
  batchSize?: number;
  /** How long to wait for a batch to fill before invoking with fewer (AWS default 0). */
  maximumBatchingWindowMs?: number;
  /** Retries after the first failed invocation; -1 = until it succeeds (the AWS default). */
  maximumRetryAttempts?: number;
  /** On a function error, split the batch in two before retrying (does not use up a retry, as on AWS). */
  bisectBatchOnFunctionError?: boolean;
  /** Honour `batchItemFailures` (FunctionResponseTypes: ReportBatchItemFailures). Default true. */
  reportBatchItemFailures?: boolean;
  /** The on-failure destination. Errors it throws are logged and ignored. */
  onDropped?: (dropped: DroppedBatch) => void | Promise<void>;
  /** TRIM_HORIZON (default): every record still in the log; LATEST: only records appended from now. */
  startingPosition?: StartingPosition;
  /**
   * Like a Lambda function timeout: an invocation not settled by then counts as a function error
   * and is retried. The handler's promise cannot be killed and keeps running (a real timeout kills
   * the sandbox), so handlers must be idempotent, as they must be anyway. Default: no timeout.
   */
  functionTimeoutMs?: number;
  /** Backoff between retries: initialMs doubling per attempt up to maxMs, with jitter. */
  retryBackoff?: { initialMs?: number; maxMs?: number };
  logger?: Logger;
  /**
   * Injected delivery faults (duplicates, reorders across items; ./stream-faults.ts). Default: the
   * seam attached to `source` (`streamFaultsFor(source)`), inactive until someone sets it.
   */
  faults?: StreamFaultSeam;
  /**
   * Lambda event filtering (the mapping's FilterCriteria): records for which this returns false are
   * discarded before the invocation, and a batch left empty is checkpointed without invoking the
   * handler (as Lambda does). Discarded records are never copied for the handler. The batch size
   * counts records read from the shard, before filtering (as the earlier in-handler filter did).
   */
  filter?: (record: DynamoDBRecord) => boolean;
}

export interface DeliveryStats {
  /** Batches taken from a shard, including those the filter left empty (which call no handler). */
  invocations: number;
  failedInvocations: number;
  /** Records checkpointed as done, including the ones the filter discarded. */
  deliveredRecords: number;
  droppedRecords: number;
  /** Records the filter discarded, and batches it left empty (the handler was not called). */
  filteredRecords: number;
  emptiedBatches: number;
  /**
   * Lambda's IteratorAge: at each handler call, how long ago the batch's newest record was appended (ms);
   * the latest value and the largest seen. How long a record waited for its function is at least this.
   */
  iteratorAgeMs: { last: number; max: number };
}

export interface StreamDelivery {
  readonly stats: DeliveryStats;
  /** Resolves once every shard has delivered every record appended so far and nothing is in flight. */
  idle(timeoutMs?: number): Promise<void>;
  /** Delivers what is already in the log (up to drainTimeoutMs, default 10 s), then stops. */
  stop(opts?: { drainTimeoutMs?: number }): Promise<void>;
}

// A handler's answer, checked at the edge. Lambda treats a missing or null response, or a null/empty
// batchItemFailures, as complete success.
const batchResponseSchema = z
  .object({ batchItemFailures: z.array(z.object({ itemIdentifier: z.unknown() })).nullish() })
  .nullish();

type Outcome =
  | { kind: 'success' }
  | { kind: 'partial'; firstFailed: number }
  | { kind: 'error'; error: unknown };

export function createStreamDelivery(opts: StreamDeliveryOptions): StreamDelivery {
  const batchSize = opts.batchSize ?? 100;
  const windowMs = opts.maximumBatchingWindowMs ?? 0;
  const maxRetries = opts.maximumRetryAttempts ?? -1;
  const reportFailures = opts.reportBatchItemFailures ?? true;
  const initialBackoffMs = opts.retryBackoff?.initialMs ?? 100;
  const maxBackoffMs = opts.retryBackoff?.maxMs ?? 2000;
  const logger = opts.logger ?? pino({ name: 'stream-delivery', level: 'info' });
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new Error(`batchSize must be 1..10000, got ${batchSize}`);
  if (!Number.isInteger(maxRetries) || maxRetries < -1) throw new Error(`maximumRetryAttempts must be -1 or more, got ${maxRetries}`);

  const reader: ChangeLogReader = opts.source.openReader(opts.startingPosition ?? 'TRIM_HORIZON');
  const faults = opts.faults ?? streamFaultsFor(opts.source);
  const stats: DeliveryStats = { invocations: 0, failedInvocations: 0, deliveredRecords: 0, droppedRecords: 0, filteredRecords: 0, emptiedBatches: 0, iteratorAgeMs: { last: 0, max: 0 } };
  const inFlight = new Set<number>();
  let draining = false;
  let stopped = false;
  const stopWaiters = new Set<() => void>();

  function wakeAll(): void {
    for (const wake of [...stopWaiters]) wake();
  }

  /** Waits until shard `i` gets an append or the delivery drains or stops. */
  function waitForChange(i: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        unsubscribe();
        stopWaiters.delete(done);
        resolve();
      };
      const unsubscribe = reader.onAppend(i, done);
      stopWaiters.add(done);
    });
  }

  /**
   * The batching window: waits until shard `i` holds a full batch, `deadline` passes, or the delivery
   * drains or stops. One listener and one timer for the whole window, not one per append.
   */
  function waitForBatch(i: number, deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        unsubscribe();
        stopWaiters.delete(done);
        resolve();
      };
      const unsubscribe = reader.onAppend(i, () => {
        if (reader.pending(i) >= batchSize) done();
      });
      stopWaiters.add(done);
      const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
    });
  }

  /** Waits until a pause (DynamoDB unreachable: StreamFaultSeam.paused) ends, or the delivery stops. */
  function waitForResume(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        unsubscribe();
        stopWaiters.delete(done);
        resolve();
      };
      const unsubscribe = faults.onResume(done);
      stopWaiters.add(done);
    });
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stopWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      stopWaiters.add(done);
    });
  }

  function backoffMs(attempt: number): number {
    const ceiling = Math.min(maxBackoffMs, initialBackoffMs * 2 ** Math.max(0, attempt - 1));
    // Equal jitter: at least half the ceiling, so retries of many shards do not line up.
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  async function invoke(records: DynamoDBRecord[]): Promise<Outcome> {
    stats.invocations++;
    const newest = records.length === 0 ? undefined : appendedAt(records[records.length - 1] as DynamoDBRecord);
    if (newest !== undefined) {
      stats.iteratorAgeMs.last = Date.now() - newest;
      stats.iteratorAgeMs.max = Math.max(stats.iteratorAgeMs.max, stats.iteratorAgeMs.last);
    }
    const kept = opts.filter ? records.filter(opts.filter) : records;
    if (opts.filter) stats.filteredRecords += records.length - kept.length;
    if (kept.length === 0) {
      stats.emptiedBatches++;
      return { kind: 'success' };
    }
    let response: unknown;
    try {
      // A copy per invocation: a handler that mutates its event cannot change what a retry, or
      // another mapping on the same stream, sees (./record-copy.ts). The handler may see the records
      // shuffled across items (an injected fault); failures below are still mapped to the shard's
      // order, since Lambda checkpoints by sequence number.
      response = await withTimeout(opts.handler({ Records: copyRecords(faults.arrange(kept)) }), opts.functionTimeoutMs);
    } catch (error) {
      return { kind: 'error', error };
    }
    if (!reportFailures) return { kind: 'success' };
    const parsed = batchResponseSchema.safeParse(response);
    if (!parsed.success) return { kind: 'error', error: new Error(`malformed batch response: ${parsed.error.message}`) };
    const failures = parsed.data?.batchItemFailures ?? [];
    if (failures.length === 0) return { kind: 'success' };
    // Lambda checkpoints at the lowest failed sequence number and retries from there; an empty, null
    // or unknown itemIdentifier makes the whole batch a failure.
    let firstFailed = Number.POSITIVE_INFINITY;
    for (const failure of failures) {
      const index = typeof failure.itemIdentifier === 'string' && failure.itemIdentifier !== ''
        ? records.findIndex((r) => r.dynamodb?.SequenceNumber === failure.itemIdentifier)
        : -1;
      if (index < 0) {
        return { kind: 'error', error: new Error(`batchItemFailures names an unknown itemIdentifier: ${JSON.stringify(failure.itemIdentifier)}`) };
      }
      firstFailed = Math.min(firstFailed, index);
    }
    return { kind: 'partial', firstFailed };
  }

  async function drop(shardId: string, records: DynamoDBRecord[], attempts: number, outcome: Outcome): Promise<void> {
    const first = records[0]?.dynamodb?.SequenceNumber ?? '';
    const last = records[records.length - 1]?.dynamodb?.SequenceNumber ?? '';
    stats.droppedRecords += records.length;
    logger.error(
      { shardId, startSequenceNumber: first, endSequenceNumber: last, batchSize: records.length, attempts, err: outcome.kind === 'error' ? outcome.error : undefined },
      'stream batch dropped after its retries',
    );
    if (!opts.onDropped) return;
    try {
      await opts.onDropped({
        streamArn: opts.source.streamArn,
        shardId,
        records,
        startSequenceNumber: first,
        endSequenceNumber: last,
        attempts,
        reason: outcome.kind === 'partial' ? 'partial-batch-failure' : 'function-error',
        ...(outcome.kind === 'error' ? { error: outcome.error } : {}),
      });
    } catch (err) {
      logger.error({ err, shardId }, 'onDropped failed; the batch is dropped anyway');
    }
  }

  async function runShard(i: number): Promise<void> {
    const shardId = reader.shardIds[i] ?? String(i);
    // Position of the cursor counted from this delivery's start, and the ends of bisected halves
    // still to deliver (top = the nearest).
    let offset = 0;
    const bisectEnds: number[] = [];
    // Failed invocations with the record at the cursor at the head of the batch.
    let attempts = 0;
    // The offset whose checkpoint an injected duplicate skipped last: each batch start is redelivered
    // at most once, so a duplicate rate of 1 still makes progress.
    let duplicatedAt = -1;
    const advance = (count: number): void => {
      reader.advance(i, count);
      offset += count;
      while (bisectEnds.length > 0 && (bisectEnds[bisectEnds.length - 1] ?? 0) <= offset) bisectEnds.pop();
    };

    while (!stopped) {
      if (reader.pending(i) === 0) {
        await waitForChange(i);
        continue;
      }
      if (faults.paused) {
        // DynamoDB unreachable: the records wait in the log, nothing is invoked or retried meanwhile.
        await waitForResume();
        continue;
      }
      if (windowMs > 0 && !draining && attempts === 0 && bisectEnds.length === 0 && reader.pending(i) < batchSize) {
        await waitForBatch(i, Date.now() + windowMs);
        if (stopped) break;
        if (faults.paused) continue;
      }
      const top = bisectEnds[bisectEnds.length - 1];
      const limit = top === undefined ? batchSize : Math.min(batchSize, top - offset);
      const records = reader.peek(i, limit);
      inFlight.add(i);
      const outcome = await invoke(records);
      inFlight.delete(i);
      if (outcome.kind === 'success') {
        stats.deliveredRecords += records.length;
        attempts = 0;
        if (duplicatedAt !== offset && faults.loseCheckpoint(records)) {
          // Injected at-least-once: the checkpoint is lost, the same records come again.
          duplicatedAt = offset;
          continue;
        }
        advance(records.length);
        continue;
      }
      stats.failedInvocations++;
      let failedRecords = records;
      if (outcome.kind === 'partial' && outcome.firstFailed > 0) {
        // The records before the first failure are done: checkpoint past them.
        stats.deliveredRecords += outcome.firstFailed;
        advance(outcome.firstFailed);
        failedRecords = records.slice(outcome.firstFailed);
        attempts = 0;
      }
      if (outcome.kind === 'error' && opts.bisectBatchOnFunctionError && records.length > 1) {
        const end = offset + records.length;
        if (bisectEnds[bisectEnds.length - 1] !== end) bisectEnds.push(end);
        bisectEnds.push(offset + Math.ceil(records.length / 2));
        logger.warn({ shardId, batchSize: records.length, err: outcome.error }, 'stream handler failed; bisecting the batch');
        await sleep(backoffMs(1));
        continue;
      }
      attempts++;
      logger.warn(
        { shardId, attempts, firstSequenceNumber: failedRecords[0]?.dynamodb?.SequenceNumber, err: outcome.kind === 'error' ? outcome.error : undefined },
        outcome.kind === 'partial' ? 'stream handler reported failed records; retrying from the first' : 'stream handler failed; retrying the batch',
      );
      if (maxRetries >= 0 && attempts > maxRetries) {
        await drop(shardId, failedRecords, attempts, outcome);
        attempts = 0;
        advance(failedRecords.length);
        continue;
      }
      await sleep(backoffMs(attempts));
    }
  }

  const loops = reader.shardIds.map((_, i) =>
    runShard(i).catch((err: unknown) => {
      logger.error({ err, shard: i }, 'stream delivery loop failed');
    }),
  );

  function isIdle(): boolean {
    return inFlight.size === 0 && reader.shardIds.every((_, i) => reader.pending(i) === 0);
  }

  async function idle(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!isIdle()) {
      if (Date.now() > deadline) throw new Error(`stream delivery not idle after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  return {
    stats,
    idle,
    async stop({ drainTimeoutMs = 10_000 } = {}) {
      if (stopped) return;
      draining = true;
      wakeAll();
      try {
        await idle(drainTimeoutMs);
      } catch (err) {
        logger.warn({ err }, 'stopping stream delivery before it drained');
      }
      stopped = true;
      wakeAll();
      await Promise.all(loops);
      reader.close();
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number | undefined): Promise<T> {
  if (ms === undefined) return promise;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Task timed out after ${(ms / 1000).toFixed(2)} seconds`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
