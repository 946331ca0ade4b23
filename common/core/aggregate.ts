// Per-lineage aggregates (docs/CONVERGENCE.md): the fleet summarised so that deciding an object
// generation reads O(lineages × shards) items, not O(fleet). Each Envoy is one *member* of one shard
// of its lineage: `AGG#<lineage> / SHARD#<nn>`, nn = a stable hash of the nodeId. A member keeps just
// what convergence needs: programmedThrough (`t`), the state's rev (`r`, the order of updates),
// liveness inputs, and a short blocker summary (unresolved NACKs, types waiting for an answer).
//
// Updates are ordered by rev: a member is replaced only by a summary of a strictly newer state, so
// redelivered or reordered stream records are no-ops (idempotent) and never double-counted.
import { z } from 'zod';
import { unresolvedNacks, type Blocker, type Convergence, type ConvergencePolicy } from './convergence';
import type { ObjectRef } from './identity';
import { shortTypeName } from './type-urls';
import { padKeyNumber, type EnvoyState, type ItemKey, type LineageWatermark } from './schema';
import type { Watermark } from './watermark';
import type { Lineage } from './version';

export const AGGREGATE_SHARD_KIND = 'LineageAggregateShard';
export const DEFAULT_SHARD_COUNT = 16;
/** Characters of a NACK message kept in a member summary (the shard item must stay small). */
export const MEMBER_MESSAGE_LENGTH = 256;
/** `t` of a member that has no programmedThrough (nothing ACKed, names change, or split lineages). */
export const NOT_PROGRAMMED = -1;

const seq = z.number().int().nonnegative();
const epochMs = z.number().int().nonnegative();

