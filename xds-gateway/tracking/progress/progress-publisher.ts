// The PROGRESS publisher (docs/ARCHITECTURE.md, "Design: work per change proportional to gateways, not
// Envoys"; docs/GATEWAY.md, "PROGRESS"): it keeps the latest state of each Envoy the tracker hands the
// recorder, and the watermarks the watermark sources record, per lineage, and writes each lineage's
// PROGRESS item (core progressFromStates) when progress-timing.ts says it is due. One writer per item:
// writes are conditional on `v`; a conflict (a write whose answer was lost, or a second process on
// the same lineage) re-reads the stored `v` and writes again.
//
// Cost stays flat per change: the tracker's callbacks only update maps (O(open watermarks) per state),
// and an item is built (O(members of the lineage)) at most once per build window (1 s), or a few
// milliseconds after a state that decides something: a member joining, leaving, NACKing or clearing
// one, or the last member behind an open watermark reaching it (counted incrementally in `behind`).
// Writes go through the recorder's FlushScheduler: one flush at a time, full-jitter backoff after a
// failure, close() on SIGTERM.
//
// No member is ever in no stored item (invariant 1: a member missing from every item is missing from
// the denominator). Two rules keep it so:
//  - a node that moves to another lineage stays in its old lineage's item, as a disconnected member
//    (it leaves at its TTL if nothing else happens), until an item of its new lineage that counts it
//    is stored; only then is it removed from the old one. A reader holding one consistent snapshot of
//    the items (functions/lib/evaluate.ts reads them twice) therefore finds it at least once;
//  - a retired lineage (the relay moved its group, or freed it) keeps its item written, heartbeat
//    included, while any member is left on it: its Envoys were sent away at the retirement and hold
//    the lineage's content until they are back on another lineage or their TTL ends. It is dropped
//    once an item with no member is stored.
import type { Logger } from 'pino';
import {
  countEnvoyState,
  isLiveMember,
  isUnresolvedNack,
  MAX_PROGRESS_ANCHORS,
  memberFromEnvoyState,
  progressFromStates,
  withNamesHoldRelief,
  type Clock,
  type CountedEnvoy,
  type EnvoyState,
  type LineageProgress,
  type LineageWatermark,
  type Member,
  type NamesHoldRelief,
  type ProgressStore,
} from '../../../common/core';
import { describeError } from '../../../common/describe-error';
import { FlushScheduler, type FlushOutcome } from '../recorder/flush-scheduler';
import { fullyProgrammedAnchors, progressWriteDue, type ProgressTiming } from './progress-timing';

/**
 * Whether the member has reached watermark seq `seq` for the `unreached` counts: programmed through
 * it, or relieved there (for the objects outside its relief: an anchor may be done for those).
 */
function reaches(member: Member, seq: number): boolean {
  return member.t >= seq || (member.h !== undefined && member.h.t >= seq);
}

/** Moves one member in or out of a per-seq count (`behind`, `unreached`); the count after a move, else undefined. */
function moveCount(counts: Map<number, number>, seq: number, was: boolean, is: boolean): number | undefined {
  if (was === is) return undefined;
  const left = (counts.get(seq) ?? 0) + (is ? 1 : -1);
  counts.set(seq, left);
  return left;
}

/** How soon a build follows a state that decides something (as the recorder's urgent flush). */
const URGENT_BUILD_DELAY_MS = 5;

/** Dropped retired lineages remembered (progress-publisher droppedLineages): far more than a gateway retires in a TTL. */
const MAX_DROPPED_LINEAGES = 1_000;

export const DEFAULT_PROGRESS_TIMING: ProgressTiming = { refreshMs: 10_000, heartbeatMs: 5_000 };

/**
 * Builds after ordinary state changes (progress alone: an ACK that leaves members behind an open
 * watermark, a response sent) are at most one a second. A build reads every member (O(members)), and
 * at 100 ms it was ~20% of the gateway's CPU during a change at 5,000 Envoys (docs/bench/README.md,
 * round 8), while what such a change can make due is the counts refresh (10 s, bounded by the
 * heartbeat) or, rarely, a stuck count clearing; what decides at once is urgent (above) and does not
 * wait for this window.
 */
