// A lineage's own bookkeeping (the LINEAGE#<lineage> item): the shared counter, each type's change
// history (its rules: type-history.ts), and the watermark "what is current right now". Pure; the
// gateway persists the result. Both ways a lineage's state changes go through `withTypeChanges`: the
// counter taking its next seq here (applyTypeChange), and the gateway's mirror recording the seq the
// relay took (xds-gateway/tracking/lineage-mirror.ts).
import { lineageGroupId } from './identity';
import { parsedError, parsedOk, type Parsed } from './result';
import type { LineageState } from './lineage-state';
import type { LineageWatermark } from './object-generation';
import { appendChange, currentVersions, DEFAULT_MAX_HISTORY } from './type-history';
import { makeLineage, type Lineage } from './version';

/** A lineage with no change yet, started (and last heard of) at `now`. */
export function emptyLineageState(args: { lineage: Lineage; instanceId: string; bootId: string; group: string; now: number }): LineageState {
  return {
    lineage: args.lineage,
    instanceId: args.instanceId,
    bootId: args.bootId,
    group: args.group,
    currentSeq: 0,
    typeHistory: {},
    historyStart: 0,
    startedAt: args.now,
    heartbeatAt: args.now,
    rev: 0,
  };
}

export function newLineageState(args: { instanceId: string; bootId: string; group: string; now: number }): Parsed<LineageState> {
  const lineage = makeLineage(args.instanceId, args.bootId, lineageGroupId(args.group));
  if (!lineage.ok) return lineage;
  return parsedOk(emptyLineageState({ ...args, lineage: lineage.value }));
}

/**
 * `typeUrls` changed at lineage seq `seq`: appended to each one's history (appendChange: trimmed to
 * `maxHistory`, `historyStart` moved past what was dropped), the counter at least `seq`. A type whose
 * history already reaches `seq` is left as it is; when no type moves, `state` itself is returned, so
 * a caller can tell that there is nothing to write.
 */
export function withTypeChanges(state: LineageState, typeUrls: readonly string[], seq: number, now: number, maxHistory = DEFAULT_MAX_HISTORY): LineageState {
  let typeHistory: LineageState['typeHistory'] | undefined;
  let historyStart = state.historyStart;
  for (const typeUrl of new Set(typeUrls)) {
    const appended = appendChange(state.typeHistory[typeUrl], seq, historyStart, maxHistory);
    if (appended === undefined) continue;
    typeHistory ??= { ...state.typeHistory };
    typeHistory[typeUrl] = appended.history;
    historyStart = appended.historyStart;
  }
  if (typeHistory === undefined) return state;
  return { ...state, currentSeq: Math.max(state.currentSeq, seq), typeHistory, historyStart, heartbeatAt: Math.max(state.heartbeatAt, now) };
}

/**
 * The gateway's cache changed for `typeUrls` (one upstream response can change several): take the
 * next seq and record it as the new version of each (withTypeChanges).
 */
export function applyTypeChange(state: LineageState, typeUrls: readonly string[], now: number, maxHistory = DEFAULT_MAX_HISTORY): Parsed<LineageState> {
  if (typeUrls.length === 0) return parsedError('a change must name at least one type');
  if (!Number.isSafeInteger(state.currentSeq + 1)) return parsedError(`lineage ${state.lineage} counter exhausted`);
  return parsedOk(withTypeChanges(state, typeUrls, state.currentSeq + 1, now, maxHistory));
}

/** Each type's current version: the seq of its last change. */
export function currentTypeVersions(state: LineageState): Record<string, number> {
  return currentVersions(state.typeHistory);
}

/**
 * The watermark "everything served from now on": the current seq and each type's current version. The
 * gateway records it for X@G once its cache reflects G (provenance seen, or the barrier's first
 * response after re-subscribing: docs/GATEWAY.md, "Watermarks").
 */
export function currentWatermark(state: LineageState, now: number): LineageWatermark {
  return { seq: state.currentSeq, types: currentTypeVersions(state), at: now };
}
