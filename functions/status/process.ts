// The status function's work on one stream batch: pick the OBJECT generation items whose decision
// may need writing, write each object's condition through the one status writer, and remember what
// was written. Per object, only its latest record in the batch matters (the writer re-reads the
// object anyway); a failure fails every record of that object, so Lambda resumes at the first.
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from 'pino';

import {
  conditionChanged,
  formatObjectRef,
  type ObjectGeneration,
  type ObjectStore,
} from '../../common/core';
import { ATTR, ITEM_KIND, OBJECT_PK_PREFIX, objectGenerationFromItem, parseItem, streamRecordImages } from '../../common/store';
import { messageRefreshDue, type MessageRefresh } from '../../common/core/status-update';
import type { StatusWriter, WriteOutcome } from '../kube/status-writer';
import type { TrackedKinds } from '../kube/tracked-kinds';
import { forEachConcurrently } from '../../common/worker-pool';
import { conditionDraftFor, conditionOptionsFor, readDecision, storedDecisionRevalidator } from './decision';
import type { ObjectCleanup } from '../../common/store';

export interface StatusProcessorDeps {
  writer: Pick<StatusWriter, 'write'>;
  /**
   * With `getObjectGeneration` (the real store always has it), a record whose condition is not yet
   * recorded on its image is checked against the stored item before Kubernetes is called, and the
   * writer revalidates a same-generation change against it (`applyDecision`).
   */
  store: Pick<ObjectStore, 'recordCondition'> & Partial<Pick<ObjectStore, 'getObjectGeneration'>>;
  cleanup: ObjectCleanup;
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
  /** Objects written in parallel per batch (records of one object are always sequential). */
  concurrency?: number;
}

/** What happened to one object in a batch (returned for tests and logged). */
export interface ObjectResult {
  object: string;
  generation: number;
  result: WriteOutcome['outcome'] | 'alreadyWritten' | 'noDecision' | 'failed';
  /** For `written`: 'refresh' when only the message was brought up to date. */
  detail?: string;
}

/** The refresh rule for a record: the interval, and our last write's time as its item records it. */
function refreshFor(record: ObjectGeneration, deps: Pick<StatusProcessorDeps, 'messageRefreshMs'>): MessageRefresh | undefined {
  const intervalMs = deps.messageRefreshMs ?? 0;
  return intervalMs > 0 ? { intervalMs, lastWrittenAt: record.conditionWrittenAt } : undefined;
}

/**
 * Whether the condition recorded on this item is a not-True one whose message is out of date (its
 * stored decision says other counts or blockers) and may be rewritten now: what convergence's sweep
 * looks for (functions/lib/status-handoff.ts), with the same rule the status function applies.
 */
export function staleMessageDue(record: ObjectGeneration, deps: Pick<StatusProcessorDeps, 'conditionType' | 'kinds' | 'messageRefreshMs' | 'now'>): boolean {
  const decision = readDecision(record);
  const refresh = refreshFor(record, deps);
  if (decision.status !== 'found' || record.lastCondition === undefined || refresh === undefined) return false;
  const draft = conditionDraftFor(record, decision.decision, conditionOptionsFor(record.object, deps));
  return messageRefreshDue(record.lastCondition, draft, deps.now(), refresh).kind === 'due';
}

interface Candidate {
  key: string;
  record: ObjectGeneration;
  /** parseItem's warnings for the image (an invalid stored decision it dropped). */
  warnings: readonly string[];
  sequenceNumbers: string[];
}

