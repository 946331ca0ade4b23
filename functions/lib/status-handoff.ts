// Convergence hands a changed verdict straight to the status writer (docs/FUNCTIONS.md, "The
// handoff"). Without it, the path from the last ACK to the condition is two
// DynamoDB stream hops (Envoy state → convergence → decision on the OBJECT item → status → Kubernetes),
// and on AWS each hop averages ~125 ms (Lambda polls a shard about 4 times a second): two hops alone
// would spend the 250 ms budget of last ACK → True (docs/bench/README.md). So once convergence has durably written a decision whose
// verdict changed, the same invocation hands it to the one status path as a `handoff` update
// (functions/status/apply.ts `applyStatusUpdate`: the item's record, the one StatusWriter with its
// re-read, pure mutator, no-op skip, revalidation and 409 retry, then recordCondition), the path the
// status function's stream records take.
//
// It is an accelerator, never a dependency: the stream path to the status function is unchanged and
// stays the backstop (and resync re-asserts drift). A failed, slow or unsupported direct write is
// logged with its object and left to the status function; the convergence batch's result does not
// depend on it. Bounded: a few writes at a time per container, each with a deadline, and after a
// failure the handoff pauses for a while so a Kubernetes outage does not slow every batch.
//
// The handoff also owns the trailing edge of the message refresh rule (common/core/status-update.ts
// `messageRefreshDue`). A count-only change that arrives while our last write of its generation is
// younger than STATUS_MESSAGE_REFRESH_MS is not written (≤ 1 write per interval), so when no later
// record comes (the fleet went quiet at 8/10) something must look again once the interval has passed.
// Convergence is that clock: it runs on every stream batch, and every gateway writes its LINEAGE
// heartbeat every 5 s, so a batch comes at least that often while any Envoy can be live. The expire
// schedule is too coarse (EventBridge's rate is a minute at best), and the status function only runs
// when a record arrives (holding a refresh inside its invocation would stall its whole stream shard).
// So at the start of a batch, at most every quarter interval per container, the handoff sweeps the
// pending index (the not-True generations), reads each item and rewrites a stale message that is due
// through the same path.
import type { Logger } from 'pino';

import { formatObjectRef, type AggregateStore, type Decision, type ObjectGeneration, type ObjectRef, type ObjectStore } from '../../common/core';
import { forEachConcurrently } from '../../common/worker-pool';
import type { KubeAccess } from '../kube/access';
import { conditionWritingFromConfig } from '../kube/condition-writing';
import { applyStatusUpdate, staleMessageDue, type StatusPathDeps, type StatusUpdateResult } from '../status/apply';
import { CONVERGENCE_CONCURRENCY, functionsConfig, HANDOFF_SETTINGS, type FunctionsConfig } from './config';
import { liveLineages, tableClockOf } from './evaluate';

/**
 * Whether a decision just written is one convergence applies itself: every verdict other than
 * Pending (Programmed, Rejected, Stuck, NoEnvoys, GenerationNotObservable) that differs from the one
 * stored before. Pending is nearly every generation's first verdict: a rollout of many objects would
 * put all those writes inside the batches that must then decide Programmed, so Pending keeps going
 * through the stream (its latency is not what readers wait for). A count-only change is no verdict
 * change (the status function would not write it either: invariant 4), and a superseded decision is
 * never written.
 */
export function isHandoffVerdict(previous: Decision | undefined, next: Decision): boolean {
  if (next.supersededBy !== undefined || next.state === 'Pending') return false;
  return previous === undefined || previous.supersededBy !== undefined || previous.state !== next.state || previous.notObservableReason !== next.notObservableReason;
}

export interface HandoffReport {
  offered: number;
  written: number;
  /** Kubernetes already held it, or the item already recorded it. */
  unchanged: number;
  /** Not written for a reason the status function would also accept (object newer, gone, unsupported kind). */
  notWritten: number;
  /** Failed or past the deadline: left to the status function. */
  failed: number;
  /** Not attempted: the handoff was paused after a recent failure. */
  paused: number;
  /** Present when this batch ran a refresh sweep: generations looked at, messages rewritten, left for the next sweep. */
  sweep?: { checked: number; refreshed: number; failed: number; deferred: number };
}

