// Lambda (scheduled): rebuild the per-lineage aggregates from the ENVOY STATE items, fix drift, and
// re-evaluate pending generations (docs/CONVERGENCE.md); then re-assert conditions that drifted in
// Kubernetes and garbage-collect the items of deleted objects (docs/FUNCTIONS.md, "resync").
// Same environment as convergence.ts, plus the status function's Kubernetes variables for the
// condition pass (enabled when TRACKED_KINDS is set).
import type { ScheduledHandler } from 'aws-lambda';
import pino from 'pino';

import { FunctionsConfig } from './lib/config';
import { buildFunctionContext, type FunctionContext } from './lib/context';
import { runConditionResync, type ConditionResyncReport } from './lib/resync-conditions';
import { buildConditionResync, type ConditionResync } from './lib/resync-conditions-context';
import { runResync, type ResyncReport } from './lib/resync-run';

let config: FunctionsConfig | undefined;
let context: FunctionContext | undefined;
let conditions: ConditionResync | null | undefined;

/** The environment, parsed once per container for both passes. */
function resyncConfig(): FunctionsConfig {
  config ??= FunctionsConfig.fromEnv(process.env);
  return config;
}

export function resyncContext(): FunctionContext {
  context ??= buildFunctionContext(resyncConfig(), pino({ name: 'resync', level: process.env['LOG_LEVEL'] ?? 'info' }));
  return context;
}

/** The condition pass from the environment, once per container; null when TRACKED_KINDS is unset. */
export function resyncConditions(ctx: FunctionContext = resyncContext()): ConditionResync | null {
  if (conditions === undefined) {
    conditions = buildConditionResync(resyncConfig(), ctx.deps.logger, { aggregates: ctx.aggregates }) ?? null;
    if (conditions === null) ctx.deps.logger.info('TRACKED_KINDS is not set: resync does not re-assert conditions');
  }
  return conditions;
}

export interface ResyncHandlerReport extends ResyncReport {
  conditions?: ConditionResyncReport;
  /** The condition pass could not run (store unreachable for its Scan or cursor); retried next schedule. */
  conditionsError?: string;
}

export async function handleResync(ctx: FunctionContext = resyncContext(), conditionResync?: ConditionResync | null): Promise<ResyncHandlerReport> {
  const report: ResyncHandlerReport = await runResync(ctx.deps);
  ctx.deps.logger.info(report, 'resync done');
  // After the aggregates: the decisions they re-evaluated are what the condition pass re-asserts.
  if (conditionResync !== undefined && conditionResync !== null) {
    try {
      report.conditions = await runConditionResync(conditionResync.deps);
      ctx.deps.logger.info(report.conditions, 'condition resync done');
    } catch (error) {
      // The aggregates are already fixed; the next scheduled run starts the pass again from its cursor.
      report.conditionsError = error instanceof Error ? error.message : String(error);
      ctx.deps.logger.error({ err: error }, 'condition resync failed');
    }
  }
  return report;
}

export const handler: ScheduledHandler = async () => {
  await handleResync(resyncContext(), resyncConditions());
};
