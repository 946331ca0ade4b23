// Lambda: DynamoDB stream → per-lineage aggregates → decisions on OBJECT generation items
// (docs/CONVERGENCE.md). Configuration (environment):
//   TABLE_NAME, AWS_REGION, DYNAMODB_ENDPOINT (local)   the table (common/store)
//   ENVOY_TTL_MS (default 300000), ACK_TIMEOUT_MS (default 30000), AGGREGATE_SHARDS (default 16)
//   REQUIRED_TYPE_URLS                                   comma-separated type URLs every Envoy must subscribe
//   DECISION_REFRESH_MS (default 0: off)                 count-only decision rewrites at most this often
//                                                        per generation (functions/lib/evaluate.ts)
//   STATUS_HANDOFF (default true)                        apply changed verdicts to Kubernetes directly
//                                                        (functions/lib/status-handoff.ts); needs the
//   TRACKED_KINDS, CONDITION_TYPE, KUBECONFIG_* | EKS_*  status function's Kubernetes settings, else off
//   STATUS_HANDOFF_CONCURRENCY (16), STATUS_HANDOFF_TIMEOUT_MS (2000)
//   STATUS_MESSAGE_REFRESH_MS (10000)                    the handoff's sweep rewrites stale not-True messages
import type { DynamoDBBatchResponse, DynamoDBStreamEvent, DynamoDBStreamHandler } from 'aws-lambda';
import pino from 'pino';
import { DECISION_REFRESH_SETTINGS, functionsConfig, FunctionsConfig } from './lib/config';
import { buildFunctionContext, type FunctionContext } from './lib/context';
import { processConvergenceBatch } from './lib/convergence-batch';
import { GenerationCache } from './lib/evaluate';
import { buildStatusHandoff, type StatusHandoffBuildOptions } from './lib/status-handoff';

let context: FunctionContext | undefined;

/** DECISION_REFRESH_MS from the environment (validated; empty means the default). */
export function decisionRefreshFromEnv(source: Record<string, string | undefined> | FunctionsConfig): number {
  return functionsConfig(source).slice(DECISION_REFRESH_SETTINGS).DECISION_REFRESH_MS;
}

/** Sets DECISION_REFRESH_MS on a convergence context: the rewrite throttle and the item cache's lifetime. */
export function configureDecisionRefresh(context: FunctionContext, refreshMs: number): void {
  context.deps.decisionRefreshMs = refreshMs;
  if (refreshMs > 0) context.deps.generationCache = new GenerationCache(refreshMs);
  else delete context.deps.generationCache;
}

/**
 * Sets up (or not) the direct handoff of changed verdicts to the status writer on a convergence
 * context, from STATUS_HANDOFF and the Kubernetes settings. Never throws: a configuration error is
 * logged and convergence runs without the handoff (the status function still writes every condition).
 * Returns whether the handoff is on.
 */
export function configureStatusHandoff(context: FunctionContext, env: Record<string, string | undefined> | FunctionsConfig, options: Partial<StatusHandoffBuildOptions> = {}): boolean {
  const { logger } = context.deps;
  delete context.deps.statusHandoff;
  try {
    const built = buildStatusHandoff(env, logger, { store: context.store, aggregates: context.aggregates, now: context.deps.now, ...options });
    if ('off' in built) {
      logger.info({ reason: built.off }, 'status handoff off: conditions are written by the status function only');
      return false;
    }
    context.deps.statusHandoff = built.handoff;
    return true;
  } catch (error) {
    logger.error({ err: error }, 'status handoff not configured (invalid settings); conditions are written by the status function only');
    return false;
  }
}

export function convergenceContext(): FunctionContext {
  if (context === undefined) {
    // The environment is parsed once; each part takes its slice of it.
    const config = FunctionsConfig.fromEnv(process.env);
    const built = buildFunctionContext(config, pino({ name: 'convergence', level: process.env['LOG_LEVEL'] ?? 'info' }));
    configureDecisionRefresh(built, decisionRefreshFromEnv(config));
    configureStatusHandoff(built, config);
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
