// The recorder's version-log writes (docs/GATEWAY.md, "The version log"; core version-log.ts). With a
// version log configured (--event-log-mode chunks), the ACK and STUCK events of Envoys with no state
// write to carry them (the orphans of envoy-state-pipeline.ts: with --state-writes class-changes, most
// answers) are packed per lineage, type and seq into chunks, ~3 B an answer, instead of an event-log
// item per Envoy. A change wave reaching N Envoys then costs about 4 types × max(N / 1,000, its
// seconds) item writes rather than ~N (docs/ARCHITECTURE.md, "Arithmetic of the new path").
//
// Who answered is a member index per lineage (assigned here when a node's state on it first reaches
// the recorder, or at its first answer there, never reused), stored as a membership under the Envoy's own key before any chunk naming it, so a reader of
// one Envoy finds its answers from its node id. NACKs stay on the Envoy's own log with their message.
//
// Nothing lost: events stay unconfirmed in the event queue (its backpressure count) until the chunk
// holding them is stored; a chunk that fails is kept and written again (same key, same bytes). A
// STATE write of a node cuts the open chunks holding its answers first (cutFor), so no stored state
// claims an answer the log lacks.
import type { Logger } from 'pino';
import {
  ChunkBuilder,
  DEFAULT_CHUNK_LIMITS,
  ttlEpochSeconds,
  type ChunkLimits,
  type EnvoyEvent,
  type VersionChunk,
  type VersionLogMember,
} from '../../../common/core';
import { describeError } from '../../../common/describe-error';
import type { EventQueue, TakenEvents } from './event-queue';
import type { RecorderMetrics, VersionLogSettings, VersionLogStats } from './options';
import { performanceSeconds } from './write-latency';

export interface VersionLogPipelineOptions extends VersionLogSettings {
  logger: Logger;
  metrics: RecorderMetrics | undefined;
  events: EventQueue;
  /**
   * A retired lineage the recorder forgot (retired-lineages.ts): its builder and member indices are
   * gone, and a new builder would number chunks and members from 0 again, over the stored ones. A late
   * answer on one goes to the Envoy's own event log instead.
   */
  isForgotten: (lineage: string) => boolean;
}

interface MemberEntry {
  index: number;
  /** The `ttl` (epoch s) of the membership as last handed to the store. */
  ttl: number;
}

interface LineageLog {
  builder: ChunkBuilder;
  members: Map<string, MemberEntry>;
  nextMember: number;
  /** Per open chunk (`<typeUrl>#<seq>`): its events in the order added. */
  open: Map<string, EnvoyEvent[]>;
}

interface CutChunk {
  chunk: VersionChunk;
  events: EnvoyEvent[];
  /** Membership keys (memberKey) it names. */
  members: Set<string>;
}

const ANSWER_OUTCOMES = new Set(['ACK', 'STUCK']);

function memberKey(lineage: string, index: number): string {
  return `${lineage}#${index}`;
}

function openKey(typeUrl: string, seq: number): string {
  return `${typeUrl}#${seq}`;
}

export class VersionLogPipeline {
  private readonly lineages = new Map<string, LineageLog>();
  /** Memberships to write (by memberKey). */
  private readonly pendingMembers = new Map<string, VersionLogMember>();
  /** Memberships not yet stored (pending or being written): chunks naming one wait. */
  private readonly unstoredMembers = new Set<string>();
  /** Per node: the open chunks (`<lineage>\n<typeUrl>#<seq>`) holding its answers. */
  private readonly openOf = new Map<string, Set<string>>();
  private cut: CutChunk[] = [];
  private readonly limits: ChunkLimits;
  private readonly counters = { chunksWritten: 0, answersWritten: 0, membersWritten: 0 };

  constructor(private readonly options: VersionLogPipelineOptions) {
    this.limits = options.limits ?? DEFAULT_CHUNK_LIMITS;
  }

  /**
   * Takes the ACK and STUCK events of `orphans` into chunks (they stay unconfirmed until stored);
   * returns what is left for the Envoys' own event-log items: NACKs, answers on a forgotten lineage,
   * and anything a chunk refuses.
   */
  gather(orphans: ReadonlyMap<string, TakenEvents>, now: number): Map<string, TakenEvents> {
    const rest = new Map<string, TakenEvents>();
    for (const [nodeId, taken] of orphans) {
      const left: TakenEvents = { events: [], carried: [] };
      taken.events.forEach((event, position) => {
        if (ANSWER_OUTCOMES.has(event.outcome) && !this.options.isForgotten(event.lineage) && this.add(nodeId, event, now)) return;
        left.events.push(event);
        const carried = taken.carried[position];
        if (carried !== undefined) left.carried.push(carried);
      });
      if (left.events.length > 0) rest.set(nodeId, left);
    }
    return rest;
  }

  /**
   * A node's state on `lineage` was handed to the recorder (its connect is always among them: a first
   * state is a class change): its membership is queued now, so it is written when the Envoy joins,
   * not with its first answer of a later change wave (one item write per join, not on a change's path).
   */
  noteMember(nodeId: string, lineage: string, at: number): void {
    if (this.options.isForgotten(lineage)) return;
    this.memberOf(this.lineageLog(lineage), lineage, nodeId, at);
  }

