// The DynamoDB adapter of the core's store port (common/core/ports.ts: EventStore).
// - Events: BatchWriteItem through batchPut (chunks of 25, UnprocessedItems retried); keys are
//   deterministic (table-layout.ts: envoyEventKey for single events, eventLogKeyOf for event-log items),
//   so a replayed write overwrites the same item. The event log also includes the events an Envoy's
//   STATE carries (`unlogged`); listEnvoyEvents reads all three (docs/GATEWAY.md, "The event log").
// - Envoy and lineage state: compare-and-set on `rev` (ConditionExpression); a lost race is a typed
//   `conflict` result with the current value, never an exception. No TransactWriteItems (dynalite
//   lacks it, and one code path runs locally and on AWS).
// - Object generations: watermark first-write-wins per lineage; creation fields set only if absent.
// - Reads: every item validated with parseItem (items.ts); invalid items logged and skipped.
import {
  ConditionSchema,
  EnvoyEventSchema,
  EnvoyStateSchema,
  LineageStateSchema,
  MAX_MESSAGE_BYTES,
  MAX_NODE_ID_LENGTH,
  isValidLineage,
  dedupeEvents,
  fromCarriedEvent,
  truncateUtf8,
  ttlEpochSeconds,
  type Clock,
  type Condition,
  type ConditionalWriteResult,
  type EnvoyEvent,
  type EnvoyState,
  type EventLogBatch,
  type EventStore,
  type ItemKey,
  type ItemRead,
  type LineageState,
  type LineageWatermark,
  type ObjectGeneration,
  type ObjectRef,
  type Page,
  type PageRequest,
  type PutEventLogsResult,
  type PutEventsResult,
} from '../core';
import { EnvoyEventLogItemSchema, envoyEventFromItem, toEnvoyEventItem, toEnvoyEventLogItem, toEnvoyStateItem, toLineageStateItem, type EnvoyEventItem, type EnvoyEventLogItem, type TableItem } from './items';
import { GENERATION_SK_PREFIX, ITEM_KIND, envoyEventKey, envoyEventSkPrefix, envoyPartitionKey, envoyStateKey, lineageStateKey, objectGenerationKey, objectPartitionKey, type ItemKind } from './table-layout';
import type { ScanRequest } from './table-ports';
import { batchPut, UnwrittenItemsError, type BatchWriteOptions, type KeyedItem } from './batch-write';
import { describeZodIssues, InvalidStoreInputError, isConditionalCheckFailed } from './errors';
import { ExpressionBuilder } from './expression';
import { rawRev, readAny, readAs, readEventItem, type RecordOfKind } from './item-reader';
import { pageLimit, startKey, toPage } from './listing';
import type { StoreLogger } from './logger';
import { checkObjectGeneration, checkObjectRef, setGenerationFields, writeWatermark, type StoreContext } from './object-generations';
import type { DocumentOperations } from './operations';
import { ENVOY_STATE_INDEX, ENVOY_STATE_INDEX_KEY, PARTITION_KEY, SORT_KEY } from './table';

export interface DynamoEventStoreOptions {
  tableName: string;
  operations: DocumentOperations;
  logger: StoreLogger;
  clock: Clock;
  /** Batching and UnprocessedItems retry settings for putEvents. */
  batch?: Omit<BatchWriteOptions, 'tableName'>;
  /** Cap for stored Envoy messages (NACK text, not-observable reasons), UTF-8 bytes. */
  maxMessageBytes?: number;
  /**
   * When set, an EXPIRED Envoy's state item gets a DynamoDB TTL this long after its lastSeenAt, so
   * states of Envoys that never come back are eventually deleted. A later write of a live state
   * replaces the whole item, TTL included. Unset: states are kept until deleted explicitly.
   */
  expiredStateRetentionMs?: number;
}

/** A failed event, with whether retrying can help (an invalid event will fail the same way again). */
export interface FailedEvent {
  event: EnvoyEvent;
  error: string;
  retryable: boolean;
}

export interface DynamoPutEventsResult extends PutEventsResult {
  failed: FailedEvent[];
}

function keyString(key: ItemKey): string {
  return JSON.stringify([key.pk, key.sk]);
}

