// The observed-generation barrier (docs/GATEWAY.md, "Watermarks": the barrier), for control planes that do not stamp
// provenance (unmodified Contour). Contour sets its xDS snapshot before it writes status, so once we
// *see* the controller report X@G processed, any upstream response to a request sent after that
// moment reflects G. We then re-open the group's upstream subscription and take the gateway version
// after the first response on the new stream as W(X, G) for that lineage.
//  - Batched: one re-open serves every barrier observed before it started (the loop snapshots the
//    observations first, then re-opens). Re-opens are serialised here: a re-open that started before
//    an observation must never be used for it.
//  - Leader: only the status writer's snapshot is known to contain G (followers build their own and
//    may be behind). The Lease and the object's status reach us on different watches, in no common
//    order: a new leader's status write can arrive before the Lease change that made it leader, while
//    we still point at the old leader, now a follower that may be behind. So every round confirms the
//    leader with a fresh read of the Lease, taken after the observations it serves: the new holder
//    acquired the Lease before it wrote the status we saw, so the read names it (or a later one). If
//    the leader changed before or while a barrier ran, its result is thrown away and the barrier is
//    re-done after re-targeting (and a settle delay).
//  - New lineages (a group whose first Envoy arrives later) get barriers for everything known.
//  - Kinds with no signal: each generation is marked not observable instead.
//  - A generation the controller reports processed but rejected (HTTPProxy `Valid=False`) gets no
//    barrier: its content was never applied, so a watermark for it would let our condition say True
//    for a change that is not live. It is marked rejected once instead (convergence: Invalid).
import type { Logger } from 'pino';
import { formatObjectRef, type Clock, type ObjectRef } from '../../common/core';
import { describeError } from '../../common/describe-error';
import type { RelayControl, ReopenResult } from '../relay/observer';
import type { ObjectRecords } from './recorder';
import type { ProcessedSignal } from '../../common/tracked-kinds';
import { DEFAULT_NOT_OBSERVABLE_REASON, type ObservedObject } from './tracked-kinds';

/** What the barrier needs to know about the control plane's leader (LeaderFollower implements it). */
export interface LeaderView {
  /** Bumped on every change of the upstream target's leadership. */
  epoch(): number;
  /** False while there is no known leader we point at (barriers wait). */
  trusted(): boolean;
  onChange(listener: () => void): void;
  /**
   * Reads the leadership now (not from a watch, which may be behind) and applies it before
   * resolving, so the leader known afterwards is at least as new as anything observed before the
   * call. Rejects when it cannot read (the barrier retries).
   */
  confirm(): Promise<void>;
}

/** Without leader following (single upstream, or provenance), the upstream is always trusted. */
export const ALWAYS_LEADER: LeaderView = { epoch: () => 0, trusted: () => true, onChange: () => undefined, confirm: () => Promise.resolve() };

export interface BarrierMetrics {
  reopened(group: string, seconds: number): void;
  watermarksRecorded(count: number): void;
  redone(): void;
}

export interface ObservedGenerationBarrierOptions {
  relay: Pick<RelayControl, 'reopenUpstream' | 'groups'>;
  recorder: ObjectRecords;
  logger: Logger;
  clock: Clock;
  leader?: LeaderView;
  /** Wait after a leader change before trusting barriers again (the new leader catches up). */
  leaderSettleMs?: number;
  /** Pause after a failed re-open before trying again. */
  retryMs?: number;
  metrics?: BarrierMetrics;
}

interface Tracked {
  ref: ObjectRef;
  processed: number;
}

export class ObservedGenerationBarrier {
  private readonly relay: Pick<RelayControl, 'reopenUpstream' | 'groups'>;
  private readonly recorder: ObjectRecords;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly leader: LeaderView;
  private readonly leaderSettleMs: number;
  private readonly retryMs: number;
  private readonly metrics: BarrierMetrics | undefined;
  private readonly objects = new Map<string, Tracked>();
  /** lineage → object → highest generation recorded. */
  private readonly recorded = new Map<string, Map<string, number>>();
  private readonly notObservableSent = new Map<string, number>();
  private readonly rejectedSent = new Map<string, number>();
  private dirty = false;
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(options: ObservedGenerationBarrierOptions) {
    this.relay = options.relay;
    this.recorder = options.recorder;
    this.logger = options.logger;
    this.clock = options.clock;
    this.leader = options.leader ?? ALWAYS_LEADER;
    this.leaderSettleMs = options.leaderSettleMs ?? 500;
    this.retryMs = options.retryMs ?? 1000;
    this.metrics = options.metrics;
    this.leader.onChange(() => {
      this.logger.info({ epoch: this.leader.epoch(), trusted: this.leader.trusted() }, 'leader changed; barriers will be (re)done after settling');
      this.trigger(this.leaderSettleMs);
    });
  }

  /** An informer event for a tracked object (add or update). */
  observe(object: ObservedObject, signal: ProcessedSignal): void {
    const key = formatObjectRef(object.ref);
    if (signal.type === 'none') {
      if ((this.notObservableSent.get(key) ?? 0) < object.generation) {
        this.notObservableSent.set(key, object.generation);
        this.recorder.enqueueNotObservable(object.ref, object.generation, signal.reason ?? DEFAULT_NOT_OBSERVABLE_REASON, this.clock.now());
      }
      return;
    }
    if (object.processed === undefined) return;
    if (object.rejected !== undefined) {
      if ((this.rejectedSent.get(key) ?? 0) < object.processed) {
        this.rejectedSent.set(key, object.processed);
        this.recorder.enqueueRejectedByController(object.ref, object.processed, object.rejected, this.clock.now());
      }
      return;
    }
    const known = this.objects.get(key);
    if (known !== undefined && known.processed >= object.processed) return;
    this.objects.set(key, { ref: object.ref, processed: object.processed });
    this.trigger();
  }