/** Stream records → at most one candidate per object (its latest image), in first-seen order. */
export function selectCandidates(records: readonly DynamoDBRecord[], logger: Logger): Map<string, Candidate> {
  const byObject = new Map<string, Candidate>();
  for (const record of records) {
    if (typeof record !== 'object' || record === null) {
      logger.error({ record: typeof record }, 'stream record is not an object; skipped');
      continue;
    }
    const sequenceNumber = typeof record.dynamodb?.SequenceNumber === 'string' ? record.dynamodb.SequenceNumber : '';
    const pk = record.dynamodb?.Keys?.['pk']?.S;
    if (typeof pk !== 'string' || !pk.startsWith(OBJECT_PK_PREFIX)) continue;
    // A REMOVE is TTL cleanup of a deleted object: nothing to write.
    if (record.eventName === 'REMOVE') continue;
    const read = streamRecordImages(record.dynamodb);
    if ('error' in read) {
      logger.error({ pk, sequenceNumber, error: read.error }, 'corrupt stream record skipped');
      continue;
    }
    const raw = read.newImage;
    if (raw === undefined) {
      logger.error({ pk, sequenceNumber }, 'stream record has no NewImage; the stream must be NEW_AND_OLD_IMAGES');
      continue;
    }
    const old = read.oldImage;
    // Our own cleanup mark (ttl newly set on a deleted object's item): nothing else changed.
    if (raw[ATTR.ttl] !== undefined && old !== undefined && old[ATTR.ttl] === undefined) continue;
    let parsed: ReturnType<typeof parseItem>;
    try {
      parsed = parseItem(raw);
    } catch (error) {
      // parseItem must not throw, but a damaged image (e.g. a BigInt where it quotes a field) did.
      logger.error({ pk, sequenceNumber, error: error instanceof Error ? error.message : String(error) }, 'corrupt OBJECT item skipped');
      continue;
    }
    if (!parsed.ok) {
      logger.error({ pk, sk: parsed.key?.sk, sequenceNumber, error: parsed.error }, 'corrupt OBJECT item skipped');
      continue;
    }
    if (parsed.item.kind !== ITEM_KIND.objectGeneration) continue;
    const key = parsed.item.pk;
    const seen = byObject.get(key);
    const candidate: Candidate = { key, record: objectGenerationFromItem(parsed.item), warnings: parsed.warnings ?? [], sequenceNumbers: [...(seen?.sequenceNumbers ?? []), sequenceNumber] };
    // Keep the highest generation's latest image: an older generation's decision would be skipped
    // by the writer anyway (the object is already past it).
    if (seen === undefined || candidate.record.generation >= seen.record.generation) byObject.set(key, candidate);
    else seen.sequenceNumbers.push(sequenceNumber);
  }
  return byObject;
}

function processObject(candidate: Candidate, deps: StatusProcessorDeps): Promise<ObjectResult> {
  return applyDecision(candidate.record, candidate.warnings, deps);
}

export interface ApplyDecisionOptions {
  /**
   * The record was just read with a strongly consistent read (convergence's handoff): no re-read
   * before Kubernetes is called. Otherwise (a stream image, possibly older than the item) the item is
   * read first when its image would need a Kubernetes call.
   */
  fresh?: boolean;
}

/**
 * The status function's path for one OBJECT generation record: decision → condition draft → skip if
 * already recorded → the one status writer → record what was written. Also convergence's direct
 * handoff (functions/lib/status-handoff.ts), so both write and record a condition the same way.
 *
 * A stream image can be older than the item: convergence may already have applied a newer decision
 * itself. Before calling Kubernetes we read the item (one consistent GetItem, cheaper than the
 * Kubernetes GET it often saves) and act on what is stored; and the writer revalidates a change of our
 * condition at the same generation against the stored decision after its own read of the object
 * (`needsRevalidation`), which closes the race with a write that lands between the two reads.
 */
