// Batched reads with BatchGetItem, the read-side twin of batch-write.ts: at most 100 keys per call
// (DynamoDB's limit), a bounded number of calls in flight, and UnprocessedKeys sent again with full
// jitter. As with BatchWriteItem, a call that succeeds with UnprocessedKeys is a success to the SDK
// (DynamoDB API reference, BatchGetItem: a partial result when the response would exceed 16 MB or the
// table's throughput is exceeded), so the keys it lists are this module's to read again.
import type { ItemKey } from '../core';
import { forEachConcurrently } from '../worker-pool';
import { fullJitterDelay } from './batch-write';
import type { DocumentOperations } from './operations';

/** DynamoDB's BatchGetItem limit: at most 100 keys per call. */
export const BATCH_GET_MAX_KEYS = 100;

/** The knobs of batch-write.ts's BatchWriteOptions, with the same names and defaults (openTable passes one `batch` to both). */
export interface BatchGetOptions {
  tableName: string;
  /** Strongly consistent reads (twice the read units). */
  consistentRead?: boolean;
  /** Calls per chunk including the first (so retries = attempts - 1). */
  maxAttempts?: number;
  /** Backoff cap grows as baseDelayMs * 2^retry up to maxDelayMs; the delay is uniform in [0, cap). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** BatchGetItem calls in flight at once. */
  concurrency?: number;
  /** Seams for tests; default to real timers and Math.random. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * Keys still unread after the bounded retries. Thrown rather than reported as missing: a caller
 * that took an unread item for an absent one would act on "no item" (for PROGRESS: the lineage's
 * count unknown) when the item exists.
 */
export class UnreadKeysError extends Error {
  override readonly name = 'UnreadKeysError';
  constructor(
    readonly keys: ItemKey[],
    attempts: number,
  ) {
    super(`${keys.length} key(s) still unprocessed by BatchGetItem after ${attempts} attempts`);
  }
}

/** The map key of a table key in batchGet's result. */
export function itemKeyString(key: ItemKey): string {
  return JSON.stringify([key.pk, key.sk]);
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function keyOf(item: Record<string, unknown>): ItemKey | undefined {
  const { pk, sk } = item;
  return typeof pk === 'string' && typeof sk === 'string' ? { pk, sk } : undefined;
}

/**
 * Reads every key; resolves with the items found, by itemKeyString (a key absent from the map has no
 * item). Duplicate keys are read once: BatchGetItem refuses a call that names a key twice.
 * Rejects with UnreadKeysError when UnprocessedKeys remain after maxAttempts calls of a chunk; any
 * other error of a call (the SDK already retried the retryable ones) rejects as it is.
 */
export async function batchGet(operations: DocumentOperations, keys: readonly ItemKey[], options: BatchGetOptions): Promise<Map<string, Record<string, unknown>>> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 8);
  const baseDelayMs = options.baseDelayMs ?? 50;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const { tableName } = options;

  const distinct = new Map<string, ItemKey>();
  for (const key of keys) distinct.set(itemKeyString(key), { pk: key.pk, sk: key.sk });
  const chunks: ItemKey[][] = [];
  const all = [...distinct.values()];
  for (let i = 0; i < all.length; i += BATCH_GET_MAX_KEYS) chunks.push(all.slice(i, i + BATCH_GET_MAX_KEYS));

  const found = new Map<string, Record<string, unknown>>();
  await forEachConcurrently(chunks, concurrency, async (chunk) => {
    let pending = chunk;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) await sleep(fullJitterDelay(attempt - 2, baseDelayMs, maxDelayMs, random));
      const output = await operations.batchGet({
        RequestItems: { [tableName]: { Keys: pending, ...(options.consistentRead === true ? { ConsistentRead: true } : {}) } },
      });
      for (const item of output.Responses?.[tableName] ?? []) {
        const key = keyOf(item);
        if (key !== undefined) found.set(itemKeyString(key), item);
      }
      pending = (output.UnprocessedKeys?.[tableName]?.Keys ?? []).flatMap((key) => {
        const parsed = keyOf(key);
        return parsed === undefined ? [] : [parsed];
      });
      if (pending.length === 0) return;
      if (attempt >= maxAttempts) throw new UnreadKeysError(pending, attempt);
    }
  });
  return found;
}
