// Per-lineage aggregates (docs/CONVERGENCE.md): the fleet summarised so that deciding an object
// generation reads O(lineages × shards) items, not O(fleet). Each Envoy is one *member* of one shard
// of its lineage: `AGG#<lineage> / SHARD#<nn>`, nn = a stable hash of the nodeId. A member keeps just
// what convergence needs: programmedThrough (`t`), the state's rev (`r`, the order of updates),
// liveness inputs, and a short blocker summary (unresolved NACKs, types waiting for an answer).
//
// Updates are ordered by rev: a member is replaced only by a summary of a strictly newer state, so
// redelivered or reordered stream records are no-ops (idempotent) and never double-counted.
import { stuckBlocker, type Blocker } from './blocker';
import { convergenceState, nackBlocker, noEnvoysConvergence, sortBlockers, unobservableConvergence, unresolvedNacks, type Convergence, type ConvergencePolicy } from './convergence';
import { formatObjectRef, type ObjectRef } from './identity';
import { shortTypeName } from './type-urls';
import { MEMBER_MESSAGE_LENGTH, NOT_PROGRAMMED, type AggregateShard, type Member, type NamesHoldRelief } from './aggregate-shard';
import { type EnvoyState, type TypeState } from './envoy-record';
import { type LineageWatermark } from './object-generation';
import { lastVouchedAt, seenWithin, storedObservationTime, typeWaitingSince, waitedPastTimeout } from './staleness';
import type { TableClockView } from './table-clock';
import { ackCovers, requiredVersion, type Watermark } from './watermark';
import type { Lineage } from './version';

export const DEFAULT_SHARD_COUNT = 16;

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

/**
 * The shard's member for `nodeId`, read as an own property: a node id that names a property every
 * object inherits (`constructor`, `toString`) would otherwise read as a member that is not there.
 */
export function memberOf(shard: Pick<AggregateShard, 'members'>, nodeId: string): Member | undefined {
  return Object.hasOwn(shard.members, nodeId) ? shard.members[nodeId] : undefined;
}

function cap(message: string): string {
  return message.length <= MEMBER_MESSAGE_LENGTH ? message : `${message.slice(0, MEMBER_MESSAGE_LENGTH - 1)}…`;
}

/** The member summarising an Envoy state (on the shard of `state.lineage`). */
export function memberFromEnvoyState(state: EnvoyState, requiredTypeUrls: readonly string[] = []): Member {
  // One pass over the types, allocating only what the member holds: the gateway summarises every
  // state it tracks (each response sent, each ACK; progress-publisher.ts), so this is per ACK.
  // Everything below but NACKs speaks about the types on the state's own lineage: types on another
  // lineage are named in `split`, and evaluation blocks on them while that lineage is live and
  // ignores them once it is not (memberBlocker). NACKs of every type block (invariant 2, safe side).
  let split = false;
  let ownSubscribed = 0;
  let acked: Record<string, number> | undefined;
  let waiting: Array<{ u: string; s: number; a: number; c?: true; r?: true }> | undefined;
  for (const typeUrl of Object.keys(state.types)) {
    const type = state.types[typeUrl] as TypeState;
    if (!type.subscribed) continue;
    if (type.lineage !== state.lineage) {
      split = true;
      continue;
    }
    ownSubscribed++;
    (acked ??= {})[shortTypeName(typeUrl)] = type.acked ?? -1;
    const since = typeWaitingSince(type);
    if (since !== undefined) {
      const hold = type.namesChange === undefined ? {} : type.namesChange.reference === true ? { c: true as const, r: true as const } : { c: true as const };
      (waiting ??= []).push({ u: typeUrl, s: since, a: type.acked ?? -1, ...hold });
    }
  }
  waiting?.sort((a, b) => (a.u < b.u ? -1 : a.u > b.u ? 1 : 0));
  const nacks = unresolvedNacks(state);
  const missingRequired = requiredTypeUrls.length === 0 ? [] : requiredTypeUrls.filter((typeUrl) => state.types[typeUrl]?.subscribed !== true || state.types[typeUrl]?.lineage !== state.lineage);
  let b: Member['b'];
  if (nacks.length > 0 || waiting !== undefined || split || ownSubscribed === 0 || missingRequired.length > 0) {
    b = {
      ...(nacks.length > 0 ? { n: nacks.map((nack) => ({ u: nack.typeUrl, q: nack.seq, m: cap(nack.message), a: nack.at, ...(nack.objects === undefined ? {} : { o: nack.objects }), ...(nack.resources === undefined ? {} : { x: nack.resources }) })) } : {}),
      ...(waiting !== undefined ? { w: waiting } : {}),
      ...(split ? { split: subscribedLineages(state) } : {}),
      ...(ownSubscribed === 0 ? { none: true } : {}),
      ...(missingRequired.length > 0 ? { req: [...missingRequired].sort() } : {}),
    };
  }
  // With `split`, `t` is programmedThrough over the own-lineage types only (the gateway's merge keeps
  // it so): it is used only once every other lineage in `split` has left the live set.
  const programmed = ownSubscribed > 0 && missingRequired.length === 0 && state.programmedThrough !== undefined;
  return {
    t: programmed ? (state.programmedThrough as number) : NOT_PROGRAMMED,
    r: state.rev,
    ...(state.incarnation !== undefined && state.incarnation > 1 ? { k: state.incarnation } : {}),
    live: state.status !== 'EXPIRED',
    s: state.lastSeenAt,
    ...(state.status === 'CONNECTED' ? { c: true as const } : {}),
    ...(acked !== undefined ? { a: acked } : {}),
    ...(b !== undefined ? { b } : {}),
  };
}

