// DynamoDB adapter of the AggregateStore port (common/core/aggregate-ports.ts): lineage aggregate
// shards, the lineage registry, the pending index, and decisions on OBJECT generation items.
// No transactions (dynalite has none): every write is one item, conditional on a version attribute
// (optimistic locking) or idempotent by key.
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';

import {
  advanceTableClock,
  DecisionSchema,
  type AggregateShard,
  type AggregateStore,
  type Decision,
  type ItemRead,
  type LineageRegistry,
  type ObjectRef,
  type OptimisticWrite,
  type Page,
  type PageRequest,
  type PendingEntry,
  type TableClock,
} from '../core';
import { AggregateShardItemSchema, LineageRegistryItemSchema, PendingGenerationItemSchema } from './items';
import { DECISION_ATTRIBUTE, ITEM_KIND, LINEAGE_REGISTRY_KEY, SCHEMA_VERSION, SHARD_SK_PREFIX, aggregateShardKey, objectGenerationKey, pendingKey, PENDING_PK_PREFIX, AGGREGATE_PK_PREFIX } from './table-layout';
import { describeZodIssues, isConditionalCheckFailed } from './errors';
import type { StoreLogger } from './logger';
import type { DocumentOperations } from './operations';
import { decodePageToken, nextPageToken, type ListingKeyRules } from './page-token';

const PENDING_KIND = ITEM_KIND.pendingGeneration;
const REGISTRY_KIND = ITEM_KIND.lineageRegistry;
/** Hours a pending entry marked done lives when deleting it failed (DynamoDB TTL removes it). */
const DONE_ENTRY_TTL_SECONDS = 3600;
/** The pending listing's page tokens (page-token.ts, the one format): a key of the listed lineage's partition. */
const PENDING_LISTING = 'pending';
function pendingListingRules(pk: string): ListingKeyRules {
  return { listing: PENDING_LISTING, attributes: ['pk', 'sk'], check: (key) => (key['pk'] === pk ? undefined : 'key is outside the listed lineage') };
}

export interface DynamoAggregateStoreOptions {
  tableName: string;
  operations: DocumentOperations;
  logger: StoreLogger;
}

/**
 * Shards this store parsed or wrote, by key, with the item's JSON text. A shard item read again with
 * the same version and the same text is the content already validated, so its zod validation (~1 ms
 * per 1,000 members; comparing the text ~0.3 ms) is skipped. A batch reads each shard it updates and
 * then every shard again to evaluate; parsing them was the largest single cost of a convergence batch
 * at 1,000 Envoys (~6% of the local system process during a change, docs/bench/README.md). Any other item (a newer
 * version, a corrupt one) differs in text and is validated as before. Cached shards are frozen: the
 * core never mutates them, and a mutation would now throw.
 */
class ShardCache {
  private readonly entries = new Map<string, { v: unknown; text: string; shard: AggregateShard }>();
  /** Reads answered without validation (diagnostics and tests). */
  hits = 0;
  constructor(private readonly maxEntries = 4096) {}

  get(raw: Record<string, unknown>): AggregateShard | undefined {
    const entry = this.entries.get(`${String(raw['pk'])}|${String(raw['sk'])}`);
    if (entry === undefined || entry.v !== raw['v'] || JSON.stringify(raw) !== entry.text) return undefined;
    this.hits++;
    return entry.shard;
  }

  remember(item: Record<string, unknown>, shard: AggregateShard): void {
    const key = `${String(item['pk'])}|${String(item['sk'])}`;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { v: item['v'], text: JSON.stringify(item), shard: deepFreeze(shard) });
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

export class DynamoAggregateStore implements AggregateStore {
  private readonly shardCache = new ShardCache();
  /** Shard reads that skipped validation: the same version and text as one already parsed or written. */
  get shardParsesSkipped(): number {
    return this.shardCache.hits;
  }
  private readonly tableName: string;
  private readonly operations: DocumentOperations;
  private readonly logger: StoreLogger;
  constructor(options: DynamoAggregateStoreOptions) {
    this.tableName = options.tableName;
    this.operations = options.operations;
    this.logger = options.logger;
  }

  private parseShard(raw: Record<string, unknown>): { ok: true; shard: AggregateShard } | { ok: false; error: string } {
    const cached = this.shardCache.get(raw);
    if (cached !== undefined) return { ok: true, shard: cached };
    // The same validation as parseItem (items.ts) (kind, schemaVersion, fields); the key is the query's.
    const parsed = AggregateShardItemSchema.safeParse(raw);
    if (parsed.success) {
      const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...shard } = parsed.data;
      this.shardCache.remember(raw, shard);
      return { ok: true, shard };
    }
    const error = `shard ${String(raw['pk'])} / ${String(raw['sk'])}: ${describeZodIssues(parsed.error.issues)}`;
    this.logger.warn({ table: this.tableName, key: { pk: raw['pk'], sk: raw['sk'] }, reason: error }, 'skipping invalid aggregate shard');
    return { ok: false, error };
  }

