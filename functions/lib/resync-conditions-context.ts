// Builds the condition pass of the resync function from its environment: the same Kubernetes
// access, tracked kinds, condition type and status writer the status function uses (one writer
// semantics for every write of our condition), plus its own DynamoDB document client for the raw
// Scan/Query the pass needs (the typed store drops `ttl` and the decision's raw form).
//
// Enabled when TRACKED_KINDS is set. Without it resync only rebuilds aggregates (and says so once):
// a deployment that has not given the resync function Kubernetes access keeps working.
import type { Logger } from 'pino';
import { z } from 'zod';
import { conditionSettingsShape } from '../kube/condition-settings';

import { type AggregateStore } from '../../common/core';
import { createEventStoreFromEnv } from '../../common/store';
import { createKubeAccess, kubeAccessConfigFromEnv, type KubeAccess } from '../kube/access';
import { StatusWriter } from '../kube/status-writer';
import { parseTrackedKinds, TrackedKinds } from '../kube/tracked-kinds';
import { dynamoObjectCleanup } from '../status/object-cleanup';
import type { ConditionResyncDeps } from './resync-conditions';

const conditionResyncEnvSchema = z.object({
  TABLE_NAME: z.string().min(3),
  ...conditionSettingsShape,
  RESYNC_MAX_OBJECTS: z.coerce.number().int().positive().default(500),
  RESYNC_MAX_SCANNED_ITEMS: z.coerce.number().int().positive().default(50_000),
  /** Deleted objects' items are kept this long before DynamoDB's TTL removes them. */
  DELETED_OBJECT_RETENTION_MS: z.coerce.number().int().positive().default(3_600_000),
});

export interface ConditionResync {
  deps: ConditionResyncDeps;
  close(): void;
}

export interface ConditionResyncOptions {
  aggregates: Pick<AggregateStore, 'deletePending'>;
  /** Replaces the Kubernetes access built from the environment (tests). */
  access?: KubeAccess;
  now?: () => number;
}

/** The condition pass, or undefined when TRACKED_KINDS is not set. Throws on invalid configuration. */
export function buildConditionResync(env: Record<string, string | undefined>, logger: Logger, options: ConditionResyncOptions): ConditionResync | undefined {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  if (set['TRACKED_KINDS'] === undefined) return undefined;
  const settings = conditionResyncEnvSchema.parse(set);
  const kinds = new TrackedKinds(parseTrackedKinds(set['TRACKED_KINDS']));
  const access = options.access ?? createKubeAccess(kubeAccessConfigFromEnv(set));
  const now = options.now ?? Date.now;
  const writeOnMessageChange = settings.STATUS_WRITE_ON_MESSAGE_CHANGE === 'true';
  const { store, clients } = createEventStoreFromEnv(set, logger);
  const deps: ConditionResyncDeps = {
    documentClient: clients.documentClient,
    tableName: settings.TABLE_NAME,
    store,
    aggregates: options.aggregates,
    cleanup: dynamoObjectCleanup(clients.documentClient, settings.TABLE_NAME, settings.DELETED_OBJECT_RETENTION_MS),
    writer: new StatusWriter({ access, kinds, logger, now, writeOnMessageChange }),
    logger,
    conditionType: settings.CONDITION_TYPE,
    kinds,
    writeOnMessageChange,
    now,
    maxObjectsPerRun: settings.RESYNC_MAX_OBJECTS,
    maxScannedItemsPerRun: settings.RESYNC_MAX_SCANNED_ITEMS,
  };
  return { deps, close: () => clients.client.destroy() };
}
