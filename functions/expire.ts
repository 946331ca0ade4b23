// Lambda (scheduled, every minute): expire Envoys not seen for the TTL and re-evaluate pending
// generations so stuck Envoys are reported (docs/CONVERGENCE.md). Same environment as convergence.ts.
import type { ScheduledHandler } from 'aws-lambda';
import pino from 'pino';

import { buildFunctionContext, type FunctionContext } from './lib/context';
import { runExpire, type ExpireReport } from './lib/expire-run';

let context: FunctionContext | undefined;

export function expireContext(): FunctionContext {
  context ??= buildFunctionContext(process.env, pino({ name: 'expire', level: process.env['LOG_LEVEL'] ?? 'info' }));
  return context;
}

export async function handleExpire(ctx: FunctionContext = expireContext()): Promise<ExpireReport> {
  const report = await runExpire(ctx.deps);
  ctx.deps.logger.info({ ...report, outcomes: undefined }, 'expire tick done');
  return report;
}

export const handler: ScheduledHandler = async () => {
  await handleExpire();
};