/** Node ids become partition keys (at most 2048 bytes in DynamoDB); the schema bounds them. */
function checkNodeId(nodeId: string): void {
  if (nodeId.length === 0 || nodeId.length > MAX_NODE_ID_LENGTH) {
    throw new InvalidStoreInputError(`node id must be 1..${MAX_NODE_ID_LENGTH} characters, got ${nodeId.length}`);
  }
}


export class DynamoEventStore implements EventStore {
  private readonly tableName: string;
  private readonly operations: DocumentOperations;
  private readonly logger: StoreLogger;
  private readonly clock: Clock;
  private readonly batch: Omit<BatchWriteOptions, 'tableName'>;
  private readonly maxMessageBytes: number;
  private readonly context: StoreContext;
  private readonly expiredStateRetentionMs: number | undefined;

  constructor(options: DynamoEventStoreOptions) {
    this.tableName = options.tableName;
    this.operations = options.operations;
    this.logger = options.logger;
    this.clock = options.clock;
    this.batch = options.batch ?? {};
    this.maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    this.expiredStateRetentionMs = options.expiredStateRetentionMs;
    this.context = { tableName: this.tableName, operations: this.operations, logger: this.logger };
  }

  // -------------------------------------------------------------------------------------------
  // Envoy events

  async putEvents(events: readonly EnvoyEvent[]): Promise<DynamoPutEventsResult> {
    const failed: FailedEvent[] = [];
    const valid: { event: EnvoyEvent; item: KeyedItem }[] = [];
    for (const event of events) {
      // Envoy's error_detail.message can be huge (a whole rejected route table): cap it before it
      // meets DynamoDB's 400 KB item limit.
      const capped = event.message === undefined ? event : { ...event, message: truncateUtf8(event.message, this.maxMessageBytes) };
      const parsed = EnvoyEventSchema.safeParse(capped);
      if (!parsed.success) {
        const error = `invalid event: ${describeZodIssues(parsed.error.issues)}`;
        this.logger.warn({ table: this.tableName, nodeId: event.nodeId, typeUrl: event.typeUrl, reason: error }, 'refusing to write event');
        failed.push({ event, error, retryable: false });
        continue;
      }
      valid.push({ event, item: toEnvoyEventItem(parsed.data) });
    }
    const { written, unwritten } = await this.putAll(valid, 'events');
    for (const { source, error, retryable } of unwritten) failed.push({ event: source.event, error, retryable });
    return { written, failed };
  }

  async putEventLogs(batches: readonly EventLogBatch[]): Promise<PutEventLogsResult> {
    const failed: PutEventLogsResult['failed'] = [];
    const valid: { batch: EventLogBatch; item: KeyedItem }[] = [];
    for (const batch of batches) {
      const invalid = (error: string) => {
        this.logger.warn({ table: this.tableName, nodeId: batch.nodeId, lineage: batch.lineage, events: batch.events.length, reason: error }, 'refusing to write event-log item');
        failed.push({ batch, error, retryable: false });
      };
      if (batch.nodeId.length === 0 || batch.nodeId.length > MAX_NODE_ID_LENGTH || batch.events.length === 0) {
        invalid('an event-log item needs a node id of 1..1024 characters and at least one event');
        continue;
      }
      const capped = batch.events.map((event) => (event.m === undefined ? event : { ...event, m: truncateUtf8(event.m, this.maxMessageBytes) }));
      const item = toEnvoyEventLogItem(batch.nodeId, batch.lineage, capped);
      const parsed = EnvoyEventLogItemSchema.safeParse(item);
      if (!parsed.success) {
        invalid(`invalid event-log item: ${describeZodIssues(parsed.error.issues)}`);
        continue;
      }
      valid.push({ batch, item });
    }
    const { written, unwritten } = await this.putAll(valid, 'event-log items');
    for (const { source, error, retryable } of unwritten) failed.push({ batch: source.batch, error, retryable });
    return { written, failed };
  }

