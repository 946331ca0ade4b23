// One shard of a lineage's convergence aggregate (docs/CONVERGENCE.md): its members' summaries,
// counts by programmedThrough and live total. The rules that maintain it are in aggregate.ts.
import { z } from 'zod';
import { MAX_BLAMED, MAX_BLAMED_NAME_LENGTH } from './nack-blame';
import { epochMsSchema, seqSchema } from './record-fields';

/** Characters of a NACK message kept in a member summary (the shard item must stay small). */
export const MEMBER_MESSAGE_LENGTH = 256;
/** `t` of a member that has no programmedThrough (nothing ACKed, names change, or split lineages). */
export const NOT_PROGRAMMED = -1;

/** Most objects a names-hold relief names: a client whose added names matter to more stays held for every object. */
export const MAX_RELIEF_OBJECTS = 16;

/**
 * A member held only by names it added and has not been served (its `t` is -1), whose ACKs alone put it
 * at `t`, and whose added names matter only to the objects `o` (formatObjectRef keys; the gateway's
 * xds-gateway/tracking/name-owners.ts): for any other object it is programmed through `t`
 * (aggregate.ts `relievedFor`). Only the gateway's PROGRESS summaries carry it; a shard never does.
 */
export const NamesHoldReliefSchema = z.object({ t: seqSchema, o: z.array(z.string().min(1).max(600)).min(1).max(MAX_RELIEF_OBJECTS) });
export type NamesHoldRelief = z.infer<typeof NamesHoldReliefSchema>;

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
   * The state was CONNECTED: its lineage's heartbeat vouches for it too (core lastVouchedAt), so it is
   * live while its gateway heartbeats even if its own refresh has not reached the shard yet. Absent:
   * DISCONNECTED, EXPIRED or a tombstone (and members written before the field: judged on `s` alone).
   */
  c: z.literal(true).optional(),
  /**
   * Per subscribed type (short name, core shortTypeName): the ACKed seq, or -1. Names which types
   * hold an Envoy back in a Pending blocker (short names keep the shard item small).
   */
  a: z.record(z.string(), z.number().int().min(-1)).optional(),
  /** Programmed through `h.t` for every object but `h.o` (NamesHoldRelief); PROGRESS summaries only. */
  h: NamesHoldReliefSchema.optional(),
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
      /**
       * Subscribed types waiting for an answer since `s`; `a` acked seq or -1; `c` names changed; `r`
       * that names hold is a reference hold (core reference-hold.ts: the Envoy has not asked for a name
       * its accepted config references, so it is waiting on the Envoy's request, not its answer).
       */
      w: z.array(z.object({ u: z.string(), s: epochMsSchema, a: z.number().int().min(-1), c: z.boolean().optional(), r: z.boolean().optional() })).optional(),
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

export const aggregateShardShape = {
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
