// Which lineages the registry forgets (docs/CONVERGENCE.md, "The lineage registry"). Every gateway
// start is a new lineage, and the expire function reads the shards of every lineage the registry
// names on every tick; a registry that only grows makes each tick longer with the system's history
// of restarts, until ticks come further apart than the table clock's stall bound and the time between
// them stops counting towards anyone's age (table-clock.ts): expiry, and the liveness it gives, slow
// down with history. So a lineage leaves once it cannot matter to any reader: its gateway silent for
// PRUNE_AFTER_TTLS × TTL in table time (evaluation stops reading a lineage after 2 × TTL) and no
// member left that is still live (one still live is expire's to expire first).
import type { TableClockView } from './table-clock';
import { seenWithin } from './staleness';
import type { Lineage } from './version';

/** A lineage silent for this many TTLs, with no live Envoy, leaves the registry. */
export const PRUNE_AFTER_TTLS = 10;

/**
 * The registry's lineages to drop at `now`: silent for more than PRUNE_AFTER_TTLS × `ttlMs` (table
 * time) and not in `keep` (lineages with a live member, or whose members could not be read). A
 * heartbeat that arrived since the caller read the members keeps its lineage: pass the registry as
 * it is about to be written, not as it was read.
 */
export function prunableLineages(lineages: Readonly<Record<Lineage, number>>, keep: ReadonlySet<Lineage>, now: number, ttlMs: number, clock?: TableClockView): Lineage[] {
  return Object.entries(lineages)
    .filter(([lineage, heartbeatAt]) => !keep.has(lineage) && !seenWithin(heartbeatAt, now, PRUNE_AFTER_TTLS * ttlMs, clock))
    .map(([lineage]) => lineage)
    .sort();
}
