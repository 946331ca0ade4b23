// Deciding object generations from the aggregates: read the live lineages' shards once per batch
// (O(lineages × shards) items, whatever the fleet size), evaluate each candidate X@G with the core's
// evaluateFromAggregates, and store the decision on its OBJECT item. With PROGRESS_EVALUATION the
// snapshot is the live lineages' PROGRESS items instead (core evaluateFromProgress). Only the latest generation of an
// object is decided; older ones are marked superseded. Programmed, not-observable and superseded
// generations leave the pending index.
import type { Logger } from 'pino';

import {
  decisionFromConvergence,
  attributedTo,
  defaultStallMs,
  evaluateFromAggregates,
  evaluateFromProgress,
  formatObjectRef,
  isSettledDecision,
  maxEvaluatedRevs,
  sameDecision,
  sameVerdict,
  seenWithin,
  snapshotRev,
  snapshotRevs,
  standingStillMs,
  watermarkOf,
  type AggregateStore,
  type Convergence,
  type ConvergencePolicy,
  type Decision,
  type EventStore,
  type ItemRead,
  type LineageAggregate,
  type LineageProgressRead,
  type LineageRegistry,
  type ObjectGeneration,
  type ObjectRef,
  type PendingEntry,
  type ProgressStore,
  type TableClockView,
} from '../../common/core';
import { forEachConcurrently } from '../../common/worker-pool';
import { CONVERGENCE_CONCURRENCY } from './config';
import { readProgressSnapshot } from './progress-snapshot';

export interface EvaluationDeps {
  aggregates: AggregateStore;
  store: Pick<EventStore, 'getObjectGeneration' | 'listObjectGenerations' | 'getLineageState'>;
  logger: Logger;
  policy: ConvergencePolicy;
  now: () => number;
  /**
   * The table clock's stall bound (core table-clock.ts; EXPIRE_STALL_MS): past this long after the
   * expire function's last completed tick, staleness stands still. Default: core defaultStallMs.
   */
  stallMs?: number;
  /**
   * A stored decision with the same verdict (core sameVerdict) younger than
   * this is not rewritten when only its counts or blockers changed. 0 (default): every change is
   * written. Verdict changes are always written at once, so the condition (status, reason,
   * observedGeneration) is never delayed; the stored counts may lag by up to this much, and expire's
   * tick re-evaluates. Why: every pending generation is re-evaluated on each Envoy batch, and each
   * count-only rewrite is a write, a stream record and a status invocation (bench/README.md).
   */
  decisionRefreshMs?: number;
  /**
   * OBJECT generation items this container read or wrote less than `decisionRefreshMs` ago. With it,
   * a pending generation whose verdict did not change is re-evaluated from memory, without reading its
   * item (each batch re-evaluates every pending generation: that read was most of a batch's requests).
   */
  generationCache?: GenerationCache;
  /**
   * Called after a decision was durably written (not superseded), with the item as it now stands and
   * the decision it replaced: convergence hands changed verdicts to the status writer from here
   * (functions/lib/status-handoff.ts). Must not throw or block: it only queues work.
   */
  onDecisionWritten?: (record: ObjectGeneration, previous: Decision | undefined) => void;
  /**
   * Set (PROGRESS_EVALUATION): decide from the live lineages' PROGRESS items, which their gateways
   * write (core evaluateFromProgress), instead of the aggregate shards: one batched read of O(lineages)
   * items per batch, whatever the fleet size (docs/ARCHITECTURE.md, build step 4).
   */
  progress?: Pick<ProgressStore, 'getProgresses'>;
}

/**
 * Recently read OBJECT generation records, per container. An entry is only a hint to skip a read:
 * evaluation from it can only conclude "nothing to write"; anything else reads the item afresh. A
 * watermark missing from an entry makes evaluation more conservative (noWatermark), never less, and
 * entries end after `ttlMs`, so a decision another writer stored is seen within that time.
 */
