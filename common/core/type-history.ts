// A lineage's change history (docs/ARCHITECTURE.md, "Core model"): one counter per lineage is shared
// by all types, and per type the history lists the ascending seqs at which that type changed, so a
// type's version at seq S is its last change at or before S. These are the only rules over such a
// history: how a change is appended and the history trimmed, and what it says about a seq. The
// LINEAGE record (lineage.ts), programmedThrough and the gateway's lineage mirror all go through them.

/** Per type, the ascending seqs at which it changed. */
export type TypeHistory = Readonly<Record<string, readonly number[]>>;

/** Default number of changes kept per type (bounds the LINEAGE item far below DynamoDB's 400 KB). */
export const DEFAULT_MAX_HISTORY = 1000;

/** One type's history after a change, and the lineage's `historyStart` after trimming it. */
export interface AppendedChange {
  history: number[];
  historyStart: number;
}

/**
 * `history` with a change at `seq` appended, or undefined when `seq` does not extend it (a change at
 * or before its last one: histories are strictly ascending, so a repeated report changes nothing).
 * Keeps the last `maxHistory` changes (at least one); when older ones are dropped, `historyStart`
 * moves past them, so readers know the history below it is incomplete and stay conservative.
 */
export function appendChange(history: readonly number[] | undefined, seq: number, historyStart: number, maxHistory = DEFAULT_MAX_HISTORY): AppendedChange | undefined {
  const previous = history ?? [];
  const last = previous[previous.length - 1];
  if (last !== undefined && seq <= last) return undefined;
  const extended = [...previous, seq];
  const dropped = extended.length - Math.max(1, maxHistory);
  if (dropped <= 0) return { history: extended, historyStart };
  return { history: extended.slice(dropped), historyStart: Math.max(historyStart, (extended[dropped - 1] as number) + 1) };
}

/** The type's current version: the seq of its last change, or undefined if it never changed. */
export function currentVersion(history: readonly number[] | undefined): number | undefined {
  return history === undefined ? undefined : history[history.length - 1];
}

/** Each type's current version (types that never changed are absent). */
export function currentVersions(typeHistory: TypeHistory): Record<string, number> {
  const versions: Record<string, number> = {};
  for (const [typeUrl, history] of Object.entries(typeHistory)) {
    const last = currentVersion(history);
    if (last !== undefined) versions[typeUrl] = last;
  }
  return versions;
}

/** The last seq at which any type changed (0 before any change). */
export function latestChange(typeHistory: TypeHistory): number {
  let latest = 0;
  for (const history of Object.values(typeHistory)) {
    const last = currentVersion(history);
    if (last !== undefined && last > latest) latest = last;
  }
  return latest;
}

/** The version of a type current at lineage seq `seq`, or undefined if it had not changed by then. */
export function typeVersionAt(history: readonly number[] | undefined, seq: number): number | undefined {
  let found: number | undefined;
  for (const changed of history ?? []) {
    if (changed > seq) break;
    found = changed;
  }
  return found;
}

/** The type's first change after seq `seq` (what a client at `seq` is missing first), or undefined. */
export function nextChangeAfter(history: readonly number[] | undefined, seq: number): number | undefined {
  return (history ?? []).find((changed) => changed > seq);
}

/** How many of the type's recorded changes come after seq `seq` (undefined: before any seq). */
export function changesAfter(history: readonly number[] | undefined, seq: number | undefined): number {
  const from = seq ?? -1;
  return (history ?? []).filter((changed) => changed > from).length;
}