export const DEFAULT_BUILD_WINDOW_MS = 1_000;

/** How soon an item held back for its lineage's registration is tried again (the recorder registers at its next lineage flush). */
const REGISTRATION_RECHECK_MS = 50;

export interface ProgressPublisherOptions {
  store: ProgressStore;
  logger: Logger;
  clock: Clock;
  /** The convergence functions' ENVOY_TTL_MS and ACK_TIMEOUT_MS: live members and stuck are judged by them. */
  policy: { ttlMs: number; ackTimeoutMs: number };
  /** The convergence functions' REQUIRED_TYPE_URLS. */
  requiredTypeUrls: readonly string[];
  timing?: Partial<ProgressTiming>;
  /**
   * Coalescing window of builds after ordinary state changes (default DEFAULT_BUILD_WINDOW_MS). A
   * state that decides something (a member joining or leaving, a NACK appearing or clearing, the last
   * member behind an open watermark reaching it) is built within URGENT_BUILD_DELAY_MS whatever this is.
   */
  buildWindowMs?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  random?: () => number;
  /**
   * Whether `lineage` is in the convergence registry yet (the recorder registers each lineage
   * write-ahead). A lineage's item is written only once it is: evaluation reads the items of the
   * registry's lineages, so an item of an unregistered lineage counting a node that then leaves its old
   * lineage's item would leave the node in no item any reader looks at. Asked only before a lineage's
   * first item: once one is stored the lineage was registered, and the registry keeps it while it has
   * live members (core prunableLineages), whereas the recorder forgets a lineage it retires, and a
   * retired lineage's later writes (its members leaving) must not wait for a registration that will
   * never come again. Absent: no gate.
   */
  registered?: (lineage: string) => boolean;
}

export interface ProgressPublisherStats {
  builds: number;
  writes: number;
  conflicts: number;
  failedWrites: number;
  /** Writes by what made them due (progress-timing.ts `why`). */
  writesBy: Record<string, number>;
}

interface LineageEntry {
  members: Map<string, EnvoyState>;
  /** What was counted per node on this lineage (core envoy-count.ts): the members' incarnations. */
  counted: Map<string, CountedEnvoy>;
  /**
   * Each member's summary (core memberFromEnvoyState of its state in `members`), built once when the
   * state arrives: a build reads every member, and summarising each on every build was most of the
   * publisher's CPU at 1,000 Envoys (docs/bench/README.md). Its `t` (programmedThrough as evaluation
   * sees it) also keeps `behind`.
   */
  summaries: Map<string, Member>;
  /** Open watermarks by seq: at most MAX_PROGRESS_ANCHORS, so every one is an anchor. */
  watermarks: Map<number, LineageWatermark>;
  /** Per open watermark seq: members whose programmedThrough is below it. */
  behind: Map<number, number>;
  /**
   * Per open watermark seq: members neither programmed through it nor relieved there (`reaches`). The
   * last one reaching it decides the objects outside the relief groups, as the last one in `behind`
   * decides the rest: both are urgent.
   */
  unreached: Map<number, number>;
  written: LineageProgress | undefined;
  writtenAt: number | undefined;
  /** `v` of the stored item as last known (0: none). */
  storedV: number;
  /** Something changed since the last build. */
  dirty: boolean;
  /** When the next build is due without a change (the refresh or heartbeat write). */
  dueAt: number | undefined;
  /** The relay serves nothing more on it: written until an item with no member is stored, then dropped. */
  retired: boolean;
  /** Members that moved to another lineage and stay counted here until an item there counts them. */
  departing: Set<string>;
}

/** The state as disconnected since it was last seen: live until its TTL, not vouched for by a heartbeat. */
function asDisconnected(state: EnvoyState): EnvoyState {
  return state.status === 'CONNECTED' ? { ...state, status: 'DISCONNECTED' } : state;
}

function hasUnresolvedNack(state: EnvoyState): boolean {
  for (const typeUrl of Object.keys(state.types)) {
    const type = state.types[typeUrl];
    if (type !== undefined && isUnresolvedNack(type.nack, type.acked)) return true;
  }
  return false;
}

