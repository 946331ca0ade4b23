// Incremental (Delta) xDS on one gRPC stream (ADS: all types; per-type service: one type).
// Protocol rules implemented (xDS protocol doc, "Incremental xDS"):
//  - The server tracks, per type, which resource versions the client has: seeded from the first
//    request's `initial_resource_versions` (a reconnecting client states what it holds), then updated
//    with what we send. A response carries only resources whose version differs, plus
//    `removed_resources` for names the client has that no longer exist.
//  - `resource_names_subscribe` / `resource_names_unsubscribe` change the subscription on any request,
//    whatever its nonce; "*" subscribes/unsubscribes the wildcard. A first request subscribing nothing
//    is a legacy wildcard for Listener/Cluster.
//  - response_nonce == latest nonce: ACK, or NACK with error_detail. A stale nonce is not an ACK/NACK.
//  - A NACKed resource version is not resent: the client's known version is recorded when sent, so only
//    a new version of that resource produces another response.
//  - A name subscribed explicitly that does not exist is reported once in `removed_resources`
//    ("Knowing when a requested resource does not exist": Delta signals absence that way). This also
//    repairs the race where a response still in flight when the client unsubscribed and re-subscribed
//    delivers a resource that was deleted meanwhile.
//  - `system_version_info` is the type's snapshot version (informational in Delta).
import type { Logger } from 'pino';
import type { ResourceTypeUrl } from '../../../common/xds/type-urls';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../common/xds/types';
import type { SnapshotCache, SnapshotResource, TypeSnapshot } from './snapshot-cache';
import { rememberNode, resolveRequestType, safeEmit, supportsLegacyWildcard } from './stream-common';
import type { XdsEventListener, XdsRequestKind, XdsStreamInfo } from './xds-events';

/** Marker in `known`: the client was told (removed_resources) that this name does not exist. */
const ABSENT = '\u0000absent';

interface DeltaTypeState {
  wildcard: boolean;
  subscribed: Set<string>;
  /** name -> version the client has (or was last sent, even if it NACKed it), or ABSENT once told it does not exist. */
  known: Map<string, string>;
  sentNonce: string | undefined;
  sentSystemVersion: string | undefined;
  awaitingReply: boolean;
  cancelWatch: () => void;
}

export interface DeltaStreamOptions {
  stream: XdsStreamInfo;
  cache: SnapshotCache;
  fixedTypeUrl?: ResourceTypeUrl;
  controlPlaneId: string;
  send: (response: DeltaDiscoveryResponse) => void;
  onEvent: XdsEventListener;
  log: Logger;
}

export class DeltaStream {
  private readonly types = new Map<ResourceTypeUrl, DeltaTypeState>();
  private nonceCounter = 0;
  private closed = false;

  constructor(private readonly options: DeltaStreamOptions) {}