export class GenerationCache {
  private readonly entries = new Map<string, { record: ObjectGeneration; at: number }>();

  constructor(
    readonly ttlMs: number,
    private readonly maxEntries = 50_000,
  ) {}

  get(key: string, now: number): ObjectGeneration | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (now - entry.at >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.record;
  }

  set(key: string, record: ObjectGeneration, now: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { record, at: now });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

export interface Candidate {
  object: ObjectRef;
  generation: number;
}

export function candidateKey(candidate: Candidate): string {
  return `${formatObjectRef(candidate.object)}@${candidate.generation}`;
}

export type EvaluationOutcome = 'written' | 'unchanged' | 'stale' | 'missing' | 'superseded' | 'corrupt';

/**
 * Lineages that may still have live Envoys. The gateway refreshes lastSeenAt of its connected Envoys
 * with its heartbeat, so a lineage silent for the TTL has none; the window is twice the TTL so that a
 * late heartbeat record can never drop a live Envoy from the denominator (members are still filtered by
 * their own lastSeenAt, exactly).
 */
export function liveLineages(lineages: Readonly<Record<string, number>>, now: number, ttlMs: number, clock?: TableClockView): string[] {
  return Object.entries(lineages)
    .filter(([, heartbeatAt]) => seenWithin(heartbeatAt, now, 2 * ttlMs, clock))
    .map(([lineage]) => lineage)
    .sort();
}

/** The registry's table clock as the readers judge staleness on it (core table-clock.ts). */
export function tableClockOf(registry: LineageRegistry, settings: { ttlMs: number; stallMs?: number | undefined }): TableClockView {
  return { clock: registry.clock, stallMs: settings.stallMs ?? defaultStallMs(settings.ttlMs) };
}

/** The table clock as these functions' deps judge it (their TTL and EXPIRE_STALL_MS). */
export function depsTableClock(deps: Pick<EvaluationDeps, 'policy' | 'stallMs'>, registry: LineageRegistry): TableClockView {
  return tableClockOf(registry, { ttlMs: deps.policy.ttlMs, stallMs: deps.stallMs });
}

/** The aggregates of lineages with a fresh heartbeat, read at most once per batch. */
export class AggregateSnapshot {
  private loaded: Promise<LineageAggregate[]> | undefined;
  /** When the aggregates were read: every evaluation from this snapshot is as of that moment. */
  private takenAt = 0;
  /**
   * Convergence per watermark (lineage → seq and per-type versions). The result depends only on the
   * watermark, the aggregates and the time (and, for NACK attribution, the object: core
   * attributedTo re-attributes the shared result per object), so generations changed together (one rebuild, one
   * watermark) are evaluated once per batch, not once each: evaluation is O(fleet) per call (1.7 s for
   * 1,000 pending generations × 1,000 Envoys all behind, measured; bench/README.md).
   */
  private readonly byWatermark = new Map<string, Convergence>();
  private registryV = 0;
  private freshness: { rev: number; revs: Record<string, number>; registryVersion: number } | undefined;
  /** Registered lineages out of the live set: their gateways are dead (split members, core memberBlocker). */
  private readonly deadLineages = new Set<string>();
  /** The registry's table clock, read with the lineages: members' ages are judged on it. */
  private tableClock: TableClockView | undefined;
  /** With `deps.progress`: the live lineages' PROGRESS items, read instead of the shards. */
  private progressReads: LineageProgressRead[] | undefined;

  constructor(private readonly deps: EvaluationDeps) {}

  get(): Promise<LineageAggregate[]> {
    this.loaded ??= this.load();
    return this.loaded;
  }