export class ProgressPublisher {
  private readonly lineages = new Map<string, LineageEntry>();
  /** The lineage each node's latest state is on. */
  private readonly lineageOf = new Map<string, string>();
  /**
   * Per node: the lineages it moved off whose items still count it (their `departing`), until an
   * item of its current lineage that counts it is stored.
   */
  private readonly departedFrom = new Map<string, Set<string>>();
  /**
   * Retired lineages already dropped (the most recent MAX_DROPPED_LINEAGES): a late state on one is
   * not published, which would bring the lineage back as a new item heartbeated for ever.
   */
  private readonly droppedLineages = new Set<string>();
  private readonly timing: ProgressTiming;
  private readonly buildWindowMs: number;
  private readonly scheduler: FlushScheduler;
  private readonly counters: ProgressPublisherStats = { builds: 0, writes: 0, conflicts: 0, failedWrites: 0, writesBy: {} };

  constructor(private readonly options: ProgressPublisherOptions) {
    this.timing = { ...DEFAULT_PROGRESS_TIMING, ...options.timing };
    this.buildWindowMs = options.buildWindowMs ?? DEFAULT_BUILD_WINDOW_MS;
    this.scheduler = new FlushScheduler({
      logger: options.logger,
      flushIntervalMs: this.buildWindowMs,
      retryBaseMs: options.retryBaseMs ?? 100,
      retryMaxMs: options.retryMaxMs ?? 2_000,
      random: options.random ?? Math.random,
      work: { flush: () => this.flush(), afterFlush: () => this.scheduleDue(), isEmpty: () => this.isEmpty() },
    });
  }

  // -------------------------------------------------------------------------------------------
  // Fed by the tracker and the watermark sources: synchronous, never awaits I/O.

  /**
   * Returns the member summary it keeps for the state (core memberFromEnvoyState, with the tracker's
   * names-hold relief when there is one), for the demotion's class key.
   */
  noteEnvoyState(tracked: EnvoyState, relief?: NamesHoldRelief): Member {
    if (this.droppedLineages.has(tracked.lineage)) return memberFromEnvoyState(tracked, this.options.requiredTypeUrls);
    const previousLineage = this.lineageOf.get(tracked.nodeId);
    let urgent = false;
    if (previousLineage !== undefined && previousLineage !== tracked.lineage) {
      this.depart(previousLineage, tracked.nodeId);
      urgent = true;
    }
    this.lineageOf.set(tracked.nodeId, tracked.lineage);
    const entry = this.entry(tracked.lineage);
    // Back on a lineage it had moved off: counted there as itself again, not as a departing member.
    if (entry.departing.delete(tracked.nodeId)) this.forgetDeparture(tracked.nodeId, tracked.lineage);
    // The tracker's states carry no incarnation (the recorder stamps what it writes): stamp them by the
    // same rule (core countEnvoyState), so the item's `incarnations` moves on a rejoin as the LINEAGE
    // count does. A revival of an EXPIRED state is not seen here (it needs the stored state).
    const counted = countEnvoyState(entry.counted.get(tracked.nodeId), tracked, 0);
    entry.counted.set(tracked.nodeId, counted.envoy);
    // A retired lineage's streams were ended (retireLineage): a late state on it is not vouched for by its heartbeat.
    const stamped: EnvoyState = { ...tracked, incarnation: counted.incarnation };
    const state = entry.retired ? asDisconnected(stamped) : stamped;
    const previous = entry.members.get(state.nodeId);
    entry.members.set(state.nodeId, state);
    const member = withNamesHoldRelief(memberFromEnvoyState(state, this.options.requiredTypeUrls), relief);
    const before = entry.summaries.get(state.nodeId);
    entry.summaries.set(state.nodeId, member);
    for (const seq of entry.watermarks.keys()) {
      if (moveCount(entry.behind, seq, before !== undefined && before.t < seq, member.t < seq) === 0) urgent = true;
      if (moveCount(entry.unreached, seq, before !== undefined && !reaches(before, seq), !reaches(member, seq)) === 0) urgent = true;
    }
    if (previous === undefined || previous.status !== state.status || previous.incarnation !== state.incarnation || hasUnresolvedNack(previous) !== hasUnresolvedNack(state)) urgent = true;
    this.markDirty(entry, urgent);
    return member;
  }

