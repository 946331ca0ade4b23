// DynamoDB adapter of the VersionLog port (common/core/version-log.ts): chunks written with
// BatchWriteItem (batch-write.ts: 25 a call, UnprocessedItems retried, what is left handed back), and a
// lineage's chunks of one type read by seq range with Query, paged with the one page-token format; and
// the memberships (node → index on a lineage) the readers of one Envoy start from.
// A chunk's key is a function of its lineage, type, seq and ordinal, so a retried put rewrites the same
// item with the same bytes (idempotent without conditions or transactions).
import {
  isValidLineage,
  isValidSeq,
  isValidTypeUrl,
  type ChunkRange,
  type Page,
  type PageRequest,
  type PutChunksResult,
  type PutMembersResult,
  type VersionChunk,
  type VersionLog,
  type VersionLogMember,
} from '../core';
import { batchPut, UnwrittenItemsError, type BatchWriteOptions, type KeyedItem } from './batch-write';
import { InvalidStoreInputError } from './errors';
import { ExpressionBuilder } from './expression';
import { pageLimit, startKey, toPage } from './listing';
import type { StoreLogger } from './logger';
import type { DocumentOperations } from './operations';
import { PARTITION_KEY, SORT_KEY } from './table';
import { envoyPartitionKey, VERSION_LOG_MEMBER_SK_PREFIX, versionLogPartitionKey, versionLogSkRange } from './table-layout';
import { toVersionLogChunkItem, toVersionLogMemberItem, versionLogChunkFromItem, versionLogMemberFromItem } from './version-log-item';

export interface DynamoVersionLogOptions {
  tableName: string;
  operations: DocumentOperations;
  logger: StoreLogger;
  batch?: Omit<BatchWriteOptions, 'tableName'>;
}

function keyString(item: { pk: string; sk: string }): string {
  return JSON.stringify([item.pk, item.sk]);
}

export class DynamoVersionLog implements VersionLog {
  private readonly tableName: string;
  private readonly operations: DocumentOperations;
  private readonly logger: StoreLogger;
  private readonly batch: Omit<BatchWriteOptions, 'tableName'>;

  constructor(options: DynamoVersionLogOptions) {
    this.tableName = options.tableName;
    this.operations = options.operations;
    this.logger = options.logger;
    this.batch = options.batch ?? {};
  }

  async putChunks(chunks: readonly VersionChunk[]): Promise<PutChunksResult> {
    const result = await this.putAll(chunks, toVersionLogChunkItem, (chunk) => ({ lineage: chunk.lineage, typeUrl: chunk.typeUrl, seq: chunk.seq, chunk: chunk.chunk }), 'version-log chunk');
    return { written: result.written, failed: result.failed.map(({ record, error, retryable }) => ({ chunk: record, error, retryable })) };
  }

  async putMembers(members: readonly VersionLogMember[]): Promise<PutMembersResult> {
    const result = await this.putAll(members, toVersionLogMemberItem, (member) => ({ nodeId: member.nodeId, lineage: member.lineage, member: member.member }), 'version-log membership');
    return { written: result.written, failed: result.failed.map(({ record, error, retryable }) => ({ member: record, error, retryable })) };
  }

  /**
   * Writes records as items with BatchWriteItem: a record that cannot be an item is refused (not
   * retryable) with a log line; what the batch leaves unwritten comes back with its cause.
   */
  private async putAll<T>(
    records: readonly T[],
    toItem: (record: T) => { ok: true; item: KeyedItem } | { ok: false; error: string },
    describe: (record: T) => Record<string, unknown>,
    what: string,
  ): Promise<{ written: number; failed: { record: T; error: string; retryable: boolean }[] }> {
    const failed: { record: T; error: string; retryable: boolean }[] = [];
    const valid: { record: T; item: KeyedItem }[] = [];
    for (const record of records) {
      const built = toItem(record);
      if (built.ok) {
        valid.push({ record, item: built.item });
        continue;
      }
      this.logger.warn({ table: this.tableName, ...describe(record), reason: built.error }, `refusing to write ${what}`);
      failed.push({ record, error: built.error, retryable: false });
    }
    if (valid.length === 0) return { written: 0, failed };
    try {
      await batchPut(this.operations, valid.map((entry) => entry.item), { ...this.batch, tableName: this.tableName });
      return { written: valid.length, failed };
    } catch (error) {
      // Anything but items left unwritten (a bug, a bad table name) is not the records' fault: rethrown.
      if (!(error instanceof UnwrittenItemsError)) throw error;
      const failureByKey = new Map(error.failures.map((failure) => [keyString(failure.item), failure]));
      let written = 0;
      for (const { record, item } of valid) {
        const failure = failureByKey.get(keyString(item));
        if (failure === undefined) written++;
        else failed.push({ record, error: failure.cause, retryable: failure.retryable });
      }
      this.logger.warn({ table: this.tableName, unwritten: failureByKey.size, reasons: error.causes }, `${what} items not written after retries; returned to caller`);
      return { written, failed };
    }
  }

