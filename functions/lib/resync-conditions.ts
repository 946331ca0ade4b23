// Resync, second half (docs/CONVERGENCE.md, "Drift and resync"): re-assert conditions that drifted, and garbage-collect the items of
// objects Kubernetes no longer has.
//
// Another writer may replace the whole `status.conditions` list of an object and drop ours (a merge
// patch replaces lists wholesale, RFC 7386), or a restore from backup may bring back an old one. The
// status function only writes when a stream record arrives, so without this nothing would ever put
// the condition back. For each object whose latest generation has a recorded `lastCondition`, we
// rebuild the condition its stored decision says now and hand it to the one status writer: it
// re-reads the object, writes only if our condition is missing or differs in status, reason or
// observedGeneration (message-only changes are not drift: invariant 4), merges by type and retries
// on 409. So a drifted object costs one PATCH, an object in sync costs one GET and no write.
//
// Bounded work: the OBJECT generation items are found by a paged, filtered Scan; a run stops after
// `maxObjectsPerRun` objects or `maxScannedItemsPerRun` scanned items and saves where it stopped in
// one cursor item, so the next run continues there and a pass over a large table spans several runs.
import type { Logger } from 'pino';

import { conditionChanged, formatObjectRef, type ObjectRef, type ObjectStore } from '../../common/core';
import {
  ATTR,
  CONDITION_RESYNC_CURSOR_KEY,
  ITEM_KIND,
  objectGenerationFromItem,
  parseItem,
  type ConditionResyncTable,
  type ObjectItemReader,
  type ScanKey,
} from '../../common/store';
import type { StatusWriter } from '../kube/status-writer';
import type { TrackedKinds } from '../kube/tracked-kinds';
import { conditionDraftFor, conditionOptionsFor, readDecision, storedDecisionRevalidator } from '../status/decision';
import { collectDeletedObject, describeCollected, type DeletedObjectCollectorDeps } from './resync-gc';

/** Where the condition pass stopped: one item (common/store CONDITION_RESYNC_CURSOR_KEY, ConditionResyncCursorItem). */
export const CONDITION_CURSOR_KEY = CONDITION_RESYNC_CURSOR_KEY;

export interface ConditionResyncDeps extends DeletedObjectCollectorDeps {
  /** The pass's scan and its saved cursor. */
  table: ConditionResyncTable;
  objectItems: Pick<ObjectItemReader, 'latestObjectGenerationItem'>;
  /** With `getObjectGeneration`, a same-generation change is revalidated against the stored decision (status-writer.ts `needsRevalidation`). */
  store: Pick<ObjectStore, 'listObjectGenerations' | 'recordCondition'> & Partial<Pick<ObjectStore, 'getObjectGeneration'>>;
  writer: Pick<StatusWriter, 'write'>;
  logger: Logger;
  conditionType: string;
  /** Per-kind condition types (TrackedKinds); absent: `conditionType` for every kind. */
  kinds?: Pick<TrackedKinds, 'conditionTypeFor'>;
  writeOnMessageChange: boolean;
  now: () => number;
  /** Objects checked against Kubernetes per run (one GET each, one PATCH if drifted). Default 500. */
  maxObjectsPerRun?: number;
  /** Items the Scan may read per run (it reads every item kind, then filters). Default 50,000. */
  maxScannedItemsPerRun?: number;
  /** Scan page size (DynamoDB `Limit`: items read before the filter). Default 500. */
  scanPageLimit?: number;
}

export interface ConditionResyncReport {
  /** Items read by the Scan (before its filter). */
  scannedItems: number;
  /** Objects whose latest generation was checked against Kubernetes. */
  checked: number;
  inSync: number;
  /** Conditions written again because Kubernetes no longer held what the decision says. */
  reasserted: number;
  /** Objects Kubernetes answered 404 for: their items got a ttl. */
  collected: number;
  /** Not checked: no usable decision, not the latest generation, no condition recorded yet. */
  skipped: number;
  /** The kind cannot hold our condition, or the writer skipped for a generation reason. */
  notWritten: number;
  corrupt: number;
  failed: number;
  /** The pass reached the end of the table (the next run starts from the beginning). */
  complete: boolean;
}

type ObjectResult = 'inSync' | 'reasserted' | 'collected' | 'skipped' | 'notWritten';

async function readCursor(deps: ConditionResyncDeps): Promise<ScanKey | undefined> {
  const read = await deps.table.readCursor();
  if (read.status === 'missing') return undefined;
  if (read.status === 'corrupt') {
    deps.logger.warn({ key: CONDITION_CURSOR_KEY, error: read.error }, 'resync cursor item is invalid; starting the pass over');
    return undefined;
  }
  return read.value.startKey ?? undefined;
}

async function saveCursor(deps: ConditionResyncDeps, startKey: ScanKey | undefined): Promise<void> {
  await deps.table.saveCursor(startKey, deps.now());
}

