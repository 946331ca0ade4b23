// Builds the condition pass of the resync function from its environment: the same Kubernetes
// access, tracked kinds, condition type and status writer the status function uses (one writer
// semantics for every write of our condition), plus the table ports for the raw Scan/Query the pass
// needs (common/store ConditionResyncTable, ObjectItemReader: the typed store drops `ttl` and the
// decision's raw form).
//
// Enabled when TRACKED_KINDS is set. Without it resync only rebuilds aggregates (and says so once):
// a deployment that has not given the resync function Kubernetes access keeps working.
import type { Logger } from 'pino';

import { type AggregateStore } from '../../common/core';
import { openTableFromEnv } from '../../common/store';
import type { KubeAccess } from '../kube/access';
import { conditionWritingFromConfig } from '../kube/condition-writing';
import { CONDITION_RESYNC_SETTINGS, functionsConfig, withoutEmpty, type FunctionsConfig } from './config';
import type { ConditionResyncDeps } from './resync-conditions';

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
export function buildConditionResync(source: Record<string, string | undefined> | FunctionsConfig, logger: Logger, options: ConditionResyncOptions): ConditionResync | undefined {
  const config = functionsConfig(source);
  if (!config.isSet('TRACKED_KINDS')) return undefined;
  const settings = config.slice([...CONDITION_RESYNC_SETTINGS, 'TRACKED_KINDS']);
  const now = options.now ?? Date.now;
  const writing = conditionWritingFromConfig(config, settings.TRACKED_KINDS ?? [], logger, { ...(options.access === undefined ? {} : { access: options.access }), now });
  const table = openTableFromEnv(withoutEmpty(config.env), logger, { deletedObjectRetentionMs: settings.DELETED_OBJECT_RETENTION_MS });
  const deps: ConditionResyncDeps = {
    table: table.conditionResync,
    objectItems: table.objectItems,
    store: table.store,
    aggregates: options.aggregates,
    cleanup: table.objectCleanup,
    ...writing,
    logger,
    now,
    maxObjectsPerRun: settings.RESYNC_MAX_OBJECTS,
    maxScannedItemsPerRun: settings.RESYNC_MAX_SCANNED_ITEMS,
  };
  return { deps, close: table.close };
}
