// The status function's work on one stream batch: pick the OBJECT generation items whose decision
// may need writing and hand each object's latest one to the one status path (./apply.ts), which
// writes and records its condition. Per object, only its latest record in the batch matters (the
// path re-reads the item and the object anyway); a failure fails every record of that object, so
// Lambda resumes at the first. A 404 marks the object's items for expiry (the status function is
// the writer that collects them on the stream).
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from 'pino';

import { formatObjectRef, type ObjectGeneration } from '../../common/core';
import { ATTR, ITEM_KIND, OBJECT_PK_PREFIX, objectGenerationFromItem, parseItem, streamRecordImages, type ObjectCleanup } from '../../common/store';
import { forEachConcurrently } from '../../common/worker-pool';
import { applyStatusUpdate, type StatusPathDeps, type StatusUpdateResult } from './apply';

export interface StatusProcessorDeps extends StatusPathDeps {
  /** A deleted object's items get a `ttl` when Kubernetes answers 404 for it. */
  cleanup: ObjectCleanup;
  /** Objects written in parallel per batch (records of one object are always sequential). */
  concurrency?: number;
}

/** What happened to one object in a batch (returned for tests and logged). */
export interface ObjectResult extends Omit<StatusUpdateResult, 'result' | 'kubernetes'> {
  result: StatusUpdateResult['result'] | 'failed';
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

/** One object's latest record through the one status path; a gone object's items are marked for expiry. */
async function processObject(candidate: Candidate, deps: StatusProcessorDeps): Promise<ObjectResult> {
  const { object, generation, result, detail } = await applyStatusUpdate({ source: 'stream', record: candidate.record, warnings: candidate.warnings }, deps);
  if (result === 'notFound') {
    const marked = await deps.cleanup.markDeleted(candidate.record.object, deps.now());
    deps.logger.info({ object, generation, marked }, 'object is gone; its items are marked for expiry');
  }
  return { object, generation, result, ...(detail === undefined ? {} : { detail }) };
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
