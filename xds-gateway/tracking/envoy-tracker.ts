// EnvoyTracker: the relay's observer for ACK/NACK/stuck (docs/GATEWAY.md, "What is written when") and what the gateway writes
// about Envoys and lineages (§3.4). Every callback is synchronous: it applies the core's pure
// transitions to in-memory state and enqueues writes on the recorder; it never awaits I/O.
//  - per Envoy: its streams, its EnvoyState (core transitions), STUCK events already emitted;
//  - per lineage: a mirror of the relay's counter and type history (programmedThrough needs it);
//  - timers: stuck detection, lineage heartbeats, Envoy heartbeats (lastSeenAt for idle streams).
import type { Logger } from 'pino';
import {
  applyClassifiedRequest,
  applyConnect,
  applyDisconnect,
  applyHeartbeat,
  applyReferenceMissing,
  applyReferenceSatisfied,
  applySent,
  applyTypeStreamClosed,
  CDS_TYPE_URL,
  changesAfter,
  creditUnreadTime,
  LDS_TYPE_URL,
  MAX_RELIEF_OBJECTS,
  newEnvoyState,
  programmedThroughBesidesNamesHolds,
  RDS_TYPE_URL,
  stuckEvents,
  withProgrammedThrough,
  type Clock,
  type EnvoyState,
  type LineageState,
  type NamesHoldRelief,
} from '../../common/core';
import type {
  RelayObserver,
  RequestClassifiedEvent,
  ResponseSentEvent,
  StreamClosedEvent,
  StreamOpenedEvent,
  UpstreamAppliedEvent,
  UpstreamStateEvent,
  UpstreamStateName,
} from '../relay/observer';
import { lineageStateFor, recordTypeChange } from './lineage-mirror';
import { addedNames, firstMissing, missingNames, nextSubscription, ReferenceHistory, REFERENCE_EDGES, unionOf, type Subscription } from './subscription-references';
import type { ReferencedType } from '../../common/xds/references';
import { AddedNames } from './added-names';
import { NameOwnership, type HeldSeqs } from './name-owners';
import type { NackAttributor } from './nack-attribution';
import type { EnvoyRecords } from './recorder';

export interface TrackerMetrics {
  /** Every classified request, by the core's class (initial/ack/nack/stale/unknownNonce). */
  requestClassified(kind: string, typeUrl: string): void;
  /** A STUCK event was emitted (once per pending response). */
  stuckDetected(typeUrl: string): void;
}

/** How long a disconnected Envoy stays in memory by default (its stored state stays regardless). */
export const FORGET_DISCONNECTED_MS = 10 * 60_000;

export interface EnvoyTrackerOptions {
  recorder: EnvoyRecords;
  logger: Logger;
  clock: Clock;
  /** A response neither ACKed nor NACKed for this long is stuck (docs/GATEWAY.md, "What is written when"). */
  ackTimeoutMs?: number;
  stuckCheckIntervalMs?: number;
  /** How long ACK/NACK/STUCK events are kept (their DynamoDB ttl). */
  eventRetentionMs?: number;
  /** LINEAGE item heartbeat period. */
  lineageHeartbeatMs?: number;
  /** An idle connected Envoy's lastSeenAt is refreshed at least this often (keep below the expiry TTL). */
  envoyHeartbeatMs?: number;
  /** Disconnected Envoys are forgotten from memory after this long (their stored state stays). */
  forgetDisconnectedMs?: number;
  metrics?: TrackerMetrics;
  /** Blames each NACK on the objects it is about (nack-attribution.ts); absent: NACKs carry no blame. */
  attributor?: NackAttributor;
  /**
   * Judge a names hold per object (name-owners.ts): hand the recorder each state's NamesHoldRelief.
   * Sound only while every watermark comes from provenance stamps (an object watermarked otherwise
   * has no stamps to say which names matter to it): the gateway sets it for `--watermarks provenance`.
   */
  namesHoldRelief?: boolean;
}

interface StreamInfo {
  nodeId: string;
  group: string;
  lineage: string;
  protocol: 'sotw' | 'delta';
  types: Set<string>;
  /** Per type: the names this stream subscribes to (subscription-references.ts). */
  subscriptions: Map<string, Subscription>;
}

/** The last reference check of one child type, reused while its inputs are the same objects. */
interface ReferenceCheck {
  referenced: ReadonlySet<string>;
  subscription: Subscription;
  missing: string | undefined;
  /** Every missing name (subscription-references.ts missingNames), when a names-hold relief asked. */
  allMissing?: readonly string[];
}

