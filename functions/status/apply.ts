// The one status path. Every writer of our condition describes what it wants as data, a
// `StatusUpdate`: the OBJECT generation item it read and which writer read it. The status function
// makes one from each stream record, convergence's handoff from a decision it just wrote (or a stale
// message its sweep found due), resync from the latest generation of an object it re-checks.
// `applyStatusUpdate` is the only function that turns one into a Kubernetes write, so every guard
// against the writers undoing each other is here or in the writer it calls:
//   - the decision on the item: none, invalid, or superseded (a newer generation exists): no write;
//   - the item's own `lastCondition` already says what the draft says: no Kubernetes call (our
//     recordCondition's stream echo, a redelivery);
//   - a stream image can be older than its item (convergence may already have applied a newer
//     decision): read the item and act on what is stored;
//   - the StatusWriter (functions/kube/status-writer.ts): GET the object, the pure planner
//     (common/core/status-update.ts: objectNewer, storedNewer, decisionAhead, no-op, message
//     refresh), a same-generation change to a non-True draft revalidated against the stored decision
//     (`needsRevalidation`, with `storedDecisionRevalidator` from here), a merge patch carrying the
//     resourceVersion, 409 → re-read and re-plan;
//   - what was written, or found already written, is recorded on the item.
// The writers differ on purpose in a few rules; those differences are data (STATUS_UPDATE_RULES),
// each explained where it is set. What becomes of an object Kubernetes no longer has (404) is each
// writer's own business and stays with it.
import type { Logger } from 'pino';

import { conditionChanged, formatObjectRef, type Condition, type ObjectGeneration, type ObjectStore } from '../../common/core';
import { messageRefreshDue, type MessageRefresh } from '../../common/core/status-update';
import type { StatusWriter, WriteOptions, WriteOutcome } from '../kube/status-writer';
import type { TrackedKinds } from '../kube/tracked-kinds';
import { conditionDraftFor, conditionOptionsFor, readDecision, storedDecisionRevalidator } from './decision';

/** Which writer made the update; it selects the update's rules (STATUS_UPDATE_RULES). */
export type StatusUpdateSource =
  /** The status function, from a DynamoDB stream image of the item. */
  | 'stream'
  /** Convergence's handoff (functions/lib/status-handoff.ts): the item as it just wrote or read it, consistently. */
  | 'handoff'
  /** Resync's condition pass (functions/lib/resync-conditions.ts): the latest generation, read consistently. */
  | 'resync';

/** A status update, as data: which writer asks, and the OBJECT generation item its decision is on. */
export interface StatusUpdate {
  source: StatusUpdateSource;
  record: ObjectGeneration;
  /** parseItem's warnings for the item (an invalid decision it dropped); none for a typed read. */
  warnings?: readonly string[];
}

/** How an update is applied: what differs between the writers, and only that. */
export interface StatusUpdateRules {
  /** The record may be older than its item: read the item before calling Kubernetes and act on what is stored. */
  readItemFirst: boolean;
  /** The item's `lastCondition` stands for what Kubernetes holds: when it already says the draft, no Kubernetes call. */
  trustRecordedCondition: boolean;
  /** Apply the message refresh rule (STATUS_MESSAGE_REFRESH_MS, core `messageRefreshDue`) to message-only changes. */
  refreshMessages: boolean;
  /** Only a generation whose condition was written once (`lastCondition` on its item) is written. */
  onlyWrittenBefore: boolean;
  /**
   * After a write: `withWriteTime` records the condition, and the write's time as `conditionWrittenAt`
   * (the refresh rule's clock); `whenItemDiffers` records it only when status, reason or
   * observedGeneration (and the message with STATUS_WRITE_ON_MESSAGE_CHANGE) differ from the item's,
   * and leaves `conditionWrittenAt` as it is.
   */
  recordWritten: 'withWriteTime' | 'whenItemDiffers';
  /** When Kubernetes already holds the draft and the item says otherwise, record what Kubernetes holds. */
  recordHeld: boolean;
  log: {
    written: { level: 'info' | 'warn'; msg: string; withPrevious: boolean };
    notWritten: string;
    /** Whether a skip because Kubernetes already holds the draft is logged (at info, with `notWritten`). */
    unchangedSkips: boolean;
    invalidDecision: string;
  };
}

/** The status function and the handoff apply a decision as it is made: every guard, every record. */
const APPLY_DECISION: StatusUpdateRules = {
  readItemFirst: false,
  trustRecordedCondition: true,
  refreshMessages: true,
  onlyWrittenBefore: false,
  recordWritten: 'withWriteTime',
  recordHeld: true,
  log: { written: { level: 'info', msg: 'condition written', withPrevious: false }, notWritten: 'condition not written', unchangedSkips: true, invalidDecision: 'decision on OBJECT item is invalid; skipped' },
};

