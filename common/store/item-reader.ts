// Turning raw items read from the table into the core's records. Every item is validated with
// parseItem (items.ts); an item that fails (corrupt, unknown kind, other schema version, or a kind the
// listing did not ask for) is logged with its key and the reason and reported, never thrown, so one
// bad item cannot break a listing (docs/ARCHITECTURE.md, "Data").
import {
  type CorruptItem,
  type EnvoyEvent,
  type EnvoyState,
  type LineageProgress,
  type LineageState,
  type ObjectGeneration,
  type AggregateShard,
  type LineageRegistry,
  type PendingEntry,
  type VersionLogMember,
} from '../core';
import { ITEM_KIND, type ItemKind } from './table-layout';
import { envoyEventFromItem, envoyStateFromItem, lineageStateFromItem, objectGenerationFromItem, parseItem, type ConditionResyncCursor, type EnvoyEventItem, type EnvoyEventLogItem, type TableItem } from './items';
import type { StoreLogger } from './logger';
import type { VersionLogChunkItem } from './version-log-item';

/** The record each item kind stores (what the ports hand out). */
export interface RecordOfKind {
  EnvoyState: EnvoyState;
  EnvoyEvent: EnvoyEvent;
  /** An event-log item's record: one Envoy's events on one lineage (common/core/event-log.ts). */
  EnvoyEventLog: Omit<EnvoyEventLogItem, 'pk' | 'sk' | 'kind' | 'schemaVersion'>;
  ObjectGeneration: ObjectGeneration;
  LineageState: LineageState;
  LineageAggregateShard: AggregateShard;
  LineageRegistry: LineageRegistry;
  PendingGeneration: PendingEntry & { done?: boolean };
  ResyncConditionsCursor: ConditionResyncCursor;
  LineageProgress: LineageProgress;
  /** A chunk as stored: its header and encoded entries (the VersionLog port decodes them: version-log-item.ts). */
  VersionLogChunk: Omit<VersionLogChunkItem, 'pk' | 'sk' | 'kind' | 'schemaVersion' | 'ttl'>;
  VersionLogMember: VersionLogMember;
}

/** The record of an aggregate-side item: the item without its key and bookkeeping attributes. */
function withoutItemKeys<T extends { pk: string; sk: string; kind: string; schemaVersion: number }>(item: T): Omit<T, 'pk' | 'sk' | 'kind' | 'schemaVersion' | 'ttl'> {
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ttl: _ttl, ...record } = item as T & { ttl?: number };
  return record;
}

function recordOf<K extends ItemKind>(kind: K, item: TableItem): RecordOfKind[K] | undefined {
  // Each branch checks the item's kind, so the record type matches K; TypeScript cannot relate the
  // generic K to the narrowed union member, hence the casts.
  switch (item.kind) {
    case ITEM_KIND.envoyState:
      return kind === item.kind ? (envoyStateFromItem(item) as RecordOfKind[K]) : undefined;
    case ITEM_KIND.envoyEvent:
      return kind === item.kind ? (envoyEventFromItem(item) as RecordOfKind[K]) : undefined;
    case ITEM_KIND.envoyEventLog: {
      const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...record } = item;
      return kind === item.kind ? (record as RecordOfKind[K]) : undefined;
    }
    case ITEM_KIND.objectGeneration:
      return kind === item.kind ? (objectGenerationFromItem(item) as RecordOfKind[K]) : undefined;
    case ITEM_KIND.lineageState:
      return kind === item.kind ? (lineageStateFromItem(item) as RecordOfKind[K]) : undefined;
    case ITEM_KIND.aggregateShard:
    case ITEM_KIND.lineageRegistry:
    case ITEM_KIND.pendingGeneration:
    case ITEM_KIND.conditionResyncCursor:
    case ITEM_KIND.lineageProgress:
    case ITEM_KIND.versionLogChunk:
      return kind === item.kind ? (withoutItemKeys(item) as RecordOfKind[K]) : undefined;
    case ITEM_KIND.versionLogMember: {
      const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...record } = item;
      return kind === item.kind ? (record as RecordOfKind[K]) : undefined;
    }
  }
}