  /**
   * X@G decided from this snapshot, stamped with the snapshot's freshness (total, per lineage and the
   * registry version it read: docs/CONVERGENCE.md, "Decision freshness"), which is computed once per
   * snapshot, not per candidate.
   */
  async decide(record: ObjectGeneration): Promise<{ decision: Decision; now: number }> {
    const { convergence, now, aggregates } = await this.evaluate(record);
    this.freshness ??= this.progressReads === undefined ? { rev: snapshotRev(aggregates), revs: snapshotRevs(aggregates), registryVersion: this.registryV } : progressFreshness(this.progressReads, this.registryV);
    const { rev, revs, registryVersion } = this.freshness;
    return { decision: decisionFromConvergence(convergence, now, rev, { revs, registryVersion }), now };
  }

  /** X@G evaluated from this snapshot (shared with every generation of the same watermark). */
  async evaluate(record: ObjectGeneration): Promise<{ convergence: Convergence; now: number; aggregates: LineageAggregate[] }> {
    const aggregates = await this.get();
    const now = this.takenAt;
    const progress = this.progressReads;
    if (progress !== undefined) {
      // Not shared across objects: an item's NACKs are counts per blame, which only the object's own
      // evaluation can attribute (attributedTo needs every NACK blocker named). O(lineages) each.
      const fromProgress = evaluateFromProgress({ object: record.object, generation: record.generation, watermark: watermarkOf(record), lineages: progress, deadLineages: this.deadLineages, now, policy: this.deps.policy, ...(this.tableClock === undefined ? {} : { tableClock: this.tableClock }) });
      return { convergence: fromProgress, now, aggregates };
    }
    const key = watermarkKey(record);
    let convergence = this.byWatermark.get(key);
    if (convergence === undefined) {
      convergence = evaluateFromAggregates({ object: record.object, generation: record.generation, watermark: watermarkOf(record), aggregates, now, policy: this.deps.policy, deadLineages: this.deadLineages, tableClock: this.tableClock });
      this.byWatermark.set(key, convergence);
    }
    // Shared by the generations of one watermark; NACK attribution is the object's own.
    return { convergence: { ...attributedTo(convergence, record.object), generation: record.generation }, now, aggregates };
  }

  private async load(): Promise<LineageAggregate[]> {
    const aggregates = await this.read();
    this.takenAt = this.deps.now();
    return aggregates;
  }

  private async read(): Promise<LineageAggregate[]> {
    const registry = await this.deps.aggregates.getLineageRegistry();
    this.registryV = registry.v;
    this.tableClock = depsTableClock(this.deps, registry);
    const now = this.deps.now();
    const stoodStillMs = standingStillMs(this.tableClock, now);
    if (stoodStillMs > 0) this.deps.logger.warn({ tickAt: registry.clock?.tickAt, stoodStillMs }, 'the expire function has completed no tick lately: nothing goes stale until it does (docs/CONVERGENCE.md, "Staleness across a table gap")');
    const live = liveLineages(registry.lineages, now, this.deps.policy.ttlMs, this.tableClock);
    for (const lineage of Object.keys(registry.lineages)) if (!live.includes(lineage)) this.deadLineages.add(lineage);
    if (this.deps.progress !== undefined) {
      // A live lineage without an item (its gateway runs without --progress, or has not written yet)
      // reads as unknown: nothing on it can be Programmed (core evaluateFromProgress).
      // One consistent snapshot (read twice when there are several items), so a node moving between lineages is counted (progress-snapshot.ts).
      this.progressReads = await this.progressSnapshot(live, now);
      return [];
    }
    return Promise.all(
      live.map(async (lineage) => {
        const { shards, corrupt } = await this.deps.aggregates.getLineageShards(lineage);
        if (corrupt.length > 0) this.deps.logger.error({ lineage, corrupt }, 'corrupt aggregate shards skipped; resync rebuilds them');
        // Read after the shards: the count only grows, so every member read is already counted in it
        // (docs/CONVERGENCE.md, "The denominator"). Strongly consistent (the store's getLineageState).
        return { lineage, shards, ...(await this.lineageItem(lineage)) };
      }),
    );
  }

