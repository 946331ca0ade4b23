// One node group inside the relay: its lineage and cache, its upstream subscriptions (one per type,
// opened on first downstream demand), the downstream streams subscribed to each type, and the
// observed-generation barrier (reopen).
import type { Logger } from 'pino';
import type { Clock, Lineage } from '../../common/core';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL } from '../../common/core';
import * as grpc from '@grpc/grpc-js';
import type { AnyResource, DiscoveryResponse, SotwStream, XdsNode } from '../../common/xds';
import { RequestError } from './request-error';
import type { RelayGroupInfo, RelayObserver, ReopenResult, UpstreamStateName } from './observer';
import { DISCOVERY_RESOURCE_WRAPPER_TYPE_URL, resourceNameOf } from './resource-name';
import { DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS, MakeBeforeBreak, type NamedResource } from './make-before-break';
import { NameListInterner } from './name-list-interner';
import { GroupCache } from './type-cache';
import { UpstreamTypeStream, type BackoffOptions, type ResponseArrival } from './upstream-stream';

/** A downstream stream's hook: the cache of `typeUrl` changed. Must not throw or block. */
export interface TypeSubscriber {
  onTypeChanged(typeUrl: string): void;
  /** Type seq of the last response of `typeUrl` this stream answered (ACK or NACK); -1 before any. */
  answeredSeq(typeUrl: string): number;
  /** Ends the stream (the group moved to a new lineage: the Envoy reconnects, as after a restart). */
  end(code: grpc.status, details: string): void;
}

/** A downstream stream identified on a group (join) until it closes (leave); not necessarily subscribed yet. */
export type GroupMember = TypeSubscriber;

/** One upstream response, validated but not yet cached, as the monotonicity guard sees it. */
export interface UpstreamContent {
  group: string;
  lineage: Lineage;
  typeUrl: string;
  resources: readonly { name: string; value: Buffer }[];
  firstOnReplacementStream: boolean;
  /** Whether the response differs from the type's cached content (it would take a new seq); compares bytes, so asked only when needed. */
  changesContent(): boolean;
}

/**
 * Says why `content` cannot be served on its lineage without breaking a watermark already recorded
 * there (it would take content backwards at a higher seq), or undefined when it can. Must not throw.
 */
export type MonotonicityGuard = (content: UpstreamContent) => string | undefined;

// Envoy's recommended ADS update order (xDS protocol, "Eventual consistency considerations"): CDS,
// then EDS, then LDS, then RDS, so a route never points at a cluster Envoy does not have yet and a
// cluster is not left warming without its endpoints. SDS first: listeners and clusters reference it.
const TYPE_PUSH_ORDER = [SDS_TYPE_URL, CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];

/** How long a barrier re-open waits for the first answer of a type that has no data yet (once). */
const FIRST_ANSWER_WAIT_MS = 5000;

/** How often, at most, answers trigger a make-before-break release check. */
const RELEASE_CHECK_MS = 20;