  noteWatermark(lineage: string, watermark: LineageWatermark): void {
    const entry = this.entry(lineage);
    if (entry.watermarks.has(watermark.seq)) return;
    entry.watermarks.set(watermark.seq, watermark);
    let behind = 0;
    let unreached = 0;
    for (const member of entry.summaries.values()) {
      if (member.t < watermark.seq) behind++;
      if (!reaches(member, watermark.seq)) unreached++;
    }
    entry.behind.set(watermark.seq, behind);
    entry.unreached.set(watermark.seq, unreached);
    this.boundWatermarks(entry);
    this.markDirty(entry, true);
  }

  /** The tracker forgot the node (disconnected long ago): it leaves its lineage's count at the next write. */
  forgetEnvoy(nodeId: string): void {
    const lineage = this.lineageOf.get(nodeId);
    if (lineage === undefined) return;
    this.lineageOf.delete(nodeId);
    this.removeMember(lineage, nodeId);
    // Where it departed from it stays until its TTL: no item of a lineage of its will count it now.
    this.departedFrom.delete(nodeId);
  }

  /**
   * The relay serves nothing more on the lineage and sent its Envoys away. Its item is still written
   * while members are left on it (file comment): each leaves when an item of the lineage it reconnects
   * on counts it, or at its TTL; then the lineage is dropped.
   */
  retireLineage(lineage: string): void {
    const entry = this.lineages.get(lineage);
    if (entry === undefined) return;
    entry.retired = true;
    // Its streams were ended: no member is vouched for by this lineage's heartbeat any more.
    for (const nodeId of entry.members.keys()) this.disconnectMember(entry, nodeId);
    this.markDirty(entry, true);
  }

  // -------------------------------------------------------------------------------------------
  // Diagnostics and lifecycle

  /** The item last written for the lineage (tests and diagnostics). */
  published(lineage: string): LineageProgress | undefined {
    return this.lineages.get(lineage)?.written;
  }

  stats(): ProgressPublisherStats {
    return { ...this.counters, writesBy: { ...this.counters.writesBy } };
  }

  /** Resolves when no lineage has an unbuilt change and no write is running. */
  whenIdle(): Promise<void> {
    return this.scheduler.whenIdle();
  }

  /** Writes what changed (SIGTERM path); the lineages then go stale at the TTL, as a dead gateway's. */
  async close(timeoutMs = 5_000): Promise<void> {
    await this.scheduler.close(timeoutMs);
  }

  // -------------------------------------------------------------------------------------------

  private entry(lineage: string): LineageEntry {
    let entry = this.lineages.get(lineage);
    if (entry === undefined) {
      entry = { members: new Map(), counted: new Map(), summaries: new Map(), watermarks: new Map(), behind: new Map(), unreached: new Map(), written: undefined, writtenAt: undefined, storedV: 0, dirty: false, dueAt: undefined, retired: false, departing: new Set() };
      this.lineages.set(lineage, entry);
    }
    return entry;
  }

  /**
   * `nodeId` moved off `lineage`: it stays a member there, as disconnected since it was last seen
   * there (so it leaves at its TTL at the latest), until an item of its new lineage counts it.
   */
  private depart(lineage: string, nodeId: string): void {
    const entry = this.lineages.get(lineage);
    const state = entry?.members.get(nodeId);
    if (entry === undefined || state === undefined) return;
    entry.departing.add(nodeId);
    const from = this.departedFrom.get(nodeId) ?? new Set<string>();
    from.add(lineage);
    this.departedFrom.set(nodeId, from);
    this.disconnectMember(entry, nodeId);
    this.markDirty(entry, true);
  }

  /** The member as disconnected since it was last seen (asDisconnected), its summary with it. */
  private disconnectMember(entry: LineageEntry, nodeId: string): void {
    const state = entry.members.get(nodeId);
    if (state === undefined || state.status !== 'CONNECTED') return;
    const disconnected = asDisconnected(state);
    entry.members.set(nodeId, disconnected);
    entry.summaries.set(nodeId, memberFromEnvoyState(disconnected, this.options.requiredTypeUrls));
  }

