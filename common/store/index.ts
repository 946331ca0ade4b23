// The DynamoDB store adapter's public API. Handlers build the store once at module scope:
//   const { store } = createEventStoreFromEnv(process.env, logger);
// so warm Lambda invocations reuse the client and its connections.
import { z } from 'zod';

import type { Clock } from '../core';
import { createStoreClients, storeClientConfigFromEnv, type StoreClients, type StoreClientSeams } from './client';
import { DynamoEventStore } from './dynamo-store';
import type { StoreLogger } from './logger';
import { documentOperations } from './operations';

export { batchPut, BATCH_WRITE_MAX_ITEMS, fullJitterDelay, UnwrittenItemsError } from './batch-write';
export type { BatchWriteOptions, BatchWriteReport, KeyedItem, UnwrittenItem } from './batch-write';
export { createStoreClients, retryModes, storeClientConfigFromEnv, storeClientConfigSchema } from './client';
export type { RetryMode, StoreClientConfig, StoreClients, StoreClientSeams } from './client';
export { DynamoAggregateStore, registerLineageHeartbeats } from './aggregates';
export type { DynamoAggregateStoreOptions } from './aggregates';
export { DynamoEventStore, eventKeyOf } from './dynamo-store';
export type { DynamoEventStoreOptions, DynamoPutEventsResult, FailedEvent } from './dynamo-store';
export { InvalidStoreInputError, isPermanentStoreError } from './errors';
export { DEFAULT_PAGE_LIMIT, iteratePages, MAX_PAGE_LIMIT } from './listing';
export type { StoreLogger } from './logger';
export { documentOperations } from './operations';
export type { DocumentOperations } from './operations';
export { InvalidPageTokenError } from './page-token';
export {
  ENVOY_STATE_INDEX,
  ENVOY_STATE_INDEX_KEY,
  PARTITION_KEY,
  SORT_KEY,
  TTL_ATTRIBUTE,
  ensureTable,
  tableDefinition,
} from './table';

import type { EventStoreConfig } from './table-access';
export type { EventStoreConfig } from './table-access';

const systemClock: Clock = { now: () => Date.now() };

/** Build the clients and the store on top of them. */
export function createEventStore(config: EventStoreConfig, seams: StoreClientSeams = {}): { store: DynamoEventStore; clients: StoreClients } {
  const clients = createStoreClients(config.client, seams);
  const store = new DynamoEventStore({
    tableName: config.tableName,
    operations: documentOperations(clients.documentClient),
    logger: config.logger,
    clock: config.clock ?? systemClock,
    ...(config.batch === undefined ? {} : { batch: config.batch }),
    ...(config.expiredStateRetentionMs === undefined ? {} : { expiredStateRetentionMs: config.expiredStateRetentionMs }),
  });
  return { store, clients };
}

const tableNameSchema = z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'DynamoDB table names are 3-255 of [A-Za-z0-9_.-]');

/**
 * The store from environment variables: TABLE_NAME (required) plus the client variables of
 * storeClientConfigFromEnv. Throws a ZodError naming the bad variable.
 */
export function createEventStoreFromEnv(
  env: Record<string, string | undefined>,
  logger: StoreLogger,
): { store: DynamoEventStore; clients: StoreClients } {
  const tableName = z.object({ TABLE_NAME: tableNameSchema }).parse(env).TABLE_NAME;
  return createEventStore({ tableName, client: storeClientConfigFromEnv(env), logger });
}
export { parseStreamImage, streamImageOf, streamRecordImages } from './stream-image';
export type { PlainStreamImages } from './stream-image';
export { openTable, openTableFromEnv } from './table-access';
export type { TableAccess, TableAccessConfig, TableAccessSeams } from './table-access';
export { dynamoObjectCleanup, dynamoObjectItemReader } from './object-items';
export { dynamoConditionResyncTable } from './condition-resync-table';
export * from './table-layout';
export * from './items';
export type * from './table-ports';
