// programmedThrough (docs/ARCHITECTURE.md, "Envoy state"): one counter per lineage is shared by all
// types, and a type's version at lineage seq S is the last seq <= S at which that type changed. An
// Envoy is programmed through S iff every subscribed type is ACKed at or past its version at S.

/** Per type, the ascending seqs at which it changed. */
export type TypeHistory = Readonly<Record<string, readonly number[]>>;

export interface ProgrammedThroughOptions {
  /** The lineage's current seq (upper bound of the answer); default: the largest seq in any history. */
  currentSeq?: number;
  /** Histories are complete only for seqs >= historyStart (older entries trimmed); default 0. */
  historyStart?: number;
}

/** The version of `typeUrl` current at lineage seq `seq`, or undefined if it had not changed by then. */
export function typeVersionAt(history: readonly number[] | undefined, seq: number): number | undefined {
  let found: number | undefined;
  for (const changed of history ?? []) {
    if (changed > seq) break;
    found = changed;
  }
  return found;
}

/**
 * The largest S such that for every type in `ackedByType`, acked >= typeVersionAt(type, S); undefined
 * if no type is given or one has never been ACKed. For each type the binding constraint is its next
 * change after the acked seq (S must be below it); with trimmed history, a change may hide below
 * `historyStart`, so we fall back to the acked seq itself, which is always safe.
 */
export function programmedThrough(
  ackedByType: Readonly<Record<string, number | undefined>>,
  typeHistory: TypeHistory,
  options: ProgrammedThroughOptions = {},
): number | undefined {
  const historyStart = options.historyStart ?? 0;
  let currentSeq = options.currentSeq;
  if (currentSeq === undefined) {
    currentSeq = 0;
    for (const history of Object.values(typeHistory)) {
      const last = history[history.length - 1];
      if (last !== undefined && last > currentSeq) currentSeq = last;
    }
  }
  const types = Object.keys(ackedByType);
  if (types.length === 0) return undefined;
  let bound = currentSeq;
  for (const typeUrl of types) {
    const acked = ackedByType[typeUrl];
    if (acked === undefined) return undefined;
    let limit: number;
    if (acked + 1 < historyStart) {
      limit = acked;
    } else {
      const nextChange = (typeHistory[typeUrl] ?? []).find((changed) => changed > acked);
      limit = nextChange === undefined ? Number.MAX_SAFE_INTEGER : nextChange - 1;
    }
    bound = Math.min(bound, limit);
  }
  return bound;
}
