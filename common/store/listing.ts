// Paged reads (Query and Scan) shared by the adapter's listings: limits validated, page tokens
// decoded against the listing's rules, every item validated, LastEvaluatedKey encoded.
import type { Page, PageRequest } from '../core';
import { InvalidStoreInputError } from './errors';
import type { ReadOutcome } from './item-reader';
import { decodePageToken, nextPageToken, type ListingKeyRules } from './page-token';

/** DynamoDB returns at most 1 MB per call anyway; this bounds what a caller can ask for. */
export const MAX_PAGE_LIMIT = 1000;
export const DEFAULT_PAGE_LIMIT = 100;

export function pageLimit(request: PageRequest | undefined): number {
  const limit = request?.limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InvalidStoreInputError(`page limit must be an integer in 1..${MAX_PAGE_LIMIT}, got ${String(limit)}`);
  }
  return limit;
}

export function startKey(request: PageRequest | undefined, rules: ListingKeyRules): Record<string, string> | undefined {
  return request?.cursor === undefined ? undefined : decodePageToken(request.cursor, rules);
}

/** Build a page from one Query/Scan output. */
export function toPage<T>(
  rawItems: Record<string, unknown>[] | undefined,
  lastEvaluatedKey: Record<string, unknown> | undefined,
  listing: string,
  read: (raw: Record<string, unknown>) => ReadOutcome<T>,
): Page<T> {
  const page: Page<T> = { items: [], corrupt: [] };
  for (const raw of rawItems ?? []) {
    const outcome = read(raw);
    if (outcome.ok) page.items.push(outcome.value);
    else page.corrupt.push(outcome.corrupt);
  }
  const next = nextPageToken(listing, lastEvaluatedKey);
  if (next !== undefined) page.nextCursor = next;
  return page;
}

/**
 * Every item of a paged listing, as an async iterator: follows cursors until the last page.
 * `onCorrupt` sees the invalid items the pages reported (they were already logged).
 */
export async function* iteratePages<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  onCorrupt?: (corrupt: Page<T>['corrupt']) => void,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    if (page.corrupt.length > 0) onCorrupt?.(page.corrupt);
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}