export function pushOrder(typeUrls: Iterable<string>): string[] {
  const rank = (typeUrl: string): number => {
    const index = TYPE_PUSH_ORDER.indexOf(typeUrl);
    return index < 0 ? TYPE_PUSH_ORDER.length : index;
  };
  return [...typeUrls].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

export interface RelayGroupDeps {
  group: string;
  lineage: Lineage;
  upstreamNode: XdsNode;
  openUpstream: (typeUrl: string) => { call: SotwStream; target: string };
  currentTarget: () => string;
  observer: RelayObserver;
  clock: Clock;
  logger: Logger;
  backoff: BackoffOptions;
  maxResourcesPerResponse: number;
  /**
   * Most type URLs the group subscribes to upstream. Upstream subscriptions live as long as the
   * group, and any printable type URL is relayed, so without a cap one client could make the gateway
   * hold unbounded upstream streams.
   */
  maxTypes: number;
  /** Window (ms) to gather upstream changes before pushing them in ADS order; 0 = end of this turn. */
  pushCoalesceMs: number;
  /**
   * Longest a removed resource that clients may still use stays served (make-before-break.ts);
   * default DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS.
   */
  makeBeforeBreakGraceMs?: number;
  /**
   * What the group this one replaces on a lineage move last served, per type. Make-before-break reads
   * it as this group's served content until its own arrives: a resource it referenced and the new
   * upstream lacks stays served until the clients answered the content that moves them off it, as
   * within a lineage. Without it a client whose route still names a cluster the new upstream dropped
   * got a CDS response without it first (docs/GATEWAY.md, "Make-before-break").
   */
  retainedFrom?: ReadonlyMap<string, readonly NamedResource[]>;
  /** Checked before each upstream response is cached (provenance mode); undefined: no check. */
  guard?: MonotonicityGuard;
  /**
   * Called (once, on a later turn) when the guard refused a response: the relay replaces this group
   * with one on a new lineage (relay.ts). Until then the group caches nothing more.
   */
  requestNewLineage: (reason: string) => void;
  /**
   * How long the group may stay without members before `onIdle` is called. Every group holds one
   * upstream stream per type for as long as it lives, and its key is Envoy-supplied (node.cluster by
   * default), so groups nobody uses any more must go or they accumulate without bound.
   */
  idleMs: number;
  /** The group has had no member for `idleMs` (relay.ts frees it). Not called once closed. */
  onIdle: () => void;
}

export class RelayGroup {
  readonly cache: GroupCache;
  /** Delta streams' subscription views, shared by content (name-list-interner.ts). */
  readonly subscriptionViews = new NameListInterner();
  private readonly upstreams = new Map<string, UpstreamTypeStream>();
  private readonly subscribers = new Map<string, Set<TypeSubscriber>>();
  /** Per type, every name this lineage's own upstream sent (only tracked with retainedFrom). */
  private readonly ownNames = new Map<string, Set<string>>();
  private readonly dirty = new Set<string>();
  private flushScheduled: { cancel(): void } | undefined;
  private epoch = 1;
  private reportedState: UpstreamStateName | undefined;
  private queuedReopen: Promise<ReopenResult> | undefined;
  private runningReopen: Promise<ReopenResult> | undefined;
  private closed = false;
  /** Types with no data that did not answer within FIRST_ANSWER_WAIT_MS of a re-open. */
  private readonly silentTypes = new Set<string>();
  /** Set when the guard refused content: nothing more is cached on this lineage. */
  private abandoned = false;
  private readonly makeBeforeBreak: MakeBeforeBreak;
  /** Upstream version_info of each type's last response (reported again when a release re-applies it). */
  private readonly upstreamVersions = new Map<string, string>();
  private releaseCheck: NodeJS.Timeout | undefined;
  private releaseCheckAt = Number.POSITIVE_INFINITY;
  /** Streams identified on this group and not closed (subscribed or not). */
  private readonly members = new Set<GroupMember>();
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: RelayGroupDeps) {
    this.cache = new GroupCache(deps.group, deps.lineage);
    this.makeBeforeBreak = new MakeBeforeBreak({
      // Before its first data a type's served content is what the replaced group served (retainedFrom).
      served: (typeUrl) => {
        const snapshot = this.cache.snapshot(typeUrl);
        return snapshot?.hasData === true ? snapshot.resources.values() : deps.retainedFrom?.get(typeUrl);
      },
      answeredSeqs: (typeUrl) => [...(this.subscribers.get(typeUrl) ?? [])].map((subscriber) => subscriber.answeredSeq(typeUrl)),
      now: () => deps.clock.now(),
      graceMs: deps.makeBeforeBreakGraceMs ?? DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS,
      logger: deps.logger,
    });
    // Created for a stream that joins in the same turn; armed anyway so a group can never be left
    // without members and without a timer.
    this.armIdleTimer();
  }

  /** What the group serves now, per type with data (a lineage move hands it to the next group: retainedFrom). */
  servedContent(): Map<string, NamedResource[]> {
    const content = new Map<string, NamedResource[]>();
    for (const typeUrl of this.cache.typeUrls()) {
      const snapshot = this.cache.snapshot(typeUrl);
      if (snapshot?.hasData === true) content.set(typeUrl, [...snapshot.resources.values()].map(({ name, resource }) => ({ name, resource })));
    }
    return content;
  }

  /** Streams currently identified on the group. */
  get memberCount(): number {
    return this.members.size;
  }

  /** A stream identified on this group: the group is in use again (the idle timer stops). */
  join(member: GroupMember): void {
    // A stream that identified on this group before it was retired: it must reconnect to the new one.
    if (this.closed) throw new RequestError(grpc.status.UNAVAILABLE, `node group ${this.group} moved to a new lineage; reconnect`);
    this.members.add(member);
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  /** A member closed: it no longer subscribes to anything; the last one to leave arms the idle timer. */
  leave(member: GroupMember): void {
    this.unsubscribe(member);
    if (this.members.delete(member) && this.members.size === 0) this.armIdleTimer();
  }

  private armIdleTimer(): void {
    if (this.closed || this.idleTimer !== undefined) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (!this.closed && this.members.size === 0) this.deps.onIdle();
    }, this.deps.idleMs);
    this.idleTimer.unref();
  }

  /** Removed resources still served until their clients moved off them (make-before-break.ts). */
  pendingRemovals(): number {
    return this.makeBeforeBreak.pendingCount();
  }

  /**
   * A stream answered a response: a removal waiting for every client to move may be due.
   * Checked at most every RELEASE_CHECK_MS, not per answer: the check reads every subscriber.
   */
  answered(): void {
    if (this.makeBeforeBreak.pendingCount() > 0) this.scheduleReleaseCheck(this.deps.clock.now() + RELEASE_CHECK_MS);
  }

  get group(): string {
    return this.deps.group;
  }

  get lineage(): Lineage {
    return this.deps.lineage;
  }

  get upstreamEpoch(): number {
    return this.epoch;
  }

  info(): RelayGroupInfo {
    return { group: this.group, lineage: this.lineage, currentSeq: this.cache.currentSeq, typeHistory: this.cache.typeHistory(), pendingRemovals: this.makeBeforeBreak.pendingCount() };
  }

  /** Upstream streams opened so far per type (tests: one stream per group and type). */
  upstreamStreamsOpened(): Record<string, number> {
    return Object.fromEntries([...this.upstreams].map(([typeUrl, upstream]) => [typeUrl, upstream.opened]));
  }

  subscribe(typeUrl: string, subscriber: TypeSubscriber): void {
    // A stream that identified on this group before it was retired: it must reconnect to the new one.
    if (this.closed) throw new RequestError(grpc.status.UNAVAILABLE, `node group ${this.group} moved to a new lineage; reconnect`);
    if (!this.upstreams.has(typeUrl) && this.upstreams.size >= this.deps.maxTypes) {
      throw new RequestError(grpc.status.RESOURCE_EXHAUSTED, `node group subscribes to at most ${this.deps.maxTypes} type URLs upstream`);
    }
    let set = this.subscribers.get(typeUrl);
    if (set === undefined) {
      set = new Set();
      this.subscribers.set(typeUrl, set);
    }
    set.add(subscriber);
    this.ensureUpstream(typeUrl);
  }

  unsubscribe(subscriber: TypeSubscriber): void {
    for (const set of this.subscribers.values()) set.delete(subscriber);
    // A closed stream no longer holds a removal back.
    if (this.makeBeforeBreak.pendingCount() > 0) this.scheduleReleaseCheck(this.deps.clock.now() + RELEASE_CHECK_MS);
  }

  /** Opens the type's upstream subscription on first demand (any type URL, known or not). */
  ensureUpstream(typeUrl: string): void {
    if (this.closed || this.upstreams.has(typeUrl)) return;
    const upstream = new UpstreamTypeStream({
      group: this.group,
      typeUrl,
      node: () => this.deps.upstreamNode,
      open: this.deps.openUpstream,
      apply: (response, arrival) => this.applyUpstream(typeUrl, response, arrival),
      onStateChange: () => this.reportState(),
      backoff: this.deps.backoff,
      logger: this.deps.logger,
    });
    this.upstreams.set(typeUrl, upstream);
    upstream.start();
  }

  /**
   * Validates and caches one upstream response. Returns the reason to NACK it, or undefined. The
   * per-resource name is read from the bytes once here; Envoys get the Any untouched.
   */
  private applyUpstream(typeUrl: string, response: DiscoveryResponse, arrival: ResponseArrival): string | undefined {
    // Retired or abandoned: the response is not ours to cache any more (and not wrong, so no NACK).
    if (this.closed || this.abandoned) return undefined;
    const responseType = response.type_url ?? '';
    if (responseType !== '' && responseType !== typeUrl) return `response type_url ${responseType} on the ${typeUrl} subscription`;
    const resources = response.resources ?? [];
    if (resources.length > this.deps.maxResourcesPerResponse) return `${resources.length} resources exceed the relay limit of ${this.deps.maxResourcesPerResponse}`;
    const incoming: { name: string; resource: AnyResource }[] = [];
    const seen = new Set<string>();
    for (const [index, resource] of resources.entries()) {
      if (resource.type_url !== typeUrl && resource.type_url !== DISCOVERY_RESOURCE_WRAPPER_TYPE_URL) {
        return `resource ${index} has type_url ${resource.type_url}, expected ${typeUrl}`;
      }
      let name: string | undefined;
      try {
        name = resourceNameOf(resource.type_url, resource.value);
      } catch (error) {
        return `resource ${index} is not a valid protobuf message: ${(error as Error).message}`;
      }
      if (name === undefined || name === '') return `resource ${index} has no name`;
      // SotW: names are unique within a response (xDS protocol, "Resource names"); duplicates would
      // make the cache and Delta diffs ambiguous.
      if (seen.has(name)) return `duplicate resource name ${JSON.stringify(name)}`;
      seen.add(name);
      incoming.push({ name, resource: { type_url: resource.type_url, value: toBuffer(resource.value) } });
    }
    // Invariant 1 rests on content being monotone per lineage: W(X, G) is the first seq reflecting
    // X@G and every later seq must too. A response that would take an object with a watermark on this
    // lineage back (another or a restarted control-plane replica that is behind) is never given a seq
    // here; the group is replaced by one on a new lineage whose watermarks come from its own content.
    if (this.deps.retainedFrom !== undefined) {
      // What this lineage's own upstream sent, ever: a kept resource outside it was carried over.
      let own = this.ownNames.get(typeUrl);
      if (own === undefined) this.ownNames.set(typeUrl, (own = new Set()));
      for (const resource of incoming) own.add(resource.name);
    }
    const served = this.makeBeforeBreak.contentFor(typeUrl, incoming);
    const refusal = this.checkMonotone(typeUrl, served, arrival);
    if (refusal !== undefined) {
      this.abandoned = true;
      this.deps.logger.warn({ group: this.group, lineage: this.lineage, typeUrl, reason: refusal }, 'relay: upstream content would go back on this lineage; starting a new lineage');
      // On a later turn: the retirement closes the upstream stream whose handler we are inside.
      setImmediate(() => this.deps.requestNewLineage(refusal));
      return undefined;
    }
    this.upstreamVersions.set(typeUrl, response.version_info ?? '');
    this.applyServed(typeUrl, served);
    return undefined;
  }

  /**
   * Caches what the group serves for a type (upstream content plus what make-before-break keeps),
   * reports it, and pushes it. The observer sees every seq, releases included: the tracking's lineage
   * mirror and the provenance watermarks follow the served content, not the upstream's.
   */
  private applyServed(typeUrl: string, served: readonly NamedResource[]): void {
    const referencedBefore = this.makeBeforeBreak.referencedChildren(typeUrl);
    const { changed, seq } = this.cache.apply(typeUrl, served);
    const at = this.deps.clock.now();
    try {
      this.deps.observer.upstreamApplied({
        group: this.group,
        lineage: this.lineage,
        typeUrl,
        seq,
        changed,
        upstreamVersion: this.upstreamVersions.get(typeUrl) ?? '',
        upstreamEpoch: this.epoch,
        // The cache's objects: an unchanged resource keeps its bytes object across seqs, so listeners
        // that decode (references, provenance) can cache by it.
        resources: [...(this.cache.snapshot(typeUrl)?.resources.values() ?? [])].map(({ name, resource }) => ({ name, value: resource.value as Buffer })),
        ...this.inheritedOf(typeUrl, served),
        at,
      });
    } catch (error) {
      this.deps.logger.error({ err: error, group: this.group, typeUrl }, 'relay: observer.upstreamApplied threw');
    }
    this.deps.logger.debug({ group: this.group, typeUrl, seq, changed, resources: served.length }, 'relay: upstream response applied');
    if (!changed) return;
    this.makeBeforeBreak.parentChanged(typeUrl, seq, referencedBefore);
    this.markDirty(typeUrl);
    this.releaseDue();
  }

  /** The served names of `typeUrl` this lineage's own upstream never sent (UpstreamAppliedEvent.inherited). */
  private inheritedOf(typeUrl: string, served: readonly NamedResource[]): { inherited?: string[] } {
    if (this.deps.retainedFrom === undefined) return {};
    const own = this.ownNames.get(typeUrl);
    const inherited = served.filter((resource) => own?.has(resource.name) !== true).map((resource) => resource.name);
    return inherited.length === 0 ? {} : { inherited };
  }

  /** Applies the removals make-before-break says are due, and arms the timer for the next deadline. */
  private releaseDue(): void {
    if (this.closed || this.abandoned) return;
    for (const child of this.makeBeforeBreak.takeDue()) {
      const upstream = this.makeBeforeBreak.upstreamOf(child);
      if (upstream !== undefined) this.applyServed(child, this.makeBeforeBreak.contentFor(child, upstream));
    }
    const deadline = this.makeBeforeBreak.nextDeadline();
    if (deadline !== undefined) this.scheduleReleaseCheck(deadline);
  }

  private scheduleReleaseCheck(at: number): void {
    if (this.closed || at >= this.releaseCheckAt) return;
    if (this.releaseCheck !== undefined) clearTimeout(this.releaseCheck);
    this.releaseCheckAt = at;
    this.releaseCheck = setTimeout(() => {
      this.releaseCheck = undefined;
      this.releaseCheckAt = Number.POSITIVE_INFINITY;
      this.releaseDue();
    }, Math.max(0, at - this.deps.clock.now()));
    this.releaseCheck.unref();
  }

  private checkMonotone(typeUrl: string, incoming: readonly { name: string; resource: AnyResource }[], arrival: ResponseArrival): string | undefined {
    const guard = this.deps.guard;
    if (guard === undefined) return undefined;
    try {
      return guard({
        group: this.group,
        lineage: this.lineage,
        typeUrl,
        resources: incoming.map(({ name, resource }) => ({ name, value: resource.value as Buffer })),
        firstOnReplacementStream: arrival.firstOnReplacementStream,
        changesContent: () => this.cache.wouldChange(typeUrl, incoming),
      });
    } catch (error) {
      // A broken guard must not let possibly-regressing content through silently, nor stop the relay.
      this.deps.logger.error({ err: error, group: this.group, typeUrl }, 'relay: monotonicity guard threw; starting a new lineage to be safe');
      return `monotonicity guard failed: ${(error as Error).message}`;
    }
  }

  private markDirty(typeUrl: string): void {
    this.dirty.add(typeUrl);
    // Coalesce (to the end of this turn, or a short window) so that types changed together go out in
    // push order even when their upstream responses arrive on different streams a moment apart.
    if (this.flushScheduled !== undefined) return;
    if (this.deps.pushCoalesceMs > 0) {
      const timer = setTimeout(() => this.flush(), this.deps.pushCoalesceMs);
      this.flushScheduled = { cancel: () => clearTimeout(timer) };
    } else {
      const immediate = setImmediate(() => this.flush());
      this.flushScheduled = { cancel: () => clearImmediate(immediate) };
    }
  }

  private flush(): void {
    this.flushScheduled = undefined;
    const types = pushOrder(this.dirty);
    this.dirty.clear();
    for (const typeUrl of types) {
      for (const subscriber of this.subscribers.get(typeUrl) ?? []) {
        try {
          subscriber.onTypeChanged(typeUrl);
        } catch (error) {
          this.deps.logger.error({ err: error, group: this.group, typeUrl }, 'relay: pushing a change to a stream failed');
        }
      }
    }
  }

  private reportState(): void {
    const states = [...this.upstreams.values()].map((upstream) => upstream.state);
    const state: UpstreamStateName = states.includes('unavailable') ? 'unavailable' : states.includes('connecting') ? 'connecting' : 'ready';
    if (state === this.reportedState) return;
    this.reportedState = state;
    try {
      this.deps.observer.upstreamState({ group: this.group, state, target: this.deps.currentTarget(), at: this.deps.clock.now() });
    } catch (error) {
      this.deps.logger.error({ err: error, group: this.group }, 'relay: observer.upstreamState threw');
    }
  }

  /**
   * The barrier (docs/GATEWAY.md, "Watermarks"). Callers that arrive before the re-open has started share it; a caller
   * arriving after its new streams' requests went out gets the next one, because only a request sent
   * after the caller's moment is guaranteed to see what the control plane had at that moment.
   */
  reopen(): Promise<ReopenResult> {
    if (this.queuedReopen !== undefined) return this.queuedReopen;
    const previous = this.runningReopen ?? Promise.resolve();
    const queued = previous
      .catch(() => undefined)
      .then(() => {
        this.queuedReopen = undefined;
        const running = this.runReopen();
        this.runningReopen = running;
        return running.finally(() => {
          if (this.runningReopen === running) this.runningReopen = undefined;
        });
      });
    this.queuedReopen = queued;
    return queued;
  }

  private async runReopen(): Promise<ReopenResult> {
    if (this.closed) throw new Error(`relay group ${this.group} is closed`);
    this.epoch += 1;
    const upstreams = [...this.upstreams];
    this.deps.logger.info({ group: this.group, epoch: this.epoch, types: upstreams.length }, 'relay: re-opening upstream streams');
    // Every stream is re-opened. Types that already have data are waited for. A type with no data
    // yet has served no version to anyone, and its first response will come from a request sent
    // after this moment anyway, so not waiting is sound (its version in the result is 0); but on a
    // fresh lineage (a group that just moved to a new lineage has no data at all) the watermark would
    // then name no content. So such a type is waited for up to FIRST_ANSWER_WAIT_MS, once: a type
    // that did not answer by then (an opaque type URL the control plane ignores or refuses) is not
    // waited for again, so it cannot hold every barrier of the group back.
    const waits = upstreams.map(([typeUrl, upstream]) => {
      const done = upstream.reopen();
      if (this.cache.snapshot(typeUrl)?.hasData === true) return done;
      done.catch(() => undefined);
      if (this.silentTypes.has(typeUrl)) return Promise.resolve();
      return this.firstAnswer(typeUrl, done);
    });
    await Promise.all(waits);
    // A response the guard refused was not cached: this seq does not reflect it, so it is no barrier.
    if (this.closed || this.abandoned) throw new Error(`relay group ${this.group} moved to a new lineage during the re-open`);
    const types: Record<string, number> = {};
    for (const typeUrl of this.upstreams.keys()) types[typeUrl] = this.cache.snapshot(typeUrl)?.seq ?? 0;
    return { lineage: this.lineage, seq: this.cache.currentSeq, types };
  }

  /**
   * Retires the group for a new lineage: its upstream streams close and every downstream stream of
   * the group ends with UNAVAILABLE, so its Envoys reconnect (to the group's successor) exactly as
   * after a gateway restart, re-sending their versions, which are then of another lineage (full send).
   */
  retire(reason: string): void {
    if (this.closed) return;
    const streams = new Set<TypeSubscriber>(this.members);
    for (const set of this.subscribers.values()) for (const subscriber of set) streams.add(subscriber);
    this.close();
    for (const stream of streams) {
      try {
        stream.end(grpc.status.UNAVAILABLE, `xds-programmed gateway: node group moved to a new lineage (${reason.slice(0, 200)}); reconnect`);
      } catch (error) {
        this.deps.logger.error({ err: error, group: this.group }, 'relay: ending a stream of a retired group failed');
      }
    }
  }

  private firstAnswer(typeUrl: string, done: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), FIRST_ANSWER_WAIT_MS);
      timer.unref();
    });
    return Promise.race([done.then(() => 'answered' as const, () => 'answered' as const), timedOut]).then((outcome) => {
      if (timer !== undefined) clearTimeout(timer);
      if (outcome === 'timeout') {
        this.silentTypes.add(typeUrl);
        this.deps.logger.info({ group: this.group, typeUrl, waitedMs: FIRST_ANSWER_WAIT_MS }, 'relay: upstream type has not answered; barriers no longer wait for it');
      }
    });
  }

  close(): void {
    this.closed = true;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.releaseCheck !== undefined) clearTimeout(this.releaseCheck);
    this.releaseCheck = undefined;
    this.flushScheduled?.cancel();
    this.flushScheduled = undefined;
    for (const upstream of this.upstreams.values()) upstream.close();
    this.subscribers.clear();
  }
}

function toBuffer(value: Buffer | Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
