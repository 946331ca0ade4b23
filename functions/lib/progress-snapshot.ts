// One consistent snapshot of the live lineages' PROGRESS items (docs/CONVERGENCE.md, "Deciding from
// PROGRESS"). A BatchGetItem reads each item on its own: it is no snapshot. A gateway moving a node
// from lineage A to lineage B stores B's item counting it before A's item without it
// (xds-gateway/tracking/progress/progress-publisher.ts), so the node is in at least one stored item at
// every moment; a reader that took B before that write and A after the next would still miss it, and
// a member missing from every item is missing from the denominator.
//
// So the items are read twice (a double collect): an item whose `v` is the same in both reads was
// unchanged from its first read to its second (`v` grows on every write), so all of them held their
// first-read values at the moment between the two reads. When some changed, the second read is checked
// by a third, and so on; if the items still move after MAX_PROGRESS_READS reads, the lineages that
// moved are returned without an item, which evaluation reads as an unknown count (Pending): never a
// decision from a mixed read.
//
// One lineage needs no second read: a node can only move between two items, and one item's read is
// atomic (GetItem), so the first read is already a moment the table held. That is the common case of
// every evaluation on a one-gateway fleet, and of the decisive one after a push: the second read was
// a sequential round trip on the way to the True, and while the gateway was still writing the item
// (its last ACKs arriving) the reads kept differing and the evaluation gave up as Pending.
import type { Logger } from 'pino';
import type { Lineage, LineageProgressRead, ProgressStore } from '../../common/core';

export const MAX_PROGRESS_READS = 4;

function versionOf(read: LineageProgressRead): number {
  return read.progress?.v ?? -1;
}

export async function readProgressSnapshot(store: Pick<ProgressStore, 'getProgresses'>, lineages: readonly Lineage[], logger: Logger): Promise<LineageProgressRead[]> {
  let previous = await store.getProgresses(lineages);
  if (new Set(lineages).size <= 1) return previous;
  for (let reads = 2; ; reads++) {
    const again = await store.getProgresses(lineages);
    const moved = new Set(again.filter((read, index) => versionOf(read) !== versionOf(previous[index] as LineageProgressRead)).map((read) => read.lineage));
    if (moved.size === 0) return previous;
    if (reads >= MAX_PROGRESS_READS) {
      logger.warn({ reads, moved: [...moved] }, 'PROGRESS items kept changing between reads; the lineages that moved are read as unknown (Pending) this time');
      return again.map((read) => (moved.has(read.lineage) ? { lineage: read.lineage, progress: undefined } : read));
    }
    previous = again;
  }
}
