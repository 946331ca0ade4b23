// The one DynamoDB table's layout (docs/ARCHITECTURE.md, "Data"): attribute names, item kinds, the
// schema version, key prefixes and key builders. Every key of the table is built here; nothing
// outside common/store spells a prefix. Sequence numbers and generations in sort keys are zero-padded
// (core sortable-number.ts) so that lexicographic order (how DynamoDB sorts S keys) equals numeric order.
import {
  carriedEventIdentity,
  formatObjectRef,
  padKeyNumber,
  type CarriedEvent,
  type EventOutcome,
  type GatewayVersion,
  type ItemKey,
  type Lineage,
  type ObjectRef,
} from '../core';

// ---------------------------------------------------------------------------------------------
// Attribute names and constants

export const ATTR = {
  pk: 'pk',
  sk: 'sk',
  /** Epoch seconds; DynamoDB deletes the item some time (up to days) after it. */
  ttl: 'ttl',
  kind: 'kind',
  schemaVersion: 'schemaVersion',
} as const;

/** The schema version every item is written with; readers reject other versions. */
export const SCHEMA_VERSION = 1;

export const ITEM_KIND = {
  envoyState: 'EnvoyState',
  envoyEvent: 'EnvoyEvent',
  /** `ENVOY#<nodeId> / EVENT#<lineage>#<minSeq>#LOG#…`: several events of one Envoy on one lineage (the event log: docs/GATEWAY.md). */
  envoyEventLog: 'EnvoyEventLog',
  objectGeneration: 'ObjectGeneration',
  lineageState: 'LineageState',
  /** `AGG#<lineage> / SHARD#<nnn>`: one shard of a lineage's convergence aggregate (common/core/aggregate.ts). */
  aggregateShard: 'LineageAggregateShard',
  /** `AGG#LINEAGES / INDEX`: the lineages evaluation reads, with their last heartbeat. */
  lineageRegistry: 'LineageRegistry',
  /**
   * `AGG#<lineage> / PROGRESS`: the lineage's convergence summary written by its gateway
   * (common/core/lineage-progress-item.ts; progress-item.ts is its codec).
   */
  lineageProgress: 'LineageProgress',
  /** `PENDING#<lineage> / <seq>#<generation>#<ref>`: a generation waiting for a decision on a lineage. */
  pendingGeneration: 'PendingGeneration',
  /** `AGG#RESYNC / CONDITIONS-CURSOR`: where resync's condition pass stopped (CONDITION_RESYNC_CURSOR_KEY). */
  conditionResyncCursor: 'ResyncConditionsCursor',
  /** `VLOG#<lineage> / <typeUrl>#<seq>#<chunk>`: answers of a lineage's members to one version (version-log-item.ts is its codec). */
  versionLogChunk: 'VersionLogChunk',
  /** `ENVOY#<nodeId> / VMEMBER#<lineage>#<member>`: an Envoy's member index on a lineage (version-log-item.ts). */
  versionLogMember: 'VersionLogMember',
} as const;
export type ItemKind = (typeof ITEM_KIND)[keyof typeof ITEM_KIND];


// ---------------------------------------------------------------------------------------------
// Key builders

export const ENVOY_PK_PREFIX = 'ENVOY#';
export const OBJECT_PK_PREFIX = 'OBJECT#';
export const LINEAGE_PK_PREFIX = 'LINEAGE#';
export const STATE_SK = 'STATE';
export const EVENT_SK_PREFIX = 'EVENT#';
export const GENERATION_SK_PREFIX = 'GEN#';


export function envoyPartitionKey(nodeId: string): string {
  return `${ENVOY_PK_PREFIX}${nodeId}`;
}

export function envoyStateKey(nodeId: string): ItemKey {
  return { pk: envoyPartitionKey(nodeId), sk: STATE_SK };
}


