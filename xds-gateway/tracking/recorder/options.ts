// The recorder's options, its metrics port and its stats: what the gateway (ops/gateway.ts,
// ops/metrics.ts) configures and reads. The parts of the recorder (this folder) each take the few
// options they need.
import type { Logger } from 'pino';
import type { ChunkLimits, Clock, EnvoyEvent, EnvoyState, EventLogLimits, EventStore, VersionLog } from '../../../common/core';

export interface RecorderMetrics {
  /** Events durably written (the only point where an event counts as acknowledged). */
  eventsWritten(events: readonly EnvoyEvent[]): void;
  /** Seconds one store call took, by operation. */
  writeLatency(operation: 'putEvents' | 'putChunks' | 'putMembers' | 'envoyState' | 'lineageState' | 'watermark', seconds: number): void;
  writeFailed(operation: string): void;
  /** Writes dropped because the store can never accept them (never retried), by operation. */
  writeDropped?(operation: 'envoyState' | 'lineageState' | 'watermark'): void;
}

/** RecorderOptions.versionLog (version-log-pipeline.ts). */
export interface VersionLogSettings {
  log: VersionLog;
  /** How long chunks and memberships are kept (the event retention). */
  retentionMs: number;
  limits?: ChunkLimits;
}

export interface RecorderOptions {
  store: EventStore;
  logger: Logger;
  clock: Clock;
  random?: () => number;
  /** Pause between flushes when there is nothing to retry (coalescing window for state writes). */
  flushIntervalMs?: number;
  /** Queued events above which `pressure()` is true. Nothing is dropped above it. */
  highWaterEvents?: number;
  /** Bounds on the events one STATE write carries before they move to an event-log item. */
  eventLog?: EventLogLimits;
  /**
   * How long a state that only records a response being sent may wait for the ACK to join it in one
   * write (0: never held). Far below the ACK timeout; SIGTERM (close) writes held states at once.
   */
  pendingStateHoldMs?: number;
  /**
   * `carried` (default): events ride in the STATE write and move to event-log items in groups.
   * `items`: the format before the event log, one item per event written before the state (and no state
   * held); kept as a fallback and as the baseline the bench compares with (bench/recorder-writes.ts).
   */
  eventLogMode?: 'carried' | 'items';
  /**
   * Whether the events of an Envoy with no queued state ride in a write of its stored state (true, the
   * default: one item per Envoy either way), or go to event-log items (false: with --state-writes
   * class-changes most states are never handed to the recorder, and rewriting the stored one for each
   * ACK would put the STATE write back on every change).
   */
  carryEventsInStoredState?: boolean;
  /**
   * With carryEventsInStoredState off: how long the events of a node with no state queued may wait
   * to share one event-log item (default 0: written at the next flush). The answers to one change
   * wave arrive type by type over a few flushes; written per flush they made ~3 items per Envoy per
   * wave (docs/bench/README.md). A NACK, a full item's worth (the carry bounds) and close() never wait.
   */
  orphanEventHoldMs?: number;
  /**
   * The version log (--event-log-mode chunks; version-log-pipeline.ts): the ACK and STUCK events of
   * Envoys with no state write to carry them go into per-version chunks of their lineage instead of
   * event-log items of their own (NACKs still go to the Envoy's log). orphanEventHoldMs is then not
   * used: the chunks gather the answers (1,000 or 1 s).
   */
  versionLog?: VersionLogSettings;
  /** Parallel conditional writes of Envoy states per flush. */
  stateWriteConcurrency?: number;
  /**
   * Envoy states one flush writes at most (default 2 × stateWriteConcurrency), oldest queued first;
   * the next flush starts at once while more are ready. A flush of every queued state made a state
   * queued just after it began wait for the whole flush and then its turn in the next one: at 1,000
   * Envoys a flush took ~2.5 s (docs/bench/README.md). Coalescing is unchanged: a queued state is replaced in place.
   */
  maxStatesPerFlush?: number;
  retryBaseMs?: number;
  /**
   * Cap of the full-jitter backoff between failed flushes (default 2 s). Every queued write waits for
   * the next flush, so once the store answers again the queue moves at most this long later: the cap
   * is part of the recovery budget (Envoy TTL + 5 s: docs/RELIABILITY.md, invariant 3), which a 10 s
   * cap could use up by itself. One attempt every 2 s (at most one flush's writes) is no load on a
   * throttled table; the SDK's own retries come first.
   */
  retryMaxMs?: number;
  /**
   * Combines our state with the one stored by someone else (another gateway for a per-type stream,
   * the expire function) after a `rev` conflict. Default: ours wins.
   */
  mergeEnvoyState?: (ours: EnvoyState, stored: EnvoyState | undefined) => EnvoyState;
  metrics?: RecorderMetrics;
  /**
   * Registers a lineage in the convergence functions' lineage registry before its first LINEAGE item
   * (and so before any Envoy state on it) is written. Without it a new lineage is invisible to
   * evaluation until its LINEAGE stream record has been processed, and its Envoys could be missing
   * from the denominator (docs/CONVERGENCE.md, "The denominator"). Failures hold the lineage write,
   * and with it the states it covers, until a later flush.
   */
  registerLineage?: (lineage: string, heartbeatAt: number) => Promise<void>;
  /**
   * An Envoy whose state can never be stored (dropped, not retried): the gateway ends its streams with
   * the reason. Synchronous; must not throw.
   */
  onUnrecordable?: (nodeId: string, reason: string) => void;
}

/** RecorderStats.versionLog (version-log-pipeline.ts). */
export interface VersionLogStats {
  chunksWritten: number;
  answersWritten: number;
  membersWritten: number;
  /** Open or cut and not yet stored. */
  answersPending: number;
}

export interface RecorderStats {
  queuedEvents: number;
  queuedEnvoyStates: number;
  queuedLineageStates: number;
  queuedWatermarks: number;
  eventsWritten: number;
  /** Events the store refused as invalid (never retryable; logged with context). Not a drop of a valid event. */
  eventsRejected: number;
  /** Valid work discarded: always 0 by design (the metric exists to prove it). */
  dropped: number;
  failedAttempts: number;
  consecutiveFailures: number;
  /** With a version log configured. */
  versionLog?: VersionLogStats;
}