  /**
   * The PROGRESS items of `live`, and of any lineage registered while they were read. A node leaves its
   * old lineage's item once an item of its new lineage counts it, and a gateway writes a lineage's item
   * only after registering it (progress-publisher.ts `registered`): items read after such a move
   * (the node gone from the old item) with the registry read before the new lineage's registration
   * would count the node nowhere, a false True (truth checker seed 70676, docs/RELIABILITY.md). The
   * registry read again after the items names every lineage registered before they were read; a new
   * one means reading again with it. Up to PROGRESS_REGISTRY_READS times, then the new lineages are
   * read as unknown (their generations stay Pending).
   */
  private async progressSnapshot(live: readonly string[], now: number): Promise<LineageProgressRead[]> {
    const progress = this.deps.progress;
    if (progress === undefined) return [];
    let lineages = [...live];
    for (let attempt = 1; ; attempt++) {
      const reads = await readProgressSnapshot(progress, lineages, this.deps.logger);
      const again = await this.deps.aggregates.getLineageRegistry();
      const added = liveLineages(again.lineages, now, this.deps.policy.ttlMs, this.tableClock).filter((lineage) => !lineages.includes(lineage));
      if (added.length === 0) return reads;
      if (attempt >= PROGRESS_REGISTRY_READS) {
        this.deps.logger.warn({ added, attempts: attempt }, 'lineages keep being registered while PROGRESS is read; reading the new ones as unknown');
        return [...reads, ...added.map((lineage) => ({ lineage, progress: undefined }))];
      }
      lineages = [...lineages, ...added];
    }
  }

  /** The LINEAGE item's count (the denominator) and heartbeat (vouches for its CONNECTED members). */
  private async lineageItem(lineage: string): Promise<{ envoysRecorded: number | undefined; envoyNodesRecorded?: number; heartbeatAt?: number }> {
    const read = await this.deps.store.getLineageState(lineage);
    const heartbeatAt = read.status === 'found' ? { heartbeatAt: read.value.heartbeatAt } : {};
    if (read.status === 'found' && read.value.envoysRecorded !== undefined) {
      const nodes = read.value.envoyNodesRecorded === undefined ? {} : { envoyNodesRecorded: read.value.envoyNodesRecorded };
      return { envoysRecorded: read.value.envoysRecorded, ...nodes, ...heartbeatAt };
    }
    // Unknown: nothing on this lineage can be Programmed until the gateway writes its count.
    this.deps.logger.warn({ lineage, item: read.status }, 'lineage has no Envoy count; its generations stay Pending');
    return { envoysRecorded: undefined, ...heartbeatAt };
  }
}

/**
 * A decision's freshness from PROGRESS items: per lineage the item's `v` (the gateway writes it
 * conditional on the one before, so it only grows), keyed `progress:<lineage>` so it is never
 * compared with a shard snapshot's sum of versions (core isStaleDecision compares shared keys only):
 * a table that switches evaluation mode decides on.
 */
function progressFreshness(reads: readonly LineageProgressRead[], registryVersion: number): { rev: number; revs: Record<string, number>; registryVersion: number } {
  const revs: Record<string, number> = {};
  let rev = 0;
  for (const { lineage, progress } of reads) {
    revs[`progress:${lineage}`] = progress?.v ?? 0;
    rev += progress?.v ?? 0;
  }
  return { rev, revs, registryVersion };
}

/** What evaluation reads of a generation's watermark: per lineage its seq and per-type versions (not `at`). */
function watermarkKey(record: ObjectGeneration): string {
  const watermark = watermarkOf(record);
  if (!watermark.observable) return `${watermark.rejectedByController === true ? 'rejected' : 'not-observable'}:${watermark.reason}`;
  return JSON.stringify(
    Object.entries(watermark.lineages)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([lineage, mark]) => [lineage, mark.seq, Object.entries(mark.types).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]),
  );
}