  async getLineageShards(lineage: string): Promise<{ shards: AggregateShard[]; corrupt: { shard: string; error: string }[] }> {
    const shards: AggregateShard[] = [];
    const corrupt: { shard: string; error: string }[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.operations.query({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': `${AGGREGATE_PK_PREFIX}${lineage}`, ':prefix': SHARD_SK_PREFIX },
        ConsistentRead: true,
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      });
      for (const raw of page.Items ?? []) {
        const parsed = this.parseShard(raw);
        if (parsed.ok) shards.push(parsed.shard);
        else corrupt.push({ shard: String(raw['sk']), error: parsed.error });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return { shards, corrupt };
  }

  async getShard(lineage: string, shard: number): Promise<ItemRead<AggregateShard>> {
    const result = await this.operations.get({ TableName: this.tableName, Key: aggregateShardKey(lineage, shard), ConsistentRead: true });
    if (result.Item === undefined) return { status: 'missing' };
    const parsed = this.parseShard(result.Item);
    if (parsed.ok) return { status: 'found', value: parsed.shard };
    const v = result.Item['v'];
    return { status: 'corrupt', error: parsed.error, ...(typeof v === 'number' ? { rev: v } : {}) };
  }

  async putShard(shard: AggregateShard, expectedV: number | undefined): Promise<OptimisticWrite> {
    const item = { ...aggregateShardKey(shard.lineage, shard.shard), kind: ITEM_KIND.aggregateShard, schemaVersion: SCHEMA_VERSION, ...shard };
    const outcome = await this.conditionalPut(item, expectedV);
    // What we stored is what the next read of this version returns (if its text comes back the same).
    if (outcome === 'written') this.shardCache.remember(item, shard);
    return outcome;
  }

  async getLineageRegistry(): Promise<LineageRegistry> {
    const result = await this.operations.get({ TableName: this.tableName, Key: LINEAGE_REGISTRY_KEY, ConsistentRead: true });
    if (result.Item === undefined) return { v: 0, lineages: {} };
    const parsed = LineageRegistryItemSchema.safeParse(result.Item);
    if (parsed.success) return { v: parsed.data.v, lineages: parsed.data.lineages, ...(parsed.data.clock === undefined ? {} : { clock: parsed.data.clock }) };
    // A bad clock alone costs only the clock: staleness on wall time until expire's next tick writes a
    // fresh one (core advanceTableClock starts over from no clock), the lineages are kept.
    const withoutClock = LineageRegistryItemSchema.safeParse({ ...result.Item, clock: undefined });
    if (withoutClock.success) {
      this.logger.warn({ table: this.tableName, key: LINEAGE_REGISTRY_KEY, reason: describeZodIssues(parsed.error.issues) }, 'lineage registry: its table clock is invalid; ignored until the next expire tick rewrites it');
      return { v: withoutClock.data.v, lineages: withoutClock.data.lineages };
    }
    // A corrupt registry is rebuilt from LINEAGE records and resync; start over from its version.
    this.logger.warn({ table: this.tableName, key: LINEAGE_REGISTRY_KEY, reason: describeZodIssues(parsed.error.issues) }, 'lineage registry is invalid; treating it as empty');
    const v = result.Item['v'];
    return { v: typeof v === 'number' ? v : 0, lineages: {} };
  }

  async putLineageRegistry(registry: LineageRegistry, expectedV: number | undefined): Promise<OptimisticWrite> {
    return this.conditionalPut({ ...LINEAGE_REGISTRY_KEY, kind: REGISTRY_KIND, schemaVersion: SCHEMA_VERSION, ...registry }, expectedV);
  }

  private async conditionalPut(item: Record<string, unknown>, expectedV: number | undefined): Promise<OptimisticWrite> {
    try {
      await this.operations.put({
        TableName: this.tableName,
        Item: item,
        ...(expectedV === undefined
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: '#v = :expected', ExpressionAttributeNames: { '#v': 'v' }, ExpressionAttributeValues: { ':expected': expectedV } }),
      });
      return 'written';
    } catch (error) {
      if (isConditionalCheckFailed(error)) return 'conflict';
      throw error;
    }
  }

  /** Idempotent (conditional on absence, so a legacy entry marked done is not re-opened). */
  async putPending(entry: PendingEntry): Promise<void> {
    try {
      await this.operations.put({
        TableName: this.tableName,
        Item: { ...pendingKey(entry.lineage, entry.seq, entry.object, entry.generation), kind: PENDING_KIND, schemaVersion: SCHEMA_VERSION, ...entry, object: plainRef(entry.object) },
        ConditionExpression: 'attribute_not_exists(pk)',
      });
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
  }

  /**
   * Deletes a resolved entry (DeleteItem). A replayed watermark record may re-create it; evaluation
   * then finds the generation already decided (Programmed is final, superseded stays superseded) and
   * deletes it again. If the delete fails, the entry is marked done with a TTL as a fallback, so it is
   * no longer listed and DynamoDB's TTL removes it; if that fails too, the error propagates (the
   * caller's record is retried).
   */
  async deletePending(entry: PendingEntry): Promise<void> {
    const key = pendingKey(entry.lineage, entry.seq, entry.object, entry.generation);
    try {
      await this.operations.delete({ TableName: this.tableName, Key: key });
      return;
    } catch (error) {
      this.logger.warn({ table: this.tableName, key, err: error }, 'deleting a pending entry failed; marking it done with a TTL instead');
    }
    await this.operations.update({
      TableName: this.tableName,
      Key: key,
      UpdateExpression: 'SET #done = :true, #ttl = :ttl',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#done': 'done', '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':true': true, ':ttl': Math.ceil(Date.now() / 1000) + DONE_ENTRY_TTL_SECONDS },
    }).catch((error: unknown) => {
      if (!isConditionalCheckFailed(error)) throw error;
    });
  }

  async listPending(lineage: string, page: PageRequest = {}): Promise<Page<PendingEntry>> {
    const pendingPk = `${PENDING_PK_PREFIX}${lineage}`;
    const result = await this.operations.query({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: 'attribute_not_exists(#done)',
      ExpressionAttributeNames: { '#done': 'done' },
      ExpressionAttributeValues: { ':pk': pendingPk },
      Limit: page.limit ?? 200,
      ...(page.cursor === undefined ? {} : { ExclusiveStartKey: decodePageToken(page.cursor, pendingListingRules(pendingPk)) }),
    });
    const items: PendingEntry[] = [];
    const corrupt: { key: { pk: string; sk: string }; error: string }[] = [];
    for (const raw of result.Items ?? []) {
      const parsed = PendingGenerationItemSchema.safeParse(raw);
      if (parsed.success) items.push({ lineage: parsed.data.lineage, seq: parsed.data.seq, object: parsed.data.object, generation: parsed.data.generation });
      else {
        const key = { pk: String(raw['pk']), sk: String(raw['sk']) };
        const error = `pending ${key.pk} / ${key.sk}: ${describeZodIssues(parsed.error.issues)}`;
        this.logger.warn({ table: this.tableName, key, reason: error }, 'skipping invalid pending entry');
        corrupt.push({ key, error });
      }
    }
    const nextCursor = nextPageToken(PENDING_LISTING, result.LastEvaluatedKey);
    return { items, corrupt, ...(nextCursor === undefined ? {} : { nextCursor }) };
  }

  async writeDecision(ref: ObjectRef, generation: number, decision: Decision): Promise<'written' | 'stale' | 'missing'> {
    const checked = DecisionSchema.parse(decision);
    try {
      await this.operations.update({
        TableName: this.tableName,
        Key: objectGenerationKey(ref, generation),
        UpdateExpression: 'SET #d = :d',
        ...decisionFreshnessCondition(checked),
      });
      return 'written';
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const existing = await this.operations.get({ TableName: this.tableName, Key: objectGenerationKey(ref, generation), ProjectionExpression: 'pk', ConsistentRead: true });
    return existing.Item === undefined ? 'missing' : 'stale';
  }
}

/** Most lineages one decision write checks (a DynamoDB condition expression is at most 4 KB). */
export const MAX_FRESHNESS_LINEAGES = 30;

/**
 * The write condition of a decision: core `isStaleDecision` as a DynamoDB condition. A stored decision
 * without a numeric evaluatedRev is invalid (readers drop it): it is replaced, or the generation could
 * never be decided again. A stored Programmed decision is final unless ours supersedes it. With
 * per-lineage revs: the stored registry version must not be newer than ours, and each lineage ours
 * read must not be behind the stored decision's entry for it (beyond MAX_FRESHNESS_LINEAGES, the
 * most-written ones are checked: a weaker race guard, never a refused newer decision).
 */
function decisionFreshnessCondition(decision: Decision): Pick<UpdateCommandInput, 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'> {
  const names: Record<string, string> = { '#d': DECISION_ATTRIBUTE, '#er': 'evaluatedRev' };
  const values: Record<string, unknown> = { ':d': decision, ':number': 'N' };
  const invalidOrAbsent = 'attribute_not_exists(#d) OR NOT attribute_type(#d.#er, :number)';
  const guards: string[] = [];
  if (decision.supersededBy === undefined) {
    names['#st'] = 'state';
    names['#sb'] = 'supersededBy';
    values[':programmed'] = 'Programmed';
    guards.push('(#d.#st <> :programmed OR attribute_exists(#d.#sb))');
  }
  if (decision.evaluatedRevs === undefined) {
    // Written without per-lineage revs (before they existed): the totals decide.
    values[':rev'] = decision.evaluatedRev;
    guards.push('(#d.#er <= :rev)');
    return {
      ConditionExpression: `attribute_exists(pk) AND (${invalidOrAbsent} OR ${guards.length === 1 ? '#d.#er <= :rev' : `(${guards.join(' AND ')})`})`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }
  names['#ers'] = 'evaluatedRevs';
  names['#rg'] = 'registryVersion';
  values[':rg'] = decision.registryVersion ?? 0;
  guards.push('(attribute_not_exists(#d.#ers) OR attribute_not_exists(#d.#rg) OR #d.#rg <= :rg)');
  const checked = Object.entries(decision.evaluatedRevs)
    .sort(([la, ra], [lb, rb]) => rb - ra || (la < lb ? -1 : la > lb ? 1 : 0))
    .slice(0, MAX_FRESHNESS_LINEAGES);
  checked.forEach(([lineage, rev], index) => {
    names[`#l${index}`] = lineage;
    values[`:r${index}`] = rev;
    guards.push(`(attribute_not_exists(#d.#ers) OR attribute_not_exists(#d.#ers.#l${index}) OR #d.#ers.#l${index} <= :r${index})`);
  });
  return {
    // DynamoDB refuses redundant parentheses: a single guard is already parenthesised.
    ConditionExpression: `attribute_exists(pk) AND (${invalidOrAbsent} OR ${guards.length === 1 ? guards[0] : `(${guards.join(' AND ')})`})`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

function plainRef(ref: ObjectRef): ObjectRef {
  return { group: ref.group, kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

const MAX_REGISTRY_ATTEMPTS = 10;

/**
 * The one read-change-write of the lineage registry: `change` gets the registry as read and returns
 * what it should become (its `v` is set here), or undefined when nothing changes; the put is
 * conditional on the version read and retried on conflict. Returns the registry as it now stands.
 */
export async function updateLineageRegistry(aggregates: AggregateStore, change: (registry: LineageRegistry) => Omit<LineageRegistry, 'v'> | undefined): Promise<LineageRegistry> {
  for (let attempt = 1; attempt <= MAX_REGISTRY_ATTEMPTS; attempt++) {
    const registry = await aggregates.getLineageRegistry();
    const changed = change(registry);
    if (changed === undefined) return registry;
    const next: LineageRegistry = { ...changed, v: registry.v + 1 };
    // The registry is written from v 1 on, so v 0 means "absent": create it.
    if ((await aggregates.putLineageRegistry(next, registry.v === 0 ? undefined : registry.v)) === 'written') return next;
  }
  throw new Error(`lineage registry: still conflicting after ${MAX_REGISTRY_ATTEMPTS} attempts`);
}

/**
 * Raises the registry's heartbeat of each lineage to at least the given time. Used by the convergence
 * function for LINEAGE records and by the gateway to register a new lineage before it writes any state on it.
 */
export async function registerLineageHeartbeats(aggregates: AggregateStore, heartbeats: ReadonlyMap<string, number>): Promise<void> {
  await updateLineageRegistry(aggregates, (registry) => {
    const lineages = { ...registry.lineages };
    let changed = false;
    for (const [lineage, heartbeatAt] of heartbeats) {
      if ((lineages[lineage] ?? -1) < heartbeatAt) {
        lineages[lineage] = heartbeatAt;
        changed = true;
      }
    }
    return changed ? { ...registry, lineages } : undefined;
  });
}

/** Records an expire tick that completed at `now` in the registry's table clock (core advanceTableClock). Returns the clock as stored. */
export async function recordExpireTick(aggregates: AggregateStore, now: number, options: { stallMs: number; ttlMs: number }): Promise<TableClock> {
  const stored = await updateLineageRegistry(aggregates, (registry) => {
    const clock = advanceTableClock(registry.clock, now, options);
    // A tick that started later already advanced it (overlapping invocations).
    return clock === registry.clock ? undefined : { ...registry, clock };
  });
  return stored.clock ?? advanceTableClock(undefined, now, options);
}
