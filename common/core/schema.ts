// The one DynamoDB table (docs/ARCHITECTURE.md, "Data"): attribute names, key builders, and the item
// shapes as zod schemas. Every item read back is validated here; a corrupt or unknown item becomes a
// reported error with its key, never an exception, so one bad item cannot stop a batch or a resync.
//
// Conventions: times are epoch milliseconds (numbers), except `ttl`, which DynamoDB's TTL feature
// requires in epoch *seconds*. Sequence numbers and generations in sort keys are zero-padded so that
// lexicographic order (how DynamoDB sorts S keys) equals numeric order.
import { z } from 'zod';
import { DECISION_ATTRIBUTE, DecisionSchema } from './decision';
import { MAX_BLAMED, MAX_BLAMED_NAME_LENGTH } from './nack-blame';
import { formatObjectRef, validateObjectRef, type ObjectRef } from './identity';
import { KNOWN_TYPE_URLS, isValidTypeUrl } from './type-urls';
import { isValidLineage, type GatewayVersion, type Lineage } from './version';

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
  /** `PENDING#<lineage> / <seq>#<generation>#<ref>`: a generation waiting for a decision on a lineage. */
  pendingGeneration: 'PendingGeneration',
} as const;
export type ItemKind = (typeof ITEM_KIND)[keyof typeof ITEM_KIND];

/** Digits of zero padding: Number.MAX_SAFE_INTEGER has 16 digits. */
export const KEY_NUMBER_WIDTH = 16;

/** Longest accepted Envoy node id (bounds key size; DynamoDB's partition key limit is 2048 bytes). */
export const MAX_NODE_ID_LENGTH = 1024;
/** Longest stored message (NACK text), in characters; writers truncate to MAX_MESSAGE_BYTES first. */
export const MAX_STORED_MESSAGE_LENGTH = 8192;

export interface ItemKey {
  pk: string;
  sk: string;
}

// ---------------------------------------------------------------------------------------------
// Key builders

export const STATE_SK = 'STATE';
export const EVENT_SK_PREFIX = 'EVENT#';
export const GENERATION_SK_PREFIX = 'GEN#';

export function padKeyNumber(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`cannot pad ${String(n)} into a key`);
  return String(n).padStart(KEY_NUMBER_WIDTH, '0');
}

export function envoyPartitionKey(nodeId: string): string {
  return `ENVOY#${nodeId}`;
}

export function envoyStateKey(nodeId: string): ItemKey {
  return { pk: envoyPartitionKey(nodeId), sk: STATE_SK };
}

export type EventOutcome = 'ACK' | 'NACK' | 'STUCK';
export const EVENT_OUTCOMES: readonly EventOutcome[] = ['ACK', 'NACK', 'STUCK'];

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
  return `OBJECT#${formatObjectRef(ref)}`;
}

/** `GEN#<generation padded>`: sort order equals numeric order of generations. */
export function objectGenerationKey(ref: ObjectRef, generation: number): ItemKey {
  return { pk: objectPartitionKey(ref), sk: `${GENERATION_SK_PREFIX}${padKeyNumber(generation)}` };
}

export function lineageStateKey(lineage: Lineage): ItemKey {
  return { pk: `LINEAGE#${lineage}`, sk: STATE_SK };
}

export const AGGREGATE_PK_PREFIX = 'AGG#';
export const SHARD_SK_PREFIX = 'SHARD#';
export const PENDING_PK_PREFIX = 'PENDING#';
export const LINEAGE_REGISTRY_KEY: ItemKey = { pk: 'AGG#LINEAGES', sk: 'INDEX' };

export function aggregateShardKey(lineage: Lineage, shard: number): ItemKey {
  return { pk: `${AGGREGATE_PK_PREFIX}${lineage}`, sk: `${SHARD_SK_PREFIX}${String(shard).padStart(3, '0')}` };
}

