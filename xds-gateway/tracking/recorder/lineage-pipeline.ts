// The recorder's LINEAGE writes: lineage states coalesced per lineage, each write carrying the
// lineage's Envoy count (`envoysRecorded`, denominator.ts), the write-ahead of that count before the
// states it covers (writeCounts), registration of a new lineage in the convergence functions' lineage
// registry before its first LINEAGE item (docs/CONVERGENCE.md, "The denominator"), and lineages whose
// item the store refused for good (no state on them can be counted; their Envoys are refused).
import type { Logger } from 'pino';
import type { Clock, EnvoyState, EventStore, LineageState } from '../../../common/core';
import { isPermanentStoreError } from '../../../common/store';
import { describeError } from '../../../common/describe-error';
import { lineageStateFor } from '../lineage-mirror';
import type { EnvoyCounts } from './denominator';
import { readToRev, type KnownRev } from './known-rev';
import type { RecorderMetrics } from './options';
import { performanceSeconds } from './write-latency';

export interface LineagePipelineOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  metrics: RecorderMetrics | undefined;
  counts: EnvoyCounts;
  registerLineage: ((lineage: string, heartbeatAt: number) => Promise<void>) | undefined;
}

export class LineagePipeline {
  private readonly queue = new Map<string, LineageState>();
  /** Latest lineage state handed to us, per lineage (what a write-ahead count is written with). */
  private readonly latest = new Map<string, LineageState>();
  private readonly revs = new Map<string, KnownRev<LineageState>>();
  /** Lineages this process has registered (a lineage is one process lifetime: never unregistered here). */
  private readonly registered = new Set<string>();
  /** Lineages whose LINEAGE item the store refused for good: no state on them can be counted. */
  private readonly refused = new Map<string, string>();

  constructor(private readonly options: LineagePipelineOptions) {}

  enqueue(state: LineageState): void {
    this.queue.set(state.lineage, state);
    this.latest.set(state.lineage, state);
  }

  /** Queues a write of the lineage (with the latest state known) unless one is queued. */
  requestWrite(lineage: string, group: string): void {
    if (!this.queue.has(lineage)) this.queue.set(lineage, this.latest.get(lineage) ?? lineageStateFor(lineage, group, this.options.clock.now()));
  }

  get queued(): number {
    return this.queue.size;
  }

  /** Lineages with a write queued. */
  queuedLineages(): IterableIterator<string> {
    return this.queue.keys();
  }

  /** Why the lineage can never be recorded (undefined: it can). */
  refusal(lineage: string): string | undefined {
    return this.refused.get(lineage);
  }

  /** Lineages this pipeline keeps anything of. */
  keptLineages(): string[] {
    return [...this.revs.keys(), ...this.latest.keys(), ...this.registered];
  }

  forgetLineage(lineage: string): void {
    this.revs.delete(lineage);
    this.latest.delete(lineage);
    this.registered.delete(lineage);
    this.refused.delete(lineage);
  }

  /**
   * Write-ahead of the denominator: for each lineage whose stored count is behind, the LINEAGE item
   * carrying the new count is written before any of the states it covers (`states`: the flush's,
   * for a lineage the tracker never reported). False if a lineage write failed (the states it would
   * count stay queued; the others are written).
   */
  async writeCounts(uncovered: ReadonlySet<string>, states: readonly EnvoyState[]): Promise<boolean> {
    let ok = true;
    for (const lineage of uncovered) {
      if (!this.options.counts.isBehind(lineage)) continue;
      // Take the queued lineage state if there is one (this write is its write); else the latest
      // known; else a fresh one (a lineage whose tracker never reported it: tests, or a bug).
      const queued = this.queue.get(lineage);
      const sample = states.find((state) => state.lineage === lineage);
      const base = queued ?? this.latest.get(lineage) ?? lineageStateFor(lineage, sample?.group ?? '', this.options.clock.now());
      this.queue.delete(lineage);
      if (!(await this.write(base))) {
        ok = false;
        if (!this.queue.has(lineage)) this.queue.set(lineage, base);
      }
    }
    return ok;
  }

  /** Whether `lineage` was registered in the convergence registry by this pipeline (or needs no registration). */
  isRegistered(lineage: string): boolean {
    return this.options.registerLineage === undefined || this.registered.has(lineage);
  }

  /** Writes every queued lineage state; false if any must be retried (kept queued). */
  async flush(): Promise<boolean> {
    if (this.queue.size === 0) return true;
    const ready = [...this.queue.values()];
    this.queue.clear();
    let ok = true;
    for (const ours of ready) {
      const written = await this.write(ours);
      if (!written) {
        ok = false;
        if (!this.queue.has(ours.lineage)) this.queue.set(ours.lineage, ours);
      }
    }
    return ok;
  }

  private async write(ours: LineageState): Promise<boolean> {
    const { store, logger, metrics, counts, registerLineage } = this.options;
    // Refused for good (refuse): nothing to write, nothing to retry.
    if (this.refused.has(ours.lineage)) return true;
    if (registerLineage !== undefined && !this.registered.has(ours.lineage)) {
      try {
        await registerLineage(ours.lineage, ours.heartbeatAt);
        this.registered.add(ours.lineage);
      } catch (error) {
        if (isPermanentStoreError(error)) {
          this.refuse(ours.lineage, describeError(error));
          return true;
        }
        metrics?.writeFailed('lineageState');
        logger.warn({ lineage: ours.lineage, err: describeError(error) }, 'lineage registration failed; will retry');
        return false;
      }
    }
    let expectedRev = this.revs.get(ours.lineage)?.rev;
    // The lineage item is ours alone (one process lifetime); a conflict can only be our own earlier
    // write whose answer was lost, so we overwrite with the stored rev + 1.
    // Every lineage write carries the count of nodes known so far (never less than a stored one:
    // the set only grows and our writes are sequential).
    const envoysRecorded = counts.wanted(ours.lineage);
    const envoyNodesRecorded = counts.nodes(ours.lineage);
    for (let attempt = 0; attempt < 3; attempt++) {
      const state = { ...ours, envoysRecorded, envoyNodesRecorded, rev: (expectedRev ?? -1) + 1 };
      const started = performanceSeconds();
      try {
        const result = await store.putLineageState(state, expectedRev);
        metrics?.writeLatency('lineageState', performanceSeconds() - started);
        if (result.ok) {
          this.revs.set(ours.lineage, { rev: state.rev });
          counts.confirm(ours.lineage, envoysRecorded);
          return true;
        }
        expectedRev = readToRev(result.current).rev;
      } catch (error) {
        if (isPermanentStoreError(error)) {
          this.refuse(ours.lineage, describeError(error));
          return true;
        }
        metrics?.writeFailed('lineageState');
        logger.warn({ lineage: ours.lineage, err: describeError(error) }, 'lineage state write failed; will retry');
        return false;
      }
    }
    this.revs.set(ours.lineage, { rev: expectedRev });
    return false;
  }

  /**
   * The store refused the lineage's item for good (the edge's node bounds make this a bug, not an
   * Envoy's doing). Its write is dropped, not retried (retrying kept the gateway not-ready and every
   * state queued behind it); states on the lineage are dropped from now on, their Envoys told.
   */
  private refuse(lineage: string, reason: string): void {
    if (this.refused.has(lineage)) return;
    this.refused.set(lineage, reason);
    this.options.metrics?.writeDropped?.('lineageState');
    this.options.logger.error({ lineage, reason }, 'lineage state can never be stored; dropped, not retried, its Envoys are refused');
  }
}