interface TrackedEnvoy {
  state: EnvoyState;
  streams: Set<string>;
  /** `${lineage}|${typeUrl}|${seq}` of pending responses already reported STUCK. */
  stuckReported: Set<string>;
  disconnectedAt?: number;
  /** Per child type and referencing type: the last check (a full check reads every referenced name). */
  referenceChecks: Map<string, ReferenceCheck>;
  /** Per type: the start (`namesChange.at`) of the names hold already logged as long (checkStuck). */
  longHoldsReported?: Map<string, number>;
  /** While the relay does not read: up to when its unread time was credited (readingPaused). */
  creditedThrough?: number;
  /** The unserved names of its added-names holds (added-names.ts), with a names-hold relief to judge. */
  addedNames?: AddedNames;
  /** The state's names-hold relief (core NamesHoldRelief), recomputed with its programmedThrough. */
  relief?: NamesHoldRelief;
  /** The last relief computed and its inputs (EnvoyTracker.reliefOf). */
  reliefMemo?: { inputs: unknown[]; relief: NamesHoldRelief | undefined };
}

export interface UpstreamGroupStatus {
  group: string;
  state: UpstreamStateName;
  target: string;
  at: number;
}

export interface TrackerSnapshot {
  streams: number;
  envoys: { connected: number; disconnected: number };
  /** Per type URL: connected Envoys whose ACK is behind the type's current version, and the largest gap (in changes). */
  behind: Record<string, { envoys: number; maxVersionsBehind: number }>;
  upstream: UpstreamGroupStatus[];
  lineages: LineageState[];
}

export const DEFAULT_ACK_TIMEOUT_MS = 30_000;
export const DEFAULT_EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** `child|parent` per reference edge, built once: the check runs after every request and response. */
const REFERENCE_CHECK_KEYS: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map(
  REFERENCE_EDGES.map((edge) => [edge.child, new Map(edge.parents.map((parent) => [parent, `${edge.child}|${parent}`]))]),
);

function referenceCheckKey(child: string, parent: string): string {
  return REFERENCE_CHECK_KEYS.get(child)?.get(parent) ?? `${child}|${parent}`;
}

export class EnvoyTracker implements RelayObserver {
  private readonly recorder: EnvoyRecords;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly ackTimeoutMs: number;
  private readonly eventRetentionMs: number;
  private readonly envoyHeartbeatMs: number;
  private readonly forgetDisconnectedMs: number;
  private readonly metrics: TrackerMetrics | undefined;
  private readonly streams = new Map<string, StreamInfo>();
  private readonly envoys = new Map<string, TrackedEnvoy>();
  private readonly lineages = new Map<string, LineageState>();
  private readonly upstream = new Map<string, UpstreamGroupStatus>();
  /** Whether the last group freed (forgetGroup) had a ready upstream: readiness while no group exists. */
  private readyWhenNoGroups = false;
  /** Since when the relay has not read any stream (backpressure); undefined while it reads. */
  private unreadSince: number | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly upstreamAppliedListeners: Array<(e: UpstreamAppliedEvent) => void> = [];
  private readonly references: ReferenceHistory;
  private readonly attributor: NackAttributor | undefined;
  /** Set with options.namesHoldRelief. */
  private readonly nameOwnership: NameOwnership | undefined;

  constructor(options: EnvoyTrackerOptions) {
    this.recorder = options.recorder;
    this.logger = options.logger;
    this.clock = options.clock;
    this.ackTimeoutMs = options.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
    this.eventRetentionMs = options.eventRetentionMs ?? DEFAULT_EVENT_RETENTION_MS;
    this.envoyHeartbeatMs = options.envoyHeartbeatMs ?? 60_000;
    this.forgetDisconnectedMs = options.forgetDisconnectedMs ?? FORGET_DISCONNECTED_MS;
    this.metrics = options.metrics;
    this.attributor = options.attributor;
    this.references = new ReferenceHistory((error, typeUrl) => this.logger.warn({ err: error, typeUrl }, 'cannot read the references of a served resource'));
    this.nameOwnership = options.namesHoldRelief === true ? new NameOwnership(this.references) : undefined;
    const stuckEvery = options.stuckCheckIntervalMs ?? Math.max(100, Math.min(1000, Math.floor(this.ackTimeoutMs / 4)));
    this.every(stuckEvery, () => this.checkStuck());
    this.every(options.lineageHeartbeatMs ?? 5000, () => this.heartbeatLineages());
    this.every(Math.max(100, Math.floor(this.envoyHeartbeatMs / 2)), () => this.heartbeatEnvoys());
  }