/** `PENDING#<lineage> / <W.seq padded>#<generation padded>#<ref>`: sorted by watermark seq. */
export function pendingKey(lineage: Lineage, watermarkSeq: number, ref: ObjectRef, generation: number): ItemKey {
  return {
    pk: `${PENDING_PK_PREFIX}${lineage}`,
    sk: `${padKeyNumber(watermarkSeq)}#${padKeyNumber(generation)}#${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`,
  };
}

/** DynamoDB TTL value (epoch seconds) for something that happened at `atMs` and is kept `retentionMs`. */
export function ttlEpochSeconds(atMs: number, retentionMs: number): number {
  return Math.ceil((atMs + retentionMs) / 1000);
}

// ---------------------------------------------------------------------------------------------
// Field schemas

const seqSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const epochMsSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const lineageSchema = z.string().refine(isValidLineage, { message: 'invalid lineage' });
const typeUrlSchema = z.string().refine(isValidTypeUrl, { message: 'invalid type URL' });
const nodeIdSchema = z.string().min(1).max(MAX_NODE_ID_LENGTH);
const messageSchema = z.string().max(MAX_STORED_MESSAGE_LENGTH);
const generationSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

export const ObjectRefSchema = z
  .object({ group: z.string(), kind: z.string(), namespace: z.string(), name: z.string() })
  .superRefine((ref, ctx) => {
    const problem = validateObjectRef(ref);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

// --- Envoy state

export const EnvoyStatusSchema = z.enum(['CONNECTED', 'DISCONNECTED', 'EXPIRED']);
export type EnvoyStatus = z.infer<typeof EnvoyStatusSchema>;

/**
 * Whom a NACK blames (docs/CONVERGENCE.md, "NACK attribution"): the objects owning the resources the
 * Envoy rejected, found by the gateway when it saw the NACK. `basis` says how the resources were
 * found: `named` in the Envoy's message, or `changed` in the rejected response (the message named
 * none). `objects` are formatObjectRef keys, and name every owner (a NACK whose owners are unknown or
 * too many carries no blame and is held against every object).
 */
export const NackBlameSchema = z.object({
  basis: z.enum(['named', 'changed']),
  objects: z.array(z.string().min(1).max(600)).min(1).max(MAX_BLAMED),
  resources: z.array(z.string().min(1).max(MAX_BLAMED_NAME_LENGTH)).max(MAX_BLAMED),
});
export type NackBlame = z.infer<typeof NackBlameSchema>;

/** The last NACK on a type: the version the Envoy rejected, its message, when, and whom it blames. */
export const NackSchema = z.object({ seq: seqSchema, message: messageSchema, at: epochMsSchema, blame: NackBlameSchema.optional() });
export type Nack = z.infer<typeof NackSchema>;

/** The latest response sent on a type that the Envoy has neither ACKed nor NACKed yet. */
export const PendingSchema = z.object({ seq: seqSchema, sentAt: epochMsSchema });
export type Pending = z.infer<typeof PendingSchema>;

/**
 * The Envoy added resource names to its subscription (SotW: a request with more resource_names; Delta:
 * resource_names_subscribe). Its ACKed version says nothing about the new names until it ACKs a
 * response sent after the change: a new cluster's EDS or a new listener's RDS (the warming case of
 * envoyproxy/envoy#5174). `sent`: a response has been sent since.
 */
export const NamesChangeSchema = z.object({ at: epochMsSchema, sent: z.boolean() });
export type NamesChange = z.infer<typeof NamesChangeSchema>;

/**
 * One xDS type of one Envoy. All seqs are on `lineage` (the gateway serving this type's stream:
 * with per-type streams an Envoy's types may be served by different gateway instances).
 */
export const TypeStateSchema = z.object({
  lineage: lineageSchema,
  /** The Envoy has an open subscription for this type (initial request seen, stream not closed). */
  subscribed: z.boolean(),
  /** Highest version the Envoy ACKed on `lineage` (absent: nothing accepted yet on this lineage). */
  acked: seqSchema.optional(),
  /** Last NACK; an ACK of a version >= nack.seq clears it. */
  nack: NackSchema.optional(),
  pending: PendingSchema.optional(),
  namesChange: NamesChangeSchema.optional(),
});
export type TypeState = z.infer<typeof TypeStateSchema>;

/**
 * An ACK/NACK/STUCK event in its compact stored form (it is rewritten with every STATE write that
 * carries it, and DynamoDB bills writes per KB): o outcome, l lineage, q seq, k the short name of a
 * well-known type (CDS, EDS, LDS, RDS, SDS) or u any other type URL (exactly one of k and u), a at,
 * m NACK message, s STUCK sentAt, x ttl (epoch seconds). The node id is the item's.
 */
export const CarriedEventSchema = z
  .object({
    o: z.enum(['ACK', 'NACK', 'STUCK']),
    l: lineageSchema,
    q: seqSchema,
    k: z.enum(['CDS', 'EDS', 'LDS', 'RDS', 'SDS']).optional(),
    u: typeUrlSchema.optional(),
    a: epochMsSchema,
    m: messageSchema.optional(),
    s: epochMsSchema.optional(),
    x: z.number().int().positive(),
  })
  .refine((event) => event.o !== 'NACK' || event.m !== undefined, { message: 'a NACK event must carry the Envoy message', path: ['m'] })
  .refine((event) => (event.k === undefined) !== (event.u === undefined), { message: 'exactly one of k (known type) and u (type URL)', path: ['u'] });
export type CarriedEvent = z.infer<typeof CarriedEventSchema>;

/** Upper bound on events one item may hold (a STATE's `unlogged`, an event-log item); writers stay far below. */
export const MAX_EVENTS_PER_ITEM = 256;

const envoyStateShape = {
  nodeId: nodeIdSchema,
  cluster: z.string().max(1024),
  /** Node group key (brief §3.1). */
  group: z.string().max(1024),
  metadata: z.record(z.string(), z.unknown()),
  /** Lineage of the Envoy's most recent connection. */
  lineage: lineageSchema,
  status: EnvoyStatusSchema,
  connectedAt: epochMsSchema,
  /** Last request, ACK, NACK or gateway heartbeat for a connected stream. */
  lastSeenAt: epochMsSchema,
  types: z.record(typeUrlSchema, TypeStateSchema),
  /**
   * Largest seq S on `lineage` such that every subscribed type is ACKed at or past its version at S
   * (docs/ARCHITECTURE.md). Absent when unknown (nothing ACKed, or types on other lineages).
   */
  programmedThrough: seqSchema.optional(),
  /**
   * Stamped by the gateway of `lineage` (docs/CONVERGENCE.md, "The denominator"): 1 for the node's
   * first state on the lineage, +1 whenever a state it writes starts a new connection (connectedAt
   * changed) or is less programmed than the last one it wrote. Absent (older writers): 1.
   */
  incarnation: z.number().int().positive().optional(),
  /**
   * ACK/NACK/STUCK events of this Envoy not yet in an event-log item (docs/GATEWAY.md, "The event log").
   * They are part of the event log: a state write that moves `acked` carries the ACK that moved it, so
   * the stored state can never claim an ACK the log lacks. The gateway moves them to an event-log
   * item when there are enough, then writes the state without them. Absent: none.
   */
  unlogged: z.array(CarriedEventSchema).max(MAX_EVENTS_PER_ITEM).optional(),
  /** Increases by one per write; writes are conditional on it. */
  rev: z.number().int().nonnegative(),
};
export const EnvoyStateSchema = z.object(envoyStateShape);
export type EnvoyState = z.infer<typeof EnvoyStateSchema>;

// --- Envoy events (ACK / NACK / STUCK log)

const envoyEventShape = {
  nodeId: nodeIdSchema,
  outcome: z.enum(['ACK', 'NACK', 'STUCK']),
  lineage: lineageSchema,
  seq: seqSchema,
  typeUrl: typeUrlSchema,
  /** When the gateway saw it (STUCK: when it was detected). */
  at: epochMsSchema,
  /** NACK: the Envoy's error_detail.message, truncated. */
  message: messageSchema.optional(),
  /** STUCK: when the unanswered response was sent. */
  sentAt: epochMsSchema.optional(),
  /** Epoch seconds. */
  ttl: z.number().int().positive(),
};
const nackCarriesMessage = (event: { outcome: string; message?: string | undefined }): boolean =>
  event.outcome !== 'NACK' || event.message !== undefined;
export const EnvoyEventSchema = z
  .object(envoyEventShape)
  .refine(nackCarriesMessage, { message: 'a NACK event must carry the Envoy message', path: ['message'] });
export type EnvoyEvent = z.infer<typeof EnvoyEventSchema>;

// --- Conditions (Kubernetes metav1.Condition)

export const ConditionStatusSchema = z.enum(['True', 'False', 'Unknown']);
export type ConditionStatus = z.infer<typeof ConditionStatusSchema>;

/** metav1.Condition; `reason` follows its validation pattern, `message` its 32768 limit. */
export const ConditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: ConditionStatusSchema,
  observedGeneration: z.number().int().nonnegative(),
  /** RFC 3339, as the Kubernetes API serialises metav1.Time. */
  lastTransitionTime: z.string().min(1),
  reason: z.string().max(1024).regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof ConditionSchema>;

// --- Object generations (watermarks)

/**
 * W(X, G) on one lineage: the lineage seq at which the gateway first served content reflecting X at G,
 * and each type's version current at that seq (a type absent here had no version yet: any ACK on
 * the lineage satisfies it).
 */
export const LineageWatermarkSchema = z.object({
  seq: seqSchema,
  types: z.record(typeUrlSchema, seqSchema),
  /** When the gateway recorded it. */
  at: epochMsSchema,
});
export type LineageWatermark = z.infer<typeof LineageWatermarkSchema>;

const objectGenerationShape = {
  object: ObjectRefSchema,
  generation: generationSchema,
  /** One entry per lineage that has served this generation; each gateway writes its own. */
  watermarks: z.record(lineageSchema, LineageWatermarkSchema),
  /** Set when this kind gives no signal that the controller processed G: the reason why. */
  notObservable: messageSchema.optional(),
  /**
   * Set when the controller reported this generation processed but invalid (HTTPProxy `Valid=False`
   * at this observedGeneration): the controller's own message. Written once by the gateway; it makes
   * the generation's verdict Invalid whatever Envoys ACK (core watermarkOf).
   */
  rejectedByController: messageSchema.optional(),
  firstSeenAt: epochMsSchema,
  /** First time the condition was written True for this generation. */
  programmedAt: epochMsSchema.optional(),
  /** The condition last written to Kubernetes for this generation (to write only on change). */
  lastCondition: ConditionSchema.optional(),
  /**
   * When our condition was last written to Kubernetes for this generation: the message refresh rule
   * (common/core/status-update.ts) spaces message-only rewrites from it.
   */
  conditionWrittenAt: epochMsSchema.optional(),
  /** The convergence function's decision for this generation (common/core/decision.ts). */
  decision: DecisionSchema.optional(),
};
export const ObjectGenerationSchema = z.object(objectGenerationShape);
export type ObjectGeneration = z.infer<typeof ObjectGenerationSchema>;

// --- Lineage state

const historySchema = z.array(seqSchema).refine(
  (seqs) => seqs.every((s, i) => i === 0 || (seqs[i - 1] as number) < s),
  { message: 'type history must be strictly ascending' },
);

const lineageStateShape = {
  lineage: lineageSchema,
  instanceId: z.string().min(1).max(63),
  bootId: z.string().min(1).max(63),
  /** The node group this lineage serves (unsanitised key). */
  group: z.string().max(1024),
  /** The lineage counter's current value (the last seq taken). */
  currentSeq: seqSchema,
  /** Per type, the ascending seqs at which that type changed. */
  typeHistory: z.record(typeUrlSchema, historySchema),
  /** Histories are complete for seqs >= historyStart; older entries may have been trimmed. */
  historyStart: seqSchema,
  startedAt: epochMsSchema,
  heartbeatAt: epochMsSchema,
  /**
   * The Envoys this gateway has written (or is about to write) a state for on this lineage, counted
   * with their incarnations: the sum over node ids of the highest `incarnation` stamped (so the number
   * of distinct Envoys when none reconnected). Decreases only when a state it counted was refused by
   * the store for good (the recorder takes it back: docs/GATEWAY.md, "What an Envoy may send"). The
   * gateway writes this item *before* any state carrying a new incarnation, so every state on the lineage in the table is counted here.
   * Convergence compares it with the members of the lineage's aggregates (docs/CONVERGENCE.md, "The
   * denominator"). Absent: written by a gateway that does not count (treated as unknown).
   */
  envoysRecorded: z.number().int().nonnegative().optional(),
  rev: z.number().int().nonnegative(),
};
export const LineageStateSchema = z.object(lineageStateShape);
export type LineageState = z.infer<typeof LineageStateSchema>;

// --- Convergence aggregates (docs/CONVERGENCE.md). Defined here, not in aggregate.ts, so that parseItem
// can check them without an import cycle.

/** Characters of a NACK message kept in a member summary (the shard item must stay small). */
export const MEMBER_MESSAGE_LENGTH = 256;
/** `t` of a member that has no programmedThrough (nothing ACKed, names change, or split lineages). */
export const NOT_PROGRAMMED = -1;

export const MemberSchema = z.object({
  /** programmedThrough on the shard's lineage, or -1. */
  t: z.number().int().min(NOT_PROGRAMMED),
  /** Rev of the Envoy state this summarises. */
  r: z.number().int().nonnegative(),
  /** Not EXPIRED (the TTL on `s` is applied at evaluation time, like core isLive). */
  live: z.boolean(),
  /** lastSeenAt. */
  s: epochMsSchema,
  /**
   * Per subscribed type (short name, core shortTypeName): the ACKed seq, or -1. Names which types
   * hold an Envoy back in a Pending blocker (short names keep the shard item small).
   */
  a: z.record(z.string(), z.number().int().min(-1)).optional(),
  /** Tombstone: the Envoy moved to another lineage or its state was deleted (kept so an older record cannot bring it back). */
  gone: z.boolean().optional(),
  /** With `gone`: the state item was deleted (TTL); a re-created state (seen later) replaces the tombstone whatever its rev. */
  deleted: z.boolean().optional(),
  /** The state's incarnation on this lineage (absent: 1); tombstones keep the one they replace. */
  k: z.number().int().positive().optional(),
  b: z
    .object({
      /** Unresolved NACKs. */
      // `o`/`x`: the NACK's blame (objects, resources), absent when it is not attributed.
      n: z
        .array(
          z.object({
            u: z.string(),
            q: seqSchema,
            m: z.string().max(MEMBER_MESSAGE_LENGTH),
            a: epochMsSchema,
            o: z.array(z.string()).max(MAX_BLAMED).optional(),
            x: z.array(z.string().max(MAX_BLAMED_NAME_LENGTH)).max(MAX_BLAMED).optional(),
          }),
        )
        .optional(),
      /** Subscribed types waiting for an answer since `s`; `a` acked seq or -1; `c` names changed. */
      w: z.array(z.object({ u: z.string(), s: epochMsSchema, a: z.number().int().min(-1), c: z.boolean().optional() })).optional(),
      /** Types on several lineages (per-type streams on different gateway instances). */
      split: z.array(z.string()).optional(),
      /** No subscribed type yet. */
      none: z.boolean().optional(),
      /** Required types not subscribed. */
      req: z.array(z.string()).optional(),
    })
    .optional(),
});
export type Member = z.infer<typeof MemberSchema>;

const aggregateShardShape = {
  lineage: z.string(),
  shard: z.number().int().nonnegative(),
  /** Incremented on every write; writes are conditional on it (optimistic locking). */
  v: z.number().int().nonnegative(),
  members: z.record(z.string(), MemberSchema),
  /** Live (not EXPIRED, not gone) members by programmedThrough. */
  counts: z.record(z.string(), z.number().int().nonnegative()),
  live: z.number().int().nonnegative(),
};
export const AggregateShardSchema = z.object(aggregateShardShape);
export type AggregateShard = z.infer<typeof AggregateShardSchema>;

const lineageRegistryShape = {
  v: z.number().int().nonnegative(),
  /** Lineage → last heartbeat (epoch ms). */
  lineages: z.record(z.string(), epochMsSchema),
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

export const EnvoyStateItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.envoyState), ...envoyStateShape, ttl: z.number().int().positive().optional() });
export type EnvoyStateItem = z.infer<typeof EnvoyStateItemSchema>;

