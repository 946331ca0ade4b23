// The DynamoDB store adapter's public API. Handlers open the table once at module scope:
//   const table = openTableFromEnv(process.env, logger);
// so warm Lambda invocations reuse the client and its connections. No SDK client leaves this folder:
// callers get ports (openTable) or, for the store's own tests and benchmarks, a StoreConnection.
export { batchPut, BATCH_WRITE_MAX_ITEMS, fullJitterDelay, UnwrittenItemsError } from './batch-write';
export type { BatchWriteOptions, BatchWriteReport, KeyedItem, UnwrittenItem } from './batch-write';
export { connectStore, retryModes, storeClientConfigFromEnv, storeClientConfigSchema } from './client';
export type { ResolvedRetrySettings, RetryMode, StoreClientConfig, StoreClientSeams, StoreConnection } from './client';
export { DynamoAggregateStore, recordExpireTick, registerLineageHeartbeats, updateLineageRegistry } from './aggregates';
export type { DynamoAggregateStoreOptions } from './aggregates';
export { DynamoVersionLog } from './version-log';
export type { DynamoVersionLogOptions } from './version-log';
export { CHUNK_ENTRIES_ATTRIBUTE, VersionLogChunkItemSchema, VersionLogMemberItemSchema, toVersionLogChunkItem, toVersionLogMemberItem, versionLogChunkFromItem, versionLogMemberFromItem } from './version-log-item';
export type { VersionLogChunkItem, VersionLogMemberItem } from './version-log-item';
export { DynamoProgressStore } from './progress-store';
export type { DynamoProgressStoreOptions } from './progress-store';
export { LineageProgressItemSchema, lineageProgressFromItem, toLineageProgressItem } from './progress-item';
export type { LineageProgressItem } from './progress-item';
export { batchGet, BATCH_GET_MAX_KEYS, UnreadKeysError } from './batch-get';
export type { BatchGetOptions } from './batch-get';
export { DynamoEventStore, eventKeyOf } from './dynamo-store';
export type { DynamoEventStoreOptions, DynamoPutEventsResult, FailedEvent } from './dynamo-store';
export { InvalidStoreInputError, isPermanentStoreError } from './errors';
export { DEFAULT_PAGE_LIMIT, iteratePages, MAX_PAGE_LIMIT } from './listing';
export type { StoreLogger } from './logger';
export type { DocumentOperations } from './operations';
export { InvalidPageTokenError } from './page-token';
export {
  ENVOY_STATE_INDEX,
  ENVOY_STATE_INDEX_KEY,
  PARTITION_KEY,
  SORT_KEY,
  TTL_ATTRIBUTE,
  tableDefinition,
} from './table';
export type { EnsureTableOptions } from './table';
export { parseStreamImage, streamImageOf, streamRecordImages } from './stream-image';
export type { PlainStreamImages } from './stream-image';
export { openTable, openTableFromEnv } from './table-access';
export type { TableAccess, TableAccessConfig, TableAccessSeams } from './table-access';
export { dynamoObjectCleanup, dynamoObjectItemReader } from './object-items';
export { dynamoConditionResyncTable } from './condition-resync-table';
export * from './table-layout';
export * from './items';
export type * from './table-ports';