export const MemberSchema = z.object({
  /** programmedThrough on the shard's lineage, or -1. */
  t: z.number().int().min(NOT_PROGRAMMED),
  /** Rev of the Envoy state this summarises. */
  r: z.number().int().nonnegative(),
  /** Not EXPIRED (the TTL on `s` is applied at evaluation time, like core isLive). */
  live: z.boolean(),
  /** lastSeenAt. */
  s: epochMs,
  /**
   * Per subscribed type (short name, core shortTypeName): the ACKed seq, or -1. Names which types
   * hold an Envoy back in a Pending blocker (short names keep the shard item small).
   */
  a: z.record(z.string(), z.number().int().min(-1)).optional(),
  /** Tombstone: the Envoy moved to another lineage or its state was deleted (kept so an older record cannot bring it back). */
  gone: z.boolean().optional(),
  b: z
    .object({
      /** Unresolved NACKs. */
      n: z.array(z.object({ u: z.string(), q: seq, m: z.string().max(MEMBER_MESSAGE_LENGTH), a: epochMs })).optional(),
      /** Subscribed types waiting for an answer since `s`; `a` acked seq or -1; `c` names changed. */
      w: z.array(z.object({ u: z.string(), s: epochMs, a: z.number().int().min(-1), c: z.boolean().optional() })).optional(),
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

export const AggregateShardSchema = z.object({
  lineage: z.string(),
  shard: z.number().int().nonnegative(),
  /** Incremented on every write; writes are conditional on it (optimistic locking). */
  v: z.number().int().nonnegative(),
  members: z.record(z.string(), MemberSchema),
  /** Live (not EXPIRED, not gone) members by programmedThrough. */
  counts: z.record(z.string(), z.number().int().nonnegative()),
  live: z.number().int().nonnegative(),
});
export type AggregateShard = z.infer<typeof AggregateShardSchema>;

// --- keys

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

/** FNV-1a (32 bit): stable across processes and runtimes, unlike any built-in hash. */
export function shardOf(nodeId: string, shardCount: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < nodeId.length; i++) {
    hash ^= nodeId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shardCount;
}

export function emptyShard(lineage: Lineage, shard: number): AggregateShard {
  return { lineage, shard, v: 0, members: {}, counts: {}, live: 0 };
}

// --- members

function cap(message: string): string {
  return message.length <= MEMBER_MESSAGE_LENGTH ? message : `${message.slice(0, MEMBER_MESSAGE_LENGTH - 1)}…`;
}

/** The member summarising an Envoy state (on the shard of `state.lineage`). */
export function memberFromEnvoyState(state: EnvoyState, requiredTypeUrls: readonly string[] = []): Member {
  const subscribed = Object.entries(state.types).filter(([, type]) => type.subscribed);
  const lineages = new Set(subscribed.map(([, type]) => type.lineage));
  const split = lineages.size > 1 || (lineages.size === 1 && !lineages.has(state.lineage));
  const nacks = unresolvedNacks(state).map((nack) => ({ u: nack.typeUrl, q: nack.seq, m: cap(nack.message), a: nack.at }));
  const waiting = subscribed
    .map(([typeUrl, type]) => {
      const since = [type.pending?.sentAt, type.namesChange?.at].filter((t): t is number => t !== undefined);
      if (since.length === 0) return undefined;
      return { u: typeUrl, s: Math.min(...since), a: type.acked ?? -1, ...(type.namesChange === undefined ? {} : { c: true }) };
    })
    .filter((w): w is NonNullable<typeof w> => w !== undefined)
    .sort((a, b) => (a.u < b.u ? -1 : a.u > b.u ? 1 : 0));
  const missingRequired = requiredTypeUrls.filter((typeUrl) => state.types[typeUrl]?.subscribed !== true);
  const b: NonNullable<Member['b']> = {
    ...(nacks.length > 0 ? { n: nacks } : {}),
    ...(waiting.length > 0 ? { w: waiting } : {}),
    ...(split ? { split: [...lineages].sort() } : {}),
    ...(subscribed.length === 0 ? { none: true } : {}),
    ...(missingRequired.length > 0 ? { req: [...missingRequired].sort() } : {}),
  };
  const programmed = !split && subscribed.length > 0 && missingRequired.length === 0 && state.programmedThrough !== undefined;
  const acked = Object.fromEntries(subscribed.map(([typeUrl, type]) => [shortTypeName(typeUrl), type.acked ?? -1]));
  return {
    t: programmed ? (state.programmedThrough as number) : NOT_PROGRAMMED,
    r: state.rev,
    live: state.status !== 'EXPIRED',
    s: state.lastSeenAt,
    ...(subscribed.length > 0 ? { a: acked } : {}),
    ...(Object.keys(b).length > 0 ? { b } : {}),
  };
}

/** A tombstone at `rev`: the Envoy left this lineage (or was deleted) at that rev. */
export function goneMember(rev: number, lastSeenAt: number): Member {
  return { t: NOT_PROGRAMMED, r: rev, live: false, s: lastSeenAt, gone: true };
}

function counted(member: Member | undefined): member is Member {
  return member !== undefined && member.live && member.gone !== true;
}

/**
 * Applies a member update iff it is newer (absent, or stored rev < new rev). Counts are adjusted
 * incrementally: the old member's contribution is removed and the new one's added.
 */
export function applyMember(shard: AggregateShard, nodeId: string, member: Member): { shard: AggregateShard; changed: boolean } {
  const previous = shard.members[nodeId];
  if (previous !== undefined && previous.r >= member.r) return { shard, changed: false };
  const counts = { ...shard.counts };
  let live = shard.live;
  if (counted(previous)) {
    const key = String(previous.t);
    const n = (counts[key] ?? 0) - 1;
    if (n > 0) counts[key] = n;
    else delete counts[key];
    live--;
  }
  if (counted(member)) {
    const key = String(member.t);
    counts[key] = (counts[key] ?? 0) + 1;
    live++;
  }
  return { shard: { ...shard, v: shard.v + 1, members: { ...shard.members, [nodeId]: member }, counts, live }, changed: true };
}

/** Removes a member whose state was deleted (TTL of an EXPIRED state), unless a newer one is stored. */
export function removeMember(shard: AggregateShard, nodeId: string, deletedRev: number): { shard: AggregateShard; changed: boolean } {
  const previous = shard.members[nodeId];
  if (previous === undefined || previous.r > deletedRev) return { shard, changed: false };
  const { [nodeId]: _removed, ...members } = shard.members;
  return { shard: { ...shard, v: shard.v + 1, members, ...recount(members) }, changed: true };
}

/** Counts recomputed from the members (resync; and the invariant incremental updates must keep). */
export function recount(members: Readonly<Record<string, Member>>): { counts: Record<string, number>; live: number } {
  const counts: Record<string, number> = {};
  let live = 0;
  for (const member of Object.values(members)) {
    if (!counted(member)) continue;
    counts[String(member.t)] = (counts[String(member.t)] ?? 0) + 1;
    live++;
  }
  return { counts, live };
}

// --- evaluation

/** One lineage's aggregate as read: every shard's members. */
export interface LineageAggregate {
  lineage: Lineage;
  shards: readonly AggregateShard[];
}

export interface AggregateEvaluationInput {
  object: ObjectRef;
  generation: number;
  watermark: Watermark;
  /** The aggregates of the lineages that may have live Envoys. */
  aggregates: readonly LineageAggregate[];
  now: number;
  policy: ConvergencePolicy;
}

const SEVERITY: Record<Blocker['reason'], number> = { nacked: 0, stuck: 1, noWatermark: 2, pending: 3 };

/** Why a live member does not count as programmed at `mark` (undefined: it does). */
export function memberBlocker(nodeId: string, lineage: Lineage, member: Member, mark: LineageWatermark | undefined, now: number, policy: ConvergencePolicy): Blocker | undefined {
  const b = member.b ?? {};
  if (b.n !== undefined && b.n.length > 0) {
    return { nodeId, reason: 'nacked', nacks: b.n.map((nack) => ({ typeUrl: nack.u, seq: nack.q, message: nack.m, at: nack.a })) };
  }
  // Types served by different gateway instances have no single programmedThrough: blocked (safe).
  if (b.split !== undefined) return { nodeId, reason: 'pending', typeUrls: [`split across gateway instances (${b.split.join(', ')})`] };
  if (b.none === true) return { nodeId, reason: 'pending', typeUrls: [...(b.req ?? [])] };
  if (mark === undefined) return { nodeId, reason: 'noWatermark', lineages: [lineage] };
  if (member.t >= mark.seq) return undefined;
  const behind = (b.w ?? []).filter((w) => w.c === true || w.a < (mark.types[w.u] ?? 0));
  const stuck = behind.filter((w) => now - w.s >= policy.ackTimeoutMs);
  if (stuck.length > 0) return { nodeId, reason: 'stuck', typeUrls: stuck.map((w) => w.u), since: Math.min(...stuck.map((w) => w.s)) };
  return { nodeId, reason: 'pending', typeUrls: [...new Set([...behind.map((w) => w.u), ...behindByAck(member, mark), ...(b.req ?? [])])].sort() };
}

/** Subscribed types whose ACKed seq is below the watermark's version of them (full URL when the watermark names it). */
function behindByAck(member: Member, mark: LineageWatermark): string[] {
  const byShort = new Map<string, { url: string; required: number }>();
  for (const [url, required] of Object.entries(mark.types)) byShort.set(shortTypeName(url), { url, required });
  const behind: string[] = [];
  for (const [short, acked] of Object.entries(member.a ?? {})) {
    const known = byShort.get(short);
    if (acked < (known?.required ?? 0)) behind.push(known?.url ?? short);
  }
  return behind;
}

/** Convergence of X@G from the aggregates; same answer as core computeConvergence over the fleet. */
export function evaluateFromAggregates(input: AggregateEvaluationInput): Convergence {
  const { object, generation, watermark, now, policy } = input;
  const blockers: Blocker[] = [];
  let total = 0;
  for (const aggregate of input.aggregates) {
    const mark = watermark.observable ? watermark.lineages[aggregate.lineage] : undefined;
    for (const shard of aggregate.shards) {
      for (const [nodeId, member] of Object.entries(shard.members)) {
        if (!counted(member) || now - member.s > policy.ttlMs) continue;
        total++;
        if (!watermark.observable) continue;
        const blocker = memberBlocker(nodeId, aggregate.lineage, member, mark, now, policy);
        if (blocker !== undefined) blockers.push(blocker);
      }
    }
  }
  if (!watermark.observable) return { object, generation, state: 'GenerationNotObservable', programmed: 0, total, blockers: [], notObservableReason: watermark.reason };
  if (total === 0) return { object, generation, state: 'NoEnvoys', programmed: 0, total: 0, blockers: [] };
  blockers.sort((a, b) => SEVERITY[a.reason] - SEVERITY[b.reason] || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  const has = (reason: Blocker['reason']): boolean => blockers.some((blocker) => blocker.reason === reason);
  const state = blockers.length === 0 ? 'Programmed' : has('nacked') ? 'Rejected' : has('stuck') ? 'Stuck' : 'Pending';
  return { object, generation, state, programmed: total - blockers.length, total, blockers };
}

/** Freshness of a set of shards (sum of versions): grows with every write to any of them. */
export function snapshotRev(aggregates: readonly LineageAggregate[]): number {
  let rev = 0;
  for (const aggregate of aggregates) for (const shard of aggregate.shards) rev += shard.v;
  return rev;
}