/**
 * `EVENT#<lineage>#<seq padded>#<typeUrl>#<outcome>`. Deterministic: replaying the same event writes
 * the same item (idempotent without transactions).
 */
export function envoyEventKey(nodeId: string, version: GatewayVersion, typeUrl: string, outcome: EventOutcome): ItemKey {
  return {
    pk: envoyPartitionKey(nodeId),
    sk: `${EVENT_SK_PREFIX}${version.lineage}#${padKeyNumber(version.seq)}#${typeUrl}#${outcome}`,
  };
}

/** Sort-key prefix for querying an Envoy's events, optionally only one lineage's. */
export function envoyEventSkPrefix(lineage?: Lineage): string {
  return lineage === undefined ? EVENT_SK_PREFIX : `${EVENT_SK_PREFIX}${lineage}#`;
}

/**
 * `EVENT#<lineage>#<minSeq padded>#LOG#<maxSeq padded>#<count>#<digest>`: one event-log item holding
 * several events of one Envoy on one lineage. The key is a function of the events it holds (the digest
 * is of their identities, common/core/event-log.ts), so rewriting the same batch rewrites the same item
 * and two different batches never share a key. It sorts among the single-event items of the same
 * lineage by its smallest seq, and `envoyEventSkPrefix(lineage)` finds both formats.
 */
export function envoyEventLogKey(nodeId: string, lineage: Lineage, minSeq: number, maxSeq: number, count: number, digest: string): ItemKey {
  return {
    pk: envoyPartitionKey(nodeId),
    sk: `${EVENT_SK_PREFIX}${lineage}#${padKeyNumber(minSeq)}#LOG#${padKeyNumber(maxSeq)}#${count}#${digest}`,
  };
}

export function objectPartitionKey(ref: ObjectRef): string {
  return `${OBJECT_PK_PREFIX}${formatObjectRef(ref)}`;
}

/** `GEN#<generation padded>`: sort order equals numeric order of generations. */
export function objectGenerationKey(ref: ObjectRef, generation: number): ItemKey {
  return { pk: objectPartitionKey(ref), sk: `${GENERATION_SK_PREFIX}${padKeyNumber(generation)}` };
}

export function lineageStateKey(lineage: Lineage): ItemKey {
  return { pk: `${LINEAGE_PK_PREFIX}${lineage}`, sk: STATE_SK };
}

export const AGGREGATE_PK_PREFIX = 'AGG#';
export const SHARD_SK_PREFIX = 'SHARD#';
export const PENDING_PK_PREFIX = 'PENDING#';
export const LINEAGE_REGISTRY_KEY: ItemKey = { pk: `${AGGREGATE_PK_PREFIX}LINEAGES`, sk: 'INDEX' };

export function aggregateShardKey(lineage: Lineage, shard: number): ItemKey {
  return { pk: `${AGGREGATE_PK_PREFIX}${lineage}`, sk: `${SHARD_SK_PREFIX}${String(shard).padStart(3, '0')}` };
}

export const PROGRESS_SK = 'PROGRESS';

/**
 * `AGG#<lineage> / PROGRESS`: the lineage's PROGRESS item, beside its shards, so one Query of the
 * partition reads both while the two paths run side by side.
 */
export function lineageProgressKey(lineage: Lineage): ItemKey {
  return { pk: `${AGGREGATE_PK_PREFIX}${lineage}`, sk: PROGRESS_SK };
}

/** `PENDING#<lineage> / <W.seq padded>#<generation padded>#<ref>`: sorted by watermark seq. */
export function pendingKey(lineage: Lineage, watermarkSeq: number, ref: ObjectRef, generation: number): ItemKey {
  return {
    pk: `${PENDING_PK_PREFIX}${lineage}`,
    sk: `${padKeyNumber(watermarkSeq)}#${padKeyNumber(generation)}#${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`,
  };
}