export const STATUS_UPDATE_RULES: Readonly<Record<StatusUpdateSource, StatusUpdateRules>> = {
  // A stream image can be older than its item: the handoff may have applied a newer decision since.
  stream: { ...APPLY_DECISION, readItemFirst: true },
  // The handoff and its sweep read the item consistently just before (no second GetItem).
  handoff: APPLY_DECISION,
  // Resync looks for drift, which the item cannot show, so it always asks Kubernetes; it runs over
  // every object on a schedule, so it writes to the item only what changes it.
  resync: {
    readItemFirst: false,
    trustRecordedCondition: false,
    // A message-only difference is not drift (invariant 4). With no refresh rule, resync leaves the
    // rule's clock (`conditionWrittenAt`) to the writers that apply it: `whenItemDiffers`.
    refreshMessages: false,
    // A generation without `lastCondition` is the status function's first write (its stream record is coming).
    onlyWrittenBefore: true,
    // An unchanged record would be a DynamoDB write and a stream record for nothing.
    recordWritten: 'whenItemDiffers',
    // Learning what Kubernetes holds (a message someone else wrote into ours) would be the same.
    recordHeld: false,
    log: {
      written: { level: 'warn', msg: 'condition drifted in Kubernetes; re-asserted', withPrevious: true },
      notWritten: 'condition not re-asserted',
      unchangedSkips: false,
      invalidDecision: 'decision on OBJECT item is invalid; not re-asserted',
    },
  },
};

/** What the one path needs; every writer builds it from the same assembly (functions/kube/condition-writing.ts). */
export interface StatusPathDeps {
  writer: Pick<StatusWriter, 'write'>;
  /**
   * With `getObjectGeneration` (the real store always has it), a stream record is checked against
   * the stored item before Kubernetes is called, and the writer revalidates a same-generation change
   * against the stored decision. Without it neither guard runs (a test shows what they prevent).
   */
  store: Pick<ObjectStore, 'recordCondition'> & Partial<Pick<ObjectStore, 'getObjectGeneration'>>;
  logger: Logger;
  conditionType: string;
  /** Per-kind condition types (TrackedKinds); absent: `conditionType` for every kind. */
  kinds?: Pick<TrackedKinds, 'conditionTypeFor'>;
  writeOnMessageChange: boolean;
  /**
   * STATUS_MESSAGE_REFRESH_MS: a not-True condition whose message (counts, blockers) is out of date
   * is rewritten once our last write of the generation is this old (core `messageRefreshDue`).
   * 0 or absent: message-only changes are never written.
   */
  messageRefreshMs?: number;
  now: () => number;
}

/** What became of one update (returned for the writers' reports, and logged). */
export interface StatusUpdateResult {
  object: string;
  generation: number;
  /**
   * The writer's outcome, or why it was not asked: `alreadyWritten` (the item records it),
   * `noDecision` (none, or invalid), `notWrittenBefore` (resync: no `lastCondition` yet).
   */
  result: WriteOutcome['outcome'] | 'alreadyWritten' | 'noDecision' | 'notWrittenBefore';
  /** For `written`: 'refresh' when only the message was brought up to date; for skips, the reason. */
  detail?: string;
  /** The status writer's answer, when it was asked. */
  kubernetes?: WriteOutcome;
}

/** The refresh rule for a record: the interval, and our last write's time as its item records it. */
function refreshFor(record: ObjectGeneration, deps: Pick<StatusPathDeps, 'messageRefreshMs'>): MessageRefresh | undefined {
  const intervalMs = deps.messageRefreshMs ?? 0;
  return intervalMs > 0 ? { intervalMs, lastWrittenAt: record.conditionWrittenAt } : undefined;
}

/**
 * Whether the condition recorded on this item is a not-True one whose message is out of date (its
 * stored decision says other counts or blockers) and may be rewritten now: what convergence's sweep
 * looks for (functions/lib/status-handoff.ts), by the rule the path applies to the item.
 */
export function staleMessageDue(record: ObjectGeneration, deps: Pick<StatusPathDeps, 'conditionType' | 'kinds' | 'messageRefreshMs' | 'now'>): boolean {
  const decision = readDecision(record);
  const refresh = refreshFor(record, deps);
  if (decision.status !== 'found' || record.lastCondition === undefined || refresh === undefined) return false;
  const draft = conditionDraftFor(record, decision.decision, conditionOptionsFor(record.object, deps));
  return messageRefreshDue(record.lastCondition, draft, deps.now(), refresh).kind === 'due';
}

/** Applies one status update through the one status writer, and records the result on the item. */
export function applyStatusUpdate(update: StatusUpdate, deps: StatusPathDeps): Promise<StatusUpdateResult> {
  return apply(update.record, update.warnings ?? [], STATUS_UPDATE_RULES[update.source], deps);
}