  async listChunks(lineage: string, range: ChunkRange, page: PageRequest & { consistent?: boolean; descending?: boolean } = {}): Promise<Page<VersionChunk>> {
    if (!isValidLineage(lineage)) throw new InvalidStoreInputError(`invalid lineage ${JSON.stringify(lineage)}`);
    if (!isValidTypeUrl(range.typeUrl)) throw new InvalidStoreInputError(`invalid type URL ${JSON.stringify(range.typeUrl)}`);
    if (!isValidSeq(range.fromSeq) || !isValidSeq(range.toSeq) || range.fromSeq > range.toSeq) {
      throw new InvalidStoreInputError(`seq range ${String(range.fromSeq)}..${String(range.toSeq)} is not two seqs in order`);
    }
    const limit = pageLimit(page);
    const pk = versionLogPartitionKey(lineage);
    const sk = versionLogSkRange(range.typeUrl, range.fromSeq, range.toSeq);
    // A token names its range: one from another lineage, type or seq range is refused, not followed.
    const listing = `vlog:${range.typeUrl}:${range.fromSeq}-${range.toSeq}${page.descending === true ? ':desc' : ''}`;
    const exclusiveStartKey = startKey(page, {
      listing,
      attributes: [PARTITION_KEY, SORT_KEY],
      check: (key) => {
        const at = key[SORT_KEY] ?? '';
        return key[PARTITION_KEY] !== pk || at < sk.from || at > sk.to ? 'key is outside the listed lineage and range' : undefined;
      },
    });
    const expression = new ExpressionBuilder();
    const output = await this.operations.query({
      TableName: this.tableName,
      KeyConditionExpression: `${expression.name(PARTITION_KEY)} = ${expression.value(pk)} AND ${expression.name(SORT_KEY)} BETWEEN ${expression.value(sk.from)} AND ${expression.value(sk.to)}`,
      ExpressionAttributeNames: expression.names,
      ExpressionAttributeValues: expression.values,
      Limit: limit,
      ExclusiveStartKey: exclusiveStartKey,
      ConsistentRead: page.consistent === true,
      ScanIndexForward: page.descending !== true,
    });
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => {
      const read = versionLogChunkFromItem(raw);
      if (read.ok) return { ok: true, value: read.chunk };
      this.logger.warn({ table: this.tableName, key: read.corrupt.key, reason: read.corrupt.error }, 'skipping invalid version-log chunk');
      return { ok: false, corrupt: read.corrupt };
    });
  }

  async listMembers(nodeId: string, page: PageRequest = {}): Promise<Page<VersionLogMember>> {
    if (typeof nodeId !== 'string' || nodeId.length === 0) throw new InvalidStoreInputError('empty node id');
    const limit = pageLimit(page);
    const pk = envoyPartitionKey(nodeId);
    const listing = `vmembers:${nodeId}`;
    const exclusiveStartKey = startKey(page, {
      listing,
      attributes: [PARTITION_KEY, SORT_KEY],
      check: (key) => (key[PARTITION_KEY] !== pk || !(key[SORT_KEY] ?? '').startsWith(VERSION_LOG_MEMBER_SK_PREFIX) ? "key is outside the node's memberships" : undefined),
    });
    const expression = new ExpressionBuilder();
    const output = await this.operations.query({
      TableName: this.tableName,
      KeyConditionExpression: `${expression.name(PARTITION_KEY)} = ${expression.value(pk)} AND begins_with(${expression.name(SORT_KEY)}, ${expression.value(VERSION_LOG_MEMBER_SK_PREFIX)})`,
      ExpressionAttributeNames: expression.names,
      ExpressionAttributeValues: expression.values,
      Limit: limit,
      ExclusiveStartKey: exclusiveStartKey,
    });
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => {
      const read = versionLogMemberFromItem(raw);
      if (read.ok) return { ok: true, value: read.member };
      this.logger.warn({ table: this.tableName, key: read.corrupt.key, reason: read.corrupt.error }, 'skipping invalid version-log membership');
      return { ok: false, corrupt: read.corrupt };
    });
  }
}
