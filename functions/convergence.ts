// Lambda: DynamoDB stream → per-lineage aggregates → decisions on OBJECT generation items
// (docs/CONVERGENCE.md). Configuration (environment):
//   TABLE_NAME, AWS_REGION, DYNAMODB_ENDPOINT (local)   the table (common/store)
//   ENVOY_TTL_MS (default 300000), ACK_TIMEOUT_MS (default 30000), AGGREGATE_SHARDS (default 16)
//   REQUIRED_TYPE_URLS                                   comma-separated type URLs every Envoy must subscribe
import type { DynamoDBBatchResponse, DynamoDBStreamEvent, DynamoDBStreamHandler } from 'aws-lambda';
import pino from 'pino';

import { buildFunctionContext, type FunctionContext } from './lib/context';
import { processConvergenceBatch } from './lib/convergence-batch';

let context: FunctionContext | undefined;

export function convergenceContext(): FunctionContext {
  context ??= buildFunctionContext(process.env, pino({ name: 'convergence', level: process.env['LOG_LEVEL'] ?? 'info' }));
  return context;
}

export async function handleConvergence(event: DynamoDBStreamEvent, ctx: FunctionContext = convergenceContext()): Promise<DynamoDBBatchResponse> {
  const { response, report } = await processConvergenceBatch(event, ctx.deps);
  ctx.deps.logger.info({ records: event.Records?.length ?? 0, ...report }, 'convergence batch done');
  return response;
}

export const handler: DynamoDBStreamHandler = async (event) => handleConvergence(event);