  /**
   * BatchWrites `entries` (the store's retries included) and attributes what is still unwritten to the
   * entry it came from, so the caller can hand each failure back; only an `UnwrittenItemsError` is
   * turned into per-entry failures, anything else is thrown.
   */
  private async putAll<Source extends { item: KeyedItem }>(
    entries: readonly Source[],
    what: string,
  ): Promise<{ written: number; unwritten: { source: Source; error: string; retryable: boolean }[] }> {
    if (entries.length === 0) return { written: 0, unwritten: [] };
    try {
      await batchPut(this.operations, entries.map((entry) => entry.item), { ...this.batch, tableName: this.tableName });
      return { written: entries.length, unwritten: [] };
    } catch (error) {
      if (!(error instanceof UnwrittenItemsError)) throw error;
      const failureByKey = new Map(error.failures.map((failure) => [keyString(failure.item), failure]));
      const unwritten: { source: Source; error: string; retryable: boolean }[] = [];
      for (const entry of entries) {
        const failure = failureByKey.get(keyString(entry.item));
        if (failure !== undefined) unwritten.push({ source: entry, error: failure.cause, retryable: failure.retryable });
      }
      this.logger.warn({ table: this.tableName, unwritten: failureByKey.size, reasons: error.causes }, `${what} not written after retries; returned to caller`);
      return { written: entries.length - unwritten.length, unwritten };
    }
  }

  async listEnvoyEvents(
    nodeId: string,
    options: PageRequest & { lineage?: string; descending?: boolean } = {},
  ): Promise<Page<EnvoyEvent>> {
    checkNodeId(nodeId);
    if (options.lineage !== undefined && !isValidLineage(options.lineage)) {
      throw new InvalidStoreInputError(`invalid lineage ${JSON.stringify(options.lineage)}`);
    }
    const pk = envoyPartitionKey(nodeId);
    const prefix = envoyEventSkPrefix(options.lineage);
    const descending = options.descending === true;
    // Both formats share the prefix: single-event items (the older format, and putEvents)
    // and event-log items. The listing name is unchanged, so cursors handed out before stay valid.
    const page = await this.queryPartitionItems('EnvoyEvent', pk, prefix, options);
    const events: EnvoyEvent[] = [];
    const corrupt = [...page.corrupt];
    for (const item of page.items) {
      if (item.kind === ITEM_KIND.envoyEvent) events.push(envoyEventFromItem(item));
      else events.push(...item.events.map((event) => fromCarriedEvent(nodeId, event)));
    }
    // The newest events may still ride in the STATE: they come first when descending, last otherwise.
    const carriedPage = descending ? options.cursor === undefined : page.nextCursor === undefined;
    if (carriedPage) {
      const state = await this.getEnvoyState(nodeId);
      if (state.status === 'found') {
        for (const event of state.value.unlogged ?? []) {
          if (options.lineage === undefined || event.l === options.lineage) events.push(fromCarriedEvent(nodeId, event));
        }
      }
    }
    const result: Page<EnvoyEvent> = { items: dedupeEvents(events, descending), corrupt };
    if (page.nextCursor !== undefined) result.nextCursor = page.nextCursor;
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Envoy state

  async getEnvoyState(nodeId: string): Promise<ItemRead<EnvoyState>> {
    checkNodeId(nodeId);
    return this.getRecord('EnvoyState', envoyStateKey(nodeId));
  }

  async updateEnvoyState(state: EnvoyState, expectedRev: number | undefined): Promise<ConditionalWriteResult<EnvoyState>> {
    const capped: EnvoyState = { ...state, types: { ...state.types } };
    for (const [typeUrl, type] of Object.entries(state.types)) {
      if (type.nack !== undefined) {
        capped.types[typeUrl] = { ...type, nack: { ...type.nack, message: truncateUtf8(type.nack.message, this.maxMessageBytes) } };
      }
    }
    if (state.unlogged !== undefined) {
      capped.unlogged = state.unlogged.map((event) => (event.m === undefined ? event : { ...event, m: truncateUtf8(event.m, this.maxMessageBytes) }));
    }
    const parsed = EnvoyStateSchema.safeParse(capped);
    if (!parsed.success) {
      throw new InvalidStoreInputError(`invalid Envoy state for ${state.nodeId}: ${describeZodIssues(parsed.error.issues)}`);
    }
    // An expired state still carrying events must outlive them: they are part of the event log, kept
    // for their own ttl (--event-retention-hours), however soon the state itself may go.
    const carriedTtl = (parsed.data.unlogged ?? []).reduce((largest, event) => Math.max(largest, event.x), 0);
    const ttl =
      parsed.data.status === 'EXPIRED' && this.expiredStateRetentionMs !== undefined
        ? Math.max(ttlEpochSeconds(parsed.data.lastSeenAt, this.expiredStateRetentionMs), carriedTtl)
        : undefined;
    // The sparse index attribute makes this item (and only state items) visible to listEnvoyStates.
    const item: KeyedItem = { ...toEnvoyStateItem(parsed.data, ttl), [ENVOY_STATE_INDEX_KEY]: parsed.data.nodeId };
    // No events carried: no attribute (the item reads back equal to a state that never had any).
    if (parsed.data.unlogged?.length === 0) delete item.unlogged;
    return this.putIfRev(item, parsed.data.rev, expectedRev, () => this.getEnvoyState(parsed.data.nodeId));
  }

  async listEnvoyStates(options: PageRequest & { group?: string } = {}): Promise<Page<EnvoyState>> {
    const limit = pageLimit(options);
    const listing = `envoy-states:${options.group ?? '*'}`;
    const exclusiveStartKey = startKey(options, {
      listing,
      attributes: [PARTITION_KEY, SORT_KEY, ENVOY_STATE_INDEX_KEY],
    });
    const expression = new ExpressionBuilder();
    const filter = options.group === undefined ? undefined : `${expression.name('group')} = ${expression.value(options.group)}`;
    // A Scan of the sparse index reads state items only (O(fleet), not O(table)). Index reads are
    // eventually consistent: a state written a moment ago may be missing or one write behind.
    const output = await this.operations.scan({
      TableName: this.tableName,
      IndexName: ENVOY_STATE_INDEX,
      Limit: limit,
      ExclusiveStartKey: exclusiveStartKey,
      FilterExpression: filter,
      ExpressionAttributeNames: filter === undefined ? undefined : expression.names,
      ExpressionAttributeValues: filter === undefined ? undefined : expression.valuesOrUndefined(),
    });
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => readAs('EnvoyState', raw, this.logger, this.tableName));
  }

