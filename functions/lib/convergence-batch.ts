// The convergence function's work on one DynamoDB stream batch (docs/CONVERGENCE.md):
//   1. ENVOY#<id>/STATE records → member updates, grouped per aggregate shard (one conditional write
//      per shard, ordered by rev, idempotent under redelivery);
//   2. LINEAGE#<l>/STATE records → the lineage registry (heartbeats);
//   3. OBJECT#<ref>/GEN#<g> records whose watermarks changed → pending index + evaluation;
//   4. pending generations on every lineage the batch touched → re-evaluation (with PROGRESS_EVALUATION,
//      a gateway's AGG#<l>/PROGRESS record touches its lineage too).
// Corrupt or unknown records are logged with their key and skipped; records whose work failed on I/O
// are returned in batchItemFailures so Lambda redelivers them (partial batch response).
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

import {
  goneMember,
  memberFromEnvoyState,
  sameDecision,
  shardOf,
  type EnvoyState,
  type EventStore,
  type ObjectGeneration,
} from '../../common/core';
import {
  AGGREGATE_PK_PREFIX,
  PROGRESS_SK,
  envoyStateFromItem,
  ITEM_KIND,
  lineageStateFromItem,
  objectGenerationFromItem,
  parseStreamImage,
  PENDING_PK_PREFIX,
  registerLineageHeartbeats,
} from '../../common/store';
import { forEachConcurrently } from '../../common/worker-pool';
import { shardKeyOf, updateShard, type MemberUpdate } from './aggregate-updates';
import { CONVERGENCE_CONCURRENCY } from './config';
import { AggregateSnapshot, candidateKey, evaluateAll, indexPending, pendingOn, supersedeOlder, type Candidate, type EvaluationDeps } from './evaluate';
import type { HandoffReport, StatusHandoff } from './status-handoff';

export interface ConvergenceDeps extends EvaluationDeps {
  store: EventStore;
  shardCount: number;
  requiredTypeUrls?: readonly string[];
  /** Applies changed verdicts to Kubernetes directly (STATUS_HANDOFF; functions/lib/status-handoff.ts). */
  statusHandoff?: StatusHandoff;
}

export interface BatchReport {
  envoyRecords: number;
  shardsWritten: number;
  evaluated: number;
  skipped: number;
  failed: number;
  /** Wall time per phase (ms): where a slow batch spends it (logged with the batch; bench/README.md). */
  phaseMs: { shards: number; pendingIndex: number; evaluate: number; handoff?: number };
  /** Direct condition writes of this batch (present when the handoff is on). */
  handoff?: HandoffReport;
}


/** Aggregate shards updated at once per batch (a lineage has AGGREGATE_SHARDS of them, default 16). */
export const SHARD_UPDATE_CONCURRENCY = 16;

// Stream records are external input: a damaged one (wrong attribute types, null images) must be
// skipped with a reason, never throw — a thrown batch is retried whole and would block the shard.
function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

function keyOf(record: DynamoDBRecord): { pk: string; sk: string } {
  return { pk: stringOr(record?.dynamodb?.Keys?.['pk']?.S, ''), sk: stringOr(record?.dynamodb?.Keys?.['sk']?.S, '') };
}

function recordId(record: DynamoDBRecord, index: number): string {
  return stringOr(record?.dynamodb?.SequenceNumber, stringOr(record?.eventID, String(index)));
}

/** Member updates for one Envoy STATE record: its new lineage's shard, and a tombstone on the old one if it moved. */
export function memberUpdatesFor(oldState: EnvoyState | undefined, newState: EnvoyState | undefined, deps: Pick<ConvergenceDeps, 'shardCount' | 'requiredTypeUrls'>): MemberUpdate[] {
  const updates: MemberUpdate[] = [];
  if (newState !== undefined) {
    const shard = shardOf(newState.nodeId, deps.shardCount);
    updates.push({ kind: 'set', lineage: newState.lineage, shard, nodeId: newState.nodeId, member: memberFromEnvoyState(newState, deps.requiredTypeUrls ?? []) });
    if (oldState !== undefined && oldState.lineage !== newState.lineage) {
      updates.push({ kind: 'set', lineage: oldState.lineage, shard, nodeId: newState.nodeId, member: goneMember(newState.rev, newState.lastSeenAt, oldState.incarnation ?? 1) });
    }
  } else if (oldState !== undefined) {
    updates.push({ kind: 'remove', lineage: oldState.lineage, shard: shardOf(oldState.nodeId, deps.shardCount), nodeId: oldState.nodeId, rev: oldState.rev, lastSeenAt: oldState.lastSeenAt });
  }
  return updates;
}


