// Storage codecs of the table's items (docs/ARCHITECTURE.md, "Data"): each item is its key, `kind`,
// `schemaVersion` and the model's record (common/core) flat, validated by the zod schemas below.
// Every item read back goes through `parseItem`: a corrupt or unknown item becomes a reported error
// with its key, never an exception, so one bad item cannot stop a batch or a resync.
import { z } from 'zod';

import {
  AggregateShardSchema,
  DecisionSchema,
  EnvoyEventSchema,
  EnvoyStateSchema,
  LineageStateSchema,
  MAX_EVENTS_PER_ITEM,
  ObjectGenerationSchema,
  ObjectRefSchema,
  CarriedEventSchema,
  epochMsSchema,
  MAX_TABLE_GAPS,
  generationSchema,
  lineageSchema,
  nackCarriesMessage,
  nodeIdSchema,
  seqSchema,
  type CarriedEvent,
  type EnvoyEvent,
  type EnvoyState,
  type ItemKey,
  type Lineage,
  type LineageState,
  type ObjectGeneration,
} from '../core';
import {
  ATTR,
  CONDITION_RESYNC_CURSOR_KEY,
  DECISION_ATTRIBUTE,
  ITEM_KIND,
  LINEAGE_REGISTRY_KEY,
  SCHEMA_VERSION,
  aggregateShardKey,
  envoyEventKey,
  envoyStateKey,
  eventLogKeyOf,
  lineageProgressKey,
  versionLogChunkKey,
  versionLogMemberKey,
  lineageStateKey,
  objectGenerationKey,
  pendingKey,
} from './table-layout';
import { LineageProgressItemSchema, type LineageProgressItem } from './progress-item';
import { VersionLogChunkItemSchema, VersionLogMemberItemSchema, type VersionLogChunkItem, type VersionLogMemberItem } from './version-log-item';

// --- The lineage registry and the pending index (records of core aggregate-ports.ts)

const lineageRegistryShape = {
  v: z.number().int().nonnegative(),
  /** Lineage → last heartbeat (epoch ms). */
  lineages: z.record(z.string(), epochMsSchema),
  /** The readers' table clock (core table-clock.ts), written by the expire function. */
  clock: z
    .object({
      tickAt: epochMsSchema,
      gaps: z.array(z.object({ from: epochMsSchema, to: epochMsSchema }).refine((gap) => gap.from <= gap.to, { message: 'a gap ends before it starts' })).max(MAX_TABLE_GAPS),
    })
    .optional(),
};
export const LineageRegistrySchema = z.object(lineageRegistryShape);

const pendingGenerationShape = {
  lineage: lineageSchema,
  seq: seqSchema,
  object: ObjectRefSchema,
  generation: generationSchema,
  /** Legacy resolution marker (entries are deleted now); such entries are not listed. */
  done: z.boolean().optional(),
  ttl: z.number().int().positive().optional(),
};
export const PendingGenerationSchema = z.object(pendingGenerationShape);
// ---------------------------------------------------------------------------------------------
// Items: key + kind + schemaVersion + the record, flat. An item is structurally also its record, so
// adapters can return a parsed item where the record type is expected.

const itemBase = {
  pk: z.string().min(1),
  sk: z.string().min(1),
  schemaVersion: z.literal(SCHEMA_VERSION),
};

export const EnvoyStateItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.envoyState), ...EnvoyStateSchema.shape, ttl: z.number().int().positive().optional() });
export type EnvoyStateItem = z.infer<typeof EnvoyStateItemSchema>;

export const EnvoyEventItemSchema = z
  .object({ ...itemBase, kind: z.literal(ITEM_KIND.envoyEvent), ...EnvoyEventSchema.shape })
  .refine(nackCarriesMessage, { message: 'a NACK event must carry the Envoy message', path: ['message'] });
export type EnvoyEventItem = z.infer<typeof EnvoyEventItemSchema>;

const envoyEventLogShape = {
  nodeId: nodeIdSchema,
  lineage: lineageSchema,
  /** The events, each on `lineage`, in the order they were logged. */
  events: z.array(CarriedEventSchema).min(1).max(MAX_EVENTS_PER_ITEM),
  /** Epoch seconds: the largest of the events' ttl. */
  ttl: z.number().int().positive(),
};
export const EnvoyEventLogItemSchema = z
  .object({ ...itemBase, kind: z.literal(ITEM_KIND.envoyEventLog), ...envoyEventLogShape })
  .refine((item) => item.events.every((event) => event.l === item.lineage), { message: 'every event must be on the item lineage', path: ['events'] });
export type EnvoyEventLogItem = z.infer<typeof EnvoyEventLogItemSchema>;

export const ObjectGenerationItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.objectGeneration), ...ObjectGenerationSchema.shape });
export type ObjectGenerationItem = z.infer<typeof ObjectGenerationItemSchema>;

