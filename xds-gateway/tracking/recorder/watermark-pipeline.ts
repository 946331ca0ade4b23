// The recorder's object marks: watermarks (first write wins per lineage in the store), generations not
// observable, and generations the controller rejected (barrier.ts). A flush writes them first
// (index.ts): a generation cannot be decided before its watermark is stored. Writes of one object
// generation stay in order; different generations are independent items, written in parallel. Also
// keeps each lineage's recent watermark seqs: a queued Envoy state reaching one is never held.
import type { Logger } from 'pino';
import { formatObjectRef, type EventStore, type LineageWatermark, type ObjectRef } from '../../../common/core';
import { isPermanentStoreError } from '../../../common/store';
import { describeError } from '../../../common/describe-error';
import { forEachConcurrently } from '../../../common/worker-pool';
import type { RecorderMetrics } from './options';
import { performanceSeconds } from './write-latency';

/** Recent watermark seqs kept per lineage for the hold rule (a rebuild adds one per changed object). */
const MAX_WATERMARK_SEQS = 4096;

interface WatermarkWrite {
  kind: 'watermark';
  ref: ObjectRef;
  generation: number;
  lineage: string;
  watermark: LineageWatermark;
}

interface NotObservableWrite {
  kind: 'notObservable';
  ref: ObjectRef;
  generation: number;
  reason: string;
  at: number;
}

/** The controller reported the generation processed but invalid (barrier.ts): its message. */
interface RejectedWrite {
  kind: 'rejected';
  ref: ObjectRef;
  generation: number;
  message: string;
  at: number;
}

type ObjectWrite = WatermarkWrite | NotObservableWrite | RejectedWrite;

export interface WatermarkPipelineOptions {
  store: EventStore;
  logger: Logger;
  metrics: RecorderMetrics | undefined;
  /** Object generations written in parallel. */
  concurrency: number;
}

export class WatermarkPipeline {
  private writes: ObjectWrite[] = [];
  /** Per lineage, the seqs of watermarks recorded recently, ascending: a state reaching one is not held. */
  private readonly seqs = new Map<string, number[]>();

  constructor(private readonly options: WatermarkPipelineOptions) {}

  enqueueWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): void {
    this.writes.push({ kind: 'watermark', ref, generation, lineage, watermark });
    this.rememberSeq(lineage, watermark.seq);
  }

  enqueueNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): void {
    this.writes.push({ kind: 'notObservable', ref, generation, reason, at });
  }

  enqueueRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): void {
    this.writes.push({ kind: 'rejected', ref, generation, message, at });
  }

  get queued(): number {
    return this.writes.length;
  }

  /** The lineage's recent watermark seqs, ascending (undefined: none recorded). */
  seqsOf(lineage: string): readonly number[] | undefined {
    return this.seqs.get(lineage);
  }

  forgetLineage(lineage: string): void {
    this.seqs.delete(lineage);
  }

  /** Writes every queued mark; false if any must be retried (kept queued, in order). */
  async flush(): Promise<boolean> {
    if (this.writes.length === 0) return true;
    const batch = this.writes;
    this.writes = [];
    const retry: ObjectWrite[] = [];
    // Writes of one object generation stay in order (a watermark and a not-observable mark may both be
    // queued for it); different generations are independent items, written in parallel.
    const perGeneration = new Map<string, ObjectWrite[]>();
    for (const write of batch) {
      const key = `${formatObjectRef(write.ref)}#${write.generation}`;
      const list = perGeneration.get(key);
      if (list === undefined) perGeneration.set(key, [write]);
      else list.push(write);
    }
    await forEachConcurrently([...perGeneration.values()], this.options.concurrency, async (writes) => {
      for (const write of writes) {
        if (!(await this.write(write))) {
          // Keep this generation's later writes behind the failed one.
          retry.push(...writes.slice(writes.indexOf(write)));
          return;
        }
      }
    });
    this.writes = [...retry, ...this.writes];
    return retry.length === 0;
  }

  /** Keeps the lineage's recent watermark seqs ascending and bounded (the newest are the ones Envoys are reaching). */
  private rememberSeq(lineage: string, seq: number): void {
    const seqs = this.seqs.get(lineage) ?? [];
    let index = seqs.length;
    while (index > 0 && (seqs[index - 1] as number) > seq) index--;
    if (seqs[index - 1] === seq) return;
    seqs.splice(index, 0, seq);
    if (seqs.length > MAX_WATERMARK_SEQS) seqs.splice(0, seqs.length - MAX_WATERMARK_SEQS);
    this.seqs.set(lineage, seqs);
  }

  /** One watermark or not-observable write; false (logged) when it must be retried. */
  private async write(write: ObjectWrite): Promise<boolean> {
    const { store, logger, metrics } = this.options;
    const started = performanceSeconds();
    try {
      if (write.kind === 'watermark') {
        const outcome = await store.putWatermark(write.ref, write.generation, write.lineage, write.watermark);
        logger.info(
          { object: formatObjectRef(write.ref), generation: write.generation, lineage: write.lineage, seq: write.watermark.seq, outcome },
          'watermark recorded',
        );
      } else if (write.kind === 'notObservable') {
        await store.markNotObservable(write.ref, write.generation, write.reason, write.at);
      } else {
        await store.markRejectedByController(write.ref, write.generation, write.message, write.at);
        logger.info({ object: formatObjectRef(write.ref), generation: write.generation }, 'controller rejection recorded');
      }
      metrics?.writeLatency('watermark', performanceSeconds() - started);
      return true;
    } catch (error) {
      if (isPermanentStoreError(error)) {
        metrics?.writeDropped?.('watermark');
        logger.error({ object: formatObjectRef(write.ref), generation: write.generation, err: describeError(error) }, 'watermark can never be stored; dropped, not retried');
        return true;
      }
      metrics?.writeFailed('watermark');
      logger.warn({ object: formatObjectRef(write.ref), generation: write.generation, err: describeError(error) }, 'watermark write failed; will retry');
      return false;
    }
  }
}
