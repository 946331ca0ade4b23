// Lambda (function URL, AWS_IAM auth): a read-only JSON view of object generations and the Envoy
// fleet. See docs/FUNCTIONS.md for the routes. Configuration: TABLE_NAME, AWS_REGION,
// DYNAMODB_ENDPOINT (local), ENVOY_TTL_MS, ACK_TIMEOUT_MS, EXPIRE_STALL_MS, QUERY_NAMESPACES (allow-list of namespaces
// whose objects may be shown; unset or "*" = all, see query/namespaces.ts), PROGRESS_EVALUATION and REQUIRED_TYPE_URLS
// (as the convergence function's: the object view's live detail then comes from PROGRESS).
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import pino, { type Logger } from 'pino';

import { type AggregateStore, type ConvergencePolicy, type TableClockView } from '../common/core';
import { describeError } from '../common/describe-error';
import { openTableFromEnv, InvalidPageTokenError, InvalidStoreInputError } from '../common/store';
import { FunctionsConfig, QUERY_SETTINGS } from './lib/config';
import { AggregateSnapshot, tableClockOf } from './lib/evaluate';
import { HttpError, json, problem, type QueryResponse } from './query/http';
import { namespaceAllowed, parseNamespaceScope, type NamespaceScope } from './query/namespaces';
import { route } from './query/routes';
import { envoyDetail, fleetPage, objectView, type ViewContext } from './query/views';

export interface QueryHandlerOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  now?: () => number;
}

export type QueryHandler = (event: APIGatewayProxyEventV2) => Promise<QueryResponse>;

export function createQueryHandler(options: QueryHandlerOptions = {}): QueryHandler {
  const env = options.env ?? process.env;
  const logger = options.logger ?? pino({ name: 'query', level: env['LOG_LEVEL'] ?? 'info' });
  // As given: the query function has always read an empty value as that value (QUERY_NAMESPACES="" is every namespace).
  const settings = FunctionsConfig.fromEnv(env, { emptyIsUnset: false }).slice(QUERY_SETTINGS);
  const namespaces = parseNamespaceScope(settings.QUERY_NAMESPACES);
  const { store, objectItems, aggregates, versionLog, progress } = openTableFromEnv(env, logger);
  const policy: ConvergencePolicy = { ttlMs: settings.ENVOY_TTL_MS, ackTimeoutMs: settings.ACK_TIMEOUT_MS, requiredTypeUrls: settings.REQUIRED_TYPE_URLS };
  const now = options.now ?? Date.now;
  const rawObjectItem: ViewContext['rawObjectItem'] = (ref, generation) => objectItems.getObjectGenerationItem(ref, generation);
  // On the fleet-size path the live detail is what convergence would decide now, from the same items.
  const liveFromProgress: ViewContext['liveFromProgress'] = settings.PROGRESS_EVALUATION
    ? async (record) => {
        const snapshot = new AggregateSnapshot({ aggregates, store, logger, policy, now, progress, ...(settings.EXPIRE_STALL_MS === undefined ? {} : { stallMs: settings.EXPIRE_STALL_MS }) });
        return (await snapshot.evaluate(record)).convergence;
      }
    : undefined;
  return async (event) => {
    const tableClock = await readTableClock(aggregates, { ttlMs: settings.ENVOY_TTL_MS, stallMs: settings.EXPIRE_STALL_MS }, logger);
    return handleQuery(event, { store, policy, now: now(), ...(tableClock === undefined ? {} : { tableClock }), maxFleetScan: settings.QUERY_MAX_FLEET_SCAN, maxBlockersListed: 100, rawObjectItem, versionLog, ...(liveFromProgress === undefined ? {} : { liveFromProgress, progress }) }, logger, namespaces);
  };
}

/**
 * The table clock, so that `live` here agrees with the decisions (one GetItem per request). A failed
 * read is logged and the view falls back to wall time: it is informative, and the request goes on.
 */
async function readTableClock(aggregates: Pick<AggregateStore, 'getLineageRegistry'>, settings: { ttlMs: number; stallMs: number | undefined }, logger: Logger): Promise<TableClockView | undefined> {
  try {
    return tableClockOf(await aggregates.getLineageRegistry(), settings);
  } catch (error) {
    logger.warn({ err: describeError(error) }, 'query: the lineage registry could not be read; liveness is shown on wall time');
    return undefined;
  }
}

/** One request → one JSON response. Bad input is a 4xx with a message; a failure is a 500 without details. */
export async function handleQuery(event: APIGatewayProxyEventV2, context: ViewContext, logger: Logger, namespaces: NamespaceScope = undefined): Promise<QueryResponse> {
  const method = event.requestContext?.http?.method ?? 'GET';
  const path = typeof event.rawPath === 'string' ? event.rawPath : '/';
  const requestId = event.requestContext?.requestId;
  // The method is echoed to help the caller; bounded, since it is caller input.
  if (method !== 'GET') return problem(405, 'MethodNotAllowed', `${String(method).slice(0, 32)} is not allowed; this API is read-only (GET)`, { allow: 'GET' });
  try {
    const target = route(path, event.queryStringParameters ?? {});
    switch (target.name) {
      case 'healthz':
        return json(200, { ok: true });
      case 'envoys':
      case 'envoy':
        if (namespaces !== undefined) throw new HttpError(404, 'FleetViewDisabled', 'the fleet views are off while QUERY_NAMESPACES limits this endpoint (Envoy data is not per namespace)');
        return json(200, target.name === 'envoys' ? await fleetPage(context, target) : await envoyDetail(context, target.nodeId, target.events));
      case 'object':
        // Outside the allow-list: the same answer as a missing object, so nothing about it leaks.
        if (!namespaceAllowed(namespaces, target.ref.namespace)) throw new HttpError(404, 'ObjectNotFound', target.generation === undefined ? 'no generation of this object has been seen by a gateway' : `generation ${target.generation} of this object has not been seen by a gateway`);
        return json(200, await objectView(context, target.ref, target.generation));
    }
  } catch (error) {
    if (error instanceof HttpError) {
      if (error.statusCode >= 500) logger.error({ path, requestId, error: error.message }, 'query failed');
      else logger.info({ path, requestId, status: error.statusCode, error: error.message }, 'bad request');
      return problem(error.statusCode, error.code, error.message);
    }
    if (error instanceof InvalidPageTokenError) return problem(400, 'BadCursor', 'cursor is not one this API returned (or belongs to another listing)');
    if (error instanceof InvalidStoreInputError) return problem(400, 'BadInput', error.message);
    logger.error({ path, requestId, err: error }, 'query failed');
    return problem(500, 'InternalError', `internal error${requestId === undefined ? '' : ` (request ${requestId})`}`);
  }
}

let handlerInstance: QueryHandler | undefined;

export const handler = async (event: APIGatewayProxyEventV2): Promise<QueryResponse> => {
  handlerInstance ??= createQueryHandler();
  return handlerInstance(event);
};

