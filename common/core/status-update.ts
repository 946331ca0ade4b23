// The status writer's decision, as data (the Contour pattern: a status update is a pure mutator
// applied by one writer that re-reads the object and retries on conflict). Given what the API server
// holds now and the condition we want, say whether to write and what the full conditions list
// becomes. Conditions are a list map keyed by `type` (metav1.Condition, +listMapKey=type): we touch
// only ours and keep every other entry byte for byte, whatever its shape.
import { conditionChanged, setCondition, type ConditionDraft } from './conditions';
import { ConditionSchema, type Condition } from './metav1-condition';

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
  | 'unchanged'
  /**
   * Only the message (counts, blockers) is out of date, and our last write of this generation is
   * younger than the refresh interval: the next write is due at `dueAt`.
   */
  | 'refreshNotDue';

export type StatusPlan =
  /** `refresh`: status, reason and observedGeneration stay; only the message is brought up to date. */
  | { action: 'write'; condition: Condition; conditions: RawCondition[]; previous: Condition | undefined; refresh: boolean }
  | { action: 'skip'; reason: StatusSkipReason; detail: string; current?: Condition; dueAt?: number };

/** Default of STATUS_MESSAGE_REFRESH_MS: how often a not-True condition's message may be rewritten. */
export const DEFAULT_MESSAGE_REFRESH_MS = 10_000;

/**
 * The message refresh rule's inputs. Readers read the object, not our CLI, so a not-True condition's
 * counts and blockers must not stay wrong: a message-only change is written once our last write of
 * this generation is `intervalMs` old. That keeps Kubernetes writes at ≤ 1 per interval per object
 * while a generation stays not-True (a per-ACK write is what invariant 4 forbids), and ≤ 2 per
 * generation (Pending, then True) when it converges within the interval.
 */
export interface MessageRefresh {
  /** > 0. */
  intervalMs: number;
  /**
   * When we last wrote our condition for this generation (`conditionWrittenAt` on its OBJECT item).
   * Undefined: not known (an item recorded before the time was), so a stale message is due at once;
   * that write records the time.
   */
  lastWrittenAt: number | undefined;
  /**
   * The condition that time belongs to (`lastCondition` on the same item). When it is given and the
   * held condition is another one, `lastWrittenAt` says nothing about the held one: another writer of
   * ours (convergence's handoff, the sweep, a second status invocation) wrote it and has not recorded
   * it yet, or someone else did. So it counts as written just now, never as due. Absent: only
   * `lastWrittenAt` is used (the item-level check, where held and recorded are the same).
   */
  recorded?: ConditionDraft | Condition | undefined;
}

export type MessageRefreshVerdict =
  /** Not a message-only difference (nothing differs, the verdict differs, or the draft is True). */
  | { kind: 'none' }
  | { kind: 'due' }
  | { kind: 'notDue'; dueAt: number };

/**
 * Whether `draft` differs from `held` (our condition as written) only in its message, and if so
 * whether that message may be written now. True conditions are never refreshed: Programmed is final
 * for a generation, and its message does not go stale in the sense readers act on.
 */
export function messageRefreshDue(held: ConditionDraft | Condition | undefined, draft: ConditionDraft, now: number, refresh: MessageRefresh): MessageRefreshVerdict {
  if (held === undefined || conditionChanged(held, draft, { includeMessage: false })) return { kind: 'none' };
  if (held.message === draft.message || draft.status === 'True') return { kind: 'none' };
  if ('recorded' in refresh && (refresh.recorded === undefined || conditionChanged(refresh.recorded, held))) return { kind: 'notDue', dueAt: now + refresh.intervalMs };
  if (refresh.lastWrittenAt === undefined) return { kind: 'due' };
  const dueAt = refresh.lastWrittenAt + refresh.intervalMs;
  return now >= dueAt ? { kind: 'due' } : { kind: 'notDue', dueAt };
}

export interface StatusPlanOptions {
  /**
   * Whether every message-only change is worth a write (default false: keeps writes O(1) per
   * generation, invariant 4). Overrides `refresh`.
   */
  writeOnMessageChange?: boolean;
  /** The message refresh rule (absent: message-only changes are never written, as resync wants). */
  refresh?: MessageRefresh;
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
    const verdict = options.refresh === undefined ? { kind: 'none' as const } : messageRefreshDue(previous, draft, now, options.refresh);
    if (verdict.kind === 'notDue') {
      return { action: 'skip', reason: 'refreshNotDue', detail: `${draft.type} ${draft.status}/${draft.reason} at generation ${generation}: message refresh due in ${verdict.dueAt - now} ms`, current: previous, dueAt: verdict.dueAt };
    }
    if (verdict.kind === 'none') return { action: 'skip', reason: 'unchanged', detail: `${draft.type} already ${draft.status}/${draft.reason} at generation ${generation}`, current: previous };
  }
  const [condition] = setCondition(previous === undefined ? [] : [previous], draft, now) as [Condition];
  const next: RawCondition[] = index >= 0 ? conditions.map((entry, i) => (i === index ? { ...condition } : entry)) : [...conditions, { ...condition }];
  return { action: 'write', condition, conditions: next, previous, refresh: previous !== undefined && !conditionChanged(previous, draft, { includeMessage: false }) };
}
