// The tracker's copy of each lineage's counter and per-type history, rebuilt from the relay's
// upstreamApplied events (the relay owns the counter; we only mirror what it reports). It is what
// programmedThrough is computed from, and what the gateway heartbeats as the LINEAGE item.
import { DEFAULT_MAX_HISTORY, type LineageState, type Lineage } from '../../common/core';

/** A fresh lineage state from the lineage string `<instanceId>.<bootId>.<groupId>`. */
export function lineageStateFor(lineage: Lineage, group: string, now: number): LineageState {
  const [instanceId = 'unknown', bootId = 'unknown'] = lineage.split('.');
  return {
    lineage,
    instanceId,
    bootId,
    group,
    currentSeq: 0,
    typeHistory: {},
    historyStart: 0,
    startedAt: now,
    heartbeatAt: now,
    rev: 0,
  };
}

/**
 * Records that `typeUrl` changed at `seq` (the relay's counter). Seqs arrive in increasing order per
 * lineage; one that does not extend the type's history (a duplicate report) changes nothing. Keeps
 * the last `maxHistory` changes per type and moves `historyStart` up like the core's applyTypeChange.
 */
export function recordTypeChange(state: LineageState, typeUrl: string, seq: number, now: number, maxHistory = DEFAULT_MAX_HISTORY): LineageState {
  const history = state.typeHistory[typeUrl] ?? [];
  const last = history[history.length - 1];
  if (last !== undefined && seq <= last) return state;
  const extended = [...history, seq];
  const dropped = extended.length - Math.max(1, maxHistory);
  const historyStart = dropped > 0 ? Math.max(state.historyStart, (extended[dropped - 1] as number) + 1) : state.historyStart;
  return {
    ...state,
    currentSeq: Math.max(state.currentSeq, seq),
    typeHistory: { ...state.typeHistory, [typeUrl]: dropped > 0 ? extended.slice(dropped) : extended },
    historyStart,
    heartbeatAt: Math.max(state.heartbeatAt, now),
  };
}
