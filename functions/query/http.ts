// JSON responses for the query function (Lambda function URL, payload format 2.0). Clients get a
// status code and a message they can act on; never a stack trace.
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type QueryResponse = APIGatewayProxyStructuredResultV2 & { statusCode: number; body: string };

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): QueryResponse {
  return { statusCode, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/** An error answer: `{ error: { code, message } }`. */
export function problem(statusCode: number, code: string, message: string, headers: Record<string, string> = {}): QueryResponse {
  return json(statusCode, { error: { code, message } }, headers);
}

/** Thrown by route code for a 4xx; anything else becomes a 500. */
export class HttpError extends Error {
  constructor(readonly statusCode: number, readonly code: string, message: string) {
    super(message);
    this.name = 'HttpError';
  }
}