export type ReadOutcome<T> = { ok: true; value: T } | { ok: false; corrupt: CorruptItem };

/** Validate one raw item as `kind`; log and describe it when it is not a valid item of that kind. */
export function readAs<K extends ItemKind>(
  kind: K,
  raw: Record<string, unknown>,
  logger: StoreLogger,
  tableName: string,
): ReadOutcome<RecordOfKind[K]> {
  const parsed = parseItem(raw);
  let corrupt: CorruptItem;
  if (parsed.ok) logWarnings(parsed.warnings, logger, tableName, parsed.item);
  if (parsed.ok) {
    const record = recordOf(kind, parsed.item);
    if (record !== undefined) return { ok: true, value: record };
    corrupt = {
      key: { pk: parsed.item.pk, sk: parsed.item.sk },
      error: `item ${parsed.item.pk} / ${parsed.item.sk}: kind ${parsed.item.kind} where ${kind} was expected`,
    };
  } else {
    corrupt = parsed.key === undefined ? { error: parsed.error } : { key: parsed.key, error: parsed.error };
  }
  logger.warn({ table: tableName, key: corrupt.key, expectedKind: kind, reason: corrupt.error }, 'skipping invalid item');
  return { ok: false, corrupt };
}

/**
 * Validate an item of the event prefix: a single-event item (the format before the event log) or an
 * event-log item. Anything else is logged and reported like readAs does (expected kind EnvoyEvent).
 */
export function readEventItem(raw: Record<string, unknown>, logger: StoreLogger, tableName: string): ReadOutcome<EnvoyEventItem | EnvoyEventLogItem> {
  const parsed = parseItem(raw);
  let corrupt: CorruptItem;
  if (parsed.ok && (parsed.item.kind === ITEM_KIND.envoyEvent || parsed.item.kind === ITEM_KIND.envoyEventLog)) {
    logWarnings(parsed.warnings, logger, tableName, parsed.item);
    return { ok: true, value: parsed.item };
  }
  if (parsed.ok) {
    corrupt = { key: { pk: parsed.item.pk, sk: parsed.item.sk }, error: `item ${parsed.item.pk} / ${parsed.item.sk}: kind ${parsed.item.kind} where an event was expected` };
  } else {
    corrupt = parsed.key === undefined ? { error: parsed.error } : { key: parsed.key, error: parsed.error };
  }
  logger.warn({ table: tableName, key: corrupt.key, expectedKind: ITEM_KIND.envoyEvent, reason: corrupt.error }, 'skipping invalid item');
  return { ok: false, corrupt };
}

/** Validate any item (for whole-table scans), optionally only one kind. */
export function readAny(
  raw: Record<string, unknown>,
  logger: StoreLogger,
  tableName: string,
): ReadOutcome<TableItem> {
  const parsed = parseItem(raw);
  if (parsed.ok) logWarnings(parsed.warnings, logger, tableName, parsed.item);
  if (parsed.ok) return { ok: true, value: parsed.item };
  const corrupt: CorruptItem = parsed.key === undefined ? { error: parsed.error } : { key: parsed.key, error: parsed.error };
  logger.warn({ table: tableName, key: corrupt.key, reason: corrupt.error }, 'skipping invalid item');
  return { ok: false, corrupt };
}

function logWarnings(warnings: readonly string[] | undefined, logger: StoreLogger, tableName: string, item: TableItem): void {
  for (const warning of warnings ?? []) logger.warn({ table: tableName, key: { pk: item.pk, sk: item.sk }, reason: warning }, 'item read with a part dropped');
}

/** The numeric `rev` of a raw item, if it has one (so a writer can replace a corrupt item). */
export function rawRev(raw: Record<string, unknown>): number | undefined {
  const rev = raw.rev;
  return typeof rev === 'number' && Number.isSafeInteger(rev) && rev >= 0 ? rev : undefined;
}
