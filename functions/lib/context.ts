// What the convergence, expire and resync handlers share: configuration from the environment
// (validated with zod at the edge) and the clients, built once per Lambda container.
import type { Logger } from 'pino';
import { z } from 'zod';

import { DEFAULT_SHARD_COUNT, isValidTypeUrl } from '../../common/core';
import { createEventStoreFromEnv, documentOperations, type DynamoEventStore } from '../../common/store';
import { DynamoAggregateStore } from '../../common/store/aggregates';
import type { ConvergenceDeps } from './convergence-batch';

const envSchema = z.object({
  TABLE_NAME: z.string().min(3),
  ENVOY_TTL_MS: z.coerce.number().int().positive().default(300_000),
  ACK_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  AGGREGATE_SHARDS: z.coerce.number().int().min(1).max(256).default(DEFAULT_SHARD_COUNT),
  REQUIRED_TYPE_URLS: z
    .string()
    .optional()
    .transform((value) => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0))
    .refine((urls) => urls.every(isValidTypeUrl), { message: 'REQUIRED_TYPE_URLS has an invalid type URL' }),
});

export interface FunctionContext {
  deps: ConvergenceDeps;
  store: DynamoEventStore;
  aggregates: DynamoAggregateStore;
  /** Destroys the DynamoDB client (tests and scripts; a Lambda container keeps it). */
  close(): void;
}

export function buildFunctionContext(env: Record<string, string | undefined>, logger: Logger, now: () => number = Date.now): FunctionContext {
  const settings = envSchema.parse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')));
  const { store, clients } = createEventStoreFromEnv(env, logger);
  const aggregates = new DynamoAggregateStore({ tableName: settings.TABLE_NAME, operations: documentOperations(clients.documentClient), logger });
  const deps: ConvergenceDeps = {
    aggregates,
    store,
    logger,
    now,
    shardCount: settings.AGGREGATE_SHARDS,
    requiredTypeUrls: settings.REQUIRED_TYPE_URLS,
    policy: { ttlMs: settings.ENVOY_TTL_MS, ackTimeoutMs: settings.ACK_TIMEOUT_MS, requiredTypeUrls: settings.REQUIRED_TYPE_URLS },
  };
  return { deps, store, aggregates, close: () => clients.client.destroy() };
}
