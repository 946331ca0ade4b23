// Fault injection around REAL clients talking to real dynalite (no DynamoDB mocks):
// - `ThrottlingHttpHandler` answers the first N matching requests with DynamoDB's throttling error
//   at the HTTP layer, below the SDK's retry middleware, so the SDK's own retry path runs;
// - `withUnprocessedItems` wraps the document operations so the first N BatchWriteItem calls write
//   only part of their items for real and report the rest as UnprocessedItems, as DynamoDB does
//   under load (dynalite never does it by itself).
// The @smithy packages are transitive dependencies of the AWS SDK; only tests use them directly.
import { Readable } from 'node:stream';

import { HttpResponse, type HttpRequest } from '@smithy/core/protocols';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpHandlerOptions } from '@smithy/types';

import type { DocumentOperations } from '../../common/store/operations';

/** Counts what reached dynalite and what was refused before it, per DynamoDB operation name. */
export class ThrottlingHttpHandler extends NodeHttpHandler {
  readonly forwarded = new Map<string, number>();
  throttled = 0;

  constructor(
    private remainingThrottles: number,
    private readonly operation: string,
  ) {
    super();
  }

  override async handle(request: HttpRequest, options?: HttpHandlerOptions): Promise<{ response: HttpResponse }> {
    // The JSON protocol names the operation in X-Amz-Target, e.g. DynamoDB_20120810.BatchWriteItem.
    const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
    const operation = target.split('.').pop() ?? '';
    if (operation === this.operation && this.remainingThrottles > 0) {
      this.remainingThrottles--;
      this.throttled++;
      const body = JSON.stringify({
        __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
        message: 'injected: the level of configured provisioned throughput for the table was exceeded',
      });
      return {
        response: new HttpResponse({
          statusCode: 400,
          headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'injected-throttle' },
          body: Readable.from([Buffer.from(body)]),
        }),
      };
    }
    this.forwarded.set(operation, (this.forwarded.get(operation) ?? 0) + 1);
    return super.handle(request, options);
  }
}

export interface UnprocessedItemsFault {
  operations: DocumentOperations;
  /** BatchWriteItem calls seen by the wrapper (faulted or not). */
  calls(): number;
  /** Items reported back as unprocessed, over all calls. */
  reportedUnprocessed(): number;
}

/**
 * For the first `faultyCalls` BatchWriteItem calls, write only the first `writeCount(n)` requests
 * of the call through the real client and return the others as UnprocessedItems.
 */
export function withUnprocessedItems(
  real: DocumentOperations,
  faultyCalls: number,
  writeCount: (requests: number) => number = (requests) => Math.floor(requests / 2),
): UnprocessedItemsFault {
  let calls = 0;
  let reported = 0;
  const operations: DocumentOperations = {
    ...real,
    async batchWrite(input) {
      calls++;
      if (calls > faultyCalls) return real.batchWrite(input);
      const requestItems = input.RequestItems ?? {};
      const written: typeof requestItems = {};
      const unprocessed: typeof requestItems = {};
      for (const [table, requests] of Object.entries(requestItems)) {
        const keep = writeCount(requests.length);
        if (keep > 0) written[table] = requests.slice(0, keep);
        if (keep < requests.length) {
          unprocessed[table] = requests.slice(keep);
          reported += requests.length - keep;
        }
      }
      const output = Object.keys(written).length > 0 ? await real.batchWrite({ ...input, RequestItems: written }) : undefined;
      return { $metadata: output?.$metadata ?? {}, UnprocessedItems: unprocessed };
    },
  };
  return { operations, calls: () => calls, reportedUnprocessed: () => reported };
}
