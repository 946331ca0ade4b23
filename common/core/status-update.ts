// The status writer's decision, as data (the Contour pattern: a status update is a pure mutator
// applied by one writer that re-reads the object and retries on conflict). Given what the API server
// holds now and the condition we want, say whether to write and what the full conditions list
// becomes. Conditions are a list map keyed by `type` (metav1.Condition, +listMapKey=type): we touch
// only ours and keep every other entry byte for byte, whatever its shape.
import { conditionChanged, setCondition, type ConditionDraft } from './conditions';
import { ConditionSchema, type Condition } from './schema';

/** A condition as found on an object: ours is validated, foreign ones are kept as they are. */
export type RawCondition = Record<string, unknown>;

export interface StatusTarget {
  /** `metadata.generation`; absent for kinds without one. */
  generation: number | undefined;
  /** `status.conditions` as stored (possibly absent or not a list). */
  conditions: unknown;
}

export type StatusSkipReason =
  /** metadata.generation is newer than the decision: a decision for the newer generation will come. */
  | 'objectNewer'
  /** Our condition already speaks about a newer generation (a late or redelivered decision). */
  | 'storedNewer'
  /** The decision is for a generation the object has not reached (e.g. deleted and recreated). */
  | 'decisionAhead'
  /** Nothing a reader acts on would change. */
  | 'unchanged';

export type StatusPlan =
  | { action: 'write'; condition: Condition; conditions: RawCondition[]; previous: Condition | undefined }
  | { action: 'skip'; reason: StatusSkipReason; detail: string; current?: Condition };

export interface StatusPlanOptions {
  /** Whether a message-only change is worth a write (default false: keeps writes O(1), invariant 4). */
  writeOnMessageChange?: boolean;
}

function asConditionList(value: unknown): RawCondition[] {
  if (!Array.isArray(value)) return [];
  return value.filter((entry): entry is RawCondition => typeof entry === 'object' && entry !== null && !Array.isArray(entry));
}

/** Decides the write of `draft` onto `target` at time `now` (epoch ms). */
export function planConditionWrite(target: StatusTarget, draft: ConditionDraft, now: number, options: StatusPlanOptions = {}): StatusPlan {
  const generation = draft.observedGeneration;
  if (target.generation !== undefined && target.generation > generation) {
    return { action: 'skip', reason: 'objectNewer', detail: `object is at generation ${target.generation}, decision is for ${generation}` };
  }
  if (target.generation !== undefined && target.generation < generation) {
    return { action: 'skip', reason: 'decisionAhead', detail: `decision is for generation ${generation} but the object is at ${target.generation}` };
  }
  const conditions = asConditionList(target.conditions);
  const index = conditions.findIndex((entry) => entry['type'] === draft.type);
  const parsed = index >= 0 ? ConditionSchema.safeParse(conditions[index]) : undefined;
  // A malformed entry of our type (someone else wrote it) is replaced, as if absent.
  const previous = parsed?.success === true ? parsed.data : undefined;
  if (previous !== undefined && previous.observedGeneration > generation) {
    return { action: 'skip', reason: 'storedNewer', detail: `stored condition is for generation ${previous.observedGeneration}, decision is for ${generation}`, current: previous };
  }
  if (previous !== undefined && !conditionChanged(previous, draft, { includeMessage: options.writeOnMessageChange ?? false })) {
    return { action: 'skip', reason: 'unchanged', detail: `${draft.type} already ${draft.status}/${draft.reason} at generation ${generation}`, current: previous };
  }
  const [condition] = setCondition(previous === undefined ? [] : [previous], draft, now) as [Condition];
  const next: RawCondition[] = index >= 0 ? conditions.map((entry, i) => (i === index ? { ...condition } : entry)) : [...conditions, { ...condition }];
  return { action: 'write', condition, conditions: next, previous };
}
