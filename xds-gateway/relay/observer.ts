// The relay's interface to the rest of the gateway (tracking, ops, main). The relay moves xDS bytes
// between Envoys and the control plane; everything it learns is reported through RelayObserver, and
// everything the rest of the gateway may ask of it is on RelayControl. Keep this file stable:
// additive changes only.
import type { EnvoyIdentity, Lineage, GatewayVersion, RequestClass } from '../../common/core';
import type { ResourceTypeUrl } from '../../common/xds';

/** The core's classification of a request (initial / ack / nack / stale / unknownNonce). */
export type RequestClassification = RequestClass;

export interface StreamOpenedEvent {
  streamId: string;
  node: EnvoyIdentity;
  group: string;
  lineage: Lineage;
  protocol: 'sotw' | 'delta';
  /** 'ads' for the aggregated service, otherwise the type URL of the per-type service. */
  service: 'ads' | ResourceTypeUrl;
  at: number;
}

export interface RequestClassifiedEvent {
  streamId: string;
  nodeId: string;
  typeUrl: string;
  lineage: Lineage;
  classification: RequestClassification;
  /** SotW: resource_names; Delta: the stream's subscription for the type after this request. */
  resourceNames: readonly string[];
  at: number;
}

export interface ResponseSentEvent {
  streamId: string;
  nodeId: string;
  typeUrl: string;
  version: GatewayVersion;
  nonce: string;
  resourceCount: number;
  at: number;
}

export interface StreamClosedEvent {
  streamId: string;
  nodeId: string;
  at: number;
  reason: string;
}

export interface UpstreamResource {
  name: string;
  /** The Any's value bytes exactly as the control plane sent them. */
  value: Buffer;
}

export interface UpstreamAppliedEvent {
  group: string;
  lineage: Lineage;
  typeUrl: string;
  /** The type's current seq after applying (unchanged content keeps the previous seq). */
  seq: number;
  changed: boolean;
  upstreamVersion: string;
  /** Increments each time the group's upstream streams are (re)opened; 1 for the first. */
  upstreamEpoch: number;
  resources: readonly UpstreamResource[];
  /**
   * Names among `resources` this lineage never had from its own upstream: carried over from the
   * lineage it replaced by make-before-break (RelayGroupDeps.retainedFrom) while clients still use
   * them. Watermarks must not take them as an object's appearance on this lineage (its upstream never
   * sent them), only as what it still serves. Absent: none.
   */
  inherited?: readonly string[];
  at: number;
}

export type UpstreamStateName = 'connecting' | 'ready' | 'unavailable';

export interface UpstreamStateEvent {
  group: string;
  state: UpstreamStateName;
  target: string;
  at: number;
}

// Callbacks are synchronous and must never block on I/O (go-control-plane style): implementations
// enqueue work. All times are epoch ms from the injected clock. An exception thrown by a callback is
// caught and logged by the relay; it never breaks a stream.
export interface RelayObserver {
  streamOpened(e: StreamOpenedEvent): void;
  // Every request after classification with the core's classifyRequest (initial/ack/nack/stale/...)
  requestClassified(e: RequestClassifiedEvent): void;
  responseSent(e: ResponseSentEvent): void;
  streamClosed(e: StreamClosedEvent): void;
  // After the relay applied an upstream response to its cache for (group, type) and bumped the
  // lineage seq if content changed. `resources` are the opaque Any bytes (decode only if you must,
  // e.g. provenance metadata; the relay itself never decodes on the per-Envoy path).
  upstreamApplied(e: UpstreamAppliedEvent): void;
  upstreamState(e: UpstreamStateEvent): void;
}

export interface ReopenResult {
  lineage: Lineage;
  seq: number;
  /** Per type URL the group subscribes to: the type's current seq after the first new response. */
  types: Record<string, number>;
}

export interface RelayGroupInfo {
  group: string;
  lineage: Lineage;
  currentSeq: number;
  /** Per type URL: the seqs at which that type changed, oldest first. */
  typeHistory: Record<string, number[]>;
  /** Resources the control plane removed that stay served until clients moved off them (docs/GATEWAY.md, "Make-before-break"). */
  pendingRemovals: number;
}

export interface RelayControl {
  // Observed-generation barrier (docs/GATEWAY.md, "Watermarks"): close the group's upstream streams and open new ones to
  // the same (or current) target; resolves with the lineage seq after the FIRST response on the new
  // streams has been applied for every type the group subscribes to. Concurrent calls share one re-open.
  reopenUpstream(group: string): Promise<ReopenResult>;
  setUpstreamTarget(target: string): void; // follow the control plane's status writer (leader)
  groups(): readonly RelayGroupInfo[];
  close(options?: { graceMs?: number }): Promise<void>; // stop accepting, close streams (Envoys reconnect elsewhere)
  // Backpressure (docs/GATEWAY.md "Backpressure"): while paused, every downstream stream (and each new
  // one) stops reading requests (HTTP/2 flow control then holds them in the Envoy) and holds new
  // responses, so no new pending/ACK work is created; nothing is dropped. false resumes and sends
  // what became due. Idempotent. Upstream streams keep running (the cache stays current).
  setPaused(paused: boolean): void;
  paused(): boolean;
  // Ends every live stream of `nodeId` with `code` and `details` (the gateway refuses an Envoy it can
  // never record: Recorder onUnrecordable). Returns how many streams it ended.
  endStreamsOf(nodeId: string, code: number, details: string): number;
}

/** A no-op observer, handy as a base for partial implementations. */
export const NOOP_RELAY_OBSERVER: RelayObserver = {
  streamOpened: () => undefined,
  requestClassified: () => undefined,
  responseSent: () => undefined,
  streamClosed: () => undefined,
  upstreamApplied: () => undefined,
  upstreamState: () => undefined,
};
