// Lambda: DynamoDB stream → per-lineage aggregates → decisions on OBJECT generation items
// (docs/CONVERGENCE.md). Configuration (environment):
//   TABLE_NAME, AWS_REGION, DYNAMODB_ENDPOINT (local)   the table (common/store)
//   ENVOY_TTL_MS (default 300000), ACK_TIMEOUT_MS (default 30000), AGGREGATE_SHARDS (default 16)
//   REQUIRED_TYPE_URLS                                   comma-separated type URLs every Envoy must subscribe
//   DECISION_REFRESH_MS (default 0: off)                 count-only decision rewrites at most this often
//                                                        per generation (functions/lib/evaluate.ts)
import type { DynamoDBBatchResponse, DynamoDBStreamEvent, DynamoDBStreamHandler } from 'aws-lambda';
import pino from 'pino';
import { z } from 'zod';

import { buildFunctionContext, type FunctionContext } from './lib/context';
import { processConvergenceBatch } from './lib/convergence-batch';
import { GenerationCache } from './lib/evaluate';

let context: FunctionContext | undefined;

/**
 * Default of DECISION_REFRESH_MS: off, so a decision's counts are always current. The local system
 * turns it on (1000 ms): the condition never waits for it (verdict changes are written at once).
 */
export const DEFAULT_DECISION_REFRESH_MS = 0;

const refreshSchema = z.object({ DECISION_REFRESH_MS: z.coerce.number().int().min(0).max(600_000).default(DEFAULT_DECISION_REFRESH_MS) });

/** DECISION_REFRESH_MS from the environment (validated; empty means the default). */
export function decisionRefreshFromEnv(env: Record<string, string | undefined>): number {
  const value = env['DECISION_REFRESH_MS'];
  return refreshSchema.parse(value === undefined || value === '' ? {} : { DECISION_REFRESH_MS: value }).DECISION_REFRESH_MS;
}

/** Sets DECISION_REFRESH_MS on a convergence context: the rewrite throttle and the item cache's lifetime. */
export function configureDecisionRefresh(context: FunctionContext, refreshMs: number): void {
  context.deps.decisionRefreshMs = refreshMs;
  if (refreshMs > 0) context.deps.generationCache = new GenerationCache(refreshMs);
  else delete context.deps.generationCache;
}

export function convergenceContext(): FunctionContext {
  if (context === undefined) {
    const built = buildFunctionContext(process.env, pino({ name: 'convergence', level: process.env['LOG_LEVEL'] ?? 'info' }));
    configureDecisionRefresh(built, decisionRefreshFromEnv(process.env));
    context = built;
  }
  return context;
}

export async function handleConvergence(event: DynamoDBStreamEvent, ctx: FunctionContext = convergenceContext()): Promise<DynamoDBBatchResponse> {
  const { response, report } = await processConvergenceBatch(event, ctx.deps);
  ctx.deps.logger.info({ records: event.Records?.length ?? 0, ...report }, 'convergence batch done');
  return response;
}

export const handler: DynamoDBStreamHandler = async (event) => handleConvergence(event);