function pendingEntriesOf(record: ObjectGeneration): PendingEntry[] {
  return Object.entries(record.watermarks).map(([lineage, mark]) => ({ lineage, seq: mark.seq, object: record.object, generation: record.generation }));
}

/** Whether storing `fresh` over `stored` would write nothing worth writing (docs/CONVERGENCE.md, "Decision refresh"). */
function nothingToWrite(deps: EvaluationDeps, record: ObjectGeneration, fresh: Decision, now: number): boolean {
  const stored = record.decision;
  return sameDecision(stored, fresh) || recentSameVerdict(stored, fresh, now, decisionRefreshPeriodMs(deps.decisionRefreshMs ?? 0, now - record.firstSeenAt));
}

/**
 * The longest a count-only refresh of a pending generation waits grows with the generation's age up to
 * this (docs/CONVERGENCE.md, "Decision refresh"), unless DECISION_REFRESH_MS is longer.
 */
export const DECISION_REFRESH_MAX_MS = 10_000;

/**
 * How long a same-verdict decision of a generation now `ageMs` old stands before its counts are
 * rewritten: DECISION_REFRESH_MS, or half the generation's age once that is longer (at most
 * DECISION_REFRESH_MAX_MS). Rewrites then come at ages R, 2R, 4R, … up to every 10 s: a push that
 * takes T costs O(log T) count-only rewrites per generation instead of T ÷ R, and the counts stored
 * are never older than half the time since the generation was first seen (nor than 10 s). Verdict
 * changes never wait. 0 (off) stays 0.
 */
export function decisionRefreshPeriodMs(refreshMs: number, ageMs: number): number {
  if (refreshMs <= 0) return 0;
  return Math.max(refreshMs, Math.min(DECISION_REFRESH_MAX_MS, Math.floor(ageMs / 2)));
}

/** Whether `stored` already says what `fresh` says (same verdict) and was decided less than `refreshMs` ago. */
export function recentSameVerdict(stored: Decision | undefined, fresh: Decision, now: number, refreshMs: number): boolean {
  if (stored === undefined || refreshMs <= 0 || now - stored.decidedAt >= refreshMs) return false;
  return sameVerdict(stored, fresh);
}

/**
 * Verdicts final for their generation: they leave the pending index and are always written. Invalid
 * (the controller rejected G) is one: no Envoy ACK can change it, so nothing re-evaluates it to True.
 */
function isResolving(decision: Decision): boolean {
  return decision.state === 'Programmed' || decision.state === 'GenerationNotObservable' || decision.state === 'Invalid';
}

/** How often the PROGRESS items are read again when the registry gained a lineage meanwhile (AggregateSnapshot.progressSnapshot). */
const PROGRESS_REGISTRY_READS = 3;

/** Generations read, newest first, when a candidate is evaluated: its own item is almost always among them. */
const NEWEST_GENERATIONS_READ = 3;

/**
 * The candidate's OBJECT item and the newest generation of its object, in one strongly consistent
 * Query (newest first) instead of a GetItem and, before writing, a second Query for a newer
 * generation: one round trip less on the path from the last ACK to the decision (docs/bench/README.md). A
 * generation not among the newest few (or corrupt: listings skip invalid items) is read by key.
 */
async function readWithNewest(deps: EvaluationDeps, candidate: Candidate): Promise<{ read: ItemRead<ObjectGeneration>; newer: number | undefined }> {
  const page = await deps.store.listObjectGenerations(candidate.object, { descending: true, limit: NEWEST_GENERATIONS_READ });
  const newest = page.items[0]?.generation;
  const newer = newest !== undefined && newest > candidate.generation ? newest : undefined;
  const own = page.items.find((item) => item.generation === candidate.generation);
  if (own !== undefined) return { read: { status: 'found', value: own }, newer };
  return { read: await deps.store.getObjectGeneration(candidate.object, candidate.generation), newer };
}