  /**
   * Cuts the open chunks holding answers of these nodes: their STATE is about to be written, and a
   * stored state must not claim an answer the log does not have yet. The cut chunks go in this flush.
   */
  cutFor(nodeIds: Iterable<string>): void {
    for (const nodeId of nodeIds) {
      const keys = this.openOf.get(nodeId);
      if (keys === undefined) continue;
      for (const key of [...keys]) {
        const [lineage = '', chunkKey = ''] = key.split('\n');
        const log = this.lineages.get(lineage);
        const open = log?.open.get(chunkKey);
        if (log === undefined || open === undefined) continue;
        const first = open[0];
        if (first === undefined) continue;
        const chunk = log.builder.cutOpen(first.typeUrl, first.seq);
        if (chunk !== undefined) this.takeCut(lineage, log, [chunk]);
      }
    }
  }

  /**
   * Writes the memberships due, then the chunks due (every open one with `all`: close()) whose
   * memberships are stored. False if anything must be retried.
   */
  async write(now: number, all: boolean): Promise<boolean> {
    for (const [lineage, log] of this.lineages) this.takeCut(lineage, log, all ? log.builder.flush() : log.builder.cutDue(now));
    let ok = await this.writeMembers();
    const ready = this.cut.filter((entry) => [...entry.members].every((key) => !this.unstoredMembers.has(key)));
    if (ready.length === 0) return ok;
    const readySet = new Set(ready);
    this.cut = this.cut.filter((entry) => !readySet.has(entry));
    ok = (await this.writeChunks(ready)) && ok;
    return ok;
  }

  /**
   * Nodes with answers cut and not yet stored (a chunk write failed, or waits for a membership): their
   * STATE waits too, or it would be stored ahead of the log.
   */
  nodesWithUnwrittenAnswers(): Set<string> {
    const nodes = new Set<string>();
    for (const entry of this.cut) for (const event of entry.events) nodes.add(event.nodeId);
    return nodes;
  }

  /** Nothing open, cut or pending. */
  isEmpty(): boolean {
    if (this.cut.length > 0 || this.pendingMembers.size > 0) return false;
    for (const log of this.lineages.values()) if (log.open.size > 0) return false;
    return true;
  }

  /** Lineages with answers open, cut or waiting for a membership: not to be forgotten yet. */
  busyLineages(): Set<string> {
    const busy = new Set<string>();
    for (const [lineage, log] of this.lineages) if (log.open.size > 0) busy.add(lineage);
    for (const entry of this.cut) busy.add(entry.chunk.lineage);
    for (const member of this.pendingMembers.values()) busy.add(member.lineage);
    return busy;
  }

  /** Forgets a retired lineage's builder and member indices (busyLineages said it is idle). */
  forgetLineage(lineage: string): void {
    this.lineages.delete(lineage);
  }

  stats(): VersionLogStats {
    let pending = 0;
    for (const log of this.lineages.values()) for (const events of log.open.values()) pending += events.length;
    for (const entry of this.cut) pending += entry.events.length;
    return { ...this.counters, answersPending: pending };
  }

  private lineageLog(lineage: string): LineageLog {
    let log = this.lineages.get(lineage);
    if (log === undefined) {
      // A lineage is one gateway process's: its chunk ordinals and member indices start at 0 with it.
      log = { builder: new ChunkBuilder({ lineage, retentionMs: this.options.retentionMs, limits: this.limits }), members: new Map(), nextMember: 0, open: new Map() };
      this.lineages.set(lineage, log);
    }
    return log;
  }

  /** The node's member index on the lineage, its membership queued for a write when new or due a refresh. */
  private memberOf(log: LineageLog, lineage: string, nodeId: string, at: number): number {
    const { retentionMs } = this.options;
    let entry = log.members.get(nodeId);
    const ttl = ttlEpochSeconds(at, retentionMs);
    if (entry === undefined) {
      entry = { index: log.nextMember++, ttl };
      log.members.set(nodeId, entry);
      this.queueMember({ nodeId, lineage, member: entry.index, joinedAt: at, ttl });
    } else if (entry.ttl * 1000 - at < retentionMs / 2) {
      // A member answering for more than half the retention: its membership must outlive its chunks.
      entry.ttl = ttl;
      this.queueMember({ nodeId, lineage, member: entry.index, joinedAt: at, ttl });
    }
    return entry.index;
  }

  private queueMember(member: VersionLogMember): void {
    const key = memberKey(member.lineage, member.member);
    this.pendingMembers.set(key, member);
    this.unstoredMembers.add(key);
  }