export const EnvoyEventItemSchema = z
  .object({ ...itemBase, kind: z.literal(ITEM_KIND.envoyEvent), ...envoyEventShape })
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

export const ObjectGenerationItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.objectGeneration), ...objectGenerationShape });
export type ObjectGenerationItem = z.infer<typeof ObjectGenerationItemSchema>;

export const LineageStateItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.lineageState), ...lineageStateShape });
export type LineageStateItem = z.infer<typeof LineageStateItemSchema>;

export const AggregateShardItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.aggregateShard), ...aggregateShardShape });
export type AggregateShardItem = z.infer<typeof AggregateShardItemSchema>;

export const LineageRegistryItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.lineageRegistry), ...lineageRegistryShape });
export type LineageRegistryItem = z.infer<typeof LineageRegistryItemSchema>;

export const PendingGenerationItemSchema = z.object({ ...itemBase, kind: z.literal(ITEM_KIND.pendingGeneration), ...pendingGenerationShape });
export type PendingGenerationItem = z.infer<typeof PendingGenerationItemSchema>;

export type TableItem =
  | EnvoyStateItem
  | EnvoyEventItem
  | EnvoyEventLogItem
  | ObjectGenerationItem
  | LineageStateItem
  | AggregateShardItem
  | LineageRegistryItem
  | PendingGenerationItem;

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