async function apply(record: ObjectGeneration, warnings: readonly string[], rules: StatusUpdateRules, deps: StatusPathDeps): Promise<StatusUpdateResult> {
  const base = { object: formatObjectRef(record.object), generation: record.generation };
  if (rules.onlyWrittenBefore && record.lastCondition === undefined) return { ...base, result: 'notWrittenBefore' };
  const decision = readDecision(record, warnings);
  if (decision.status === 'none') return { ...base, result: 'noDecision' };
  if (decision.status === 'superseded') return { ...base, result: 'skipped', detail: `superseded by generation ${decision.by}` };
  if (decision.status === 'invalid') {
    deps.logger.error({ ...base, error: decision.error }, rules.log.invalidDecision);
    return { ...base, result: 'noDecision', detail: decision.error };
  }
  const options = conditionOptionsFor(record.object, deps);
  const draft = conditionDraftFor(record, decision.decision, options);
  const refresh = rules.refreshMessages ? refreshFor(record, deps) : undefined;
  // Already written for this generation (e.g. this record is our own recordCondition): no read, no
  // write. Keeps Kubernetes traffic O(1) per generation however many records the item gets. A record
  // that changes only the message goes on only once the refresh is due (at most one write per
  // interval; the sweep in convergence catches the change if no later record does).
  if (rules.trustRecordedCondition && record.lastCondition !== undefined && !conditionChanged(record.lastCondition, draft, { includeMessage: deps.writeOnMessageChange })) {
    const due = refresh === undefined ? undefined : messageRefreshDue(record.lastCondition, draft, deps.now(), refresh);
    if (due?.kind !== 'due') return { ...base, result: 'alreadyWritten', ...(due?.kind === 'notDue' ? { detail: 'refreshNotDue' } : {}) };
  }
  const store = deps.store;
  const getObjectGeneration = store.getObjectGeneration?.bind(store);
  if (rules.readItemFirst && getObjectGeneration !== undefined) {
    // One consistent GetItem, cheaper than the Kubernetes GET it often saves; from here on the
    // stored item is the record. Gone or unreadable (logged by the store): act on the image.
    const stored = await getObjectGeneration(record.object, record.generation);
    if (stored.status === 'found') return apply(stored.value, [], { ...rules, readItemFirst: false }, deps);
  }
  // The item was read before the object: another writer may apply a newer decision in between, which
  // the writer's revalidation (after its own GET) keeps this draft from undoing.
  const revalidate = getObjectGeneration === undefined ? undefined : storedDecisionRevalidator({ getObjectGeneration }, record, draft, options);
  // Against what Kubernetes holds, the time on the item only counts for the condition the item
  // recorded with it (core MessageRefresh.recorded): a write of ours not yet recorded is never "due".
  const writeOptions: WriteOptions = {
    ...(revalidate === undefined ? {} : { revalidate }),
    ...(refresh === undefined ? {} : { refresh: { ...refresh, recorded: record.lastCondition } }),
  };
  const outcome = await deps.writer.write(record.object, draft, writeOptions);
  const asked = { ...base, kubernetes: outcome };
  switch (outcome.outcome) {
    case 'written': {
      await recordWritten(record, outcome.condition, rules, deps);
      const { written } = rules.log;
      const previous = written.withPrevious ? { found: outcome.previous ?? null } : {};
      deps.logger[written.level]({ ...base, status: outcome.condition.status, reason: outcome.condition.reason, ...previous, conflicts: outcome.conflicts, refresh: outcome.refresh === true }, written.msg);
      return { ...asked, result: 'written', ...(outcome.refresh === true ? { detail: 'refresh' } : {}) };
    }
    case 'skipped':
      if (outcome.reason !== 'unchanged' || rules.log.unchangedSkips) deps.logger.info({ ...base, reason: outcome.reason, detail: outcome.detail }, rules.log.notWritten);
      // Kubernetes already holds it (e.g. our write landed but recording it failed last time, or
      // another writer of ours has not recorded its write yet): remember it, so the next record of
      // this item needs no Kubernetes read. When it was written is not known: now, so the next
      // message refresh is spaced from it too.
      if (rules.recordHeld && (outcome.reason === 'unchanged' || outcome.reason === 'refreshNotDue') && outcome.current !== undefined && conditionChanged(record.lastCondition, outcome.current)) {
        const now = deps.now();
        await deps.store.recordCondition(record.object, record.generation, outcome.current, outcome.current.status === 'True' ? now : undefined, now);
      }
      return { ...asked, result: 'skipped', detail: outcome.reason };
    case 'notFound':
      return { ...asked, result: 'notFound' };
    case 'unsupported':
      deps.logger.error({ ...base, detail: outcome.detail }, 'cannot write the condition on this object');
      return { ...asked, result: 'unsupported', detail: outcome.detail };
  }
}

/** Records a written condition on its item, as `rules.recordWritten` says. */
async function recordWritten(record: ObjectGeneration, condition: Condition, rules: StatusUpdateRules, deps: StatusPathDeps): Promise<void> {
  const now = deps.now();
  const programmedAt = condition.status === 'True' ? now : undefined;
  if (rules.recordWritten === 'withWriteTime') {
    // The write's time is recorded with it: the next message-only write is spaced from it.
    await deps.store.recordCondition(record.object, record.generation, condition, programmedAt, now);
  } else if (conditionChanged(record.lastCondition, condition, { includeMessage: deps.writeOnMessageChange })) {
    await deps.store.recordCondition(record.object, record.generation, condition, programmedAt);
  }
}
