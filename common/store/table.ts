// The project's single DynamoDB table (docs/ARCHITECTURE.md, "Data") and a helper that creates it
// locally. On AWS the table is declared in serverless.yml; this definition is the source of truth
// for its keys and stream settings, and local runs/tests create it from here.
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  type CreateTableCommandInput,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';

/** Partition key attribute (string). */
export const PARTITION_KEY = 'pk';
/** Sort key attribute (string). */
export const SORT_KEY = 'sk';
/**
 * TTL attribute (epoch seconds, number). DynamoDB deletes an item some time after this moment
 * (typically within days, not exactly), so readers must still ignore expired items themselves.
 * serverless.yml enables TTL on this attribute; dynalite has no TTL (UpdateTimeToLive is unknown).
 */
export const TTL_ATTRIBUTE = 'ttl';

/**
 * Sparse index of Envoy state items. Only `EnvoyState` items carry ENVOY_STATE_INDEX_KEY (the
 * adapter adds it, equal to the node id), so a Scan of this index reads the fleet's states and none
 * of the (far more numerous) event items: listing the fleet costs O(Envoys), not O(table). One
 * partition per Envoy, so no hot key however large a node group is.
 */
export const ENVOY_STATE_INDEX = 'envoy-states';
export const ENVOY_STATE_INDEX_KEY = 'envoyStateNodeId';

/**
 * The table definition. PAY_PER_REQUEST because the write rate follows Envoy churn, which is bursty.
 * The stream carries NEW_AND_OLD_IMAGES because the convergence function needs both images to see
 * what changed. dynalite accepts StreamSpecification and ignores it (checked): the local runtime
 * captures changes in its HTTP front instead.
 */
export function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    AttributeDefinitions: [
      { AttributeName: PARTITION_KEY, AttributeType: 'S' },
      { AttributeName: SORT_KEY, AttributeType: 'S' },
      { AttributeName: ENVOY_STATE_INDEX_KEY, AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: PARTITION_KEY, KeyType: 'HASH' },
      { AttributeName: SORT_KEY, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: ENVOY_STATE_INDEX,
        KeySchema: [{ AttributeName: ENVOY_STATE_INDEX_KEY, KeyType: 'HASH' }],
        Projection: { ProjectionType: 'ALL' },
      },
    ],
    BillingMode: 'PAY_PER_REQUEST',
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  };
}

export interface EnsureTableOptions {
  /** Give up waiting for ACTIVE after this long. */
  timeoutMs?: number;
  /** Pause between DescribeTable polls. */
  pollMs?: number;
}

/**
 * Create the table if it does not exist, then wait until it is ACTIVE (CreateTable returns while
 * the table is still CREATING, and writes to a CREATING table fail with ResourceNotFoundException).
 * For local use and tests; production tables come from serverless.yml.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  options: EnsureTableOptions = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const pollMs = options.pollMs ?? 50;
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (error) {
    // Already exists (maybe created concurrently by another process): fine, just wait for ACTIVE.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
      const status = described.Table?.TableStatus;
      if (status === 'ACTIVE') return;
      if (status === 'DELETING') {
        throw new Error(`table ${tableName} is being deleted; cannot use it`);
      }
    } catch (error) {
      // Right after CreateTable, DescribeTable may briefly not see the table yet.
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
    if (Date.now() > deadline) {
      throw new Error(`table ${tableName} not ACTIVE after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** The table as DynamoDB describes it; undefined when it does not exist. */
export async function describeTable(client: DynamoDBClient, tableName: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}