export async function applyDecision(record: ObjectGeneration, warnings: readonly string[], deps: StatusProcessorDeps, options: ApplyDecisionOptions = {}): Promise<ObjectResult> {
  const object = formatObjectRef(record.object);
  const base = { object, generation: record.generation };
  const decision = readDecision(record, warnings);
  if (decision.status === 'none') return { ...base, result: 'noDecision' };
  if (decision.status === 'superseded') return { ...base, result: 'skipped', detail: `superseded by generation ${decision.by}` };
  if (decision.status === 'invalid') {
    deps.logger.error({ ...base, error: decision.error }, 'decision on OBJECT item is invalid; skipped');
    return { ...base, result: 'noDecision', detail: decision.error };
  }
  const draft = conditionDraftFor(record, decision.decision, conditionOptionsFor(record.object, deps));
  // Already written for this generation (e.g. this record is our own recordCondition): no read, no
  // write. Keeps Kubernetes traffic O(1) per generation however many records the item gets. A record
  // that changes only the message goes on only once the refresh is due (at most one write per
  // interval; the sweep in convergence catches the change if no later record does).
  const refresh = refreshFor(record, deps);
  if (record.lastCondition !== undefined && !conditionChanged(record.lastCondition, draft, { includeMessage: deps.writeOnMessageChange })) {
    const due = refresh === undefined ? undefined : messageRefreshDue(record.lastCondition, draft, deps.now(), refresh);
    if (due?.kind !== 'due') return { ...base, result: 'alreadyWritten', ...(due?.kind === 'notDue' ? { detail: 'refreshNotDue' } : {}) };
  }
  const store = deps.store;
  const getObjectGeneration = store.getObjectGeneration?.bind(store);
  if (options.fresh !== true && getObjectGeneration !== undefined) {
    const stored = await getObjectGeneration(record.object, record.generation);
    if (stored.status === 'found') return applyDecision(stored.value, [], deps, { fresh: true });
    // Gone or unreadable (logged by the store): act on the image, as before.
  }
  const revalidate = getObjectGeneration === undefined ? undefined : storedDecisionRevalidator({ getObjectGeneration }, record, draft, conditionOptionsFor(record.object, deps));
  // Against what Kubernetes holds, the time on the item only counts for the condition the item
  // recorded with it (core MessageRefresh.recorded): a write of ours not yet recorded is never "due".
  const writeRefresh = refresh === undefined ? undefined : { ...refresh, recorded: record.lastCondition };
  const outcome = await deps.writer.write(record.object, draft, { ...(revalidate === undefined ? {} : { revalidate }), ...(writeRefresh === undefined ? {} : { refresh: writeRefresh }) });
  switch (outcome.outcome) {
    case 'written': {
      // The write's time is recorded with it: the next message-only write is spaced from it.
      const writtenAt = deps.now();
      await deps.store.recordCondition(record.object, record.generation, outcome.condition, outcome.condition.status === 'True' ? writtenAt : undefined, writtenAt);
      deps.logger.info({ ...base, status: outcome.condition.status, reason: outcome.condition.reason, conflicts: outcome.conflicts, refresh: outcome.refresh === true }, 'condition written');
      return { ...base, result: 'written', ...(outcome.refresh === true ? { detail: 'refresh' } : {}) };
    }
    case 'skipped':
      deps.logger.info({ ...base, reason: outcome.reason, detail: outcome.detail }, 'condition not written');
      // Kubernetes already holds it (e.g. our write landed but recording it failed last time, or
      // another writer of ours has not recorded its write yet): remember it, so the next record of
      // this item needs no Kubernetes read. When it was written is not known: now, so the next
      // message refresh is spaced from it too.
      if ((outcome.reason === 'unchanged' || outcome.reason === 'refreshNotDue') && outcome.current !== undefined && conditionChanged(record.lastCondition, outcome.current)) {
        const now = deps.now();
        await deps.store.recordCondition(record.object, record.generation, outcome.current, outcome.current.status === 'True' ? now : undefined, now);
      }
      return { ...base, result: 'skipped', detail: outcome.reason };
    case 'notFound': {
      const marked = await deps.cleanup.markDeleted(record.object, deps.now());
      deps.logger.info({ ...base, marked }, 'object is gone; its items are marked for expiry');
      return { ...base, result: 'notFound' };
    }
    case 'unsupported':
      deps.logger.error({ ...base, detail: outcome.detail }, 'cannot write the condition on this object');
      return { ...base, result: 'unsupported', detail: outcome.detail };
  }
}

/** Handles one DynamoDB stream batch; failures are reported per record (ReportBatchItemFailures). */
export async function processStatusBatch(event: DynamoDBStreamEvent, deps: StatusProcessorDeps): Promise<{ response: DynamoDBBatchResponse; results: ObjectResult[] }> {
  const candidates = [...selectCandidates(event.Records ?? [], deps.logger).values()];
  const results: ObjectResult[] = [];
  const failed: string[] = [];
  await forEachConcurrently(candidates, deps.concurrency ?? 8, async (candidate) => {
    try {
      results.push(await processObject(candidate, deps));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      deps.logger.error({ object: formatObjectRef(candidate.record.object), generation: candidate.record.generation, error: message }, 'status write failed; the records will be retried');
      results.push({ object: formatObjectRef(candidate.record.object), generation: candidate.record.generation, result: 'failed', detail: message });
      failed.push(...candidate.sequenceNumbers);
    }
  });
  return { response: { batchItemFailures: failed.filter((id) => id !== '').map((itemIdentifier) => ({ itemIdentifier })) }, results };
}