/** Every lineage serving a subscribed type of the state, sorted (a split member's `split`). */
function subscribedLineages(state: EnvoyState): string[] {
  const lineages = new Set<string>();
  for (const type of Object.values(state.types)) if (type.subscribed) lineages.add(type.lineage);
  return [...lineages].sort();
}

/**
 * A tombstone at `rev`: the Envoy left this lineage (or was deleted) at that rev. It keeps the
 * incarnation of the state it replaces: the denominator counts it as applied (appliedMembers).
 */
export function goneMember(rev: number, lastSeenAt: number, incarnation = 1): Member {
  return withIncarnation({ t: NOT_PROGRAMMED, r: rev, live: false, s: lastSeenAt, gone: true }, incarnation);
}

/** A member the evaluations count while it is recent enough: not EXPIRED, not gone (isLiveMember adds the time). */
export function isCountedMember(member: Member | undefined): member is Member {
  return member !== undefined && member.live && member.gone !== true;
}

/**
 * Live as core isLive judges an Envoy state: not EXPIRED (nor gone), vouched for within the TTL (its
 * own `s`, or for a CONNECTED member its lineage's heartbeat if later: core lastVouchedAt). The one
 * statement for members: the shard evaluator and the PROGRESS builder (lineage-progress.ts) apply it.
 */
export function isLiveMember(member: Member | undefined, now: number, ttlMs: number, clock?: TableClockView, lineageHeartbeatAt?: number): member is Member {
  return isCountedMember(member) && seenWithin(lastVouchedAt(member.s, member.c === true, lineageHeartbeatAt), now, ttlMs, clock);
}

/**
 * Applies a member update iff it is newer (absent, or stored rev < new rev). Counts are adjusted
 * incrementally: the old member's contribution is removed and the new one's added.
 */
export function applyMember(shard: AggregateShard, nodeId: string, member: Member): { shard: AggregateShard; changed: boolean } {
  const previous = memberOf(shard, nodeId);
  if (previous !== undefined && !newerMember(previous, member)) return { shard, changed: false };
  // A tombstone keeps the incarnation of what it replaces: the denominator counts it as applied.
  const stored = member.gone === true && previous !== undefined && incarnationOf(previous) > incarnationOf(member) ? withIncarnation(member, incarnationOf(previous)) : member;
  return { shard: replaceMember(shard, nodeId, stored), changed: true };
}