export const LineageStateItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.lineageState), ...LineageStateSchema.shape });
export type LineageStateItem = z.infer<typeof LineageStateItemSchema>;

export const AggregateShardItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.aggregateShard), ...AggregateShardSchema.shape });
export type AggregateShardItem = z.infer<typeof AggregateShardItemSchema>;

export const LineageRegistryItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.lineageRegistry), ...lineageRegistryShape });
export type LineageRegistryItem = z.infer<typeof LineageRegistryItemSchema>;

export const PendingGenerationItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.pendingGeneration), ...pendingGenerationShape });
export type PendingGenerationItem = z.infer<typeof PendingGenerationItemSchema>;

// --- Resync's condition-pass cursor

/** A table key as the resync scan resumes from it (every key attribute of the table is a string). */
export const ScanKeySchema = z.object({ pk: z.string().min(1), sk: z.string().min(1) });
export type ScanKey = z.infer<typeof ScanKeySchema>;

const conditionResyncCursorShape = {
  /** Where the next run's scan starts; null: from the beginning (the last pass completed). */
  startKey: ScanKeySchema.nullable(),
  /** When it was saved (epoch ms). */
  updatedAt: epochMsSchema,
};
export const ConditionResyncCursorItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.conditionResyncCursor), ...conditionResyncCursorShape });
export type ConditionResyncCursorItem = z.infer<typeof ConditionResyncCursorItemSchema>;
export type ConditionResyncCursor = Pick<ConditionResyncCursorItem, 'startKey' | 'updatedAt'>;

export function toConditionResyncCursorItem(startKey: ScanKey | undefined, updatedAt: number): ConditionResyncCursorItem {
  return { ...CONDITION_RESYNC_CURSOR_KEY, kind: ITEM_KIND.conditionResyncCursor, schemaVersion: SCHEMA_VERSION, startKey: startKey ?? null, updatedAt };
}

export type TableItem =
  | EnvoyStateItem
  | EnvoyEventItem
  | EnvoyEventLogItem
  | ObjectGenerationItem
  | LineageStateItem
  | AggregateShardItem
  | LineageRegistryItem
  | PendingGenerationItem
  | ConditionResyncCursorItem
  /** Its schema and codec are progress-item.ts's (the ProgressStore adapter's own item). */
  | LineageProgressItem
  /** Schemas and codecs in version-log-item.ts (the VersionLog adapter's own items). */
  | VersionLogChunkItem
  | VersionLogMemberItem;

export function toEnvoyStateItem(state: EnvoyState, ttl?: number): EnvoyStateItem {
  return { ...envoyStateKey(state.nodeId), kind: ITEM_KIND.envoyState, schemaVersion: SCHEMA_VERSION, ...state, ...(ttl === undefined ? {} : { ttl }) };
}

export function toEnvoyEventItem(event: EnvoyEvent): EnvoyEventItem {
  const key = envoyEventKey(event.nodeId, { lineage: event.lineage, seq: event.seq }, event.typeUrl, event.outcome);
  return { ...key, kind: ITEM_KIND.envoyEvent, schemaVersion: SCHEMA_VERSION, ...event };
}

export function toObjectGenerationItem(record: ObjectGeneration): ObjectGenerationItem {
  return { ...objectGenerationKey(record.object, record.generation), kind: ITEM_KIND.objectGeneration, schemaVersion: SCHEMA_VERSION, ...record };
}

export function toLineageStateItem(state: LineageState): LineageStateItem {
  return { ...lineageStateKey(state.lineage), kind: ITEM_KIND.lineageState, schemaVersion: SCHEMA_VERSION, ...state };
}

/** Strips key attributes, giving back the record an item stores. */
export function envoyStateFromItem(item: EnvoyStateItem): EnvoyState {
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ttl: _ttl, ...state } = item;
  return state;
}

export function envoyEventFromItem(item: EnvoyEventItem): EnvoyEvent {
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...event } = item;
  return event;
}

export function objectGenerationFromItem(item: ObjectGenerationItem): ObjectGeneration {
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...record } = item;
  return record;
}

export function lineageStateFromItem(item: LineageStateItem): LineageState {
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...state } = item;
  return state;
}

/** The item that logs `events` (one lineage, 1..MAX_EVENTS_PER_ITEM events; common/core/event-log.ts groups them). */
export function toEnvoyEventLogItem(nodeId: string, lineage: Lineage, events: readonly CarriedEvent[]): EnvoyEventLogItem {
  const ttl = events.reduce((largest, event) => Math.max(largest, event.x), 1);
  return { ...eventLogKeyOf(nodeId, lineage, events), kind: ITEM_KIND.envoyEventLog, schemaVersion: SCHEMA_VERSION, nodeId, lineage, events: [...events], ttl };
}

// ---------------------------------------------------------------------------------------------
// Reading items back

