// DynamoDB adapter of the ProgressStore port (common/core/aggregate-ports.ts): each lineage's
// PROGRESS item (progress-item.ts). A put is one PutItem conditional on the stored `v` (optimistic
// locking, as aggregates.ts writes shards and the registry: no transactions, dynalite has none); the
// one writer is the lineage's gateway. Reads are strongly consistent, as the shard reads they stand in
// for are (aggregates.ts getLineageShards), so evaluation never decides from an older item than the
// one a gateway just wrote; many lineages are read with BatchGetItem (batch-get.ts).
import { isValidLineage, type ItemRead, type Lineage, type LineageProgress, type LineageProgressRead, type OptimisticWrite, type ProgressStore } from '../core';
import { batchGet, itemKeyString, type BatchGetOptions } from './batch-get';
import { InvalidStoreInputError, isConditionalCheckFailed } from './errors';
import type { StoreLogger } from './logger';
import type { DocumentOperations } from './operations';
import { lineageProgressFromItem, rawProgressV, toLineageProgressItem } from './progress-item';
import { lineageProgressKey } from './table-layout';

export interface DynamoProgressStoreOptions {
  tableName: string;
  operations: DocumentOperations;
  logger: StoreLogger;
  batch?: Omit<BatchGetOptions, 'tableName' | 'consistentRead'>;
}

function checkLineage(lineage: string): void {
  if (!isValidLineage(lineage)) throw new InvalidStoreInputError(`invalid lineage ${JSON.stringify(lineage)}`);
}

export class DynamoProgressStore implements ProgressStore {
  private readonly tableName: string;
  private readonly operations: DocumentOperations;
  private readonly logger: StoreLogger;
  private readonly batch: Omit<BatchGetOptions, 'tableName' | 'consistentRead'>;

  constructor(options: DynamoProgressStoreOptions) {
    this.tableName = options.tableName;
    this.operations = options.operations;
    this.logger = options.logger;
    this.batch = options.batch ?? {};
  }

  async putProgress(progress: LineageProgress): Promise<OptimisticWrite> {
    const built = toLineageProgressItem(progress);
    if (!built.ok) throw new InvalidStoreInputError(built.error);
    // The port's rule reads "stored v is v - 1", "none" for v 1: a v below 1 has no stored v to
    // follow, so it could only ever conflict, and the writer would re-read and retry for ever.
    if (progress.v < 1) throw new InvalidStoreInputError(`progress of lineage ${JSON.stringify(progress.lineage)}: v must be at least 1, got ${progress.v}`);
    try {
      await this.operations.put({
        TableName: this.tableName,
        Item: built.item,
        ...(progress.v === 1
          ? // None stored, or one whose `v` is not a number: a corrupt item the writer could never
            // follow (its reads give no rev); the gateway is its only writer and rebuilds it whole.
            { ConditionExpression: 'attribute_not_exists(pk) OR NOT attribute_type(#v, :number)', ExpressionAttributeNames: { '#v': 'v' }, ExpressionAttributeValues: { ':number': 'N' } }
          : { ConditionExpression: '#v = :previous', ExpressionAttributeNames: { '#v': 'v' }, ExpressionAttributeValues: { ':previous': progress.v - 1 } }),
      });
      return 'written';
    } catch (error) {
      if (isConditionalCheckFailed(error)) return 'conflict';
      throw error;
    }
  }

  async getProgress(lineage: Lineage): Promise<ItemRead<LineageProgress>> {
    checkLineage(lineage);
    const key = lineageProgressKey(lineage);
    const output = await this.operations.get({ TableName: this.tableName, Key: key, ConsistentRead: true });
    if (output.Item === undefined) return { status: 'missing' };
    const read = lineageProgressFromItem(output.Item);
    if (read.ok) return { status: 'found', value: read.progress };
    this.logger.warn({ table: this.tableName, key, reason: read.corrupt.error }, 'invalid lineage PROGRESS item');
    const v = rawProgressV(output.Item);
    return { status: 'corrupt', error: read.corrupt.error, ...(v === undefined ? {} : { rev: v }) };
  }

  async getProgresses(lineages: readonly Lineage[]): Promise<LineageProgressRead[]> {
    for (const lineage of lineages) checkLineage(lineage);
    if (lineages.length === 0) return [];
    const keys = lineages.map(lineageProgressKey);
    const found = await batchGet(this.operations, keys, { ...this.batch, tableName: this.tableName, consistentRead: true });
    // One parse per distinct lineage: a lineage named twice is one item, logged once if corrupt.
    const progressByKey = new Map<string, LineageProgress | undefined>();
    for (const [keyString, raw] of found) {
      const read = lineageProgressFromItem(raw);
      if (read.ok) {
        progressByKey.set(keyString, read.progress);
        continue;
      }
      // Evaluation treats it as missing (the lineage's count unknown: Pending) until its gateway's next write replaces it.
      this.logger.warn({ table: this.tableName, key: read.corrupt.key, reason: read.corrupt.error }, 'invalid lineage PROGRESS item; read as missing');
      progressByKey.set(keyString, undefined);
    }
    return lineages.map((lineage) => ({ lineage, progress: progressByKey.get(itemKeyString(lineageProgressKey(lineage))) }));
  }
}
