// What the convergence, expire and resync handlers share: configuration from the environment
// (the aggregate slice of functions/lib/config.ts) and the clients, built once per Lambda container.
import type { Logger } from 'pino';

import { openTableFromEnv, type DynamoAggregateStore, type DynamoEventStore } from '../../common/store';
import { AGGREGATE_SETTINGS, functionsConfig, type FunctionsConfig } from './config';
import type { ConvergenceDeps } from './convergence-batch';

export interface FunctionContext {
  deps: ConvergenceDeps;
  store: DynamoEventStore;
  aggregates: DynamoAggregateStore;
  /** Destroys the DynamoDB client (tests and scripts; a Lambda container keeps it). */
  close(): void;
}

export function buildFunctionContext(source: Record<string, string | undefined> | FunctionsConfig, logger: Logger, now: () => number = Date.now): FunctionContext {
  const config = functionsConfig(source);
  const settings = config.slice(AGGREGATE_SETTINGS);
  const { store, aggregates, progress, close } = openTableFromEnv(config.env, logger);
  const deps: ConvergenceDeps = {
    aggregates,
    store,
    logger,
    now,
    shardCount: settings.AGGREGATE_SHARDS,
    requiredTypeUrls: settings.REQUIRED_TYPE_URLS,
    policy: { ttlMs: settings.ENVOY_TTL_MS, ackTimeoutMs: settings.ACK_TIMEOUT_MS, requiredTypeUrls: settings.REQUIRED_TYPE_URLS },
    ...(settings.EXPIRE_STALL_MS === undefined ? {} : { stallMs: settings.EXPIRE_STALL_MS }),
    ...(settings.PROGRESS_EVALUATION ? { progress } : {}),
  };
  return { deps, store, aggregates, close };
}
