// Reads the convergence decision stored on an `OBJECT#<ref> / GEN#<g>` item (common/core/decision.ts,
// attribute `decision`) and turns it into the condition draft to write. The store's typed read
// drops attributes its schema does not know, so this reads the raw (unmarshalled) item.
import { conditionForDecision, DECISION_ATTRIBUTE, DecisionSchema, type Decision } from '../../common/core/decision';
import type { BuildConditionOptions, ConditionDraft, ObjectGeneration } from '../../common/core';

export type DecisionRead =
  | { status: 'none' }
  | { status: 'invalid'; error: string }
  /** A newer generation of the object exists: this decision is no longer to be written. */
  | { status: 'superseded'; by: number }
  | { status: 'found'; decision: Decision };

/** The decision on a raw (unmarshalled) OBJECT item, if any. */
export function readDecision(raw: Record<string, unknown>): DecisionRead {
  const value = raw[DECISION_ATTRIBUTE];
  if (value === undefined) return { status: 'none' };
  const parsed = DecisionSchema.safeParse(value);
  if (!parsed.success) {
    return { status: 'invalid', error: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(decision)'}: ${i.message}`).join('; ') };
  }
  if (parsed.data.supersededBy !== undefined) return { status: 'superseded', by: parsed.data.supersededBy };
  return { status: 'found', decision: parsed.data };
}

/** The condition for a decision on an object generation (core conditionForDecision). */
export function conditionDraftFor(record: ObjectGeneration, decision: Decision, options: BuildConditionOptions): ConditionDraft {
  return conditionForDecision(record.object, record.generation, decision, options);
}