  private add(nodeId: string, event: EnvoyEvent, now: number): boolean {
    const log = this.lineageLog(event.lineage);
    const member = this.memberOf(log, event.lineage, nodeId, event.at);
    const added = log.builder.add({ member, outcome: event.outcome, at: event.at, typeUrl: event.typeUrl, seq: event.seq }, now);
    if (!added.ok) {
      this.options.logger.warn({ nodeId, lineage: event.lineage, typeUrl: event.typeUrl, seq: event.seq, outcome: event.outcome, error: added.error }, 'answer refused by the version log; it goes to the Envoy\'s event log');
      return false;
    }
    // The answer is last in its open list; each chunk the builder cut (the open one when the answer
    // stretched it too far, then the one it filled) takes its entries from the front, in that order.
    const key = openKey(event.typeUrl, event.seq);
    const open = log.open.get(key) ?? [];
    open.push(event);
    log.open.set(key, open);
    let keys = this.openOf.get(nodeId);
    if (keys === undefined) this.openOf.set(nodeId, (keys = new Set()));
    keys.add(`${event.lineage}\n${key}`);
    this.takeCut(event.lineage, log, added.value);
    return true;
  }

  /** Moves cut chunks out of the open lists with the events they hold (the first `entries` of each). */
  private takeCut(lineage: string, log: LineageLog, chunks: readonly VersionChunk[]): void {
    for (const chunk of chunks) {
      const key = openKey(chunk.typeUrl, chunk.seq);
      const open = log.open.get(key) ?? [];
      const events = open.splice(0, chunk.entries.length);
      if (open.length === 0) log.open.delete(key);
      const stillOpen = new Set(open.map((event) => event.nodeId));
      for (const event of events) {
        if (stillOpen.has(event.nodeId)) continue;
        const keys = this.openOf.get(event.nodeId);
        if (keys === undefined) continue;
        keys.delete(`${lineage}\n${key}`);
        if (keys.size === 0) this.openOf.delete(event.nodeId);
      }
      const members = new Set(chunk.entries.map((entry) => memberKey(lineage, entry.member)));
      this.cut.push({ chunk, events, members });
    }
  }

  private async writeMembers(): Promise<boolean> {
    if (this.pendingMembers.size === 0) return true;
    const { log, logger, metrics } = this.options;
    const batch = [...this.pendingMembers.values()];
    this.pendingMembers.clear();
    const started = performanceSeconds();
    try {
      const result = await log.putMembers(batch);
      metrics?.writeLatency('putMembers', performanceSeconds() - started);
      const failed = new Set<VersionLogMember>();
      for (const failure of result.failed) {
        failed.add(failure.member);
        if (failure.retryable) {
          this.requeueMember(failure.member);
          continue;
        }
        // It can never be stored: its chunks are written without it (their other members' answers
        // must not wait for ever); this node's answers in them cannot be found from its id.
        logger.error({ nodeId: failure.member.nodeId, lineage: failure.member.lineage, member: failure.member.member, error: failure.error }, 'version-log membership refused by the store; not retried');
        this.unstoredMembers.delete(memberKey(failure.member.lineage, failure.member.member));
      }
      for (const member of batch) {
        if (failed.has(member)) continue;
        const key = memberKey(member.lineage, member.member);
        if (!this.pendingMembers.has(key)) this.unstoredMembers.delete(key);
        this.counters.membersWritten++;
      }
      if (result.failed.some((failure) => failure.retryable)) metrics?.writeFailed('putMembers');
      return result.failed.every((failure) => !failure.retryable);
    } catch (error) {
      logger.warn({ err: describeError(error), members: batch.length }, 'putMembers failed; retried with the next flush');
      metrics?.writeFailed('putMembers');
      for (const member of batch) this.requeueMember(member);
      return false;
    }
  }

  /** A membership back in the queue, unless a newer one of the same key (a refresh) is there. */
  private requeueMember(member: VersionLogMember): void {
    const key = memberKey(member.lineage, member.member);
    if (!this.pendingMembers.has(key)) this.pendingMembers.set(key, member);
    this.unstoredMembers.add(key);
  }

  private async writeChunks(ready: CutChunk[]): Promise<boolean> {
    const { log, logger, metrics, events } = this.options;
    const started = performanceSeconds();
    try {
      const result = await log.putChunks(ready.map((entry) => entry.chunk));
      metrics?.writeLatency('putChunks', performanceSeconds() - started);
      const failed = new Map(result.failed.map((failure) => [failure.chunk, failure]));
      let ok = true;
      for (const entry of ready) {
        const failure = failed.get(entry.chunk);
        if (failure === undefined) {
          events.confirm(entry.events);
          this.counters.chunksWritten++;
          this.counters.answersWritten += entry.events.length;
        } else if (failure.retryable) {
          this.cut.push(entry);
          ok = false;
        } else {
          logger.error({ lineage: entry.chunk.lineage, typeUrl: entry.chunk.typeUrl, seq: entry.chunk.seq, chunk: entry.chunk.chunk, answers: entry.events.length, error: failure.error }, 'version-log chunk refused by the store; its answers are rejected, not retried');
          events.reject(entry.events);
        }
      }
      if (!ok) metrics?.writeFailed('putChunks');
      return ok;
    } catch (error) {
      logger.warn({ err: describeError(error), chunks: ready.length }, 'putChunks failed; retried with the next flush');
      metrics?.writeFailed('putChunks');
      this.cut.push(...ready);
      return false;
    }
  }
}