  // -------------------------------------------------------------------------------------------
  // Lineages

  async getLineageState(lineage: string): Promise<ItemRead<LineageState>> {
    if (!isValidLineage(lineage)) throw new InvalidStoreInputError(`invalid lineage ${JSON.stringify(lineage)}`);
    return this.getRecord('LineageState', lineageStateKey(lineage));
  }

  async putLineageState(state: LineageState, expectedRev: number | undefined): Promise<ConditionalWriteResult<LineageState>> {
    const parsed = LineageStateSchema.safeParse(state);
    if (!parsed.success) {
      throw new InvalidStoreInputError(`invalid lineage state for ${state.lineage}: ${describeZodIssues(parsed.error.issues)}`);
    }
    return this.putIfRev(toLineageStateItem(parsed.data), parsed.data.rev, expectedRev, () => this.getLineageState(parsed.data.lineage));
  }

  // -------------------------------------------------------------------------------------------
  // Object generations

  putWatermark(ref: ObjectRef, generation: number, lineage: string, watermark: LineageWatermark): Promise<'written' | 'alreadySet'> {
    return writeWatermark(this.context, ref, generation, lineage, watermark);
  }

  async markNotObservable(ref: ObjectRef, generation: number, reason: string, at: number): Promise<void> {
    await setGenerationFields(this.context, ref, generation, at, (expression) => [
      `${expression.name('notObservable')} = ${expression.value(truncateUtf8(reason, this.maxMessageBytes))}`,
    ]);
  }

  async markRejectedByController(ref: ObjectRef, generation: number, message: string, at: number): Promise<void> {
    await setGenerationFields(this.context, ref, generation, at, (expression) => [
      `${expression.name('rejectedByController')} = ${expression.value(truncateUtf8(message, this.maxMessageBytes))}`,
    ]);
  }

  async getObjectGeneration(ref: ObjectRef, generation: number): Promise<ItemRead<ObjectGeneration>> {
    checkObjectGeneration(ref, generation);
    return this.getRecord('ObjectGeneration', objectGenerationKey(ref, generation));
  }

