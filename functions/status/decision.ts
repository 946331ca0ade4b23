// The convergence decision stored on an `OBJECT#<ref> / GEN#<g>` item (common/core/decision.ts), as
// `parseItem` read it, turned into the condition draft to write. parseItem already validated the
// decision: an invalid one is dropped from the item and reported in its warnings, so it is not parsed
// a second time here.
import { conditionForDecision, type Decision } from '../../common/core/decision';
import type { BuildConditionOptions, ConditionDraft, ObjectGeneration } from '../../common/core';

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