  forget(ref: ObjectRef): void {
    this.objects.delete(formatObjectRef(ref));
    this.notObservableSent.delete(formatObjectRef(ref));
    this.rejectedSent.delete(formatObjectRef(ref));
  }

  /** The relay retired `lineage` (moved or freed): nothing more is recorded on it. */
  forgetLineage(lineage: string): void {
    this.recorded.delete(lineage);
  }

  /** Call when a group/lineage may have appeared (upstreamApplied on an unknown lineage). */
  lineagesChanged(): void {
    this.trigger();
  }

  recordedGeneration(lineage: string, ref: ObjectRef): number | undefined {
    return this.recorded.get(lineage)?.get(formatObjectRef(ref));
  }

  /** Resolves when no barrier is pending or running (tests). */
  whenIdle(): Promise<void> {
    if (!this.dirty && this.running === undefined && this.timer === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  // -------------------------------------------------------------------------------------------

  private trigger(delayMs = 0): void {
    if (this.stopped) return;
    this.dirty = true;
    if (this.running !== undefined) return; // the loop picks it up
    if (this.timer !== undefined) {
      if (delayMs === 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.loop().finally(() => {
        this.running = undefined;
        if (this.dirty && !this.stopped && this.timer === undefined) this.trigger();
        else if (!this.dirty && this.timer === undefined) for (const resolve of this.idleWaiters.splice(0)) resolve();
      });
    }, delayMs);
  }

  private async loop(): Promise<void> {
    while (this.dirty && !this.stopped) {
      this.dirty = false;
      // Everything observed up to here; the leader is confirmed and re-opens start after this line.
      const observed = [...this.objects.values()];
      const epochBefore = this.leader.epoch();
      try {
        await this.leader.confirm();
      } catch (error) {
        this.logger.warn({ err: describeError(error) }, 'could not confirm the control plane leader; barriers retry');
        this.dirty = true;
        await sleep(this.retryMs);
        continue;
      }
      if (!this.leader.trusted()) {
        // No leader to trust; the leader's change callback triggers us again.
        this.logger.info('no trusted leader; barriers wait');
        return;
      }
      const epoch = this.leader.epoch();
      if (epoch !== epochBefore) {
        // The read found a leader the Lease watch had not shown yet: we now point at it; let it settle.
        this.metrics?.redone();
        this.logger.info({ epoch: epochBefore, now: epoch }, 'leader confirmed newer than the watch showed; barriers wait for it to settle');
        this.dirty = true;
        await sleep(this.leaderSettleMs);
        continue;
      }
      const work: { group: string; lineage: string; due: Tracked[] }[] = [];
      for (const group of this.relay.groups()) {
        const done = this.recorded.get(group.lineage);
        const due = observed.filter((tracked) => (done?.get(formatObjectRef(tracked.ref)) ?? 0) < tracked.processed);
        if (due.length > 0) work.push({ group: group.group, lineage: group.lineage, due });
      }
      if (work.length === 0) continue;
      let results: (ReopenResult | undefined)[];
      try {
        results = await Promise.all(work.map((item) => this.reopen(item.group)));
      } catch (error) {
        this.logger.warn({ err: describeError(error) }, 'barrier re-open failed; retrying');
        this.dirty = true;
        await sleep(this.retryMs);
        continue;
      }
      if (this.leader.epoch() !== epoch || !this.leader.trusted()) {
        // The upstream we re-opened may not be the status writer any more: re-do after re-targeting.
        this.metrics?.redone();
        this.logger.info({ epoch, now: this.leader.epoch() }, 'leader changed during a barrier; re-doing it');
        this.dirty = true;
        await sleep(this.leaderSettleMs);
        continue;
      }
      const now = this.clock.now();
      let count = 0;
      work.forEach((item, index) => {
        const result = results[index];
        if (result === undefined) {
          this.dirty = true;
          return;
        }
        const done = this.recorded.get(result.lineage) ?? new Map<string, number>();
        this.recorded.set(result.lineage, done);
        for (const tracked of item.due) {
          const key = formatObjectRef(tracked.ref);
          if ((done.get(key) ?? 0) >= tracked.processed) continue;
          done.set(key, tracked.processed);
          this.recorder.enqueueWatermark(tracked.ref, tracked.processed, result.lineage, { seq: result.seq, types: { ...result.types }, at: now });
          count++;
        }
      });
      this.metrics?.watermarksRecorded(count);
      if (results.includes(undefined)) await sleep(this.retryMs);
    }
  }

  private async reopen(group: string): Promise<ReopenResult | undefined> {
    const started = performance.now();
    try {
      const result = await this.relay.reopenUpstream(group);
      this.metrics?.reopened(group, (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      // One group's failure (e.g. its upstream is down) must not hold back the others.
      this.logger.warn({ group, err: describeError(error) }, 'upstream re-open for a barrier failed');
      return undefined;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
