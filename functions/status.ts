// Lambda: DynamoDB stream (OBJECT items) → one condition on each tracked Kubernetes object.
// See docs/FUNCTIONS.md. Configuration (environment):
//   TABLE_NAME, AWS_REGION, DYNAMODB_ENDPOINT (local)   the table (common/store)
//   TRACKED_KINDS                                        JSON list of {group, version, kind, plural, namespaced}
//   CONDITION_TYPE                                       default EnvoyProgrammed
//   KUBECONFIG_YAML | KUBECONFIG_PATH | EKS_CLUSTER_*    how to reach Kubernetes (functions/kube/access.ts)
//   STATUS_WRITE_ON_MESSAGE_CHANGE                       "true": also write when only the message changed
//   STATUS_MESSAGE_REFRESH_MS (default 10000)            a not-True condition's stale message is rewritten
//                                                        at most this often (0: never; docs/FUNCTIONS.md)
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import pino, { type Logger } from 'pino';

import { openTableFromEnv } from '../common/store';
import type { KubeAccess } from './kube/access';
import { conditionWritingFromConfig } from './kube/condition-writing';
import { TRACKED_KINDS_NOT_SET } from './kube/tracked-kinds';
import { FunctionsConfig, STATUS_SETTINGS, withoutEmpty } from './lib/config';
import { processStatusBatch, type StatusProcessorDeps } from './status/process';

export interface StatusHandlerOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** Replaces the Kubernetes access built from the environment (tests). */
  access?: KubeAccess;
  now?: () => number;
}

/** Builds the handler (once per container); startup checks of the tracked kinds run on first use. */
export function createStatusHandler(options: StatusHandlerOptions = {}): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  const env = withoutEmpty(options.env ?? process.env);
  const logger = options.logger ?? pino({ name: 'status', level: env['LOG_LEVEL'] ?? 'info' });
  const config = FunctionsConfig.fromEnv(env);
  const settings = config.slice([...STATUS_SETTINGS, 'TRACKED_KINDS']);
  if (settings.TRACKED_KINDS === undefined) throw new Error(TRACKED_KINDS_NOT_SET);
  const now = options.now ?? Date.now;
  const writing = conditionWritingFromConfig(config, settings.TRACKED_KINDS, logger, { ...(options.access === undefined ? {} : { access: options.access }), now });
  const { writer } = writing;
  const { store, objectCleanup } = openTableFromEnv(env, logger);
  const deps: StatusProcessorDeps = {
    ...writing,
    store,
    cleanup: objectCleanup,
    logger,
    messageRefreshMs: settings.STATUS_MESSAGE_REFRESH_MS,
    now,
  };
  let checked: Promise<unknown> | undefined;
  return async (event) => {
    // Once per container: log which kinds can hold our condition. A failure here (API server down)
    // fails the batch so it is retried, and the check runs again next time.
    checked ??= writer.checkKinds().catch((error: unknown) => {
      checked = undefined;
      throw error;
    });
    await checked;
    const { response, results } = await processStatusBatch(event, deps);
    logger.debug({ records: event.Records?.length ?? 0, results }, 'batch done');
    return response;
  };
}

let handlerInstance: ((event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>) | undefined;

/** The Lambda entry point. Configuration errors surface on the first invocation, in the log. */
export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  handlerInstance ??= createStatusHandler();
  return handlerInstance(event);
};