  async listObjectGenerations(ref: ObjectRef, options: PageRequest & { descending?: boolean } = {}): Promise<Page<ObjectGeneration>> {
    checkObjectRef(ref);
    return this.queryPartition('ObjectGeneration', objectPartitionKey(ref), GENERATION_SK_PREFIX, options);
  }

  async recordCondition(ref: ObjectRef, generation: number, condition: Condition, programmedAt?: number, writtenAt?: number): Promise<void> {
    const parsedCondition = ConditionSchema.safeParse(condition);
    if (!parsedCondition.success) {
      throw new InvalidStoreInputError(`invalid condition: ${describeZodIssues(parsedCondition.error.issues)}`);
    }
    if (programmedAt !== undefined && (!Number.isSafeInteger(programmedAt) || programmedAt < 0)) {
      throw new InvalidStoreInputError(`invalid programmedAt ${String(programmedAt)}`);
    }
    if (writtenAt !== undefined && (!Number.isSafeInteger(writtenAt) || writtenAt < 0)) {
      throw new InvalidStoreInputError(`invalid writtenAt ${String(writtenAt)}`);
    }
    await setGenerationFields(this.context, ref, generation, this.clock.now(), (expression) => {
      const sets = [`${expression.name('lastCondition')} = ${expression.value(parsedCondition.data)}`];
      if (writtenAt !== undefined) sets.push(`${expression.name('conditionWrittenAt')} = ${expression.value(writtenAt)}`);
      if (programmedAt !== undefined) {
        // The first programmed time is kept: later re-assertions of the condition must not move it.
        const programmedName = expression.name('programmedAt');
        sets.push(`${programmedName} = if_not_exists(${programmedName}, ${expression.value(programmedAt)})`);
      }
      return sets;
    });
  }

  // -------------------------------------------------------------------------------------------
  // Whole-table scan (resync)

