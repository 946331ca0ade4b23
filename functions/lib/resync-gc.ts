// Garbage collection of a tracked object Kubernetes no longer has (the API server answered 404).
// Its items are not deleted here: they get a `ttl` and DynamoDB's TTL removes them (no write
// capacity, and no Delete permission for the function). Two kinds of items belong to an object:
//   - its OBJECT#<ref> / GEN#<g> generation items: marked through the table's ObjectCleanup port
//     (common/store/object-items.ts), conditional on having no ttl yet;
//   - its pending-index entries PENDING#<lineage> / <seq>#<g>#<ref>, one per generation and lineage
//     watermark: resolved through the aggregate port (`deletePending`: deleted, or marked done with
//     a ttl), so expire and resync stop re-evaluating a generation nobody can read any more.
// Pending entries go first: if the run dies in between, the generation items still have no ttl,
// the next resync finds the object again and finishes the job.
import { formatObjectRef, type AggregateStore, type ObjectRef, type ObjectStore } from '../../common/core';
import { iteratePages } from '../../common/store';
import type { ObjectCleanup } from '../../common/store';

export interface DeletedObjectCollectorDeps {
  store: Pick<ObjectStore, 'listObjectGenerations'>;
  aggregates: Pick<AggregateStore, 'deletePending'>;
  cleanup: ObjectCleanup;
}

export interface CollectedObject {
  /** Pending-index entries resolved (one per generation × lineage watermark). */
  pendingMarked: number;
  /** OBJECT items newly given a ttl (0 when an earlier run already marked them). */
  itemsMarked: number;
}

/** Marks every item of a deleted object for expiry. Idempotent; throws only on store errors. */
export async function collectDeletedObject(deps: DeletedObjectCollectorDeps, ref: ObjectRef, now: number): Promise<CollectedObject> {
  let pendingMarked = 0;
  const generations = iteratePages((cursor) => deps.store.listObjectGenerations(ref, cursor === undefined ? {} : { cursor }));
  for await (const record of generations) {
    for (const [lineage, watermark] of Object.entries(record.watermarks)) {
      await deps.aggregates.deletePending({ lineage, seq: watermark.seq, object: ref, generation: record.generation });
      pendingMarked++;
    }
  }
  const itemsMarked = await deps.cleanup.markDeleted(ref, now);
  return { pendingMarked, itemsMarked };
}

export function describeCollected(ref: ObjectRef, collected: CollectedObject): Record<string, unknown> {
  return { object: formatObjectRef(ref), ...collected };
}
