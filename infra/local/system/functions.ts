// The local function runtime: the two stream consumers (convergence, status) on the table's local
// stream with the event-source-mapping settings of serverless.yml (filters, batch window, bisect,
// 10 retries, partial batch failures), the two schedules (expire, resync) on timers, and the query
// function behind a localhost function URL. Handlers are the deployed ones, called with an explicit
// environment instead of process.env.
import type { DynamoDBRecord } from 'aws-lambda';
import type { Logger } from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { AGGREGATE_PK_PREFIX, ENVOY_PK_PREFIX, LINEAGE_PK_PREFIX, OBJECT_PK_PREFIX, PROGRESS_SK, STATE_SK } from '../../../common/store';
import { configureDecisionRefresh, configureStatusHandoff, handleConvergence } from '../../../functions/convergence';
import { handleExpire } from '../../../functions/expire';
import { buildFunctionContext } from '../../../functions/lib/context';
import { createQueryHandler } from '../../../functions/query';
import { handleResync } from '../../../functions/resync';
import { buildConditionResync } from '../../../functions/lib/resync-conditions-context';
import { createStatusHandler } from '../../../functions/status';
import { createStreamDelivery, type StreamDelivery, type TableStreams } from '../dynamo';
import type { Component } from './component';
import { startFunctionUrl, type FunctionUrlServer } from './function-url';

export interface FunctionsComponent extends Component {
  queryUrl: string;
  deliveries: { convergence: StreamDelivery; status: StreamDelivery };
  /** Runs expire and resync once now (tests, and the first tick after start). */
  runSchedulesNow(): Promise<void>;
}

export interface FunctionsComponentOptions {
  tableStreams: TableStreams;
  storeEnv: Record<string, string>;
  kubeconfigPath: string;
  trackedKinds: Array<{ group: string; version: string; kind: string; plural: string; namespaced: boolean }>;
  conditionType: string;
  ackTimeoutMs: number;
  envoyTtlMs: number;
  expireEveryMs: number;
  resyncEveryMs: number;
  batchWindowMs: number;
  /** PROGRESS_EVALUATION: decide from the gateways' PROGRESS items (the gateway must run with --progress). */
  progressEvaluation?: boolean;
  /** The status mapping's window (default: batchWindowMs). */
  statusBatchWindowMs?: number;
  /** Convergence DECISION_REFRESH_MS (default LOCAL_DECISION_REFRESH_MS). */
  decisionRefreshMs?: number;
  /** The convergence mapping's batchSize (default CONVERGENCE_BATCH_SIZE, as serverless.yml). */
  convergenceBatchSize?: number;
  /** Convergence STATUS_HANDOFF: apply changed verdicts to Kubernetes directly (default true, as on AWS). */
  statusHandoff?: boolean;
  /**
   * REQUIRED_TYPE_URLS: types every Envoy must subscribe to before it can count (default the four
   * Contour serves, as serverless.yml deploys). Envoy subscribes to LDS only once its clusters are
   * warm, and RDS/EDS once it accepted what names them: without this, an Envoy that just connected
   * and holds only clusters counted as programmed (docs/ARCHITECTURE.md, "requiredTypeUrls").
   */
  requiredTypeUrls?: readonly string[];
  queryPort: number;
  queryToken: string;
  logger: Logger;
}

function partitionKey(record: DynamoDBRecord): string {
  return record.dynamodb?.Keys?.['pk']?.S ?? '';
}

// Lambda event filtering (serverless.yml `filterPatterns`) is the deliveries' `filter`: records that
// match no pattern are dropped before the function runs (and never copied for it), and a batch left
// empty is not invoked at all.

/**
 * serverless.yml's convergence filterPatterns: Envoy and lineage STATE items, object generations and
 * the gateways' PROGRESS items; not the ACK/NACK event log (ENVOY#…/EVENT#…, the most numerous
 * records) nor convergence's own shards and PENDING#.
 */
function convergenceRecord(record: DynamoDBRecord): boolean {
  const pk = partitionKey(record);
  if (pk.startsWith(OBJECT_PK_PREFIX)) return true;
  const sk = record.dynamodb?.Keys?.['sk']?.S;
  // The gateways' PROGRESS items (AGG#<lineage> / PROGRESS), not convergence's own shards.
  if (pk.startsWith(AGGREGATE_PK_PREFIX)) return sk === PROGRESS_SK;
  return (pk.startsWith(ENVOY_PK_PREFIX) || pk.startsWith(LINEAGE_PK_PREFIX)) && sk === STATE_SK;
}

/**
 * The convergence mapping's batchSize, as in serverless.yml (see the reasoning there). A batch's
 * DynamoDB requests are mostly per batch, not per record (aggregate shards, pending index, OBJECT
 * items), so larger batches consume the stream faster (docs/LOCAL-DYNAMO.md, "Convergence batch size").
 */
export const CONVERGENCE_BATCH_SIZE = 1000;

/**
 * The status mapping's batchSize, as in serverless.yml: a status batch costs per changed object (a
 * Kubernetes GET and PATCH each), so it stays small. test/integration/deploy checks both against it.
 */
export const STATUS_BATCH_SIZE = 50;