  /** Handles one request. Throws StreamRequestError for requests that must end the stream. */
  handleRequest(request: DeltaDiscoveryRequest): void {
    if (this.closed) return;
    const { stream, cache, onEvent, log } = this.options;
    const typeUrl = resolveRequestType(request.type_url, this.options.fixedTypeUrl);
    rememberNode(stream, request.node);
    const nonce = request.response_nonce ?? '';
    const subscribe = request.resource_names_subscribe ?? [];
    const unsubscribe = request.resource_names_unsubscribe ?? [];

    let state = this.types.get(typeUrl);
    const isFirst = state === undefined;
    if (state === undefined) {
      const created: DeltaTypeState = {
        wildcard: subscribe.length === 0 && supportsLegacyWildcard(typeUrl),
        subscribed: new Set(),
        known: new Map(Object.entries(request.initial_resource_versions ?? {})),
        sentNonce: undefined,
        sentSystemVersion: undefined,
        awaitingReply: false,
        cancelWatch: () => {},
      };
      created.cancelWatch = cache.watch(typeUrl, (snapshot) => this.onSnapshot(typeUrl, snapshot));
      this.types.set(typeUrl, created);
      state = created;
    }

    for (const name of subscribe) {
      if (name === '*') state.wildcard = true;
      else state.subscribed.add(name);
    }
    for (const name of unsubscribe) {
      if (name === '*') {
        state.wildcard = false;
      } else {
        state.subscribed.delete(name);
        // Forget what the client had, so a later re-subscribe sends the resource again.
        state.known.delete(name);
      }
    }

    let kind: XdsRequestKind;
    if (nonce === '') kind = isFirst ? 'initial' : 'subscription';
    else if (nonce !== state.sentNonce) kind = 'stale';
    else kind = request.error_detail ? 'nack' : 'ack';
    if (kind === 'ack' || kind === 'nack') state.awaitingReply = false;
    safeEmit(
      onEvent,
      {
        event: 'request',
        stream,
        typeUrl,
        kind,
        version: kind === 'ack' || kind === 'nack' ? (state.sentSystemVersion ?? '') : '',
        nonce,
        resourceNames: subscribe,
        ...(request.error_detail ? { errorMessage: request.error_detail.message ?? '' } : {}),
      },
      log,
    );
    if (kind === 'nack') {
      log.warn({ streamId: stream.streamId, nodeId: stream.nodeId, typeUrl, error: request.error_detail?.message }, 'Delta NACK received');
    }

    const snapshot = cache.getSnapshot()?.[typeUrl];
    if (snapshot && !state.awaitingReply) this.respondWithChanges(typeUrl, state, snapshot);
  }

  close(): void {
    this.closed = true;
    for (const state of this.types.values()) state.cancelWatch();
    this.types.clear();
  }

  private onSnapshot(typeUrl: ResourceTypeUrl, snapshot: TypeSnapshot): void {
    const state = this.types.get(typeUrl);
    if (this.closed || !state || state.awaitingReply) return;
    this.respondWithChanges(typeUrl, state, snapshot);
  }

  private inScope(state: DeltaTypeState, name: string): boolean {
    return state.wildcard || state.subscribed.has(name);
  }

  private respondWithChanges(typeUrl: ResourceTypeUrl, state: DeltaTypeState, snapshot: TypeSnapshot): void {
    const updated: SnapshotResource[] = [];
    for (const resource of snapshot.resources.values()) {
      if (this.inScope(state, resource.name) && state.known.get(resource.name) !== resource.version) updated.push(resource);
    }
    const removed = new Set<string>();
    for (const [name, version] of state.known) {
      if (version !== ABSENT && this.inScope(state, name) && !snapshot.resources.has(name)) removed.add(name);
    }
    for (const name of state.subscribed) {
      if (!snapshot.resources.has(name) && state.known.get(name) !== ABSENT) removed.add(name);
    }
    if (updated.length === 0 && removed.size === 0) return;

    for (const resource of updated) state.known.set(resource.name, resource.version);
    for (const name of removed) {
      // Remember explicit subscriptions as "told absent" so the removal is not repeated.
      if (state.subscribed.has(name)) state.known.set(name, ABSENT);
      else state.known.delete(name);
    }
    this.nonceCounter += 1;
    const nonce = String(this.nonceCounter);
    state.sentNonce = nonce;
    state.sentSystemVersion = snapshot.version;
    state.awaitingReply = true;
    const response: DeltaDiscoveryResponse = {
      system_version_info: snapshot.version,
      resources: updated.map((r) => ({ name: r.name, version: r.version, resource: r.resource })),
      type_url: typeUrl,
      removed_resources: [...removed],
      nonce,
      control_plane: { identifier: this.options.controlPlaneId },
    };
    const { stream, onEvent, log } = this.options;
    safeEmit(onEvent, { event: 'response', stream, typeUrl, version: snapshot.version, nonce, resourceNames: updated.map((r) => r.name), removedResources: [...removed] }, log);
    this.options.send(response);
  }
}