  /** Stops the timers. The recorder is flushed by its owner. */
  stop(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  /** Extra listeners of upstreamApplied (the provenance watermarks), after the lineage mirror is updated. */
  onUpstreamApplied(listener: (e: UpstreamAppliedEvent) => void): void {
    this.upstreamAppliedListeners.push(listener);
  }

  /**
   * `next` with its new NACK on `typeUrl` blamed on the objects it is about, judged against what the
   * Envoy held before it (`before`'s ACK on that lineage). Unchanged when nothing can be blamed.
   */
  private withNackBlame(before: EnvoyState, next: EnvoyState, typeUrl: string): EnvoyState {
    const type = next.types[typeUrl];
    if (this.attributor === undefined || type?.nack === undefined) return next;
    const previous = before.types[typeUrl];
    const held = previous?.lineage === type.lineage ? previous.acked : undefined;
    const blame = this.attributor.blame({ lineage: type.lineage, typeUrl, seq: type.nack.seq, held, message: type.nack.message });
    if (blame === undefined) return next;
    return { ...next, types: { ...next.types, [typeUrl]: { ...type, nack: { ...type.nack, blame } } } };
  }

  lineageState(lineage: string): LineageState | undefined {
    return this.lineages.get(lineage);
  }

  envoyState(nodeId: string): EnvoyState | undefined {
    return this.envoys.get(nodeId)?.state;
  }

  // -------------------------------------------------------------------------------------------
  // RelayObserver

  streamOpened(e: StreamOpenedEvent): void {
    this.streams.set(e.streamId, { nodeId: e.node.nodeId, group: e.group, lineage: e.lineage, protocol: e.protocol, types: new Set(), subscriptions: new Map() });
    this.ensureLineage(e.lineage, e.group, e.at);
    const tracked = this.envoys.get(e.node.nodeId);
    if (tracked === undefined) {
      const state = newEnvoyState({ identity: e.node, group: e.group, lineage: e.lineage, now: e.at });
      const created: TrackedEnvoy = { state, streams: new Set([e.streamId]), stuckReported: new Set(), referenceChecks: new Map() };
      this.envoys.set(e.node.nodeId, created);
      this.write(created);
      return;
    }
    tracked.streams.add(e.streamId);
    delete tracked.disconnectedAt;
    // Every state written while the relay does not read carries the unread time (readingPaused): this
    // one moves lastSeenAt, at which readers judge its waits.
    tracked.state = applyConnect({ ...this.creditUnread(tracked, e.at), metadata: e.node.metadata, cluster: e.node.cluster, group: e.group }, { lineage: e.lineage, now: e.at });
    this.write(tracked);
  }

  requestClassified(e: RequestClassifiedEvent): void {
    this.metrics?.requestClassified(e.classification.kind, e.typeUrl);
    const tracked = this.envoys.get(e.nodeId);
    if (tracked === undefined) {
      this.logger.warn({ streamId: e.streamId, nodeId: e.nodeId, typeUrl: e.typeUrl }, 'request on a stream we never saw open; ignored');
      return;
    }
    const stream = this.streams.get(e.streamId);
    if (e.classification.kind === 'initial') stream?.types.add(e.typeUrl);
    const added = stream === undefined ? undefined : this.followSubscription(stream, e);
    const outcome = applyClassifiedRequest(tracked.state, e.classification, {
      typeUrl: e.typeUrl,
      lineage: e.lineage,
      now: e.at,
      eventRetentionMs: this.eventRetentionMs,
      namesAdded: added !== undefined,
    });
    if (this.nameOwnership !== undefined) this.followAddedNames(tracked, e, added);
    if (outcome.ignored !== undefined) {
      this.logger.debug({ nodeId: e.nodeId, typeUrl: e.typeUrl, streamId: e.streamId, reason: outcome.ignored }, 'request changed no type state');
    }
    let next = outcome.state;
    if (outcome.event !== undefined) {
      // The event is queued before the state that reflects it; the recorder writes events first.
      this.recorder.enqueueEvent(outcome.event);
      if (outcome.event.outcome === 'NACK') {
        next = this.withNackBlame(tracked.state, next, e.typeUrl);
        const blame = next.types[e.typeUrl]?.nack?.blame;
        this.logger.info({ nodeId: e.nodeId, typeUrl: e.typeUrl, seq: outcome.event.seq, message: outcome.event.message?.slice(0, 200), blame }, 'NACK');
      }
    }
    tracked.state = this.withProgrammedThrough(tracked, this.withReferencesChecked(tracked, next, e.at));
    this.forgetStuckReports(tracked);
    this.write(tracked);
  }

  responseSent(e: ResponseSentEvent): void {
    const tracked = this.envoys.get(e.nodeId);
    if (tracked === undefined) return;
    tracked.addedNames?.responseSent(e.typeUrl);
    // A response sent while the subscription still lacks a referenced name cannot carry it.
    tracked.state = this.withReferencesChecked(tracked, applySent(tracked.state, { typeUrl: e.typeUrl, version: e.version, now: e.at }), e.at);
    this.write(tracked);
  }

  streamClosed(e: StreamClosedEvent): void {
    const stream = this.streams.get(e.streamId);
    this.streams.delete(e.streamId);
    const tracked = this.envoys.get(e.nodeId);
    if (tracked === undefined) return;
    tracked.streams.delete(e.streamId);
    if (tracked.streams.size === 0) {
      // Moves lastSeenAt too: the unread time is credited first (as in streamOpened).
      tracked.state = applyDisconnect(this.creditUnread(tracked, e.at), e.at);
      tracked.disconnectedAt = e.at;
      tracked.stuckReported.clear();
    } else if (stream !== undefined) {
      // Per-type streams: this type's stream ended while the Envoy's other streams live on. The Envoy
      // still runs what it accepted for the type (and still rejects what it NACKed): the type keeps
      // counting, as on a full disconnect. Marking it unsubscribed let a NACKed or lagging type drop
      // out of the member and the Envoy count as programmed (truth checker seed 4019).
      const stillServed = new Set<string>();
      for (const other of tracked.streams) for (const typeUrl of this.streams.get(other)?.types ?? []) stillServed.add(typeUrl);
      for (const typeUrl of stream.types) {
        if (!stillServed.has(typeUrl)) tracked.state = applyTypeStreamClosed(tracked.state, { typeUrl, now: e.at });
      }
      tracked.state = this.withProgrammedThrough(tracked, tracked.state);
    }
    this.write(tracked);
  }

  upstreamApplied(e: UpstreamAppliedEvent): void {
    this.attributor?.upstreamApplied(e);
    const lineage = this.ensureLineage(e.lineage, e.group, e.at);
    if (e.changed) {
      this.references.record(e.lineage, e.typeUrl, e.seq, e.resources);
      const next = recordTypeChange(lineage, e.typeUrl, e.seq, e.at);
      if (next !== lineage) {
        this.lineages.set(e.lineage, next);
        this.recorder.enqueueLineageState(next);
      }
    }
    for (const listener of this.upstreamAppliedListeners) {
      try {
        listener(e);
      } catch (error) {
        this.logger.error({ err: error, group: e.group, typeUrl: e.typeUrl }, 'upstreamApplied listener failed');
      }
    }
  }

  /**
   * The relay freed `group` (idle: no streams): its upstream status goes. Readiness keeps the word of
   * the last one freed while no group exists, so a gateway whose Envoys all left stays ready.
   */
  forgetGroup(group: string): void {
    const status = this.upstream.get(group);
    if (status === undefined) return;
    this.upstream.delete(group);
    if (this.upstream.size === 0) this.readyWhenNoGroups = status.state === 'ready';
  }

  upstreamState(e: UpstreamStateEvent): void {
    const previous = this.upstream.get(e.group);
    this.upstream.set(e.group, { group: e.group, state: e.state, target: e.target, at: e.at });
    if (previous?.state !== e.state) this.logger.info({ group: e.group, state: e.state, target: e.target }, 'upstream state');
  }

  // -------------------------------------------------------------------------------------------
  // Readiness and metrics

  /** Some group's upstream has answered (state ready), or no group exists yet but one did. */
  upstreamReady(): boolean {
    for (const status of this.upstream.values()) if (status.state === 'ready') return true;
    return this.upstream.size === 0 && this.readyWhenNoGroups;
  }

  snapshot(): TrackerSnapshot {
    let connected = 0;
    let disconnected = 0;
    const behind: TrackerSnapshot['behind'] = {};
    for (const { state } of this.envoys.values()) {
      if (state.status !== 'CONNECTED') {
        disconnected++;
        continue;
      }
      connected++;
      const lineage = this.lineages.get(state.lineage);
      if (lineage === undefined) continue;
      for (const [typeUrl, type] of Object.entries(state.types)) {
        if (!type.subscribed || type.lineage !== state.lineage) continue;
        const gap = changesAfter(lineage.typeHistory[typeUrl], type.acked);
        const entry = (behind[typeUrl] ??= { envoys: 0, maxVersionsBehind: 0 });
        if (gap > 0) entry.envoys++;
        entry.maxVersionsBehind = Math.max(entry.maxVersionsBehind, gap);
      }
    }
    return {
      streams: this.streams.size,
      envoys: { connected, disconnected },
      behind,
      upstream: [...this.upstream.values()],
      lineages: [...this.lineages.values()],
    };
  }

  // -------------------------------------------------------------------------------------------
  // Timers

  /**
   * The relay stopped reading every downstream stream (backpressure, ops/backpressure.ts): what the
   * Envoys answer now waits unread in HTTP/2 flow control. No STUCK is reported meanwhile, and the
   * unread time is credited to their waits (core creditUnreadTime) when states are written and when
   * reading resumes, so an Envoy is never blamed for answers the gateway did not read.
   */
  readingPaused(at = this.clock.now()): void {
    this.unreadSince ??= at;
  }

  /** The relay reads again: the unread time is credited to every Envoy still waiting, and written. */
  readingResumed(at = this.clock.now()): void {
    if (this.unreadSince === undefined) return;
    for (const tracked of this.envoys.values()) {
      const credited = this.creditUnread(tracked, at);
      delete tracked.creditedThrough;
      if (credited !== tracked.state) {
        tracked.state = credited;
        this.write(tracked);
      }
    }
    this.unreadSince = undefined;
  }

  /** The tracked state with the unread time up to `now` credited (unchanged while the relay reads). */
  private creditUnread(tracked: TrackedEnvoy, now: number): EnvoyState {
    const since = this.unreadSince;
    if (since === undefined) return tracked.state;
    // Every wait already there at `from` has waited unread since then (an earlier credit moved its
    // start forward, but never past `from`).
    const from = Math.max(since, tracked.creditedThrough ?? since);
    tracked.creditedThrough = Math.max(from, now);
    return creditUnreadTime(tracked.state, { creditMs: now - from, before: from });
  }

  /** Emits STUCK once per pending response older than the ACK timeout. */
  checkStuck(now = this.clock.now()): void {
    // Answers are not being read: nothing can be judged unanswered (readingPaused).
    if (this.unreadSince !== undefined) return;
    for (const tracked of this.envoys.values()) {
      if (tracked.state.status !== 'CONNECTED') continue;
      let reported = false;
      for (const event of stuckEvents(tracked.state, now, this.ackTimeoutMs, this.eventRetentionMs)) {
        const key = `${event.lineage}|${event.typeUrl}|${event.seq}`;
        if (tracked.stuckReported.has(key)) continue;
        tracked.stuckReported.add(key);
        this.recorder.enqueueEvent(event);
        this.metrics?.stuckDetected(event.typeUrl);
        this.logger.warn({ nodeId: event.nodeId, typeUrl: event.typeUrl, seq: event.seq, sentAt: event.sentAt }, 'Envoy stuck: response unanswered past the ACK timeout');
        reported = true;
      }
      // Readers judge stuck at the stored lastSeenAt (core stuckTypesAsStored): vouch for the connected
      // Envoy now, so the stored state proves the wait and carries the STUCK event in the same write.
      if (reported) {
        tracked.state = applyHeartbeat(tracked.state, now);
        this.write(tracked);
      }
      this.reportLongHolds(tracked, now);
    }
  }

  /**
   * A names hold past the ACK timeout makes readers say Stuck, though the Envoy may have answered
   * everything: say which hold it is, once per hold. A reference hold waits for the Envoy to subscribe
   * to a name its accepted config references (named: the first missing one and who references it); a
   * names change with nothing sent since waits for the relay to serve names the Envoy added. Neither is
   * an unanswered response, and an operator needs to know which side to look at.
   */
  private reportLongHolds(tracked: TrackedEnvoy, now: number): void {
    for (const [typeUrl, type] of Object.entries(tracked.state.types)) {
      const hold = type.namesChange;
      if (hold === undefined || hold.sent || now - hold.at < this.ackTimeoutMs) {
        tracked.longHoldsReported?.delete(typeUrl);
        continue;
      }
      if (tracked.longHoldsReported?.get(typeUrl) === hold.at) continue;
      (tracked.longHoldsReported ??= new Map()).set(typeUrl, hold.at);
      const context = { nodeId: tracked.state.nodeId, typeUrl, lineage: type.lineage, heldMs: now - hold.at, acked: type.acked };
      if (hold.reference === true) {
        const edge = REFERENCE_EDGES.find((candidate) => candidate.child === typeUrl);
        const missing = edge?.parents
          .map((parent) => ({ parent, missing: tracked.referenceChecks.get(referenceCheckKey(typeUrl, parent))?.missing }))
          .find((check) => check.missing !== undefined);
        this.logger.warn({ ...context, missing: missing?.missing, referencedBy: missing?.parent }, 'Envoy held back: its subscription lacks a name its accepted config references');
      } else {
        const subscription = this.subscriptionOf(tracked, typeUrl);
        this.logger.warn({ ...context, subscribedNames: subscription?.wildcard === true ? '*' : subscription?.names.size }, 'Envoy held back: names it added have not been served to it yet');
      }
    }
  }

  /**
   * The relay moved a group off `lineage` (docs/PROVENANCE.md §6): it serves nothing more and its
   * Envoys were sent away, so stop heartbeating it; like a dead gateway's lineage it then leaves the
   * live set after the TTL, and evaluations stop reading its shards.
   */
  retireLineage(lineage: string): void {
    this.lineages.delete(lineage);
    this.references.forget(lineage);
    this.nameOwnership?.forget(lineage);
    this.attributor?.forgetLineage(lineage);
  }

  heartbeatLineages(now = this.clock.now()): void {
    for (const [lineage, state] of this.lineages) {
      const next = { ...state, heartbeatAt: Math.max(state.heartbeatAt, now) };
      this.lineages.set(lineage, next);
      this.recorder.enqueueLineageState(next);
    }
  }

  heartbeatEnvoys(now = this.clock.now()): void {
    for (const [nodeId, tracked] of this.envoys) {
      if (tracked.state.status === 'CONNECTED' && now - tracked.state.lastSeenAt >= this.envoyHeartbeatMs) {
        // A heartbeat vouches for the state at `now`; readers judge its waits at that time.
        tracked.state = applyHeartbeat(this.creditUnread(tracked, now), now);
        this.write(tracked);
      } else if (tracked.streams.size === 0 && tracked.disconnectedAt !== undefined && now - tracked.disconnectedAt >= this.forgetDisconnectedMs) {
        // The recorder forgets it too (or, with a write of it still pending, on a later tick).
        if (this.recorder.forgetEnvoy(nodeId)) this.envoys.delete(nodeId);
      }
    }
  }

  // -------------------------------------------------------------------------------------------

  private ensureLineage(lineage: string, group: string, now: number): LineageState {
    const existing = this.lineages.get(lineage);
    if (existing !== undefined) return existing;
    const state = lineageStateFor(lineage, group, now);
    this.lineages.set(lineage, state);
    this.recorder.enqueueLineageState(state);
    return state;
  }

  /**
   * Follows the request in the Envoy's unserved added names (added-names.ts), as the core's transitions
   * follow it in bulk: an ACK serves what the latest response carried, a new stream's first request
   * voids what responses on the old one carried, and the names it adds are unsent.
   */
  private followAddedNames(tracked: TrackedEnvoy, e: RequestClassifiedEvent, added: readonly string[] | 'all' | undefined): void {
    const sameLineage = tracked.state.types[e.typeUrl]?.lineage === e.lineage;
    if (e.classification.kind === 'ack' && sameLineage) tracked.addedNames?.acked(e.typeUrl);
    if (e.classification.kind === 'initial') tracked.addedNames?.restarted(e.typeUrl);
    if (added === undefined) return;
    tracked.addedNames ??= new AddedNames();
    tracked.addedNames.added(e.typeUrl, added);
  }

  /**
   * Follows the stream's subscription to the request's type; the names the request asks for that it
   * did not before (subscription-references.ts addedNames: the core then holds the type back until a
   * response sent after it is ACKed), or undefined. SotW stale and unknown-nonce requests change
   * nothing, as in the relay; Delta subscription changes apply on every request, and the relay reports
   * the subscription after it.
   */
  private followSubscription(stream: StreamInfo, e: RequestClassifiedEvent): readonly string[] | 'all' | undefined {
    const kind = e.classification.kind;
    if (stream.protocol === 'sotw' && (kind === 'stale' || kind === 'unknownNonce')) return undefined;
    const previous = stream.subscriptions.get(e.typeUrl);
    const next = nextSubscription(previous, e.resourceNames, stream.protocol);
    if (next === previous) return undefined;
    stream.subscriptions.set(e.typeUrl, next);
    return addedNames(previous, next);
  }

  /**
   * The authorities a client routes for, when it says: a gRPC client names the listener of its target
   * (`xds:///<name>`), and routes by the virtual host matching that name. An Envoy subscribes to
   * listeners as a wildcard and serves every host: undefined.
   */
  private authoritiesOf(tracked: TrackedEnvoy): ReadonlySet<string> | undefined {
    const listeners = this.subscriptionOf(tracked, LDS_TYPE_URL);
    return listeners === undefined || listeners.wildcard ? undefined : listeners.names;
  }

  private subscriptionOf(tracked: TrackedEnvoy, typeUrl: string): Subscription | undefined {
    // Called several times per request and response: one stream (ADS, the usual case) allocates nothing.
    if (tracked.streams.size === 1) {
      for (const streamId of tracked.streams) return this.streams.get(streamId)?.subscriptions.get(typeUrl);
    }
    const subscriptions: Subscription[] = [];
    for (const streamId of tracked.streams) {
      const subscription = this.streams.get(streamId)?.subscriptions.get(typeUrl);
      if (subscription !== undefined) subscriptions.push(subscription);
    }
    return unionOf(subscriptions);
  }

  /**
   * Holds back every type whose subscription lacks a name that what the Envoy ACKed of a referencing
   * type names (subscription-references.ts): a route's cluster it has not asked for yet, a cluster's
   * endpoints. Such a type stays behind (core reference-hold.ts) while a name is missing; once the
   * Envoy subscribes to it, the request's own hold needs the ACK of a response sent after it.
   */
  private withReferencesChecked(tracked: TrackedEnvoy, state: EnvoyState, now: number): EnvoyState {
    let next = state;
    const authorities = this.authoritiesOf(tracked);
    for (const edge of REFERENCE_EDGES) {
      const type = next.types[edge.child];
      if (type === undefined || !type.subscribed || type.lineage !== next.lineage) continue;
      const child = this.subscriptionOf(tracked, edge.child);
      let missing: string | undefined;
      if (child === undefined || child.wildcard) {
        next = applyReferenceSatisfied(next, { typeUrl: edge.child });
        continue;
      }
      for (const parentTypeUrl of edge.parents) {
        const referenced = this.referencedByParent(tracked, next, type.lineage, parentTypeUrl, edge.key, authorities);
        if (referenced === undefined) continue;
        const key = referenceCheckKey(edge.child, parentTypeUrl);
        const last = tracked.referenceChecks.get(key);
        const check = last !== undefined && last.referenced === referenced && last.subscription === child ? last : { referenced, subscription: child, missing: firstMissing(referenced, child) };
        tracked.referenceChecks.set(key, check);
        missing = check.missing;
        if (missing !== undefined) break;
      }
      if (missing === undefined) {
        next = applyReferenceSatisfied(next, { typeUrl: edge.child });
        continue;
      }
      if (type.namesChange === undefined) this.logger.debug({ nodeId: next.nodeId, typeUrl: edge.child, missing }, 'Envoy has not subscribed to a name what it accepted references');
      next = applyReferenceMissing(next, { typeUrl: edge.child, lineage: type.lineage, now });
    }
    return next;
  }

  /**
   * The names of edge `key` that what the Envoy ACKed of `parentTypeUrl` references (the reference
   * history's answer for its ACKed seq and subscription), or undefined when it holds nothing of that
   * type on `lineage` or nothing is known of it there: the reference check and the relief read it alike.
   */
  private referencedByParent(tracked: TrackedEnvoy, state: EnvoyState, lineage: string, parentTypeUrl: string, key: ReferencedType, authorities: ReadonlySet<string> | undefined): ReadonlySet<string> | undefined {
    const parent = state.types[parentTypeUrl];
    if (parent?.subscribed !== true || parent.acked === undefined || parent.lineage !== lineage) return undefined;
    const parentSubscription = this.subscriptionOf(tracked, parentTypeUrl);
    if (parentSubscription === undefined) return undefined;
    return this.references.referencedBy(lineage, parentTypeUrl, parent.acked, parentSubscription, key, authorities);
  }

  /** `state` with its programmedThrough recomputed; the tracked Envoy's names-hold relief follows it. */
  private withProgrammedThrough(tracked: TrackedEnvoy, state: EnvoyState): EnvoyState {
    const lineage = this.lineages.get(state.lineage);
    if (lineage === undefined) return state;
    const options = { currentSeq: lineage.currentSeq, historyStart: lineage.historyStart };
    const next = withProgrammedThrough(state, lineage.typeHistory, options);
    if (this.nameOwnership !== undefined) {
      tracked.addedNames?.retain((typeUrl) => next.types[typeUrl]?.namesChange !== undefined && next.types[typeUrl]?.namesChange?.reference !== true);
      if (tracked.addedNames?.empty === true) delete tracked.addedNames;
      const relief = this.reliefOf(tracked, next, programmedThroughBesidesNamesHolds(next, lineage.typeHistory, options));
      if (relief === undefined) delete tracked.relief;
      else tracked.relief = relief;
    }
    return next;
  }

  /**
   * The names-hold relief of a state whose programmedThrough only a names hold keeps unset (`through`:
   * what its ACKs alone say): the objects every held name matters to (name-owners.ts), if each is
   * known and there are at most MAX_RELIEF_OBJECTS of them; else none (held for every object). The
   * held names of a type are those the Envoy added since its hold began and those its accepted config
   * references that it has not asked for (the reference check's).
   */
  private reliefOf(tracked: TrackedEnvoy, state: EnvoyState, through: number | undefined): NamesHoldRelief | undefined {
    const ownership = this.nameOwnership;
    if (ownership === undefined || through === undefined) return undefined;
    // Runs after every request of a held Envoy, and most change nothing it reads: the answer is kept
    // with everything it was computed from (compared by identity; a profile at 5,000 Envoys had it at
    // 5.5% of the gateway's CPU recomputed each time).
    const inputs = this.reliefInputs(tracked, state, through);
    const memo = tracked.reliefMemo;
    if (memo !== undefined && memo.inputs.length === inputs.length && memo.inputs.every((input, i) => Object.is(input, inputs[i]))) return memo.relief;
    const relief = this.computeRelief(tracked, state, through, ownership);
    tracked.reliefMemo = { inputs, relief };
    return relief;
  }

  /**
   * What a relief is computed from: the state's ACKed seqs and holds, its subscriptions, its unserved
   * added names (their version), and the lineage's latest referencing content.
   */
  private reliefInputs(tracked: TrackedEnvoy, state: EnvoyState, through: number): unknown[] {
    const inputs: unknown[] = [through, state.lineage, tracked.addedNames?.version];
    for (const typeUrl of Object.keys(state.types)) {
      const type = state.types[typeUrl] as EnvoyState['types'][string];
      inputs.push(typeUrl, type.subscribed, type.lineage, type.acked, type.namesChange?.reference, type.namesChange === undefined, this.subscriptionOf(tracked, typeUrl));
    }
    for (const parent of RELIEF_PARENT_TYPES) {
      const latest = this.references.contentAt(state.lineage, parent, undefined);
      inputs.push(typeof latest === 'string' ? latest : latest.seq);
    }
    return inputs;
  }

  private computeRelief(tracked: TrackedEnvoy, state: EnvoyState, through: number, ownership: NameOwnership): NamesHoldRelief | undefined {
    const held = heldSeqsOf(state);
    const objects = new Set<string>();
    for (const typeUrl of Object.keys(state.types)) {
      const type = state.types[typeUrl] as EnvoyState['types'][string];
      if (!type.subscribed || type.namesChange === undefined) continue;
      const added = tracked.addedNames?.held(typeUrl);
      // A hold from added names needs them known; a reference hold may have none added.
      if (added === 'unknown' || (added === undefined && type.namesChange.reference !== true)) return undefined;
      const missing = this.missingReferenced(tracked, state, typeUrl);
      if (missing === undefined) return undefined;
      for (const names of [added ?? [], missing]) {
        const owners = ownership.ownersOfAll(state.lineage, typeUrl, names, held, MAX_RELIEF_OBJECTS);
        if (owners === undefined) return undefined;
        for (const owner of owners) objects.add(owner);
        if (objects.size > MAX_RELIEF_OBJECTS) return undefined;
      }
    }
    if (objects.size === 0) return undefined;
    return { t: through, o: [...objects].sort() };
  }

  /**
   * Every name of `childTypeUrl` the Envoy's accepted config references and its subscription lacks
   * (withReferencesChecked's inputs; the list kept with its check). Undefined for a type no reference
   * edge leads to: its held names cannot be attributed.
   */
  private missingReferenced(tracked: TrackedEnvoy, state: EnvoyState, childTypeUrl: string): readonly string[] | undefined {
    const edge = REFERENCE_EDGES.find((candidate) => candidate.child === childTypeUrl);
    if (edge === undefined) return undefined;
    const type = state.types[childTypeUrl];
    const child = this.subscriptionOf(tracked, childTypeUrl);
    if (type === undefined || child === undefined || child.wildcard) return [];
    const authorities = this.authoritiesOf(tracked);
    const missing: string[] = [];
    for (const parentTypeUrl of edge.parents) {
      const referenced = this.referencedByParent(tracked, state, type.lineage, parentTypeUrl, edge.key, authorities);
      if (referenced === undefined) continue;
      const check = tracked.referenceChecks.get(referenceCheckKey(childTypeUrl, parentTypeUrl));
      if (check !== undefined && check.referenced === referenced && check.subscription === child) {
        check.allMissing ??= check.missing === undefined ? [] : missingNames(referenced, child);
        missing.push(...check.allMissing);
      } else {
        missing.push(...missingNames(referenced, child));
      }
    }
    return missing;
  }

  private forgetStuckReports(tracked: TrackedEnvoy): void {
    if (tracked.stuckReported.size === 0) return;
    for (const key of tracked.stuckReported) {
      const [lineage, typeUrl, seq] = key.split('|');
      const pending = typeUrl === undefined ? undefined : tracked.state.types[typeUrl]?.pending;
      if (pending === undefined || tracked.state.types[typeUrl as string]?.lineage !== lineage || String(pending.seq) !== seq) {
        tracked.stuckReported.delete(key);
      }
    }
  }

  private write(tracked: TrackedEnvoy): void {
    this.recorder.enqueueEnvoyState(tracked.state, tracked.relief);
  }

  private every(ms: number, task: () => void): void {
    const timer = setInterval(() => {
      try {
        task();
      } catch (error) {
        this.logger.error({ err: error }, 'tracker timer task failed');
      }
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }
}

/** The referencing types whose content a relief is judged on (name-owners.ts). */
const RELIEF_PARENT_TYPES = [CDS_TYPE_URL, RDS_TYPE_URL, LDS_TYPE_URL] as const;

/** The state's ACKed seq per type on its own lineage (name-owners.ts HeldSeqs). */
function heldSeqsOf(state: EnvoyState): HeldSeqs {
  return (typeUrl) => {
    const type = state.types[typeUrl];
    return type?.subscribed === true && type.lineage === state.lineage ? type.acked : undefined;
  };
}
