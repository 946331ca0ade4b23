// Builds the DynamoDB clients once per process (module scope in Lambda handlers, so warm
// invocations reuse TCP connections) from a validated configuration. The clients stay in this file:
// what leaves it is a StoreConnection, the store's own operations and table administration on them.
import { DynamoDBClient, type DynamoDBClientConfig, type TableDescription } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';

import { documentOperations, type DocumentOperations } from './operations';
import { describeTable, ensureTable, type EnsureTableOptions } from './table';

/**
 * Retry modes of the AWS SDK. Both retry throttling (ProvisionedThroughputExceededException,
 * ThrottlingException, RequestLimitExceeded), 5xx and transient network errors with exponential
 * backoff and jitter; `adaptive` additionally rate-limits the client when it is throttled.
 * Neither retries BatchWriteItem's UnprocessedItems: the store adapter does that itself.
 */
export const retryModes = ['standard', 'adaptive'] as const;
export type RetryMode = (typeof retryModes)[number];

export const storeClientConfigSchema = z.object({
  region: z.string().min(1),
  /** Local endpoint (dynalite), e.g. http://127.0.0.1:4567. Absent on AWS. */
  endpoint: z.url().optional(),
  /** Static credentials for local endpoints; on AWS the default provider chain is used. */
  credentials: z
    .object({ accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1) })
    .optional(),
  /** Total attempts per request including the first (SDK default: 3). */
  maxAttempts: z.number().int().min(1).max(20).default(5),
  retryMode: z.enum(retryModes).default('standard'),
});
export type StoreClientConfig = z.input<typeof storeClientConfigSchema>;

interface StoreClients {
  client: DynamoDBClient;
  documentClient: DynamoDBDocumentClient;
}

export interface StoreClientSeams {
  /**
   * Replaces the HTTP handler. Tests wrap the real one to inject faults (throttling responses)
   * below the SDK's retry middleware, so the SDK's real retry path is what gets exercised.
   */
  requestHandler?: DynamoDBClientConfig['requestHandler'];
}

/** Validate `config` (throws a ZodError naming the bad field) and build both clients. */
function createStoreClients(config: StoreClientConfig, seams: StoreClientSeams = {}): StoreClients {
  const parsed = storeClientConfigSchema.parse(config);
  const client = new DynamoDBClient({
    region: parsed.region,
    maxAttempts: parsed.maxAttempts,
    retryMode: parsed.retryMode,
    ...(parsed.endpoint === undefined ? {} : { endpoint: parsed.endpoint }),
    ...(parsed.credentials === undefined ? {} : { credentials: parsed.credentials }),
    ...(seams.requestHandler === undefined ? {} : { requestHandler: seams.requestHandler }),
  });
  const documentClient = DynamoDBDocumentClient.from(client, {
    // Optional fields of our items are `undefined` when absent; DynamoDB has no undefined. Node ids
    // are map keys (an aggregate shard's members) and `constructor` is a legal one (a valid pod
    // name): without convertClassInstanceToMap the SDK takes a map holding that key for a class
    // instance and refuses the write. Every item is plain data built from a zod-checked shape, so
    // no real class instance reaches here.
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
    // Numbers we store (seq, rev, generation, epoch ms) stay below 2^53, so plain numbers are safe.
    unmarshallOptions: { wrapNumbers: false },
  });
  return { client, documentClient };
}

/** The retry settings the SDK resolved from a StoreClientConfig. */
export interface ResolvedRetrySettings {
  maxAttempts: number;
  /** The SDK's retry strategy's mode (`standard`, `adaptive`); undefined for a strategy that names none. */
  retryMode: string | undefined;
}

/**
 * One process's connection to DynamoDB: the document operations every port is built on (openTable,
 * and the store's own tests and benchmarks that wrap them to count calls or inject faults), the table
 * administration local runs and tests need, and close. No SDK client is reachable through it.
 */
export interface StoreConnection {
  readonly operations: DocumentOperations;
  /** Creates the table if it does not exist and waits until it is ACTIVE (local runs; on AWS serverless.yml declares it). */
  ensureTable(tableName: string, options?: EnsureTableOptions): Promise<void>;
  /** The table as DynamoDB describes it (keys, indexes, billing mode, status); undefined when there is none. */
  describeTable(tableName: string): Promise<TableDescription | undefined>;
  retrySettings(): Promise<ResolvedRetrySettings>;
  /** Closes the clients' connections. */
  close(): void;
}

/** Validate `config` (throws a ZodError naming the bad field) and connect. */
export function connectStore(config: StoreClientConfig, seams: StoreClientSeams = {}): StoreConnection {
  const clients = createStoreClients(config, seams);
  return {
    operations: documentOperations(clients.documentClient),
    ensureTable: (tableName, options) => ensureTable(clients.client, tableName, options),
    describeTable: (tableName) => describeTable(clients.client, tableName),
    async retrySettings() {
      const strategy = await clients.client.config.retryStrategy();
      const mode = 'mode' in strategy && typeof strategy.mode === 'string' ? strategy.mode : undefined;
      return { maxAttempts: await clients.client.config.maxAttempts(), retryMode: mode };
    },
    close() {
      clients.documentClient.destroy();
      clients.client.destroy();
    },
  };
}

const envSchema = z.object({
  AWS_REGION: z.string().min(1).default('us-east-1'),
  DYNAMODB_ENDPOINT: z.url().optional(),
  DYNAMODB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).optional(),
  DYNAMODB_RETRY_MODE: z.enum(retryModes).optional(),
});

/**
 * Client configuration from environment variables (AWS_REGION, DYNAMODB_ENDPOINT,
 * DYNAMODB_MAX_ATTEMPTS, DYNAMODB_RETRY_MODE). With a local endpoint and no AWS credentials in the
 * environment, dummy static credentials are used: dynalite checks that a signature exists, not
 * what it is.
 */
export function storeClientConfigFromEnv(env: Record<string, string | undefined>): StoreClientConfig {
  const parsed = envSchema.parse(env);
  const localCredentials =
    parsed.DYNAMODB_ENDPOINT !== undefined && env.AWS_ACCESS_KEY_ID === undefined
      ? { accessKeyId: 'local', secretAccessKey: 'local' }
      : undefined;
  return {
    region: parsed.AWS_REGION,
    ...(parsed.DYNAMODB_ENDPOINT === undefined ? {} : { endpoint: parsed.DYNAMODB_ENDPOINT }),
    ...(localCredentials === undefined ? {} : { credentials: localCredentials }),
    ...(parsed.DYNAMODB_MAX_ATTEMPTS === undefined ? {} : { maxAttempts: parsed.DYNAMODB_MAX_ATTEMPTS }),
    ...(parsed.DYNAMODB_RETRY_MODE === undefined ? {} : { retryMode: parsed.DYNAMODB_RETRY_MODE }),
  };
}