/** FNV-1a, 64 bit, as 16 hex digits: a stable digest for keys (not a security property). */
export function fnv1a64Hex(text: string): string {
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * prime) & mask;
  }
  return hash.toString(16).padStart(16, '0');
}

/** The key of the event-log item holding `events` (all on `lineage`, at least one): a function of their identities. */
export function eventLogKeyOf(nodeId: string, lineage: Lineage, events: readonly CarriedEvent[]): ItemKey {
  const identities = events.map(carriedEventIdentity).sort();
  let min = Number.MAX_SAFE_INTEGER;
  let max = 0;
  for (const event of events) {
    min = Math.min(min, event.q);
    max = Math.max(max, event.q);
  }
  return envoyEventLogKey(nodeId, lineage, events.length === 0 ? 0 : min, max, events.length, fnv1a64Hex(identities.join('\n')));
}

/** Item attribute holding the convergence decision on an OBJECT generation item (core stored-decision.ts). */
export const DECISION_ATTRIBUTE = 'decision';

/**
 * Where the condition pass of resync stopped (functions/lib/resync-conditions.ts). Under the `AGG#`
 * prefix on purpose: the convergence function treats `AGG#` records as its own bookkeeping and the
 * stream filters of serverless.yml drop them, so saving the cursor triggers nothing. `RESYNC` cannot
 * be a lineage (lineages have three parts).
 */
export const CONDITION_RESYNC_CURSOR_KEY: ItemKey = { pk: `${AGGREGATE_PK_PREFIX}RESYNC`, sk: 'CONDITIONS-CURSOR' };

// ---------------------------------------------------------------------------------------------
// The version log (common/core/version-log.ts; docs/ARCHITECTURE.md, "Design: work per change
// proportional to gateways, not Envoys"): one partition per lineage, sorted by type, then seq, then
// the chunk's ordinal, so one Query reads a type's chunks over a seq range.

export const VERSION_LOG_PK_PREFIX = 'VLOG#';

export function versionLogPartitionKey(lineage: Lineage): string {
  return `${VERSION_LOG_PK_PREFIX}${lineage}`;
}

/**
 * `VLOG#<lineage> / <typeUrl>#<seq padded>#<chunk padded>`. The chunk ordinal, not the first member
 * index, names the chunk: a member may answer one type and seq twice (a STUCK then its ACK, or again
 * after reconnecting), so two chunks of one seq can start with the same member. Type URLs hold no `#`
 * (core isValidTypeUrl).
 */
export function versionLogChunkKey(lineage: Lineage, typeUrl: string, seq: number, chunk: number): ItemKey {
  return { pk: versionLogPartitionKey(lineage), sk: `${typeUrl}#${padKeyNumber(seq)}#${padKeyNumber(chunk)}` };
}

/** The sort keys of every chunk of `typeUrl` at seqs `fromSeq`..`toSeq` (both included), for a `BETWEEN`. */
export function versionLogSkRange(typeUrl: string, fromSeq: number, toSeq: number): { from: string; to: string } {
  return { from: `${typeUrl}#${padKeyNumber(fromSeq)}#${padKeyNumber(0)}`, to: `${typeUrl}#${padKeyNumber(toSeq)}#${padKeyNumber(Number.MAX_SAFE_INTEGER)}` };
}

export const VERSION_LOG_MEMBER_SK_PREFIX = 'VMEMBER#';

/**
 * `ENVOY#<nodeId> / VMEMBER#<lineage>#<member padded>`: a node's index on a lineage, under the
 * Envoy's own partition so its memberships are one Query from its node id. Not a STATE, so the
 * stream filters (serverless.yml; infra/local/system/functions.ts) pass none of them to convergence.
 */
export function versionLogMemberKey(nodeId: string, lineage: Lineage, member: number): ItemKey {
  return { pk: envoyPartitionKey(nodeId), sk: `${VERSION_LOG_MEMBER_SK_PREFIX}${lineage}#${padKeyNumber(member)}` };
}