/** `ref`'s highest generation is read raw: the typed read drops `ttl`. */
async function resyncObject(deps: ConditionResyncDeps, ref: ObjectRef): Promise<ObjectResult> {
  const raw = await deps.objectItems.latestObjectGenerationItem(ref);
  if (raw === undefined || raw[ATTR.ttl] !== undefined) return 'skipped'; // gone meanwhile, or already collected
  const parsed = parseItem(raw);
  if (!parsed.ok || parsed.item.kind !== ITEM_KIND.objectGeneration) return 'skipped';
  const record = objectGenerationFromItem(parsed.item);
  const object = formatObjectRef(record.object);
  // A newer generation without a condition yet is the status function's to write (its stream record is coming).
  if (record.lastCondition === undefined) return 'skipped';
  const decision = readDecision(record, parsed.warnings);
  if (decision.status !== 'found') {
    if (decision.status === 'invalid') deps.logger.error({ object, generation: record.generation, error: decision.error }, 'decision on OBJECT item is invalid; not re-asserted');
    return 'skipped';
  }
  const draft = conditionDraftFor(record, decision.decision, conditionOptionsFor(record.object, deps));
  // The item was read before the object: convergence's handoff may have applied a newer verdict in
  // between, which an older draft must not undo.
  const store = deps.store;
  const getObjectGeneration = store.getObjectGeneration?.bind(store);
  const revalidate = getObjectGeneration === undefined ? undefined : storedDecisionRevalidator({ getObjectGeneration }, record, draft, conditionOptionsFor(record.object, deps));
  const outcome = await deps.writer.write(record.object, draft, revalidate === undefined ? {} : { revalidate });
  switch (outcome.outcome) {
    case 'written':
      deps.logger.warn(
        { object, generation: record.generation, status: outcome.condition.status, reason: outcome.condition.reason, found: outcome.previous ?? null, conflicts: outcome.conflicts },
        'condition drifted in Kubernetes; re-asserted',
      );
      // Record only what changes the item: the status function compares status, reason and
      // observedGeneration with it, and an unchanged record would be one more stream record for nothing.
      if (conditionChanged(record.lastCondition, outcome.condition, { includeMessage: deps.writeOnMessageChange })) {
        await deps.store.recordCondition(record.object, record.generation, outcome.condition, outcome.condition.status === 'True' ? deps.now() : undefined);
      }
      return 'reasserted';
    case 'skipped':
      if (outcome.reason === 'unchanged') return 'inSync';
      deps.logger.info({ object, generation: record.generation, reason: outcome.reason, detail: outcome.detail }, 'condition not re-asserted');
      return 'notWritten';
    case 'notFound': {
      const collected = await collectDeletedObject(deps, record.object, deps.now());
      deps.logger.info(describeCollected(record.object, collected), 'object is gone; its items are marked for expiry');
      return 'collected';
    }
    case 'unsupported':
      deps.logger.error({ object, generation: record.generation, detail: outcome.detail }, 'cannot write the condition on this object');
      return 'notWritten';
  }
}

/** One bounded run of the condition pass. Never throws for one object; store errors on the cursor or the Scan do throw. */
export async function runConditionResync(deps: ConditionResyncDeps): Promise<ConditionResyncReport> {
  const report: ConditionResyncReport = { scannedItems: 0, checked: 0, inSync: 0, reasserted: 0, collected: 0, skipped: 0, notWritten: 0, corrupt: 0, failed: 0, complete: false };
  const maxObjects = deps.maxObjectsPerRun ?? 500;
  const maxScanned = deps.maxScannedItemsPerRun ?? 50_000;
  const pageLimit = deps.scanPageLimit ?? 500;
  const storedCursor = await readCursor(deps);
  let startKey = storedCursor;
  const seen = new Set<string>();
  do {
    const page = await deps.table.scanConditionedGenerations({
      // A page returns at most Limit items, so neither bound is overshot.
      limit: Math.max(1, Math.min(pageLimit, maxObjects - report.checked, maxScanned - report.scannedItems)),
      ...(startKey === undefined ? {} : { startKey }),
    });
    report.scannedItems += page.scannedCount;
    for (const raw of page.items) {
      const parsed = parseItem(raw);
      if (!parsed.ok || parsed.item.kind !== ITEM_KIND.objectGeneration) {
        report.corrupt++;
        deps.logger.error({ key: { pk: raw['pk'], sk: raw['sk'] }, error: parsed.ok ? 'not an object generation' : parsed.error }, 'corrupt OBJECT item skipped by resync');
        continue;
      }
      // Several generations of one object: the latest is read once per run.
      if (seen.has(parsed.item.pk)) continue;
      seen.add(parsed.item.pk);
      const scanned = parsed.item.object;
      report.checked++;
      try {
        report[await resyncObject(deps, scanned)]++;
      } catch (error) {
        report.failed++;
        deps.logger.error({ object: formatObjectRef(scanned), err: error }, 'condition resync failed for this object; retried next pass');
      }
    }
    startKey = page.lastKey;
  } while (startKey !== undefined && report.checked < maxObjects && report.scannedItems < maxScanned);
  report.complete = startKey === undefined;
  // Written only when it moves: a pass that fits in one run, run again, writes nothing.
  if (JSON.stringify(storedCursor ?? null) !== JSON.stringify(startKey ?? null)) await saveCursor(deps, startKey);
  return report;
}