function watermarksChanged(oldRecord: ObjectGeneration | undefined, newRecord: ObjectGeneration): boolean {
  if (oldRecord === undefined) return true;
  if (oldRecord.notObservable !== newRecord.notObservable || oldRecord.rejectedByController !== newRecord.rejectedByController) return true;
  const seqs = (record: ObjectGeneration): string => JSON.stringify(Object.entries(record.watermarks).map(([l, w]) => [l, w.seq]).sort());
  return seqs(oldRecord) !== seqs(newRecord);
}

/**
 * The cached copy of an OBJECT generation item is dropped when the item now differs from it (another
 * writer's decision, a new lineage's watermark), so the next evaluation reads it afresh. Our own
 * decision writes come back equal to the cached copy and keep it.
 */
function forgetIfChanged(deps: Pick<ConvergenceDeps, 'generationCache' | 'now'>, record: ObjectGeneration): void {
  const cache = deps.generationCache;
  if (cache === undefined) return;
  const key = candidateKey({ object: record.object, generation: record.generation });
  const cached = cache.get(key, deps.now());
  if (cached === undefined) return;
  const sameStoredDecision = cached.decision === undefined ? record.decision === undefined : record.decision !== undefined && sameDecision(cached.decision, record.decision) && cached.decision.decidedAt === record.decision.decidedAt;
  if (watermarksChanged(cached, record) || !sameStoredDecision) cache.delete(key);
}

function isImageOrAbsent(image: unknown): boolean {
  return image === undefined || (typeof image === 'object' && image !== null && !Array.isArray(image));
}

