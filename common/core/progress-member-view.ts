// What a lineage's PROGRESS item (lineage-progress-item.ts) says of one of its members, for the fleet
// view. On the fleet-size path an Envoy's STATE is written only when its class changes
// (docs/GATEWAY.md, "PROGRESS"), so its programmedThrough there can be a change wave or more behind;
// the item, written by the same gateway from the same tracked states, says more: a listed member's own
// programmedThrough, and for the others a lower bound when every unlisted member sits in the `through`
// histogram (none without types, unprogrammed, NACKed or split: those are counted apart, and the
// histogram's first row is the lowest programmedThrough of the members in it).
import type { LineageProgress } from './lineage-progress-item';

export interface MemberProgressView {
  /** The item's programmedThrough for the member: exact when listed, a lower bound otherwise. */
  programmedThroughAtLeast: number;
  /** The member is listed in the item (its summary is the gateway's own, as of the item). */
  listed: boolean;
}

/** undefined: the item says nothing of the member's programmedThrough (not listed, and not every unlisted member is in the histogram). */
export function memberProgressView(progress: LineageProgress, nodeId: string): MemberProgressView | undefined {
  const listed = progress.listed.find(([listedId]) => listedId === nodeId);
  if (listed !== undefined) return listed[1].t < 0 ? undefined : { programmedThroughAtLeast: listed[1].t, listed: true };
  const lowest = progress.through[0];
  if (lowest === undefined || progress.none > 0 || progress.unprogrammed > 0 || progress.nacks.length > 0 || progress.split.length > 0) return undefined;
  return { programmedThroughAtLeast: lowest[0], listed: false };
}
