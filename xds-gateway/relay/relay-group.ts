// One node group inside the relay: its lineage and cache, its upstream subscriptions (one per type,
// opened on first downstream demand), the downstream streams subscribed to each type, and the
// observed-generation barrier (reopen).
import type { Logger } from 'pino';
import type { Clock, Lineage } from '../../common/core';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL } from '../../common/core';
import * as grpc from '@grpc/grpc-js';
import type { AnyResource, DiscoveryResponse, SotwStream, XdsNode } from '../../common/xds';
import { RequestError } from './downstream-common';
import type { RelayGroupInfo, RelayObserver, ReopenResult, UpstreamStateName } from './observer';
import { DISCOVERY_RESOURCE_WRAPPER_TYPE_URL, resourceNameOf } from './resource-name';
import { GroupCache } from './type-cache';
import { UpstreamTypeStream, type BackoffOptions } from './upstream-stream';

/** A downstream stream's hook: the cache of `typeUrl` changed. Must not throw or block. */
export interface TypeSubscriber {
  onTypeChanged(typeUrl: string): void;
}

// Envoy's recommended ADS update order (xDS protocol, "Eventual consistency considerations"): CDS,
// then EDS, then LDS, then RDS, so a route never points at a cluster Envoy does not have yet and a
// cluster is not left warming without its endpoints. SDS first: listeners and clusters reference it.
const TYPE_PUSH_ORDER = [SDS_TYPE_URL, CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];

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
}

export class RelayGroup {
  readonly cache: GroupCache;
  private readonly upstreams = new Map<string, UpstreamTypeStream>();
  private readonly subscribers = new Map<string, Set<TypeSubscriber>>();
  private readonly dirty = new Set<string>();
  private flushScheduled: { cancel(): void } | undefined;
  private epoch = 1;
  private reportedState: UpstreamStateName | undefined;
  private queuedReopen: Promise<ReopenResult> | undefined;
  private runningReopen: Promise<ReopenResult> | undefined;
  private closed = false;

  constructor(private readonly deps: RelayGroupDeps) {
    this.cache = new GroupCache(deps.group, deps.lineage);
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
    return { group: this.group, lineage: this.lineage, currentSeq: this.cache.currentSeq, typeHistory: this.cache.typeHistory() };
  }

  /** Upstream streams opened so far per type (tests: one stream per group and type). */
  upstreamStreamsOpened(): Record<string, number> {
    return Object.fromEntries([...this.upstreams].map(([typeUrl, upstream]) => [typeUrl, upstream.opened]));
  }

  subscribe(typeUrl: string, subscriber: TypeSubscriber): void {
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
  }

  /** Opens the type's upstream subscription on first demand (any type URL, known or not). */
  ensureUpstream(typeUrl: string): void {
    if (this.closed || this.upstreams.has(typeUrl)) return;
    const upstream = new UpstreamTypeStream({
      group: this.group,
      typeUrl,
      node: () => this.deps.upstreamNode,
      open: this.deps.openUpstream,
      apply: (response) => this.applyUpstream(typeUrl, response),
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
  private applyUpstream(typeUrl: string, response: DiscoveryResponse): string | undefined {
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
    const { changed, seq } = this.cache.apply(typeUrl, incoming);
    const at = this.deps.clock.now();
    try {
      this.deps.observer.upstreamApplied({
        group: this.group,
        lineage: this.lineage,
        typeUrl,
        seq,
        changed,
        upstreamVersion: response.version_info ?? '',
        upstreamEpoch: this.epoch,
        resources: incoming.map(({ name, resource }) => ({ name, value: resource.value as Buffer })),
        at,
      });
    } catch (error) {
      this.deps.logger.error({ err: error, group: this.group, typeUrl }, 'relay: observer.upstreamApplied threw');
    }
    this.deps.logger.debug({ group: this.group, typeUrl, seq, changed, resources: incoming.length }, 'relay: upstream response applied');
    if (changed) this.markDirty(typeUrl);
    return undefined;
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
   * The barrier (DESIGN §3.3). Callers that arrive before the re-open has started share it; a caller
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
    // Every stream is re-opened, but only types that already have data are waited for: a type with
    // no data yet has served no version to anyone, and its first response will come from a request
    // sent after this moment anyway. Waiting for it could block every barrier of the group forever
    // (e.g. an opaque type URL the control plane refuses).
    const waits = upstreams.map(([typeUrl, upstream]) => {
      const done = upstream.reopen();
      if (this.cache.snapshot(typeUrl)?.hasData === true) return done;
      done.catch(() => undefined);
      return Promise.resolve();
    });
    await Promise.all(waits);
    const types: Record<string, number> = {};
    for (const typeUrl of this.upstreams.keys()) types[typeUrl] = this.cache.snapshot(typeUrl)?.seq ?? 0;
    return { lineage: this.lineage, seq: this.cache.currentSeq, types };
  }

  close(): void {
    this.closed = true;
    this.flushScheduled?.cancel();
    this.flushScheduled = undefined;
    for (const upstream of this.upstreams.values()) upstream.close();
    this.subscribers.clear();
  }
}

function toBuffer(value: Buffer | Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
