// Convergence hands a changed verdict straight to the status writer (DESIGN §5: convergence "hands
// the result to the status writer"). Without it, the path from the last ACK to the condition is two
// DynamoDB stream hops (Envoy state → convergence → decision on the OBJECT item → status → Kubernetes),
// and on AWS each hop averages ~125 ms (Lambda polls a shard about 4 times a second): two hops alone
// would spend the issue-9 budget of 250 ms. So once convergence has durably written a decision whose
// verdict changed, the same invocation applies the condition through the status function's own path
// (functions/status/process.ts `applyDecision`: the one StatusWriter, re-read, pure mutator, no-op
// skip, 409 retry, newer-generation skip, then recordCondition).
//
// It is an accelerator, never a dependency: the stream path to the status function is unchanged and
// stays the backstop (and resync re-asserts drift). A failed, slow or unsupported direct write is
// logged with its object and left to the status function; the convergence batch's result does not
// depend on it. Bounded: a few writes at a time per container, each with a deadline, and after a
// failure the handoff pauses for a while so a Kubernetes outage does not slow every batch.
import type { Logger } from 'pino';
import { z } from 'zod';
import { conditionSettingsShape } from '../kube/condition-settings';

import { formatObjectRef, type Decision, type ObjectGeneration, type ObjectStore } from '../../common/core';
import { createKubeAccess, kubeAccessConfigFromEnv, type KubeAccess } from '../kube/access';
import { StatusWriter } from '../kube/status-writer';
import { parseTrackedKinds, TrackedKinds } from '../kube/tracked-kinds';
import { applyDecision, type ObjectResult, type StatusProcessorDeps } from '../status/process';

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
}

export function emptyHandoffReport(): HandoffReport {
  return { offered: 0, written: 0, unchanged: 0, notWritten: 0, failed: 0, paused: 0 };
}

export interface StatusHandoffOptions {
  /** The status function's dependencies (writer, store, condition type …), built once per container. */
  status: StatusProcessorDeps;
  logger: Logger;
  now: () => number;
  /** Direct writes in flight per container (default 8). */
  concurrency?: number;
  /** One direct write's deadline, ms (default 2000); past it the batch stops waiting for it. */
  timeoutMs?: number;
  /** After a failure, no direct writes for this long, ms (default 10000). */
  pauseAfterFailureMs?: number;
}

/** One convergence batch's handoffs: offered as decisions are written, awaited before the batch returns. */
export interface HandoffBatch {
  offer(record: ObjectGeneration, previous: Decision | undefined): void;
  settle(): Promise<HandoffReport>;
}

type Attempt = { kind: 'done'; result: ObjectResult } | { kind: 'error'; error: unknown } | { kind: 'timeout' };

export class StatusHandoff {
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly pauseMs: number;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private pausedUntil = 0;

  constructor(private readonly options: StatusHandoffOptions) {
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.timeoutMs = Math.max(1, options.timeoutMs ?? 2000);
    this.pauseMs = Math.max(0, options.pauseAfterFailureMs ?? 10_000);
  }

  begin(): HandoffBatch {
    const report = emptyHandoffReport();
    const running: Promise<void>[] = [];
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
      const attempt = await this.withDeadline(applyDecision(record, [], this.options.status, { fresh: true }));
      if (attempt.kind !== 'done') {
        report.failed++;
        this.pausedUntil = this.options.now() + this.pauseMs;
        const reason = attempt.kind === 'timeout' ? `no answer within ${this.timeoutMs} ms` : attempt.error instanceof Error ? attempt.error.message : String(attempt.error);
        this.options.logger.warn({ ...context, reason, pausedForMs: this.pauseMs }, 'status handoff failed; left to the status function');
        return;
      }
      const { result } = attempt;
      if (result.result === 'written') report.written++;
      else if (result.result === 'alreadyWritten' || (result.result === 'skipped' && result.detail === 'unchanged')) report.unchanged++;
      else report.notWritten++;
      this.options.logger.debug({ ...context, result: result.result, detail: result.detail }, 'status handoff done');
    } finally {
      this.release();
    }
  }

  /** The attempt, or 'timeout' once the deadline passes (the request is then abandoned, not awaited). */
  private withDeadline(work: Promise<ObjectResult>): Promise<Attempt> {
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

const handoffEnvSchema = z.object({
  STATUS_HANDOFF: z.enum(['true', 'false']).default('true'),
  STATUS_HANDOFF_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  STATUS_HANDOFF_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(2000),
  ...conditionSettingsShape,
});

export interface StatusHandoffBuildOptions {
  store: Pick<ObjectStore, 'recordCondition' | 'getObjectGeneration'>;
  now?: () => number;
  /** Replaces the Kubernetes access built from the environment (tests). */
  access?: KubeAccess;
}

/**
 * The convergence function's handoff from its environment, or why there is none: STATUS_HANDOFF=false,
 * or no TRACKED_KINDS (no Kubernetes access configured). Throws on an invalid configuration; the
 * caller logs it and runs without the handoff (convergence must not stop over it).
 */
export function buildStatusHandoff(env: Record<string, string | undefined>, logger: Logger, options: StatusHandoffBuildOptions): { handoff: StatusHandoff } | { off: string } {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const settings = handoffEnvSchema.parse(set);
  if (settings.STATUS_HANDOFF === 'false') return { off: 'STATUS_HANDOFF=false' };
  if (set['TRACKED_KINDS'] === undefined) return { off: 'TRACKED_KINDS is not set (no Kubernetes access configured)' };
  const kinds = new TrackedKinds(parseTrackedKinds(set['TRACKED_KINDS']));
  // Built once per container, like the status function's (EKS tokens are renewed inside).
  const access = options.access ?? createKubeAccess(kubeAccessConfigFromEnv(set));
  const now = options.now ?? Date.now;
  const writeOnMessageChange = settings.STATUS_WRITE_ON_MESSAGE_CHANGE === 'true';
  // One attempt per request: a 5xx or an unreachable API server is the status function's to retry
  // (with its backoff), not something to sit out inside a convergence batch.
  const writer = new StatusWriter({ access, kinds, logger, now, writeOnMessageChange, maxServerErrorAttempts: 1 });
  const status: StatusProcessorDeps = {
    writer,
    store: options.store,
    // A deleted object's items are marked by the status function when it meets the same 404.
    cleanup: { markDeleted: async () => 0 },
    logger,
    conditionType: settings.CONDITION_TYPE,
    writeOnMessageChange,
    now,
  };
  return { handoff: new StatusHandoff({ status, logger, now, concurrency: settings.STATUS_HANDOFF_CONCURRENCY, timeoutMs: settings.STATUS_HANDOFF_TIMEOUT_MS }) };
}