/** The shard with `nodeId`'s member replaced, counts adjusted (old contribution out, new one in). */
function replaceMember(shard: AggregateShard, nodeId: string, member: Member): AggregateShard {
  const previous = memberOf(shard, nodeId);
  const counts = { ...shard.counts };
  let live = shard.live;
  if (isCountedMember(previous)) {
    const key = String(previous.t);
    const n = (counts[key] ?? 0) - 1;
    if (n > 0) counts[key] = n;
    else delete counts[key];
    live--;
  }
  if (isCountedMember(member)) {
    const key = String(member.t);
    counts[key] = (counts[key] ?? 0) + 1;
    live++;
  }
  return { ...shard, v: shard.v + 1, members: { ...shard.members, [nodeId]: member }, counts, live };
}

/**
 * A state was deleted (TTL of an EXPIRED state): its member becomes a deletion tombstone rather than
 * disappearing, unless a newer one is stored. Members are never removed, so the number of distinct
 * members of a lineage only grows, which the denominator check relies on (`envoysRecorded`).
 */
export function removeMember(shard: AggregateShard, nodeId: string, deletedRev: number, lastSeenAt: number): { shard: AggregateShard; changed: boolean } {
  const previous = memberOf(shard, nodeId);
  if (previous !== undefined && (previous.r > deletedRev || previous.deleted === true)) return { shard, changed: false };
  const tombstone = deletedMember(Math.max(deletedRev, previous?.r ?? 0), Math.max(lastSeenAt, previous?.s ?? 0), previous === undefined ? 1 : incarnationOf(previous));
  return { shard: replaceMember(shard, nodeId, tombstone), changed: true };
}

/** The tombstone of a deleted state: at the deleted rev, with the last time the Envoy was seen. */
export function deletedMember(rev: number, lastSeenAt: number, incarnation = 1): Member {
  return withIncarnation({ ...goneMember(rev, lastSeenAt), deleted: true }, incarnation);
}

/**
 * A deleted state may be created again (same node id, the Envoy came back), and its rev restarts at 0.
 * It replaces the deletion tombstone when it is a later incarnation or was seen later than the deleted
 * state; an older record of the deleted state (same incarnation, seen no later) cannot.
 */
function recreatedAfterDeletion(previous: Member, member: Member): boolean {
  if (previous.deleted !== true || member.gone === true) return false;
  return incarnationOf(member) > incarnationOf(previous) || member.s > previous.s;
}

/** A member's incarnation on its lineage (absent: 1). */
export function incarnationOf(member: Member): number {
  return member.k ?? 1;
}

function withIncarnation(member: Member, k: number): Member {
  return k > 1 ? { ...member, k } : member;
}

/**
 * Whether `member` supersedes `previous`: a higher rev (states of one item are written in rev order),
 * or a state re-created after its deletion, whose rev restarted at 0 (ordered by incarnation or
 * lastSeenAt instead).
 */
function newerMember(previous: Member, member: Member): boolean {
  return member.r > previous.r || recreatedAfterDeletion(previous, member);
}

/**
 * What the lineage's aggregate has applied, counted like the gateway's envoysRecorded: the sum of the
 * members' incarnations (tombstones included: members are never removed). Each member's incarnation is
 * at most the one the gateway counted for that node, so the sum equals the count only when every
 * recorded node is present at its latest counted incarnation.
 */
export function appliedMembers(aggregate: LineageAggregate): number {
  let applied = 0;
  for (const shard of aggregate.shards) for (const member of Object.values(shard.members)) applied += incarnationOf(member);
  return applied;
}

