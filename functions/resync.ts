// Lambda (scheduled): rebuild the per-lineage aggregates from the ENVOY STATE items, fix drift, and
// re-evaluate pending generations (docs/CONVERGENCE.md). Same environment as convergence.ts.
import type { ScheduledHandler } from 'aws-lambda';
import pino from 'pino';

import { buildFunctionContext, type FunctionContext } from './lib/context';
import { runResync, type ResyncReport } from './lib/resync-run';

let context: FunctionContext | undefined;

export function resyncContext(): FunctionContext {
  context ??= buildFunctionContext(process.env, pino({ name: 'resync', level: process.env['LOG_LEVEL'] ?? 'info' }));
  return context;
}

export async function handleResync(ctx: FunctionContext = resyncContext()): Promise<ResyncReport> {
  const report = await runResync(ctx.deps);
  ctx.deps.logger.info(report, 'resync done');
  return report;
}

export const handler: ScheduledHandler = async () => {
  await handleResync();
};