export function emptyHandoffReport(): HandoffReport {
  return { offered: 0, written: 0, unchanged: 0, notWritten: 0, failed: 0, paused: 0 };
}

/** Where the refresh sweep finds not-True generations (convergence's pending index) and which lineages are live. */
export interface RefreshSweepOptions {
  aggregates: Pick<AggregateStore, 'getLineageRegistry' | 'listPending'>;
  /** ENVOY_TTL_MS: a lineage silent for twice this is dead (evaluate.ts `liveLineages`). */
  ttlMs: number;
  /** EXPIRE_STALL_MS, for the table clock that silence is judged on (evaluate.ts `tableClockOf`). */
  stallMs?: number | undefined;
  /** A container sweeps at most this often, ms (default: a quarter of the refresh interval, at least 500). */
  everyMs?: number;
  /** Pending generations looked at per sweep (default 2000); more wait for the next sweep. */
  maxChecked?: number;
  /** Item reads (and refresh writes) at once (default 4); separate from the verdict handoffs' slots. */
  concurrency?: number;
}

export interface StatusHandoffOptions {
  /** The status path's dependencies (writer, store, condition type …), built once per container. */
  status: StatusPathDeps;
  logger: Logger;
  now: () => number;
  /** Direct writes in flight per container (default 8). */
  concurrency?: number;
  /** One direct write's deadline, ms (default 2000); past it the batch stops waiting for it. */
  timeoutMs?: number;
  /** After a failure, no direct writes for this long, ms (default 10000). */
  pauseAfterFailureMs?: number;
  /**
   * The message refresh sweep (needs `status.messageRefreshMs` > 0). Absent: stale messages are only
   * rewritten when a record of their item arrives.
   */
  refreshSweep?: RefreshSweepOptions;
}

/** One convergence batch's handoffs: offered as decisions are written, awaited before the batch returns. */
export interface HandoffBatch {
  offer(record: ObjectGeneration, previous: Decision | undefined): void;
  settle(): Promise<HandoffReport>;
}

type Attempt = { kind: 'done'; result: StatusUpdateResult } | { kind: 'error'; error: unknown } | { kind: 'timeout' };

export class StatusHandoff {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly pauseMs: number;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private pausedUntil = 0;
  private nextSweepAt = 0;

  constructor(private readonly options: StatusHandoffOptions) {
    this.concurrency = Math.max(1, options.concurrency ?? CONVERGENCE_CONCURRENCY);
    this.timeoutMs = Math.max(1, options.timeoutMs ?? 2000);
    this.pauseMs = Math.max(0, options.pauseAfterFailureMs ?? 10_000);
  }

  begin(): HandoffBatch {
    const report = emptyHandoffReport();
    const running: Promise<void>[] = [];
    const sweep = this.startSweep(report);
    if (sweep !== undefined) running.push(sweep);
    return {
      offer: (record, previous) => {
        if (record.decision === undefined || !isHandoffVerdict(previous, record.decision)) return;
        report.offered++;
        running.push(
          this.handOff(record, report).catch((error: unknown) => {
            // Never reaches the batch: the status function writes it from the stream.
            report.failed++;
            this.options.logger.error({ object: formatObjectRef(record.object), generation: record.generation, err: error }, 'status handoff failed unexpectedly');
          }),
        );
      },
      settle: async () => {
        await Promise.all(running);
        return report;
      },
    };
  }

