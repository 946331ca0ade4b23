// The convergence decision stored on an `OBJECT#<ref> / GEN#<g>` item (common/core/decision.ts), as
// `parseItem` read it, turned into the condition draft to write. parseItem already validated the
// decision: an invalid one is dropped from the item and reported in its warnings, so it is not parsed
// a second time here.
import { conditionForDecision, type Decision } from '../../common/core';
import type { BuildConditionOptions, ConditionDraft, ObjectGeneration, ObjectRef, ObjectStore } from '../../common/core';

export type DecisionRead =
  | { status: 'none' }
  | { status: 'invalid'; error: string }
  /** A newer generation of the object exists: this decision is no longer to be written. */
  | { status: 'superseded'; by: number }
  | { status: 'found'; decision: Decision };

/** The decision on a parsed OBJECT item; `warnings` are parseItem's (an invalid decision it dropped). */
export function readDecision(record: ObjectGeneration, warnings: readonly string[] = []): DecisionRead {
  const decision = record.decision;
  if (decision === undefined) return warnings.length > 0 ? { status: 'invalid', error: warnings.join('; ') } : { status: 'none' };
  if (decision.supersededBy !== undefined) return { status: 'superseded', by: decision.supersededBy };
  return { status: 'found', decision };
}

/** The condition for a decision on an object generation (core conditionForDecision). */
export function conditionDraftFor(record: ObjectGeneration, decision: Decision, options: BuildConditionOptions): ConditionDraft {
  return conditionForDecision(record.object, record.generation, decision, options);
}

/**
 * The revalidation the status writer asks for before changing our condition at the same generation
 * (functions/kube/status-writer.ts `needsRevalidation`): a strongly consistent read of the OBJECT
 * generation item, and the draft its stored decision gives now. Decisions are written conditionally
 * on freshness and a stored Programmed decision is final (docs/CONVERGENCE.md, "Decision freshness"),
 * so the stored one is never older than the record at hand. An item that is gone or unreadable
 * keeps the record's draft (the previous behaviour); a superseded decision is not written.
 */
export function storedDecisionRevalidator(
  store: Pick<ObjectStore, 'getObjectGeneration'>,
  record: ObjectGeneration,
  draft: ConditionDraft,
  options: BuildConditionOptions,
): () => Promise<ConditionDraft | undefined> {
  return async () => {
    const read = await store.getObjectGeneration(record.object, record.generation);
    if (read.status !== 'found') return draft;
    const stored = readDecision(read.value);
    if (stored.status === 'superseded') return undefined;
    if (stored.status !== 'found') return draft;
    return conditionDraftFor(read.value, stored.decision, options);
  };
}

/**
 * The condition options for an object: its kind's condition type (Gateway API kinds default to a
 * domain-prefixed one: functions/kube/tracked-kinds.ts), else CONDITION_TYPE. Every writer builds its
 * drafts through this, so the status function, the handoff and resync agree on the type.
 */
export function conditionOptionsFor(
  ref: ObjectRef,
  deps: { conditionType: string; kinds?: { conditionTypeFor(ref: ObjectRef, fallback: string): string } },
): BuildConditionOptions {
  return { type: deps.kinds === undefined ? deps.conditionType : deps.kinds.conditionTypeFor(ref, deps.conditionType) };
}
