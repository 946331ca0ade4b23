// One Envoy STATE write: conditional on the rev we last stored or read, carrying the node's new events
// (`unlogged`) on top of whatever the state it replaces carries, minus what was just moved to event-log
// items (docs/GATEWAY.md, "The event log"). A conflict means someone else wrote (another gateway, the
// expire function, our previous life): merge with what is stored and retry with its rev (ports.ts:
// updateEnvoyState contract). Keeps each node's known rev and stored state.
import type { Logger } from 'pino';
import { mergeCarried, revivesExpired, withoutCarried, withoutExpired, type CarriedEvent, type Clock, type EnvoyEvent, type EnvoyState, type EventStore } from '../../../common/core';
import { isPermanentStoreError } from '../../../common/store';
import { describeError } from '../../../common/describe-error';
import type { EnvoyCounts } from './denominator';
import { readToRev, type KnownRev } from './known-rev';
import type { RecorderMetrics } from './options';
import { performanceSeconds } from './write-latency';

/** One Envoy's write in a flush: its state and the new events it carries. */
export interface EnvoyWrite {
  state: EnvoyState;
  /** New events taken from the queue (valid), confirmed when the write carrying them succeeds. */
  events: EnvoyEvent[];
  carried: CarriedEvent[];
  /** Identities written to event-log items in this flush: the state no longer carries them. */
  logged: Set<string>;
  /** The node's enqueue count when this state was taken (stream admission, whenStateWritten). */
  enqueued?: number;
  /** Urgent (envoy-state-queue.ts `flushOrder`): its events stay carried (no event-log write ahead of it). */
  urgent?: boolean;
}

/** 'written'; `{ dropped }` when the store refused the state for good (never retried); else `{}`: retry. */
export type EnvoyWriteOutcome = 'written' | { dropped?: string };

export interface EnvoyStateWriterOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  metrics: RecorderMetrics | undefined;
  counts: EnvoyCounts;
  merge: (ours: EnvoyState, stored: EnvoyState | undefined) => EnvoyState;
}

export class EnvoyStateWriter {
  private readonly revs = new Map<string, KnownRev<EnvoyState>>();

  constructor(private readonly options: EnvoyStateWriterOptions) {}

  /** The node's state as we last stored or read it. */
  stored(nodeId: string): EnvoyState | undefined {
    return this.revs.get(nodeId)?.stored;
  }

  /** The rev we last stored or read for the node. */
  rev(nodeId: string): number | undefined {
    return this.revs.get(nodeId)?.rev;
  }

  forget(nodeId: string): void {
    this.revs.delete(nodeId);
  }

  async write(write: EnvoyWrite): Promise<EnvoyWriteOutcome> {
    const { store, logger, clock, metrics, counts, merge } = this.options;
    const ours = write.state;
    const known = this.revs.get(ours.nodeId) ?? { rev: undefined };
    let expectedRev = known.rev;
    let stored = known.stored;
    for (let attempt = 0; attempt < 4; attempt++) {
      // Carried events: whatever the state we replace carries (ours or another writer's: the write is
      // conditional on its rev, so this is exactly what is stored), plus ours, minus what is logged now.
      const carry = withoutCarried(mergeCarried(withoutExpired(stored?.unlogged ?? [], clock.now()), write.carried), write.logged);
      const { unlogged: _replaced, ...merged } = merge(ours, stored);
      const state: EnvoyState = { ...merged, ...(carry.length === 0 ? {} : { unlogged: carry }), rev: (expectedRev ?? -1) + 1 };
      const started = performanceSeconds();
      try {
        const result = await store.updateEnvoyState(state, expectedRev);
        metrics?.writeLatency('envoyState', performanceSeconds() - started);
        if (result.ok) {
          this.revs.set(ours.nodeId, { rev: state.rev, stored: state });
          counts.noteStored(ours, state);
          return 'written';
        }
        const current = readToRev(result.current);
        expectedRev = current.rev;
        stored = current.stored;
        if (revivesExpired(ours, stored)) {
          // The expire function marked this Envoy EXPIRED meanwhile (its member is not live) and we
          // are about to make it live again: that is a new incarnation, so it needs a count first.
          counts.reviveNext(ours);
          this.revs.set(ours.nodeId, { rev: expectedRev, ...(stored === undefined ? {} : { stored }) });
          return {};
        }
      } catch (error) {
        if (isPermanentStoreError(error)) return { dropped: describeError(error) };
        metrics?.writeFailed('envoyState');
        logger.warn({ nodeId: ours.nodeId, err: describeError(error) }, 'envoy state write failed; will retry');
        return {};
      }
    }
    this.revs.set(ours.nodeId, { rev: expectedRev, ...(stored === undefined ? {} : { stored }) });
    logger.warn({ nodeId: ours.nodeId }, 'envoy state kept conflicting; will retry');
    return {};
  }
}