  private async handOff(record: ObjectGeneration, report: HandoffReport): Promise<void> {
    await this.acquire();
    const context = { object: formatObjectRef(record.object), generation: record.generation, state: record.decision?.state };
    try {
      if (this.options.now() < this.pausedUntil) {
        report.paused++;
        this.options.logger.debug(context, 'status handoff paused after a recent failure; left to the status function');
        return;
      }
      const attempt = await this.withDeadline(applyStatusUpdate({ source: 'handoff', record }, this.options.status));
      if (attempt.kind !== 'done') {
        report.failed++;
        this.pausedUntil = this.options.now() + this.pauseMs;
        const reason = attempt.kind === 'timeout' ? `no answer within ${this.timeoutMs} ms` : attempt.error instanceof Error ? attempt.error.message : String(attempt.error);
        this.options.logger.warn({ ...context, reason, pausedForMs: this.pauseMs }, 'status handoff failed; left to the status function');
        return;
      }
      const { result } = attempt;
      // A deleted object's items are marked by the status function when it meets the same 404.
      if (result.result === 'notFound') this.options.logger.info(context, 'object is gone; left to the status function');
      if (result.result === 'written') report.written++;
      else if (result.result === 'alreadyWritten' || (result.result === 'skipped' && result.detail === 'unchanged')) report.unchanged++;
      else report.notWritten++;
      this.options.logger.debug({ ...context, result: result.result, detail: result.detail }, 'status handoff done');
    } finally {
      this.release();
    }
  }

  /** The sweep for this batch, if one is due in this container (never throws: it is logged). */
  private startSweep(report: HandoffReport): Promise<void> | undefined {
    const sweep = this.options.refreshSweep;
    const intervalMs = this.options.status.messageRefreshMs ?? 0;
    if (sweep === undefined || intervalMs <= 0) return undefined;
    const now = this.options.now();
    if (now < this.nextSweepAt || now < this.pausedUntil) return undefined;
    this.nextSweepAt = now + (sweep.everyMs ?? Math.max(500, Math.floor(intervalMs / 4)));
    return this.sweep(sweep, report).catch((error: unknown) => {
      this.options.logger.warn({ err: error }, 'message refresh sweep failed; the next one retries');
    });
  }

  /**
   * Every pending generation on a live lineage (deduplicated across lineages, at most `maxChecked`),
   * read with a consistent read; those whose recorded condition is not True, out of date and due
   * are handed to the status path, which plans against what Kubernetes holds and records the
   * write's time. Bounded by the handoff's deadline: generations not reached by then wait for the next
   * sweep, so a batch never waits long for it.
   */
  private async sweep(options: RefreshSweepOptions, report: HandoffReport): Promise<void> {
    const status = this.options.status;
    const read = status.store.getObjectGeneration?.bind(status.store);
    if (read === undefined) return;
    const started = this.options.now();
    const stats = { checked: 0, refreshed: 0, failed: 0, deferred: 0 };
    report.sweep = stats;
    const registry = await options.aggregates.getLineageRegistry();
    const maxChecked = Math.max(1, options.maxChecked ?? 2000);
    const candidates = new Map<string, { object: ObjectRef; generation: number }>();
    for (const lineage of liveLineages(registry.lineages, started, options.ttlMs, tableClockOf(registry, options))) {
      let cursor: string | undefined;
      do {
        const page = await options.aggregates.listPending(lineage, cursor === undefined ? {} : { cursor });
        for (const entry of page.items) candidates.set(`${formatObjectRef(entry.object)}@${entry.generation}`, { object: entry.object, generation: entry.generation });
        cursor = page.nextCursor;
      } while (cursor !== undefined && candidates.size < maxChecked);
      if (candidates.size >= maxChecked) break;
    }
    const queue = [...candidates.values()].slice(0, maxChecked);
    await forEachConcurrently(queue, options.concurrency ?? 4, async (candidate) => {
      if (this.options.now() - started >= this.timeoutMs || this.options.now() < this.pausedUntil) {
        stats.deferred++;
        return;
      }
      stats.checked++;
      const item = await read(candidate.object, candidate.generation);
      if (item.status !== 'found' || !staleMessageDue(item.value, status)) return;
      const attempt = await this.withDeadline(applyStatusUpdate({ source: 'handoff', record: item.value }, status));
      if (attempt.kind === 'done') {
        if (attempt.result.result === 'written') stats.refreshed++;
        return;
      }
      stats.failed++;
      this.pausedUntil = this.options.now() + this.pauseMs;
      const reason = attempt.kind === 'timeout' ? `no answer within ${this.timeoutMs} ms` : attempt.error instanceof Error ? attempt.error.message : String(attempt.error);
      this.options.logger.warn({ object: formatObjectRef(candidate.object), generation: candidate.generation, reason, pausedForMs: this.pauseMs }, 'message refresh failed; the next sweep retries');
    });
    if (stats.refreshed > 0 || stats.failed > 0) this.options.logger.info({ ...stats, ms: this.options.now() - started }, 'message refresh sweep');
  }