  async scanItems(request: ScanRequest = {}): Promise<Page<TableItem>> {
    const limit = pageLimit(request);
    const { segment, totalSegments } = request;
    if ((segment === undefined) !== (totalSegments === undefined)) {
      throw new InvalidStoreInputError('segment and totalSegments go together');
    }
    if (
      segment !== undefined &&
      totalSegments !== undefined &&
      (!Number.isSafeInteger(totalSegments) || totalSegments < 1 || totalSegments > 1_000_000 ||
        !Number.isSafeInteger(segment) || segment < 0 || segment >= totalSegments)
    ) {
      throw new InvalidStoreInputError(`segment ${String(segment)} of ${String(totalSegments)} is out of range`);
    }
    if (request.kind !== undefined && !(Object.values(ITEM_KIND) as string[]).includes(request.kind)) {
      throw new InvalidStoreInputError(`unknown item kind ${JSON.stringify(request.kind)}`);
    }
    const listing = `scan:${request.kind ?? '*'}:${segment ?? 0}/${totalSegments ?? 1}`;
    const exclusiveStartKey = startKey(request, { listing, attributes: [PARTITION_KEY, SORT_KEY] });
    const expression = new ExpressionBuilder();
    const filter = request.kind === undefined ? undefined : `${expression.name('kind')} = ${expression.value(request.kind)}`;
    const output = await this.operations.scan({
      TableName: this.tableName,
      Limit: limit,
      ExclusiveStartKey: exclusiveStartKey,
      Segment: segment,
      TotalSegments: totalSegments,
      ConsistentRead: true,
      FilterExpression: filter,
      ExpressionAttributeNames: filter === undefined ? undefined : expression.names,
      ExpressionAttributeValues: filter === undefined ? undefined : expression.valuesOrUndefined(),
    });
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => readAny(raw, this.logger, this.tableName));
  }

  // -------------------------------------------------------------------------------------------
  // Helpers

  private async getRecord<K extends ItemKind>(kind: K, key: ItemKey): Promise<ItemRead<RecordOfKind[K]>> {
    // Strongly consistent: these reads precede conditional writes, which must see the latest rev.
    const output = await this.operations.get({ TableName: this.tableName, Key: key, ConsistentRead: true });
    if (output.Item === undefined) return { status: 'missing' };
    const outcome = readAs(kind, output.Item, this.logger, this.tableName);
    if (outcome.ok) return { status: 'found', value: outcome.value };
    const rev = rawRev(output.Item);
    return rev === undefined ? { status: 'corrupt', error: outcome.corrupt.error } : { status: 'corrupt', error: outcome.corrupt.error, rev };
  }

  /**
   * Put `item` iff the stored rev equals `expectedRev` (absent item when undefined). Together with
   * callers writing `expectedRev + 1` this makes rev strictly increasing, so a stale or replayed
   * write (one based on an older read) can never replace newer state: in particular it can never
   * move an acked version backwards. A lost race returns the current value.
   */
  private async putIfRev<T>(
    item: KeyedItem,
    newRev: number,
    expectedRev: number | undefined,
    readCurrent: () => Promise<ItemRead<T>>,
  ): Promise<ConditionalWriteResult<T>> {
    if (expectedRev !== undefined && (!Number.isSafeInteger(expectedRev) || expectedRev < 0)) {
      throw new InvalidStoreInputError(`invalid expectedRev ${String(expectedRev)}`);
    }
    if (newRev <= (expectedRev ?? -1)) {
      throw new InvalidStoreInputError(`rev must increase: writing rev ${newRev} over expected rev ${String(expectedRev)}`);
    }
    const expression = new ExpressionBuilder();
    const condition =
      expectedRev === undefined
        ? `attribute_not_exists(${expression.name(PARTITION_KEY)})`
        : `${expression.name('rev')} = ${expression.value(expectedRev)}`;
    try {
      await this.operations.put({
        TableName: this.tableName,
        Item: item,
        ConditionExpression: condition,
        ExpressionAttributeNames: expression.names,
        ExpressionAttributeValues: expression.valuesOrUndefined(),
      });
      return { ok: true };
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      return { ok: false, reason: 'conflict', current: await readCurrent() };
    }
  }

  /** One Query page of the event prefix, every item validated as a single event or an event-log item. */
  private async queryPartitionItems(
    listingKind: string,
    pk: string,
    skPrefix: string,
    options: PageRequest & { descending?: boolean },
  ): Promise<Page<EnvoyEventItem | EnvoyEventLogItem>> {
    const { output, listing } = await this.queryPrefix(listingKind, pk, skPrefix, options);
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => readEventItem(raw, this.logger, this.tableName));
  }

  private async queryPartition<K extends ItemKind>(
    kind: K,
    pk: string,
    skPrefix: string,
    options: PageRequest & { descending?: boolean },
  ): Promise<Page<RecordOfKind[K]>> {
    const { output, listing } = await this.queryPrefix(kind, pk, skPrefix, options);
    return toPage(output.Items, output.LastEvaluatedKey, listing, (raw) => readAs(kind, raw, this.logger, this.tableName));
  }

  private async queryPrefix(
    listingKind: string,
    pk: string,
    skPrefix: string,
    options: PageRequest & { descending?: boolean },
  ): Promise<{ output: { Items?: Record<string, unknown>[]; LastEvaluatedKey?: Record<string, unknown> }; listing: string }> {
    const limit = pageLimit(options);
    const listing = `query:${listingKind}:${options.descending === true ? 'desc' : 'asc'}`;
    const exclusiveStartKey = startKey(options, {
      listing,
      attributes: [PARTITION_KEY, SORT_KEY],
      check: (key) =>
        key[PARTITION_KEY] !== pk || !(key[SORT_KEY] ?? '').startsWith(skPrefix) ? 'it is from another partition or prefix' : undefined,
    });
    const expression = new ExpressionBuilder();
    const output = await this.operations.query({
      TableName: this.tableName,
      KeyConditionExpression: `${expression.name(PARTITION_KEY)} = ${expression.value(pk)} AND begins_with(${expression.name(SORT_KEY)}, ${expression.value(skPrefix)})`,
      ExpressionAttributeNames: expression.names,
      ExpressionAttributeValues: expression.values,
      ScanIndexForward: options.descending !== true,
      Limit: limit,
      ExclusiveStartKey: exclusiveStartKey,
      ConsistentRead: true,
    });
    return { output, listing };
  }
}

/** Convenience: the deterministic key of an event, e.g. for tests and idempotency checks. */
export function eventKeyOf(event: EnvoyEvent): ItemKey {
  return envoyEventKey(event.nodeId, { lineage: event.lineage, seq: event.seq }, event.typeUrl, event.outcome);
}
