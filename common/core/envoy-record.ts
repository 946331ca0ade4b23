// The Envoy state record (docs/ARCHITECTURE.md, "Core model"): per type subscribed / acked / NACK /
// pending, connection status, programmedThrough, incarnation, the events it still carries. The zod
// schema is the model's definition (the type is inferred from it); common/store/items.ts adds the
// item's key attributes around it.
import { z } from 'zod';
import { CarriedEventSchema, MAX_EVENTS_PER_ITEM } from './envoy-event';
import { MAX_BLAMED, MAX_BLAMED_NAME_LENGTH } from './nack-blame';
import { epochMsSchema, lineageSchema, messageSchema, nodeIdSchema, seqSchema, typeUrlSchema } from './record-fields';

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
 *
 * `reference`: the hold was not caused by a request but by the gateway's reference check
 * (reference-hold.ts): the subscription lacks a name that what the Envoy ACKed of a referencing type
 * names. Such a hold lasts exactly as long as a name is missing; the request that adds the name turns
 * it into an ordinary one (applyNamesAdded).
 */
export const NamesChangeSchema = z.object({ at: epochMsSchema, sent: z.boolean(), reference: z.literal(true).optional() });
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
 * Whether a type's last NACK still stands against what it ACKed (invariant 2: no NACK laundering):
 * only an ACK of the NACKed version or a newer one clears it. The one definition: the transitions
 * keep or drop a NACK by it, convergence blocks on it, the fleet views show NACKED by it.
 */
export function isUnresolvedNack(nack: Nack | undefined, acked: number | undefined): nack is Nack {
  return nack !== undefined && (acked === undefined || acked < nack.seq);
}

export const envoyStateShape = {
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
