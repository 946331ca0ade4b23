// Deciding object generations from the aggregates: read the live lineages' shards once per batch
// (O(lineages × shards) items, whatever the fleet size), evaluate each candidate X@G with the core's
// evaluateFromAggregates, and store the decision on its OBJECT item. Only the latest generation of an
// object is decided; older ones are marked superseded. Programmed, not-observable and superseded
// generations leave the pending index.
import type { Logger } from 'pino';

import {
  decisionFromConvergence,
  evaluateFromAggregates,
  formatObjectRef,
  sameDecision,
  snapshotRev,
  watermarkOf,
  type AggregateStore,
  type ConvergencePolicy,
  type Decision,
  type EventStore,
  type LineageAggregate,
  type ObjectGeneration,
  type ObjectRef,
  type PendingEntry,
} from '../../common/core';

export interface EvaluationDeps {
  aggregates: AggregateStore;
  store: Pick<EventStore, 'getObjectGeneration' | 'listObjectGenerations' | 'getLineageState'>;
  logger: Logger;
  policy: ConvergencePolicy;
  now: () => number;
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
export function liveLineages(lineages: Readonly<Record<string, number>>, now: number, ttlMs: number): string[] {
  return Object.entries(lineages)
    .filter(([, heartbeatAt]) => now - heartbeatAt <= 2 * ttlMs)
    .map(([lineage]) => lineage)
    .sort();
}

/** The aggregates of lineages with a fresh heartbeat, read at most once per batch. */
export class AggregateSnapshot {
  private loaded: Promise<LineageAggregate[]> | undefined;

  constructor(private readonly deps: EvaluationDeps) {}

  get(): Promise<LineageAggregate[]> {
    this.loaded ??= this.load();
    return this.loaded;
  }

  private async load(): Promise<LineageAggregate[]> {
    const registry = await this.deps.aggregates.getLineageRegistry();
    const live = liveLineages(registry.lineages, this.deps.now(), this.deps.policy.ttlMs);
    return Promise.all(
      live.map(async (lineage) => {
        const { shards, corrupt } = await this.deps.aggregates.getLineageShards(lineage);
        if (corrupt.length > 0) this.deps.logger.error({ lineage, corrupt }, 'corrupt aggregate shards skipped; resync rebuilds them');
        // Read after the shards: the count only grows, so every member read is already counted in it
        // (docs/CONVERGENCE.md, "The denominator"). Strongly consistent (the store's getLineageState).
        return { lineage, shards, envoysRecorded: await this.envoysRecorded(lineage) };
      }),
    );
  }

  private async envoysRecorded(lineage: string): Promise<number | undefined> {
    const read = await this.deps.store.getLineageState(lineage);
    if (read.status === 'found' && read.value.envoysRecorded !== undefined) return read.value.envoysRecorded;
    // Unknown: nothing on this lineage can be Programmed until the gateway writes its count.
    this.deps.logger.warn({ lineage, item: read.status }, 'lineage has no Envoy count; its generations stay Pending');
    return undefined;
  }
}

function pendingEntriesOf(record: ObjectGeneration): PendingEntry[] {
  return Object.entries(record.watermarks).map(([lineage, mark]) => ({ lineage, seq: mark.seq, object: record.object, generation: record.generation }));
}

async function newerGeneration(deps: EvaluationDeps, candidate: Candidate): Promise<number | undefined> {
  const page = await deps.store.listObjectGenerations(candidate.object, { descending: true, limit: 1 });
  const latest = page.items[0]?.generation;
  return latest !== undefined && latest > candidate.generation ? latest : undefined;
}

/** Decides one object generation and stores the decision; never throws on bad data, only on I/O. */
export async function evaluateCandidate(deps: EvaluationDeps, snapshot: AggregateSnapshot, candidate: Candidate): Promise<EvaluationOutcome> {
  const read = await deps.store.getObjectGeneration(candidate.object, candidate.generation);
  if (read.status === 'missing') return 'missing';
  if (read.status === 'corrupt') {
    deps.logger.error({ object: formatObjectRef(candidate.object), generation: candidate.generation, reason: read.error }, 'corrupt object generation skipped');
    return 'corrupt';
  }
  const record = read.value;
  if (record.decision?.state === 'Programmed' && record.decision.supersededBy === undefined) {
    // Programmed is final for a generation (docs/CONVERGENCE.md, "Resolution"): an entry re-created by
    // a replayed watermark record is removed again, never re-decided.
    for (const entry of pendingEntriesOf(record)) await deps.aggregates.deletePending(entry);
    return 'unchanged';
  }
  const now = deps.now();
  const aggregates = await snapshot.get();
  const convergence = evaluateFromAggregates({ object: record.object, generation: record.generation, watermark: watermarkOf(record), aggregates, now, policy: deps.policy });
  let decision: Decision = decisionFromConvergence(convergence, now, snapshotRev(aggregates));
  const supersededBy = await newerGeneration(deps, candidate);
  if (supersededBy !== undefined) decision = { ...(record.decision ?? decision), supersededBy, decidedAt: now, evaluatedRev: Math.max(decision.evaluatedRev, record.decision?.evaluatedRev ?? 0) };
  let outcome: EvaluationOutcome = 'unchanged';
  if (!sameDecision(record.decision, decision)) {
    const written = await deps.aggregates.writeDecision(record.object, record.generation, decision);
    outcome = written;
  }
  const resolved = supersededBy !== undefined || decision.state === 'Programmed' || decision.state === 'GenerationNotObservable';
  if (resolved) {
    for (const entry of pendingEntriesOf(record)) await deps.aggregates.deletePending(entry);
  }
  deps.logger.debug({ object: formatObjectRef(record.object), generation: record.generation, state: decision.state, programmed: decision.programmed, total: decision.total, outcome }, 'evaluated');
  return supersededBy !== undefined ? 'superseded' : outcome;
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
    if (older.decision?.supersededBy !== undefined || older.decision?.state === 'Programmed') continue;
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
  if (record.decision?.state === 'Programmed' || record.decision?.supersededBy !== undefined) return;
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

/** Candidates evaluated at once (each is a few small reads and at most one write). */
export const EVALUATION_CONCURRENCY = 8;

/** Evaluates the candidates (a few at a time); returns the keys of those that failed (I/O), logged. */
export async function evaluateAll(deps: EvaluationDeps, candidates: readonly Candidate[], snapshot = new AggregateSnapshot(deps)): Promise<{ failed: Set<string>; outcomes: Map<string, EvaluationOutcome> }> {
  const failed = new Set<string>();
  const outcomes = new Map<string, EvaluationOutcome>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < candidates.length) {
      const candidate = candidates[next++] as Candidate;
      const key = candidateKey(candidate);
      try {
        outcomes.set(key, await evaluateCandidate(deps, snapshot, candidate));
      } catch (error) {
        deps.logger.error({ candidate: key, err: error }, 'evaluation failed');
        failed.add(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(EVALUATION_CONCURRENCY, candidates.length) }, worker));
  return { failed, outcomes };
}
