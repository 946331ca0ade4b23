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
import { z } from 'zod';
import { conditionSettingsShape } from './kube/condition-settings';
import { messageRefreshSettingsShape } from './status/refresh-settings';

import { createEventStoreFromEnv } from '../common/store';
import { createKubeAccess, kubeAccessConfigFromEnv, type KubeAccess } from './kube/access';
import { StatusWriter } from './kube/status-writer';
import { parseTrackedKinds, TrackedKinds } from './kube/tracked-kinds';
import { dynamoObjectCleanup } from './status/object-cleanup';
import { processStatusBatch, type StatusProcessorDeps } from './status/process';

const statusEnvSchema = z.object({
  ...conditionSettingsShape,
  ...messageRefreshSettingsShape,
});

/** Empty strings (serverless params left blank) mean "not set". */
function withoutEmpty(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
}

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
  const settings = statusEnvSchema.parse(env);
  const kinds = new TrackedKinds(parseTrackedKinds(env['TRACKED_KINDS']));
  const access = options.access ?? createKubeAccess(kubeAccessConfigFromEnv(env));
  const { store, clients } = createEventStoreFromEnv(env, logger);
  const now = options.now ?? Date.now;
  const writer = new StatusWriter({ access, kinds, logger, now, writeOnMessageChange: settings.STATUS_WRITE_ON_MESSAGE_CHANGE === 'true' });
  const deps: StatusProcessorDeps = {
    writer,
    store,
    cleanup: dynamoObjectCleanup(clients.documentClient, z.string().parse(env['TABLE_NAME'])),
    logger,
    conditionType: settings.CONDITION_TYPE,
    kinds,
    writeOnMessageChange: settings.STATUS_WRITE_ON_MESSAGE_CHANGE === 'true',
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