export type ParsedItem =
  /** `warnings`: parts dropped leniently (e.g. an invalid stored decision); the reader logs them. */
  | { ok: true; item: TableItem; warnings?: string[] }
  | { ok: false; error: string; key?: ItemKey };

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(item)'}: ${issue.message}`)
    .join('; ') + (error.issues.length > 5 ? `; and ${error.issues.length - 5} more` : '');
}

function expectedKey(item: TableItem): ItemKey {
  switch (item.kind) {
    case ITEM_KIND.envoyState:
      return envoyStateKey(item.nodeId);
    case ITEM_KIND.envoyEvent:
      return envoyEventKey(item.nodeId, { lineage: item.lineage, seq: item.seq }, item.typeUrl, item.outcome);
    case ITEM_KIND.envoyEventLog:
      return eventLogKeyOf(item.nodeId, item.lineage, item.events);
    case ITEM_KIND.objectGeneration:
      return objectGenerationKey(item.object, item.generation);
    case ITEM_KIND.lineageState:
      return lineageStateKey(item.lineage);
    case ITEM_KIND.aggregateShard:
      return aggregateShardKey(item.lineage, item.shard);
    case ITEM_KIND.lineageRegistry:
      return LINEAGE_REGISTRY_KEY;
    case ITEM_KIND.pendingGeneration:
      return pendingKey(item.lineage, item.seq, item.object, item.generation);
    case ITEM_KIND.conditionResyncCursor:
      return CONDITION_RESYNC_CURSOR_KEY;
    case ITEM_KIND.lineageProgress:
      return lineageProgressKey(item.lineage);
    case ITEM_KIND.versionLogChunk:
      return versionLogChunkKey(item.lineage, item.typeUrl, item.seq, item.chunk);
    case ITEM_KIND.versionLogMember:
      return versionLogMemberKey(item.nodeId, item.lineage, item.member);
  }
}

/**
 * Validates an item as read from the table (already unmarshalled to plain JS). Unknown kinds, other
 * schema versions, bad fields and keys that disagree with the item's content are all reported as
 * `{ ok: false, error }` with the key when there is one. Never throws.
 */
export function parseItem(raw: Record<string, unknown>): ParsedItem {
  const pk = raw[ATTR.pk];
  const sk = raw[ATTR.sk];
  if (typeof pk !== 'string' || typeof sk !== 'string') {
    return { ok: false, error: 'item has no string pk/sk' };
  }
  const key = { pk, sk };
  const where = `item ${pk} / ${sk}`;
  const schemaVersion = raw[ATTR.schemaVersion];
  if (schemaVersion !== SCHEMA_VERSION) {
    return { ok: false, key, error: `${where}: unsupported schemaVersion ${JSON.stringify(schemaVersion) ?? 'undefined'} (this reader knows ${SCHEMA_VERSION})` };
  }
  const kind = raw[ATTR.kind];
  const warnings: string[] = [];
  let result: z.ZodSafeParseResult<TableItem>;
  switch (kind) {
    case ITEM_KIND.envoyState:
      result = EnvoyStateItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.envoyEvent:
      result = EnvoyEventItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.envoyEventLog:
      result = EnvoyEventLogItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.objectGeneration: {
      // A stored decision is derived data (convergence re-decides it): one that fails validation is
      // dropped with a warning instead of making the generation's watermarks unreadable forever.
      const decision = raw[DECISION_ATTRIBUTE];
      if (decision !== undefined) {
        const checked = DecisionSchema.safeParse(decision);
        if (!checked.success) {
          warnings.push(`${where}: invalid stored decision dropped (it is re-decided): ${describeIssues(checked.error)}`);
          const { [DECISION_ATTRIBUTE]: _dropped, ...rest } = raw;
          result = ObjectGenerationItemSchema.safeParse(rest);
          break;
        }
      }
      result = ObjectGenerationItemSchema.safeParse(raw);
      break;
    }
    case ITEM_KIND.lineageState:
      result = LineageStateItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.aggregateShard:
      result = AggregateShardItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.lineageRegistry:
      result = LineageRegistryItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.pendingGeneration:
      result = PendingGenerationItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.conditionResyncCursor:
      result = ConditionResyncCursorItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.lineageProgress:
      result = LineageProgressItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.versionLogChunk:
      result = VersionLogChunkItemSchema.safeParse(raw);
      break;
    case ITEM_KIND.versionLogMember:
      result = VersionLogMemberItemSchema.safeParse(raw);
      break;
    default:
      return { ok: false, key, error: `${where}: unknown kind ${JSON.stringify(kind) ?? 'undefined'}` };
  }
  if (!result.success) return { ok: false, key, error: `${where}: ${describeIssues(result.error)}` };
  const expected = expectedKey(result.data);
  if (expected.pk !== pk || expected.sk !== sk) {
    return { ok: false, key, error: `${where}: key does not match content (expected ${expected.pk} / ${expected.sk})` };
  }
  return warnings.length > 0 ? { ok: true, item: result.data, warnings } : { ok: true, item: result.data };
}
