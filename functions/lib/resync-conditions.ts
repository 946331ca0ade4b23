// Resync, second half (docs/CONVERGENCE.md, "Drift and resync"): re-assert conditions that drifted, and garbage-collect the items of
// objects Kubernetes no longer has.
//
// Another writer may replace the whole `status.conditions` list of an object and drop ours (a merge
// patch replaces lists wholesale, RFC 7386), or a restore from backup may bring back an old one. The
// status function only writes when a stream record arrives, so without this nothing would ever put
// the condition back. For each object, its latest generation goes to the one status path as a
// `resync` update (functions/status/apply.ts: its rules say why resync differs from the status
// function): the condition its stored decision says now, written only if it was written once
// (`lastCondition` on the item) and Kubernetes no longer holds it in status, reason or
// observedGeneration (message-only changes are not drift: invariant 4); the status writer re-reads
// the object, merges by type, revalidates against the stored decision and retries on 409. So a
// drifted object costs one PATCH, an object in sync costs one GET and no write.
//
// Bounded work: the OBJECT generation items are found by a paged, filtered Scan; a run stops after
// `maxObjectsPerRun` objects or `maxScannedItemsPerRun` scanned items and saves where it stopped in
// one cursor item, so the next run continues there and a pass over a large table spans several runs.
import { formatObjectRef, type ObjectRef, type ObjectStore } from '../../common/core';
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
import { applyStatusUpdate, type StatusPathDeps } from '../status/apply';
import { collectDeletedObject, describeCollected, type DeletedObjectCollectorDeps } from './resync-gc';

/** Where the condition pass stopped: one item (common/store CONDITION_RESYNC_CURSOR_KEY, ConditionResyncCursorItem). */
export const CONDITION_CURSOR_KEY = CONDITION_RESYNC_CURSOR_KEY;

export interface ConditionResyncDeps extends DeletedObjectCollectorDeps, StatusPathDeps {
  /** The pass's scan and its saved cursor. */
  table: ConditionResyncTable;
  objectItems: Pick<ObjectItemReader, 'latestObjectGenerationItem'>;
  /** With `getObjectGeneration`, a same-generation change is revalidated against the stored decision (status-writer.ts `needsRevalidation`). */
  store: Pick<ObjectStore, 'listObjectGenerations' | 'recordCondition'> & Partial<Pick<ObjectStore, 'getObjectGeneration'>>;
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
  const { kubernetes } = await applyStatusUpdate({ source: 'resync', record, warnings: parsed.warnings ?? [] }, deps);
  // Not asked: no usable decision, or no condition written yet (the status function's to write).
  if (kubernetes === undefined) return 'skipped';
  switch (kubernetes.outcome) {
    case 'written':
      return 'reasserted';
    case 'skipped':
      return kubernetes.reason === 'unchanged' ? 'inSync' : 'notWritten';
    case 'notFound': {
      const collected = await collectDeletedObject(deps, record.object, deps.now());
      deps.logger.info(describeCollected(record.object, collected), 'object is gone; its items are marked for expiry');
      return 'collected';
    }
    case 'unsupported':
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