  /** An item of `lineage` counting these nodes is stored: the lineages they moved off let them go. */
  private arrivalsStored(lineage: string, nodeIds: readonly string[]): void {
    for (const nodeId of nodeIds) {
      if (this.lineageOf.get(nodeId) !== lineage) continue;
      const from = this.departedFrom.get(nodeId);
      if (from === undefined) continue;
      this.departedFrom.delete(nodeId);
      for (const old of from) {
        const entry = this.lineages.get(old);
        if (entry === undefined || !entry.departing.delete(nodeId)) continue;
        this.removeMember(old, nodeId);
      }
    }
  }

  /** `lineage` no longer counts `nodeId` as departed from it. */
  private forgetDeparture(nodeId: string, lineage: string): void {
    const from = this.departedFrom.get(nodeId);
    from?.delete(lineage);
    if (from?.size === 0) this.departedFrom.delete(nodeId);
  }

  /** Whether the build at `now` counts the member (progressFromStates's rule: judged at the item's own heartbeat). */
  private countsAt(entry: LineageEntry, nodeId: string, now: number): boolean {
    return isLiveMember(entry.summaries.get(nodeId), now, this.options.policy.ttlMs, undefined, now);
  }

  /** A retired lineage whose item holds no member any more: nothing of it is kept. */
  private dropLineage(lineage: string): void {
    const entry = this.lineages.get(lineage);
    if (entry === undefined) return;
    this.lineages.delete(lineage);
    this.droppedLineages.add(lineage);
    if (this.droppedLineages.size > MAX_DROPPED_LINEAGES) this.droppedLineages.delete(this.droppedLineages.values().next().value as string);
    for (const nodeId of entry.members.keys()) {
      if (this.lineageOf.get(nodeId) === lineage) this.lineageOf.delete(nodeId);
      this.forgetDeparture(nodeId, lineage);
    }
  }

  private removeMember(lineage: string, nodeId: string): void {
    const entry = this.lineages.get(lineage);
    if (entry === undefined) return;
    entry.departing.delete(nodeId);
    const summary = entry.summaries.get(nodeId);
    entry.members.delete(nodeId);
    entry.counted.delete(nodeId);
    entry.summaries.delete(nodeId);
    if (summary !== undefined) {
      for (const seq of entry.watermarks.keys()) {
        if (summary.t < seq) entry.behind.set(seq, (entry.behind.get(seq) ?? 1) - 1);
        if (!reaches(summary, seq)) entry.unreached.set(seq, (entry.unreached.get(seq) ?? 1) - 1);
      }
    }
    this.markDirty(entry, true);
  }

  /**
   * At most MAX_PROGRESS_ANCHORS open watermarks, so each is an anchor (exact). Those the last written
   * item shows fully programmed go first; then the oldest, which is then judged off the anchors: the
   * conservative side (lineage-progress.ts).
   */
  private boundWatermarks(entry: LineageEntry): void {
    const done = new Set(entry.written === undefined ? [] : fullyProgrammedAnchors(entry.written));
    const seqs = [...entry.watermarks.keys()].sort((a, b) => a - b);
    for (const seq of [...seqs.filter((s) => done.has(s)), ...seqs.filter((s) => !done.has(s))]) {
      if (entry.watermarks.size <= MAX_PROGRESS_ANCHORS) break;
      entry.watermarks.delete(seq);
      entry.behind.delete(seq);
      entry.unreached.delete(seq);
    }
  }

  private markDirty(entry: LineageEntry, urgent: boolean): void {
    entry.dirty = true;
    this.scheduler.schedule(urgent ? URGENT_BUILD_DELAY_MS : this.buildWindowMs);
  }

  private isEmpty(): boolean {
    for (const entry of this.lineages.values()) if (entry.dirty) return false;
    return true;
  }

