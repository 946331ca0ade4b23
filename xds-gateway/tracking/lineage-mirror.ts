// The tracker's copy of each lineage's counter and per-type history, rebuilt from the relay's
// upstreamApplied events (the relay owns the counter; we only mirror what it reports). It is what
// programmedThrough is computed from, and what the gateway heartbeats as the LINEAGE item. The
// history's rules are the core's (common/core/lineage.ts withTypeChanges, type-history.ts): only
// reading a lineage from its name and taking the relay's seq are the mirror's own.
import { DEFAULT_MAX_HISTORY, emptyLineageState, lineageParts, withTypeChanges, type LineageState, type Lineage } from '../../common/core';

/** A fresh lineage state from the lineage string `<instanceId>.<bootId>.<groupId>`. */
export function lineageStateFor(lineage: Lineage, group: string, now: number): LineageState {
  const parts = lineageParts(lineage);
  return emptyLineageState({ lineage, instanceId: parts?.instanceId ?? 'unknown', bootId: parts?.bootId ?? 'unknown', group, now });
}

/**
 * Records that `typeUrl` changed at `seq` (the relay's counter). Seqs arrive in increasing order per
 * lineage; one that does not extend the type's history (a duplicate report) changes nothing and
 * returns `state` itself.
 */
export function recordTypeChange(state: LineageState, typeUrl: string, seq: number, now: number, maxHistory = DEFAULT_MAX_HISTORY): LineageState {
  return withTypeChanges(state, [typeUrl], seq, now, maxHistory);
}
