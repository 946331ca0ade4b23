// A lineage's own bookkeeping (the LINEAGE#<lineage> item): the shared counter, each type's change
// history, and the watermark "what is current right now". Pure; the gateway persists the result.
import { lineageGroupId } from './identity';
import { parsedError, parsedOk, type Parsed } from './result';
import type { LineageState } from './lineage-state';
import type { LineageWatermark } from './object-generation';
import { makeLineage } from './version';

/** Default number of changes kept per type (bounds the item far below DynamoDB's 400 KB). */
export const DEFAULT_MAX_HISTORY = 1000;

export function newLineageState(args: { instanceId: string; bootId: string; group: string; now: number }): Parsed<LineageState> {
  const lineage = makeLineage(args.instanceId, args.bootId, lineageGroupId(args.group));
  if (!lineage.ok) return lineage;
  return parsedOk({
    lineage: lineage.value,
    instanceId: args.instanceId,
    bootId: args.bootId,
    group: args.group,
    currentSeq: 0,
    typeHistory: {},
    historyStart: 0,
    startedAt: args.now,
    heartbeatAt: args.now,
    rev: 0,
  });
}

/**
 * The gateway's cache changed for `typeUrls` (one upstream response can change several): take the
 * next seq and record it as the new version of each. Keeps the last `maxHistory` changes per type;
 * when older ones are dropped, `historyStart` moves up so programmedThrough knows the history below
 * it is incomplete and stays conservative.
 */
export function applyTypeChange(state: LineageState, typeUrls: readonly string[], now: number, maxHistory = DEFAULT_MAX_HISTORY): Parsed<LineageState> {
  if (typeUrls.length === 0) return parsedError('a change must name at least one type');
  if (!Number.isSafeInteger(state.currentSeq + 1)) return parsedError(`lineage ${state.lineage} counter exhausted`);
  const seq = state.currentSeq + 1;
  const keep = Math.max(1, maxHistory);
  const typeHistory = { ...state.typeHistory };
  let historyStart = state.historyStart;
  for (const typeUrl of new Set(typeUrls)) {
    const history = [...(typeHistory[typeUrl] ?? []), seq];
    const dropped = history.length - keep;
    if (dropped > 0) historyStart = Math.max(historyStart, (history[dropped - 1] as number) + 1);
    typeHistory[typeUrl] = dropped > 0 ? history.slice(dropped) : history;
  }
  return parsedOk({ ...state, currentSeq: seq, typeHistory, historyStart, heartbeatAt: Math.max(state.heartbeatAt, now) });
}

/** Each type's current version: the seq of its last change. */
export function currentTypeVersions(state: LineageState): Record<string, number> {
  const versions: Record<string, number> = {};
  for (const [typeUrl, history] of Object.entries(state.typeHistory)) {
    const last = history[history.length - 1];
    if (last !== undefined) versions[typeUrl] = last;
  }
  return versions;
}

/**
 * The watermark "everything served from now on": the current seq and each type's current version. The
 * gateway records it for X@G once its cache reflects G (provenance seen, or the barrier's first
 * response after re-subscribing, brief §3.3).
 */
export function currentWatermark(state: LineageState, now: number): LineageWatermark {
  return { seq: state.currentSeq, types: currentTypeVersions(state), at: now };
}