/** Decides one object generation and stores the decision; never throws on bad data, only on I/O. */
export async function evaluateCandidate(deps: EvaluationDeps, snapshot: AggregateSnapshot, candidate: Candidate): Promise<EvaluationOutcome> {
  const key = candidateKey(candidate);
  if (await unchangedFromCache(deps, snapshot, key)) return 'unchanged';
  const outcome = await evaluateFromStore(deps, snapshot, candidate);
  if (outcome.record === undefined || outcome.outcome === 'stale') deps.generationCache?.delete(key);
  else deps.generationCache?.set(key, outcome.record, deps.now());
  return outcome.outcome;
}

/** Whether the cached record (if any) shows that a fresh evaluation would write nothing. */
async function unchangedFromCache(deps: EvaluationDeps, snapshot: AggregateSnapshot, key: string): Promise<boolean> {
  const cached = deps.generationCache?.get(key, deps.now());
  const stored = cached?.decision;
  if (cached === undefined || stored === undefined || isSettledDecision(stored)) return false;
  const { decision: fresh, now } = await snapshot.decide(cached);
  if (isResolving(fresh)) return false;
  return nothingToWrite(deps, cached, fresh, now);
}

/** The full evaluation: reads the item, decides, writes if needed; returns the record as now stored. */
async function evaluateFromStore(deps: EvaluationDeps, snapshot: AggregateSnapshot, candidate: Candidate): Promise<{ outcome: EvaluationOutcome; record?: ObjectGeneration }> {
  const { read, newer } = await readWithNewest(deps, candidate);
  if (read.status === 'missing') return { outcome: 'missing' };
  if (read.status === 'corrupt') {
    deps.logger.error({ object: formatObjectRef(candidate.object), generation: candidate.generation, reason: read.error }, 'corrupt object generation skipped');
    return { outcome: 'corrupt' };
  }
  const record = read.value;
  if (record.decision?.supersededBy !== undefined) {
    // Superseded stays superseded: a newer generation is decided instead (an entry left behind by a
    // failed delete is removed, nothing is read or written again).
    for (const entry of pendingEntriesOf(record)) await deps.aggregates.deletePending(entry);
    return { outcome: 'superseded', record };
  }
  if (record.decision?.state === 'Programmed') {
    // Programmed is final for a generation (docs/CONVERGENCE.md, "Resolution"): an entry re-created by
    // a replayed watermark record is removed again, never re-decided.
    for (const entry of pendingEntriesOf(record)) await deps.aggregates.deletePending(entry);
    return { outcome: 'unchanged', record };
  }
  // Freshness per lineage, not only the total: when a dead gateway's lineage leaves the live set the
  // total drops, and a total-only guard refused every later decision (docs/CONVERGENCE.md).
  const fresh = await snapshot.decide(record);
  const now = fresh.now;
  let decision: Decision = fresh.decision;
  // Nothing to write: a newer generation changes nothing here (its own watermark record supersedes
  // this one, supersedeOlder); `newer` guards writes only. It was read with the item: a generation
  // created since is caught by that record's supersedeOlder, as one created between a later check and
  // the write always was.
  const resolving = isResolving(decision);
  if (!resolving && nothingToWrite(deps, record, decision, now)) return { outcome: 'unchanged', record };
  const supersededBy = newer;
  if (supersededBy !== undefined) {
    const evaluatedRevs = maxEvaluatedRevs(decision.evaluatedRevs, record.decision?.evaluatedRevs);
    decision = {
      ...(record.decision ?? decision),
      supersededBy,
      decidedAt: now,
      evaluatedRev: Math.max(decision.evaluatedRev, record.decision?.evaluatedRev ?? 0),
      ...(evaluatedRevs === undefined ? {} : { evaluatedRevs, registryVersion: Math.max(decision.registryVersion ?? 0, record.decision?.registryVersion ?? 0) }),
    };
  }
  let outcome: EvaluationOutcome = 'unchanged';
  if (!sameDecision(record.decision, decision)) {
    const written = await deps.aggregates.writeDecision(record.object, record.generation, decision);
    outcome = written;
    if (written === 'written' && supersededBy === undefined) deps.onDecisionWritten?.({ ...record, decision }, record.decision);
  }
  const resolved = supersededBy !== undefined || resolving;
  if (resolved) {
    for (const entry of pendingEntriesOf(record)) await deps.aggregates.deletePending(entry);
  }
  deps.logger.debug({ object: formatObjectRef(record.object), generation: record.generation, state: decision.state, programmed: decision.programmed, total: decision.total, outcome }, 'evaluated');
  return { outcome: supersededBy !== undefined ? 'superseded' : outcome, record: outcome === 'written' ? { ...record, decision } : record };
}