export async function processConvergenceBatch(event: DynamoDBStreamEvent, deps: ConvergenceDeps): Promise<{ response: DynamoDBBatchResponse; report: BatchReport }> {
  const records = event.Records ?? [];
  const { logger } = deps;
  const report: BatchReport = { envoyRecords: 0, shardsWritten: 0, evaluated: 0, skipped: 0, failed: 0, phaseMs: { shards: 0, pendingIndex: 0, evaluate: 0 } };
  const clock = deps.now;
  const failedIds = new Set<string>();
  const shardUpdates = new Map<string, { lineage: string; shard: number; updates: MemberUpdate[]; recordIds: string[] }>();
  const heartbeats = new Map<string, number>();
  const heartbeatRecordIds: string[] = [];
  const objectCandidates = new Map<string, { candidate: Candidate; record: ObjectGeneration; recordIds: string[] }>();
  const touchedLineages = new Map<string, string[]>();

  // Appended in place: copying the list per record made a batch quadratic (330 ms at 10,000 records).
  const touch = (lineage: string, id: string): void => {
    const ids = touchedLineages.get(lineage);
    if (ids === undefined) touchedLineages.set(lineage, [id]);
    else ids.push(id);
  };

  const classify = (record: DynamoDBRecord, index: number): void => {
    const id = recordId(record, index);
    const key = keyOf(record);
    if (!isImageOrAbsent(record?.dynamodb?.NewImage) || !isImageOrAbsent(record?.dynamodb?.OldImage)) {
      logger.warn({ key, sequenceNumber: id }, 'skipping stream record whose image is not an attribute map');
      report.skipped++;
      return;
    }
    const parsedNew = parseStreamImage(record?.dynamodb?.NewImage);
    const parsedOld = parseStreamImage(record?.dynamodb?.OldImage);
    if (key.pk.startsWith(AGGREGATE_PK_PREFIX) && key.sk === PROGRESS_SK) {
      // A gateway's PROGRESS item (not ours: the gateway writes it). Deciding from them
      // (PROGRESS_EVALUATION), it re-evaluates its lineage's pending generations, as an Envoy
      // record does for the shards; its content is read with the batch's snapshot, not from here.
      if (deps.progress !== undefined) touch(key.pk.slice(AGGREGATE_PK_PREFIX.length), id);
      return;
    }
    if (key.pk.startsWith(AGGREGATE_PK_PREFIX) || key.pk.startsWith(PENDING_PK_PREFIX)) return; // our own writes
    for (const parsed of [parsedNew, parsedOld]) {
      // Parts dropped leniently (an invalid stored decision): the item is still used, and re-decided.
      if (parsed?.ok === true && parsed.warnings !== undefined) logger.warn({ key, sequenceNumber: id, warnings: parsed.warnings }, 'stream record read with a part dropped');
      if (parsed !== undefined && !parsed.ok) {
        logger.warn({ key, eventName: record.eventName, sequenceNumber: id, reason: parsed.error }, 'skipping corrupt or unknown stream record');
        report.skipped++;
        return;
      }
    }
    const newItem = parsedNew?.ok === true ? parsedNew.item : undefined;
    const oldItem = parsedOld?.ok === true ? parsedOld.item : undefined;
    const kind = newItem?.kind ?? oldItem?.kind;
    if (kind === ITEM_KIND.envoyState) {
      report.envoyRecords++;
      const newState = newItem?.kind === ITEM_KIND.envoyState ? envoyStateFromItem(newItem) : undefined;
      const oldState = oldItem?.kind === ITEM_KIND.envoyState ? envoyStateFromItem(oldItem) : undefined;
      for (const update of memberUpdatesFor(oldState, newState, deps)) {
        const group = shardUpdates.get(shardKeyOf(update)) ?? { lineage: update.lineage, shard: update.shard, updates: [], recordIds: [] };
        group.updates.push(update);
        group.recordIds.push(id);
        shardUpdates.set(shardKeyOf(update), group);
        // Redelivered records change nothing in the shard but still re-trigger evaluation: the
        // failed attempt may have updated the shard and then failed before deciding.
        touch(update.lineage, id);
      }
    } else if (kind === ITEM_KIND.lineageState && newItem?.kind === ITEM_KIND.lineageState) {
      const lineage = lineageStateFromItem(newItem);
      heartbeats.set(lineage.lineage, Math.max(heartbeats.get(lineage.lineage) ?? 0, lineage.heartbeatAt));
      heartbeatRecordIds.push(id);
    } else if (kind === ITEM_KIND.objectGeneration && newItem?.kind === ITEM_KIND.objectGeneration) {
      const newRecord = objectGenerationFromItem(newItem);
      const oldRecord = oldItem?.kind === ITEM_KIND.objectGeneration ? objectGenerationFromItem(oldItem) : undefined;
      forgetIfChanged(deps, newRecord);
      if (!watermarksChanged(oldRecord, newRecord)) return; // e.g. our own decision write, or the condition record
      const candidate = { object: newRecord.object, generation: newRecord.generation };
      const entry = objectCandidates.get(candidateKey(candidate)) ?? { candidate, record: newRecord, recordIds: [] };
      entry.record = newRecord;
      entry.recordIds.push(id);
      objectCandidates.set(candidateKey(candidate), entry);
    }
  };
  records.forEach((record, index) => {
    try {
      classify(record, index);
    } catch (error) {
      // Last line of defence against a damaged record (e.g. a number too large for JSON in a field
      // the parser quotes): skip it with the reason; the rest of the batch goes on.
      logger.error({ key: keyOf(record), sequenceNumber: recordId(record, index), reason: error instanceof Error ? error.message : String(error) }, 'skipping stream record that could not be read');
      report.skipped++;
    }
  });

  // Steps 1-2 (aggregate shards, the lineage registry) and 3 (OBJECT/pending items) write disjoint
  // items, so they run concurrently: a batch's latency is the longer of the two, not their sum (each is
  // a few sequential round trips; docs/CONVERGENCE.md). Two orders are kept, because together
  // they make concurrent batches on different stream shards see each other's work: the pending index is
  // listed only after this batch's shards are written, and the aggregates are read (evaluation, 4) only
  // after this batch's pending entries are written. Of two batches, the later reader sees the earlier
  // writer: a generation indexed by one and completed by the other's members is evaluated by one of them.
  const phasesStart = clock();
  const measured = async (phase: 'shards' | 'pendingIndex', work: () => Promise<void>): Promise<void> => {
    await work();
    report.phaseMs[phase] = clock() - phasesStart;
  };
  // 1. Aggregates: the shards are independent items (each one conditional write; conflicts retry
  // inside), so they are updated concurrently: a batch's latency is one shard's read + write, not 16.
  // 2. Then the lineage registry (heartbeats). Then, and only then, the pending index is listed.
  const shardsWritten = measured('shards', async () => {
    await forEachConcurrently([...shardUpdates.values()], SHARD_UPDATE_CONCURRENCY, async (group) => {
      try {
        if (await updateShard(deps.aggregates, group.lineage, group.shard, group.updates, logger)) report.shardsWritten++;
      } catch (error) {
        logger.error({ lineage: group.lineage, shard: group.shard, err: error }, 'aggregate shard update failed');
        for (const id of group.recordIds) failedIds.add(id);
      }
    });
    if (heartbeats.size > 0) {
      try {
        // Heartbeats from LINEAGE records (the gateway also registers each new lineage ahead of its states).
        await registerLineageHeartbeats(deps.aggregates, heartbeats);
      } catch (error) {
        logger.error({ err: error }, 'lineage registry update failed');
        for (const id of heartbeatRecordIds) failedIds.add(id);
      }
    }
  });
  const pendingListed = shardsWritten.then(() => pendingOn(deps, touchedLineages.keys())).then(
    (listed) => ({ ok: true as const, listed }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  // 3. New or changed watermarks: index as pending; older generations of the object are superseded.
  // Different objects' items are independent; one object's two steps stay in order.
  const pendingIndexed = measured('pendingIndex', () =>
    forEachConcurrently([...objectCandidates.values()], CONVERGENCE_CONCURRENCY, async (entry) => {
      try {
        await indexPending(deps, entry.candidate, entry.record);
        await supersedeOlder(deps, entry.candidate);
      } catch (error) {
        logger.error({ candidate: candidateKey(entry.candidate), err: error }, 'pending index update failed');
        for (const id of entry.recordIds) failedIds.add(id);
      }
    }),
  );
  await Promise.all([shardsWritten, pendingIndexed]);
  const phaseStart = clock();
  // 4. Evaluate: objects of this batch, and everything pending on a touched lineage.
  const candidates = new Map<string, Candidate>();
  for (const entry of objectCandidates.values()) candidates.set(candidateKey(entry.candidate), entry.candidate);
  const snapshot = new AggregateSnapshot(deps);
  // Verdict changes go to the status writer as soon as their decision is written (they run while the
  // other candidates are evaluated); the batch waits for them at the end, each bounded by a deadline.
  // Their outcome never fails a record: the stream path to the status function stays the backstop.
  const handoff = deps.statusHandoff?.begin();
  const evaluation: ConvergenceDeps = handoff === undefined ? deps : { ...deps, onDecisionWritten: (record, previous) => handoff.offer(record, previous) };
  const pending = await pendingListed;
  if (pending.ok) for (const candidate of pending.listed) candidates.set(candidateKey(candidate), candidate);
  else {
    logger.error({ err: pending.error }, 'listing pending generations failed');
    for (const ids of touchedLineages.values()) for (const id of ids) failedIds.add(id);
  }
  // The aggregates are read while each candidate's own item is read, not after the first of those
  // reads: one round trip less before the first decision (docs/bench/README.md). Both orders above still hold (this
  // batch's shards and pending entries are written). A failed read is reported by the evaluations.
  if (candidates.size > 0) snapshot.get().catch(() => undefined);
  const { failed } = await evaluateAll(evaluation, [...candidates.values()], snapshot);
  report.phaseMs.evaluate = clock() - phaseStart;
  if (handoff !== undefined) {
    const handoffStart = clock();
    report.handoff = await handoff.settle();
    report.phaseMs.handoff = clock() - handoffStart;
  }
  report.evaluated = candidates.size - failed.size;
  if (failed.size > 0) {
    for (const [key, entry] of objectCandidates) if (failed.has(key)) for (const id of entry.recordIds) failedIds.add(id);
    // Which lineage's pending entry failed is not tracked per record: redeliver the lineages' records.
    const pendingFailed = [...failed].some((key) => !objectCandidates.has(key));
    if (pendingFailed) for (const ids of touchedLineages.values()) for (const id of ids) failedIds.add(id);
  }
  report.failed = failedIds.size;
  return { response: { batchItemFailures: [...failedIds].map((itemIdentifier) => ({ itemIdentifier })) }, report };
}
