// Combining the gateway's in-memory view of an Envoy with the stored one after a `rev` conflict.
// Several writers share the ENVOY#<id>/STATE item: with per-type streams an Envoy's types may be
// served by different gateway instances (lineages), the expire function marks it EXPIRED, and a
// restarted gateway finds the state its previous life wrote. Rules:
//  - types on our lineage are ours: we saw every request on them;
//  - a type we have no entry for keeps the stored entry (another gateway's stream, or an old
//    lineage's until the Envoy subscribes again on ours — the LINEAGE heartbeat tells readers
//    whether that old lineage is still alive, and evaluation stops counting it once it is not);
//  - if we have no open stream left but the stored state is another gateway's live connection,
//    that gateway owns the Envoy now: keep the stored state;
//  - but a CONNECTED state stored on another lineage of this same process is a connection this
//    process ended itself (a node-id takeover from another node group: the relay ends the older
//    connection's streams, and the tracker follows the newer one, whose state `ours` is): ours
//    wins. Kept, that state stayed CONNECTED in the table with no stream behind it, vouched by the
//    old group's heartbeat, and every object waited for it.
import type { EnvoyState } from '../../common/core';

/**
 * `ownsLineage` says whether a lineage is this process's (relay lineage-boot-part.ts); without it
 * every other lineage is taken for another gateway's.
 */
export function mergeEnvoyState(ours: EnvoyState, stored: EnvoyState | undefined, ownsLineage: (lineage: string) => boolean = () => false): EnvoyState {
  if (stored === undefined) return ours;
  if (ours.status !== 'CONNECTED' && stored.lineage !== ours.lineage && stored.status === 'CONNECTED' && !ownsLineage(stored.lineage)) {
    return { ...stored, rev: ours.rev };
  }
  const types = { ...ours.types };
  for (const [typeUrl, type] of Object.entries(stored.types)) {
    if (types[typeUrl] === undefined && type.lineage !== ours.lineage) types[typeUrl] = type;
  }
  // programmedThrough stays ours: computed over our lineage's types only (the tracker never holds
  // foreign ones). The foreign types make the member `split`; evaluation blocks on them while their
  // lineage is live and ignores them once it left the live set, and then needs this value
  // (core memberFromEnvoyState / memberBlocker; docs/CONVERGENCE.md, "Split across lineages").
  return { ...ours, types, lastSeenAt: Math.max(ours.lastSeenAt, stored.lastSeenAt) };
}
