// The one constructor of the table's ports: one connection per process (connectStore; module scope
// in Lambda handlers, so warm invocations reuse connections) and every port the gateway, the
// functions, the benchmarks and the tests use, built on the same document operations. It hands out no
// client: outside common/store nothing talks to DynamoDB except through these ports (eslint.config.mjs).
import type { TableDescription } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';

import type { Clock } from '../core';
import { DynamoAggregateStore } from './aggregates';
import { connectStore, storeClientConfigFromEnv, type StoreClientConfig, type StoreClientSeams } from './client';
import { dynamoConditionResyncTable } from './condition-resync-table';
import { DynamoEventStore, type DynamoEventStoreOptions } from './dynamo-store';
import type { StoreLogger } from './logger';
import { dynamoObjectCleanup, dynamoObjectItemReader } from './object-items';
import type { DocumentOperations } from './operations';
import { DynamoProgressStore } from './progress-store';
import { dynamoRawItems } from './raw-items';
import type { EnsureTableOptions } from './table';
import type { ConditionResyncTable, ObjectCleanup, ObjectItemReader, RawItems } from './table-ports';
import { DynamoVersionLog } from './version-log';

export interface TableAccessConfig {
  tableName: string;
  client: StoreClientConfig;
  logger: StoreLogger;
  /** The event store's clock; defaults to the system clock. */
  clock?: Clock;
  batch?: DynamoEventStoreOptions['batch'];
  expiredStateRetentionMs?: number;
  /** How long a gone object's items are kept before DynamoDB's TTL removes them (ObjectCleanup). Default 1 h. */
  deletedObjectRetentionMs?: number;
}

export interface TableAccessSeams extends StoreClientSeams {
  /** Wraps the document operations every port uses (benchmarks count calls, tests inject faults). */
  wrapOperations?: (operations: DocumentOperations) => DocumentOperations;
}

export interface TableAccess {
  readonly tableName: string;
  readonly store: DynamoEventStore;
  readonly aggregates: DynamoAggregateStore;
  readonly versionLog: DynamoVersionLog;
  readonly progress: DynamoProgressStore;
  readonly objectCleanup: ObjectCleanup;
  readonly objectItems: ObjectItemReader;
  readonly conditionResync: ConditionResyncTable;
  readonly rawItems: RawItems;
  /** Creates the table if it does not exist and waits until it is ACTIVE (local runs; on AWS serverless.yml declares it). */
  ensureTable(options?: EnsureTableOptions): Promise<void>;
  /** The table as DynamoDB describes it (keys, indexes, billing mode, status); undefined when there is none. */
  describeTable(): Promise<TableDescription | undefined>;
  /** Closes the clients' connections. */
  close(): void;
}

const systemClock: Clock = { now: () => Date.now() };

export function openTable(config: TableAccessConfig, seams: TableAccessSeams = {}): TableAccess {
  const { wrapOperations, ...clientSeams } = seams;
  const connection = connectStore(config.client, clientSeams);
  const operations = wrapOperations === undefined ? connection.operations : wrapOperations(connection.operations);
  const { tableName, logger } = config;
  return {
    tableName,
    store: new DynamoEventStore({
      tableName,
      operations,
      logger,
      clock: config.clock ?? systemClock,
      ...(config.batch === undefined ? {} : { batch: config.batch }),
      ...(config.expiredStateRetentionMs === undefined ? {} : { expiredStateRetentionMs: config.expiredStateRetentionMs }),
    }),
    aggregates: new DynamoAggregateStore({ tableName, operations, logger }),
    versionLog: new DynamoVersionLog({ tableName, operations, logger, ...(config.batch === undefined ? {} : { batch: config.batch }) }),
    progress: new DynamoProgressStore({ tableName, operations, logger, ...(config.batch === undefined ? {} : { batch: config.batch }) }),
    objectCleanup: dynamoObjectCleanup(operations, tableName, config.deletedObjectRetentionMs),
    objectItems: dynamoObjectItemReader(operations, tableName),
    conditionResync: dynamoConditionResyncTable(operations, tableName),
    rawItems: dynamoRawItems(operations, tableName),
    ensureTable: (options) => connection.ensureTable(tableName, options),
    describeTable: () => connection.describeTable(tableName),
    close: () => connection.close(),
  };
}

const tableNameSchema = z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'DynamoDB table names are 3-255 of [A-Za-z0-9_.-]');

/**
 * The table's ports from environment variables: TABLE_NAME (required) plus the client variables of
 * storeClientConfigFromEnv. Throws a ZodError naming the bad variable.
 */
export function openTableFromEnv(
  env: Record<string, string | undefined>,
  logger: StoreLogger,
  options: Pick<TableAccessConfig, 'deletedObjectRetentionMs'> = {},
): TableAccess {
  const tableName = z.object({ TABLE_NAME: tableNameSchema }).parse(env).TABLE_NAME;
  return openTable({ tableName, client: storeClientConfigFromEnv(env), logger, ...options });
}
