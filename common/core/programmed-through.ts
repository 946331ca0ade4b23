// programmedThrough (docs/ARCHITECTURE.md, "Envoy state"): an Envoy is programmed through lineage seq
// S iff every subscribed type is ACKed at or past its version at S (type-history.ts typeVersionAt).
import { latestChange, nextChangeAfter, type TypeHistory } from './type-history';

export interface ProgrammedThroughOptions {
  /** The lineage's current seq (upper bound of the answer); default: the largest seq in any history. */
  currentSeq?: number;
  /** Histories are complete only for seqs >= historyStart (older entries trimmed); default 0. */
  historyStart?: number;
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
  const currentSeq = options.currentSeq ?? latestChange(typeHistory);
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
      const nextChange = nextChangeAfter(typeHistory[typeUrl], acked);
      limit = nextChange === undefined ? Number.MAX_SAFE_INTEGER : nextChange - 1;
    }
    bound = Math.min(bound, limit);
  }
  return bound;
}