/**
 * The identity of an event: what the single-event key encodes (`<lineage>#<seq padded>#<typeUrl>#
 * <outcome>`). Two records with the same identity are the same event (a replay, or an event both in a
 * log item and still in a STATE after a crash between the two writes); readers keep one. Its order is
 * the event log's order (lineage, seq, type, outcome).
 */
export function carriedEventIdentity(event: CarriedEvent): string {
  return `${event.l}#${padKeyNumber(event.q)}#${carriedTypeUrl(event)}#${event.o}`;
}

const TYPE_URL_BY_SHORT_NAME: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(KNOWN_TYPE_URLS).map(([url, short]) => [short, url]));

/** The type URL of a carried event (`k` expanded). */
export function carriedTypeUrl(event: Pick<CarriedEvent, 'k' | 'u'>): string {
  return event.k === undefined ? (event.u ?? '') : (TYPE_URL_BY_SHORT_NAME[event.k] ?? event.k);
}

/** `{ k }` for a well-known type URL, `{ u }` for any other (never ambiguous: a bare "CDS" type URL stays in `u`). */
export function carriedTypeFields(typeUrl: string): Pick<CarriedEvent, 'k' | 'u'> {
  const short = KNOWN_TYPE_URLS[typeUrl];
  return short === 'CDS' || short === 'EDS' || short === 'LDS' || short === 'RDS' || short === 'SDS' ? { k: short } : { u: typeUrl };
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