/** The local system's DECISION_REFRESH_MS when not given (options.ts; bench/README.md for why). */
export const LOCAL_DECISION_REFRESH_MS = 1000;

/** A schedule like EventBridge `rate(...)`, but never overlapping itself (the next run waits for this one). */
function every(ms: number, run: () => Promise<unknown>, name: string, logger: Logger): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const tick = (): void => {
    running = run().then(
      () => undefined,
      (error: unknown) => logger.error({ err: error, schedule: name }, 'scheduled function failed'),
    ).finally(() => {
      if (!stopped) timer = setTimeout(tick, ms);
    });
  };
  timer = setTimeout(tick, ms);
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}

/** What Contour (and every control plane here) serves each Envoy: clusters, endpoints, listeners, routes. */
export const DEFAULT_REQUIRED_TYPE_URLS: readonly string[] = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];

export async function startFunctionsComponent(opts: FunctionsComponentOptions): Promise<FunctionsComponent> {
  const env: Record<string, string> = {
    ...opts.storeEnv,
    ENVOY_TTL_MS: String(opts.envoyTtlMs),
    ACK_TIMEOUT_MS: String(opts.ackTimeoutMs),
    REQUIRED_TYPE_URLS: (opts.requiredTypeUrls ?? DEFAULT_REQUIRED_TYPE_URLS).join(','),
    TRACKED_KINDS: JSON.stringify(opts.trackedKinds),
    CONDITION_TYPE: opts.conditionType,
    KUBECONFIG_PATH: opts.kubeconfigPath,
    // Said either way: the functions' own default is the fleet-size path.
    PROGRESS_EVALUATION: opts.progressEvaluation === true ? 'true' : 'false',
  };
  const log = (name: string): Logger => opts.logger.child({ component: 'functions', function: name });
  // One context per function, as each Lambda function has its own containers.
  const convergenceContext = buildFunctionContext(env, log('convergence'));
  configureDecisionRefresh(convergenceContext, opts.decisionRefreshMs ?? LOCAL_DECISION_REFRESH_MS);
  // Same kubeconfig, kinds and condition type as the status function (docs/FUNCTIONS.md, "handoff").
  // Off with the option, or STATUS_HANDOFF=false in the environment (to compare in a bench run).
  configureStatusHandoff(convergenceContext, { ...env, STATUS_HANDOFF: String(opts.statusHandoff ?? process.env['STATUS_HANDOFF'] !== 'false') });
  const expireContext = buildFunctionContext(env, log('expire'));
  const resyncContext = buildFunctionContext(env, log('resync'));
  // Resync also re-asserts conditions another writer removed and collects deleted objects' items.
  const conditionResync = buildConditionResync(env, log('resync'), { aggregates: resyncContext.aggregates });
  const statusHandler = createStatusHandler({ env, logger: log('status') });
  const queryHandler = createQueryHandler({ env, logger: log('query') });

  const source = opts.tableStreams.get(opts.storeEnv['TABLE_NAME'] ?? '');
  const mapping = (name: string, windowMs: number) => ({
    maximumBatchingWindowMs: windowMs,
    maximumRetryAttempts: 10,
    bisectBatchOnFunctionError: true,
    retryBackoff: { initialMs: 100, maxMs: 2000 },
    // The on-failure destination: on AWS an SQS queue; here an error log line naming the records.
    onDropped: (dropped: { records: DynamoDBRecord[] }) =>
      log(name).error({ records: dropped.records.map((r) => r.dynamodb?.SequenceNumber), keys: dropped.records.map(partitionKey) }, 'stream records dropped after retries'),
    logger: log(name),
  });
  const convergence = createStreamDelivery({
    source,
    handler: (event) => handleConvergence(event, convergenceContext),
    filter: convergenceRecord,
    ...mapping('convergence', opts.batchWindowMs),
    batchSize: opts.convergenceBatchSize ?? CONVERGENCE_BATCH_SIZE,
  });
  const status = createStreamDelivery({
    source,
    handler: statusHandler,
    filter: (record) => (record.eventName === 'INSERT' || record.eventName === 'MODIFY') && partitionKey(record).startsWith(OBJECT_PK_PREFIX),
    ...mapping('status', opts.statusBatchWindowMs ?? opts.batchWindowMs),
    batchSize: STATUS_BATCH_SIZE,
  });
  const expire = every(opts.expireEveryMs, () => handleExpire(expireContext), 'expire', opts.logger);
  const resync = every(opts.resyncEveryMs, () => handleResync(resyncContext, conditionResync), 'resync', opts.logger);
  let url: FunctionUrlServer;
  try {
    url = await startFunctionUrl({ handler: queryHandler, token: opts.queryToken, port: opts.queryPort, logger: log('query') });
  } catch (error) {
    await Promise.all([expire.stop(), resync.stop(), convergence.stop(), status.stop()]);
    throw error;
  }
  return {
    name: 'functions',
    queryUrl: url.url,
    deliveries: { convergence, status },
    async runSchedulesNow() {
      await handleExpire(expireContext);
      await handleResync(resyncContext, conditionResync);
    },
    async close() {
      await url.close();
      conditionResync?.close();
      await Promise.all([expire.stop(), resync.stop()]);
      await status.stop();
      await convergence.stop();
    },
  };
}
