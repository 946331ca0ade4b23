// Role-sized ports of the table for the callers that need more than the core's EventStore /
// AggregateStore: each names what one caller does with the table, so no caller outside
// common/store holds a DynamoDB client (lint-enforced, eslint.config.mjs). `openTable` (table-access.ts)
// builds them all on one client.
import type { EventStore, ItemKey, ItemRead, ObjectRef, Page, PageRequest } from '../core';
import type { ConditionResyncCursor, ScanKey, TableItem } from './items';
import type { ItemKind } from './table-layout';

export interface ScanRequest extends PageRequest {
  /** Only items of this kind (a filter: pages may come back empty with a cursor). */
  kind?: ItemKind;
  /** Parallel scan (DynamoDB Scan Segment/TotalSegments). */
  segment?: number;
  totalSegments?: number;
}

/** Paged iteration over the whole table, for resync (rebuilding aggregates from the items). */
export interface TableScanner {
  scanItems(request?: ScanRequest): Promise<Page<TableItem>>;
}

/** The core's EventStore plus the whole-table scan: what DynamoEventStore (and the test double) implement. */
export interface TableStore extends EventStore, TableScanner {}

/**
 * A gone object's items (the API server answers 404): they are of no further use, so each gets a `ttl`
 * and DynamoDB's TTL removes them (no write capacity used; the REMOVE record is ignored by the status
 * function). Used by the status function and resync's garbage collection (functions/lib/resync-gc.ts).
 */
export interface ObjectCleanup {
  /** Marks every item of the object for expiry; returns how many were newly marked. */
  markDeleted(ref: ObjectRef, now: number): Promise<number>;
}

/**
 * OBJECT generation items exactly as stored: with `ttl` and the decision's raw form, which the typed
 * reads of ObjectStore drop. The query function shows the raw decision; resync skips collected items.
 */
export interface ObjectItemReader {
  /** One generation's item, unparsed; undefined when there is none. */
  getObjectGenerationItem(ref: ObjectRef, generation: number): Promise<Record<string, unknown> | undefined>;
  /** The object's highest generation item, unparsed (strongly consistent). */
  latestObjectGenerationItem(ref: ObjectRef): Promise<Record<string, unknown> | undefined>;
}

/** One page of the condition resync's scan: OBJECT generations with a written condition and no ttl. */
export interface ConditionedGenerationsPage {
  /** Unparsed: the caller validates each with parseItem and reports the corrupt ones. */
  items: Record<string, unknown>[];
  /** Items read before the filter (what the page cost). */
  scannedCount: number;
  /** Where the next page starts; absent after the last page. */
  lastKey?: ScanKey;
}

/** The condition pass of resync (functions/lib/resync-conditions.ts): its scan and its saved cursor. */
export interface ConditionResyncTable {
  readCursor(): Promise<ItemRead<ConditionResyncCursor>>;
  saveCursor(startKey: ScanKey | undefined, now: number): Promise<void>;
  scanConditionedGenerations(request: { startKey?: ScanKey; limit: number }): Promise<ConditionedGenerationsPage>;
}

/**
 * Items exactly as stored, without the store's validation: benchmarks of the local DynamoDB front
 * write their load through it (bench/dynamo.ts), and tests plant and edit items the adapters would
 * refuse or never write (a corrupt item, a decision set as convergence sets it, an attribute removed)
 * and read them back with their `ttl`.
 */
export interface RawItems {
  /** One BatchWriteItem of at most 25 items; unprocessed items are an error (the local front never returns any). */
  batchWriteItems(items: readonly (Record<string, unknown> & ItemKey)[]): Promise<void>;
  /** A PutItem of the item as given (DynamoDB itself refuses one without `pk` and `sk`). */
  putItem(item: Record<string, unknown>): Promise<void>;
  /** The item at `key`, or undefined; `consistent` asks for a strongly consistent read. */
  getItem(key: ItemKey, options?: { consistent?: boolean }): Promise<Record<string, unknown> | undefined>;
  /** Sets the attributes (an UpdateItem `SET`): creates the item when there is none, as UpdateItem does. */
  setAttributes(key: ItemKey, attributes: Record<string, unknown>): Promise<void>;
  /** Removes the attributes (an UpdateItem `REMOVE`). */
  removeAttributes(key: ItemKey, names: readonly string[]): Promise<void>;
  /** Every item of one partition, in sort-key order (all pages, eventually consistent). */
  queryPartition(pk: string): Promise<Record<string, unknown>[]>;
}