  /** The attempt, or 'timeout' once the deadline passes (the request is then abandoned, not awaited). */
  private withDeadline(work: Promise<StatusUpdateResult>): Promise<Attempt> {
    let timer: NodeJS.Timeout | undefined;
    const settled = work.then(
      (result): Attempt => ({ kind: 'done', result }),
      (error: unknown): Attempt => ({ kind: 'error', error }),
    );
    const deadline = new Promise<Attempt>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'timeout' }), this.timeoutMs);
    });
    return Promise.race([settled, deadline]).finally(() => clearTimeout(timer));
  }

  private acquire(): Promise<void> {
    if (this.inFlight < this.concurrency) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.inFlight--;
  }
}

export interface StatusHandoffBuildOptions {
  store: Pick<ObjectStore, 'recordCondition' | 'getObjectGeneration'>;
  /** Convergence's aggregate store: with it, the handoff sweeps stale messages (the refresh rule's trailing edge). */
  aggregates?: Pick<AggregateStore, 'getLineageRegistry' | 'listPending'>;
  now?: () => number;
  /** Replaces the Kubernetes access built from the environment (tests). */
  access?: KubeAccess;
}

/**
 * The convergence function's handoff from its environment, or why there is none: STATUS_HANDOFF=false,
 * or no TRACKED_KINDS (no Kubernetes access configured). Throws on an invalid configuration; the
 * caller logs it and runs without the handoff (convergence must not stop over it).
 */
export function buildStatusHandoff(source: Record<string, string | undefined> | FunctionsConfig, logger: Logger, options: StatusHandoffBuildOptions): { handoff: StatusHandoff } | { off: string } {
  const config = functionsConfig(source);
  const settings = config.slice(HANDOFF_SETTINGS);
  if (!settings.STATUS_HANDOFF) return { off: 'STATUS_HANDOFF=false' };
  const { TRACKED_KINDS: trackedKinds } = config.slice(['TRACKED_KINDS']);
  if (trackedKinds === undefined) return { off: 'TRACKED_KINDS is not set (no Kubernetes access configured)' };
  const now = options.now ?? Date.now;
  // Built once per container, like the status function's. One attempt per request: a 5xx or an
  // unreachable API server is the status function's to retry (with its backoff), not something to
  // sit out inside a convergence batch.
  const writing = conditionWritingFromConfig(config, trackedKinds, logger, { ...(options.access === undefined ? {} : { access: options.access }), now, maxServerErrorAttempts: 1 });
  const status: StatusPathDeps = {
    ...writing,
    store: options.store,
    logger,
    messageRefreshMs: settings.STATUS_MESSAGE_REFRESH_MS,
    now,
  };
  const refreshSweep = options.aggregates === undefined ? {} : { refreshSweep: { aggregates: options.aggregates, ttlMs: settings.ENVOY_TTL_MS, stallMs: settings.EXPIRE_STALL_MS } };
  return { handoff: new StatusHandoff({ status, logger, now, concurrency: settings.STATUS_HANDOFF_CONCURRENCY, timeoutMs: settings.STATUS_HANDOFF_TIMEOUT_MS, ...refreshSweep }) };
}