/** Counts recomputed from the members (resync; and the invariant incremental updates must keep). */
export function recount(members: Readonly<Record<string, Member>>): { counts: Record<string, number>; live: number } {
  const counts: Record<string, number> = {};
  let live = 0;
  for (const member of Object.values(members)) {
    if (!isCountedMember(member)) continue;
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
  /**
   * `envoysRecorded` of the lineage's LINEAGE item, read (strongly consistent) *after* the shards:
   * the Envoys the gateway has written a state for on this lineage, counted with their incarnations
   * (compared with appliedMembers). `undefined`: the item is missing, corrupt or has no count:
   * unknown, so nothing on the lineage can be Programmed.
   */
  envoysRecorded: number | undefined;
  /** `envoyNodesRecorded` of the same item: how many of the count's Envoys are distinct nodes (display only). */
  envoyNodesRecorded?: number | undefined;
  /**
   * `heartbeatAt` of the same LINEAGE item read: it vouches for the lineage's CONNECTED members
   * (isLiveMember, core lastVouchedAt). Undefined: members are judged on their own `s` alone.
   */
  heartbeatAt?: number | undefined;
}

export interface AggregateEvaluationInput {
  object: ObjectRef;
  generation: number;
  watermark: Watermark;
  /** The aggregates of the lineages that may have live Envoys. */
  aggregates: readonly LineageAggregate[];
  /**
   * Lineages the registry knows whose gateway stopped heartbeating (out of the live set): a member's
   * types held on one of them no longer count (memberBlocker). Absent: none known dead (safe).
   */
  deadLineages?: ReadonlySet<string>;
  now: number;
  policy: ConvergencePolicy;
  /** The table clock members' ages are judged on (table-clock.ts); absent: wall time. */
  tableClock?: TableClockView;
}

/** Why a live member does not count as programmed at `mark` (undefined: it does). */
export function memberBlocker(
  nodeId: string,
  lineage: Lineage,
  member: Member,
  mark: LineageWatermark | undefined,
  now: number,
  policy: ConvergencePolicy,
  /** Registered lineages out of the live set (heartbeat older than the window); undefined: none (safe). */
  deadLineages?: ReadonlySet<string>,
  /** The object being decided: NACKs blaming only other objects make a `blocked` blocker (core nackBlocker). */
  object?: ObjectRef,
): Blocker | undefined {
  const b = member.b ?? {};
  if (b.n !== undefined && b.n.length > 0) {
    const nacks = b.n.map((nack) => ({
      typeUrl: nack.u,
      seq: nack.q,
      message: nack.m,
      at: nack.a,
      ...(nack.o === undefined ? {} : { objects: nack.o }),
      ...(nack.x === undefined ? {} : { resources: nack.x }),
    }));
    return nackBlocker(nodeId, nacks, object);
  }
  // Types served by different gateway instances have no single programmedThrough: blocked (safe),
  // as long as another of those lineages is live. A type held on a lineage that left the live set
  // (its gateway stopped heartbeating) no longer counts: xDS subscriptions are per stream, and the
  // stream to a dead gateway is gone, so the Envoy is not subscribed to that type anywhere; what it
  // still holds from it is judged like any unsubscribed type (required types: `req`, from the own
  // lineage only). Without this, one such type blocked every generation forever (RELIABILITY.md).
  if (b.split !== undefined) {
    const liveElsewhere = splitLiveElsewhere(b.split, lineage, deadLineages);
    if (liveElsewhere.length > 0) return { nodeId, reason: 'pending', typeUrls: [`split across gateway instances (${b.split.join(', ')})`] };
  }
  if (b.none === true) return { nodeId, reason: 'pending', typeUrls: [...(b.req ?? [])] };
  if (mark === undefined) return { nodeId, reason: 'noWatermark', lineages: [lineage] };
  if (member.t >= mark.seq) return undefined;
  if (object !== undefined && relievedFor(member, mark.seq, object)) return undefined;
  const behind = (b.w ?? []).filter((w) => !ackCovers(w.a, requiredVersion(mark, w.u), w.c === true));
  // Judged at the member's lastSeenAt, not the reader's clock (as staleness.ts `stuckTypesAsStored`).
  const observedAt = storedObservationTime(now, member.s);
  const stuck = behind.filter((w) => waitedPastTimeout(w.s, observedAt, policy.ackTimeoutMs));
  if (stuck.length > 0) return stuckBlocker(nodeId, stuck.map((w) => w.u), Math.min(...stuck.map((w) => w.s)), stuck.filter((w) => w.r === true).map((w) => w.u));
  return { nodeId, reason: 'pending', typeUrls: [...new Set([...behind.map((w) => w.u), ...behindByAck(member, mark), ...(b.req ?? [])])].sort() };
}

/**
 * The member with a names-hold relief (NamesHoldRelief) attached, when it applies: a member whose only
 * reason for `t` -1 is names it added and was not served. One with NACKs, split types, nothing
 * subscribed or a required type missing is held by those, whatever its added names: unchanged.
 */
export function withNamesHoldRelief(member: Member, relief: NamesHoldRelief | undefined): Member {
  if (relief === undefined || member.t !== NOT_PROGRAMMED) return member;
  const b = member.b;
  if (b !== undefined && ((b.n?.length ?? 0) > 0 || b.split !== undefined || b.none === true || b.req !== undefined)) return member;
  return { ...member, h: relief };
}

/**
 * Whether the member counts as programmed at watermark seq `seq` for `object` by its names-hold relief:
 * its ACKs alone reach `seq`, and the names it added and was not served matter to other objects only.
 */
export function relievedFor(member: Member, seq: number, object: ObjectRef): boolean {
  const relief = member.h;
  return relief !== undefined && relief.t >= seq && !relief.o.includes(formatObjectRef(object));
}

/**
 * The lineages of a split member's types (`b.split`) other than `lineage` that are not known dead.
 * Only a lineage *known* dead is ignored: one missing from the registry read may be new (registered
 * after that read), so it blocks like a live one.
 */
export function splitLiveElsewhere(split: readonly string[], lineage: Lineage, deadLineages: ReadonlySet<string> | undefined): string[] {
  return split.filter((other) => other !== lineage && deadLineages?.has(other) !== true);
}

/** Subscribed types whose ACKed seq is below the watermark's version of them (full URL when the watermark names it). */
function behindByAck(member: Member, mark: LineageWatermark): string[] {
  const byShort = new Map<string, { url: string; required: number }>();
  for (const [url, required] of Object.entries(mark.types)) byShort.set(shortTypeName(url), { url, required });
  const behind: string[] = [];
  for (const [short, acked] of Object.entries(member.a ?? {})) {
    const known = byShort.get(short);
    if (!ackCovers(acked, known?.required ?? 0, false)) behind.push(known?.url ?? short);
  }
  return behind;
}

/**
 * The denominator check (docs/CONVERGENCE.md, "The denominator"). Every member of a lineage's
 * aggregate came from a state the gateway counted in `envoysRecorded` before writing it, members are
 * never removed, and the count was read after the shards: applied ⊆ recorded. So applied equal to the
 * count means the aggregate holds every Envoy the gateway had recorded; fewer means some states are
 * still on their way through the stream, and deciding now could leave a live Envoy out (invariant 1).
 */
export function denominatorBlocker(aggregate: LineageAggregate): { blocker: Blocker; missing: number; newEnvoys: number } | undefined {
  const { lineage, envoysRecorded } = aggregate;
  if (envoysRecorded === undefined) return { missing: 0, newEnvoys: 0, blocker: unknownCountBlocker(lineage) };
  const missing = envoysRecorded - appliedMembers(aggregate);
  if (missing <= 0) return undefined;
  const envoys = missing === 1 ? '1 Envoy state' : `${missing} Envoy states`;
  return { missing, newEnvoys: envoysInTransit(aggregate, missing), blocker: { nodeId: `${envoys} of gateway lineage ${lineage}`, reason: 'pending', typeUrls: [DENOMINATOR_IN_TRANSIT] } };
}

/**
 * Of `missing` states in transit, how many are Envoys the aggregate has no member for (what the
 * total shows). A state of a new incarnation of a member is that member again, not another Envoy: a
 * gRPC client's every names change lowers its programmedThrough and counts as one (core
 * envoy-count.ts), so counting states showed "0/11 Envoys" for 7. Nodes the count covers, less the
 * members (tombstones included), bound the new ones; without the node count (an older gateway) every
 * state counts, as before.
 */
function envoysInTransit(aggregate: LineageAggregate, missing: number): number {
  if (aggregate.envoyNodesRecorded === undefined) return missing;
  let members = 0;
  for (const shard of aggregate.shards) members += Object.keys(shard.members).length;
  return Math.min(missing, Math.max(0, aggregate.envoyNodesRecorded - members));
}

/**
 * The lineage's Envoys cannot be counted (its count item is missing, corrupt or has none): nothing on
 * it can be Programmed. Also what a live lineage without a PROGRESS item gives (lineage-progress.ts).
 */
export function unknownCountBlocker(lineage: Lineage, why: string = DENOMINATOR_UNKNOWN): Blocker {
  return { nodeId: `Envoys of gateway lineage ${lineage}`, reason: 'pending', typeUrls: [why] };
}

/** Blocker texts of the denominator check (shown as "waiting for <n> Envoy states of … (<text>)"). */
export const DENOMINATOR_IN_TRANSIT = 'not yet in the aggregates';
export const DENOMINATOR_UNKNOWN = 'gateway Envoy count unknown';

/** Convergence of X@G from the aggregates; same answer as core computeConvergence over the fleet. */
export function evaluateFromAggregates(input: AggregateEvaluationInput): Convergence {
  const { object, generation, watermark, now, policy } = input;
  const blockers: Blocker[] = [];
  const denominator: Blocker[] = [];
  let total = 0;
  let inTransit = 0;
  for (const aggregate of input.aggregates) {
    const mark = watermark.observable ? watermark.lineages[aggregate.lineage] : undefined;
    for (const shard of aggregate.shards) {
      for (const [nodeId, member] of Object.entries(shard.members)) {
        if (!isLiveMember(member, now, policy.ttlMs, input.tableClock, aggregate.heartbeatAt)) continue;
        total++;
        if (!watermark.observable) continue;
        const blocker = memberBlocker(nodeId, aggregate.lineage, member, mark, now, policy, input.deadLineages, object);
        if (blocker !== undefined) blockers.push(blocker);
      }
    }
    const check = denominatorBlocker(aggregate);
    if (check !== undefined) {
      denominator.push(check.blocker);
      inTransit += check.newEnvoys;
    }
  }
  if (!watermark.observable) return unobservableConvergence(object, generation, watermark, total);
  if (total === 0 && denominator.length === 0) return noEnvoysConvergence(object, generation);
  sortBlockers(blockers);
  const state = convergenceState(blockers, denominator.length > 0);
  // Envoys in transit count in the denominator (they are live: the gateway just wrote their state),
  // never as programmed; a re-incarnation of a member is not counted twice (envoysInTransit).
  return { object, generation, state, programmed: total - blockers.length, total: total + inTransit, blockers: [...blockers, ...denominator] };
}

/** Freshness of a set of shards (sum of versions): grows with every write to any of them. */
export function snapshotRev(aggregates: readonly LineageAggregate[]): number {
  let rev = 0;
  for (const aggregate of aggregates) for (const shard of aggregate.shards) rev += shard.v;
  return rev;
}

/**
 * Freshness per lineage (sum of its shards' versions). Unlike the total, it stays comparable when the
 * set of live lineages changes: a lineage leaving the set (its gateway died) must not make later
 * snapshots look older than earlier ones (docs/CONVERGENCE.md, "Decision freshness").
 */
export function snapshotRevs(aggregates: readonly LineageAggregate[]): Record<string, number> {
  const revs: Record<string, number> = {};
  for (const aggregate of aggregates) {
    let rev = 0;
    for (const shard of aggregate.shards) rev += shard.v;
    revs[aggregate.lineage] = rev;
  }
  return revs;
}
