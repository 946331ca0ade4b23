// Adapts a Lambda handler as written for AWS (`(event, context, callback)`, promise or callback
// style) to the `(event) => Promise` shape stream delivery invokes, with a plausible local Context,
// so functions/ handlers run locally unchanged.
import { randomUUID } from 'node:crypto';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent, DynamoDBStreamHandler } from 'aws-lambda';
import type { StreamHandler } from './delivery';

export interface LocalLambdaOptions {
  functionName: string;
  region?: string;
  /** Reported by context.getRemainingTimeInMillis (default 60 s). */
  timeoutMs?: number;
}

export function localContext(opts: LocalLambdaOptions): Context {
  const region = opts.region ?? 'us-east-1';
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const unsupported = (): never => {
    throw new Error('context.done/fail/succeed are not supported locally: return a promise or use the callback');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: opts.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${opts.functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${opts.functionName}`,
    logStreamName: `local/[$LATEST]${randomUUID().replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/** Wraps an AWS-style DynamoDB stream handler for createStreamDelivery. */
export function fromLambdaHandler(handler: DynamoDBStreamHandler, opts: LocalLambdaOptions): StreamHandler {
  return (event: DynamoDBStreamEvent) =>
    new Promise<DynamoDBBatchResponse | void>((resolve, reject) => {
      let settled = false;
      const callback = (error?: Error | string | null, result?: DynamoDBBatchResponse | void): void => {
        if (settled) return;
        settled = true;
        if (error) reject(typeof error === 'string' ? new Error(error) : error);
        else resolve(result);
      };
      let returned: unknown;
      try {
        returned = handler(event, localContext(opts), callback);
      } catch (err) {
        callback(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      // Async handlers settle through their promise; callback-style ones return undefined.
      if (returned instanceof Promise) {
        (returned as Promise<DynamoDBBatchResponse | void>).then(
          (result) => callback(null, result),
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
        );
      }
    });
}
