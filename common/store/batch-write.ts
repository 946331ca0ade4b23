// Batched puts with BatchWriteItem: 25 requests per call (DynamoDB's limit), a bounded number of
// calls in flight, and retries of UnprocessedItems. The SDK retries a *failed* request (throttling,
// 5xx) by itself, but a BatchWriteItem that succeeds with UnprocessedItems is a success to the SDK:
// the items it lists were not written and must be sent again by the caller (DynamoDB API reference,
// BatchWriteItem: "If any requested operations fail because the table's provisioned throughput is
// exceeded ... the failed operations are returned in the UnprocessedItems response parameter").
import type { DocumentOperations } from './operations';
import { forEachConcurrently } from '../worker-pool';

/** DynamoDB's BatchWriteItem limit: at most 25 put/delete requests per call. */
export const BATCH_WRITE_MAX_ITEMS = 25;

/** Any item of our table: string keys `pk`/`sk` plus attributes. */
export type KeyedItem = Record<string, unknown> & { pk: string; sk: string };

export interface BatchWriteOptions {
  tableName: string;
  /** Calls per chunk including the first (so retries = attempts - 1). */
  maxAttempts?: number;
  /** Backoff cap grows as baseDelayMs * 2^retry up to maxDelayMs; the delay is uniform in [0, cap). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** BatchWriteItem calls in flight at once. */
  concurrency?: number;
  /** Seams for tests; default to real timers and Math.random. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface BatchWriteReport {
  /** Distinct items written (duplicates by key within the input count once). */
  written: number;
  /** BatchWriteItem calls made, including retries. */
  calls: number;
  /** Calls that were retries (UnprocessedItems or a retryable error). */
  retries: number;
}

/** One item that was not written, why, and whether sending it again can succeed. */
export interface UnwrittenItem {
  item: KeyedItem;
  cause: string;
  /** False only when DynamoDB refused the item itself (ValidationException): a retry fails again. */
  retryable: boolean;
}

/**
 * Some items could not be written after the bounded retries. The items are carried so the caller
 * can re-queue them: nothing is dropped silently (brief invariant 5, "nothing lost").
 */
export class UnwrittenItemsError extends Error {
  override readonly name = 'UnwrittenItemsError';
  constructor(
    readonly failures: UnwrittenItem[],
    readonly report: BatchWriteReport,
  ) {
    const causes = [...new Set(failures.map((failure) => failure.cause))];
    super(`${failures.length} item(s) not written: ${causes.join('; ')}`);
  }

  get unwritten(): KeyedItem[] {
    return this.failures.map((failure) => failure.item);
  }

  get causes(): string[] {
    return [...new Set(this.failures.map((failure) => failure.cause))];
  }
}

/**
 * Errors worth another try at this level too: the SDK already retried them up to its maxAttempts,
 * but throttling is transient by nature and the items would otherwise go back to the caller.
 */
const RETRYABLE_ERROR_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'UnknownError';
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Full jitter ("Exponential Backoff And Jitter", AWS Architecture Blog): uniform in [0, cap). */
export function fullJitterDelay(retry: number, baseDelayMs: number, maxDelayMs: number, random: () => number): number {
  const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** retry);
  return Math.floor(random() * cap);
}

/** Last write wins per key: BatchWriteItem rejects a call that names the same key twice. */
function distinctByKey(items: readonly KeyedItem[]): KeyedItem[] {
  const byKey = new Map<string, KeyedItem>();
  for (const item of items) {
    const key = JSON.stringify([item.pk, item.sk]);
    byKey.delete(key); // keep insertion order of the last occurrence
    byKey.set(key, item);
  }
  return [...byKey.values()];
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * DynamoDB rejects a whole BatchWriteItem with ValidationException when one item is bad (e.g. over
 * the 400 KB item limit). That is the item's fault, so the chunk is split to find it and the good
 * items still land; other errors concern every item alike and are not worth splitting for.
 */
function isItemRejection(error: unknown): boolean {
  return errorName(error) === 'ValidationException';
}

/** Put every item; resolves with a report, or rejects with UnwrittenItemsError listing what is left. */
export async function batchPut(
  operations: DocumentOperations,
  items: readonly KeyedItem[],
  options: BatchWriteOptions,
): Promise<BatchWriteReport> {
  const maxAttempts = options.maxAttempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 50;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const { tableName } = options;

  const distinct = distinctByKey(items);
  const report: BatchWriteReport = { written: 0, calls: 0, retries: 0 };

  async function writeChunk(chunkItems: KeyedItem[]): Promise<UnwrittenItem[]> {
    let pending = chunkItems;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) {
        report.retries++;
        await sleep(fullJitterDelay(attempt - 2, baseDelayMs, maxDelayMs, random));
      }
      report.calls++;
      let unprocessed: KeyedItem[];
      try {
        const output = await operations.batchWrite({
          RequestItems: { [tableName]: pending.map((item) => ({ PutRequest: { Item: item } })) },
        });
        unprocessed = (output.UnprocessedItems?.[tableName] ?? []).flatMap((request) => {
          const item = request.PutRequest?.Item;
          return item === undefined ? [] : [item as KeyedItem];
        });
      } catch (error) {
        if (isItemRejection(error)) {
          if (pending.length === 1) return pending.map((item) => ({ item, cause: describe(error), retryable: false }));
          const half = Math.ceil(pending.length / 2);
          return [...(await writeChunk(pending.slice(0, half))), ...(await writeChunk(pending.slice(half)))];
        }
        if (!RETRYABLE_ERROR_NAMES.has(errorName(error)) || attempt >= maxAttempts) {
          // Not the items' fault (throttled past every retry, table missing, network): the caller
          // should send them again later.
          return pending.map((item) => ({ item, cause: describe(error), retryable: true }));
        }
        continue;
      }
      report.written += pending.length - unprocessed.length;
      pending = unprocessed;
      if (pending.length === 0) return [];
      if (attempt >= maxAttempts) {
        const cause = `UnprocessedItems remained after ${attempt} attempts`;
        return pending.map((item) => ({ item, cause, retryable: true }));
      }
    }
  }

  const chunks = chunk(distinct, BATCH_WRITE_MAX_ITEMS);
  const failures: UnwrittenItem[] = [];
  // At most `concurrency` chunks in flight, every chunk settles before we report, so one failing
  // chunk never hides the outcome of the others.
  await forEachConcurrently(chunks, concurrency, async (mine) => {
    failures.push(...(await writeChunk(mine)));
  });

  if (failures.length > 0) throw new UnwrittenItemsError(failures, report);
  return report;
}