/**
 * A new generation of an object arrived: older generations that are still undecided or not
 * Programmed are superseded (only the latest generation is decided) and leave the pending index.
 * Generations are few per object (DynamoDB TTL removes old ones), so a bounded page is enough.
 */
export async function supersedeOlder(deps: EvaluationDeps, latest: Candidate): Promise<number> {
  const page = await deps.store.listObjectGenerations(latest.object, { descending: true, limit: 20 });
  let superseded = 0;
  for (const older of page.items) {
    if (older.generation >= latest.generation) continue;
    if (isSettledDecision(older.decision)) continue;
    const now = deps.now();
    const base = older.decision ?? { state: 'Pending' as const, programmed: 0, total: 0, blockers: [], blockersOmitted: 0, decidedAt: now, evaluatedRev: 0 };
    const written = await deps.aggregates.writeDecision(older.object, older.generation, { ...base, supersededBy: latest.generation, decidedAt: now });
    if (written === 'written') superseded++;
    for (const entry of pendingEntriesOf(older)) await deps.aggregates.deletePending(entry);
  }
  return superseded;
}

/** Adds the generation to the pending index of every lineage it has a watermark on. */
export async function indexPending(deps: EvaluationDeps, candidate: Candidate, record: ObjectGeneration): Promise<void> {
  if (isSettledDecision(record.decision)) return;
  for (const entry of pendingEntriesOf({ ...record, object: candidate.object })) await deps.aggregates.putPending(entry);
}

/** Every pending generation on the given lineages (paged; bounded by `limit` entries in total). */
export async function pendingOn(deps: EvaluationDeps, lineages: Iterable<string>, limit = 10_000): Promise<Candidate[]> {
  const found = new Map<string, Candidate>();
  for (const lineage of lineages) {
    let cursor: string | undefined;
    do {
      const page = await deps.aggregates.listPending(lineage, cursor === undefined ? {} : { cursor });
      for (const entry of page.items) found.set(candidateKey(entry), { object: entry.object, generation: entry.generation });
      cursor = page.nextCursor;
    } while (cursor !== undefined && found.size < limit);
  }
  if (found.size >= limit) deps.logger.warn({ limit }, 'pending generations beyond the limit are left for the next run');
  return [...found.values()];
}

/** Evaluates the candidates (a few at a time); returns the keys of those that failed (I/O), logged. */
export async function evaluateAll(deps: EvaluationDeps, candidates: readonly Candidate[], snapshot = new AggregateSnapshot(deps)): Promise<{ failed: Set<string>; outcomes: Map<string, EvaluationOutcome> }> {
  const failed = new Set<string>();
  const outcomes = new Map<string, EvaluationOutcome>();
  await forEachConcurrently(candidates, CONVERGENCE_CONCURRENCY, async (candidate) => {
    const key = candidateKey(candidate);
    try {
      outcomes.set(key, await evaluateCandidate(deps, snapshot, candidate));
    } catch (error) {
      deps.logger.error({ candidate: key, err: error }, 'evaluation failed');
      failed.add(key);
    }
  });
  return { failed, outcomes };
}