  /** Wakes the scheduler for the earliest refresh or heartbeat write. */
  private scheduleDue(): void {
    let earliest: number | undefined;
    for (const entry of this.lineages.values()) if (entry.dueAt !== undefined && (earliest === undefined || entry.dueAt < earliest)) earliest = entry.dueAt;
    if (earliest !== undefined) this.scheduler.schedule(Math.max(0, earliest - this.options.clock.now()));
  }

  private async flush(): Promise<FlushOutcome> {
    const now = this.options.clock.now();
    const writes: Promise<boolean>[] = [];
    for (const [lineage, entry] of this.lineages) {
      if (!entry.dirty && (entry.dueAt === undefined || entry.dueAt > now)) continue;
      entry.dirty = false;
      if (entry.written === undefined && this.options.registered?.(lineage) === false) {
        // Not a lineage readers look at yet (options.registered): its first item waits, checked again shortly.
        entry.dueAt = now + REGISTRATION_RECHECK_MS;
        continue;
      }
      this.counters.builds++;
      // Members that arrived from another lineage: once this item is stored, that lineage lets them go.
      // (No node in transit, the usual case: no scan.)
      const arrivals: string[] = [];
      if (this.departedFrom.size > 0) {
        for (const nodeId of entry.members.keys()) {
          if (!entry.departing.has(nodeId) && this.departedFrom.has(nodeId) && this.countsAt(entry, nodeId, now)) arrivals.push(nodeId);
        }
      }
      // A departing member past its TTL is counted nowhere any more: nothing to keep it for.
      for (const nodeId of entry.departing) {
        if (this.countsAt(entry, nodeId, now)) continue;
        this.forgetDeparture(nodeId, lineage);
        this.removeMember(lineage, nodeId);
      }
      const next = progressFromStates({
        lineage,
        v: entry.storedV + 1,
        heartbeatAt: now,
        states: [...entry.members.values()],
        openWatermarks: [...entry.watermarks.values()],
        requiredTypeUrls: this.options.requiredTypeUrls,
        policy: this.options.policy,
        // Every state in `members` has its summary (both are set and deleted together).
        memberOf: (state) => entry.summaries.get(state.nodeId) ?? memberFromEnvoyState(state, this.options.requiredTypeUrls),
      });
      const due = progressWriteDue(entry.written, entry.writtenAt, next, this.timing);
      if (due.kind === 'at' && due.at > now) {
        entry.dueAt = due.at;
        continue;
      }
      writes.push(this.write(lineage, entry, next, due.why, now, arrivals));
    }
    const results = await Promise.all(writes);
    const failed = results.some((ok) => !ok);
    return { failed, moreReady: false };
  }

  /** One conditional write; false when it must be retried (the entry is left dirty). */
  private async write(lineage: string, entry: LineageEntry, next: LineageProgress, why: string, now: number, arrivals: readonly string[]): Promise<boolean> {
    const { store, logger } = this.options;
    try {
      const outcome = await store.putProgress(next);
      if (outcome === 'written') {
        this.counters.writes++;
        this.counters.writesBy[why] = (this.counters.writesBy[why] ?? 0) + 1;
        // A lineage retired meanwhile is not brought back.
        if (this.lineages.get(lineage) === entry) {
          entry.written = next;
          entry.writtenAt = now;
          entry.storedV = next.v;
          entry.dueAt = now + this.timing.heartbeatMs;
          this.arrivalsStored(lineage, arrivals);
          if (entry.retired && next.members === 0) this.dropLineage(lineage);
        }
        return true;
      }
      this.counters.conflicts++;
      const stored = await store.getProgress(lineage);
      // A corrupt item with no numeric v is rebuilt from v 1 (the store lets v 1 replace it).
      entry.storedV = stored.status === 'found' ? stored.value.v : stored.status === 'corrupt' ? (stored.rev ?? 0) : 0;
      logger.warn({ lineage, attemptedV: next.v, storedV: entry.storedV, read: stored.status }, 'PROGRESS write conflicted: the stored item is not the one this gateway last wrote; writing again on the stored v');
      entry.dirty = true;
      return false;
    } catch (error) {
      this.counters.failedWrites++;
      logger.warn({ lineage, v: next.v, err: describeError(error) }, 'PROGRESS write failed; retrying after a backoff');
      entry.dirty = true;
      return false;
    }
  }
}
