// State-of-the-World xDS on one gRPC stream (ADS: all types; per-type service: one type).
// Protocol rules implemented (xDS REST/gRPC protocol doc, "ACK and NACK semantics", go-control-plane):
//  - A request whose response_nonce is non-empty and not the nonce of the latest response of that type
//    is stale: ignored entirely (neither ACK, NACK nor subscription change).
//  - response_nonce == latest nonce: ACK if no error_detail, else NACK. A NACK is never answered by
//    resending the same version; the next response waits for a new snapshot version.
//  - Flow control: at most one unanswered response per type; a snapshot change seen meanwhile is sent
//    when the ACK/NACK arrives.
//  - A response carries the whole subscribed set: every resource for a wildcard subscription, the
//    requested names that exist otherwise. Newly requested names get an immediate response.
//  - A first request (empty nonce) whose version_info equals the current version of a wildcard
//    subscription is not answered: the client already has that state (reconnect to the same replica).
import type { Logger } from 'pino';
import type { ResourceTypeUrl } from '../../../common/xds/type-urls';
import type { DiscoveryRequest, DiscoveryResponse } from '../../../common/xds/types';
import type { SnapshotCache, TypeSnapshot } from './snapshot-cache';
import { rememberNode, resolveRequestType, safeEmit, supportsLegacyWildcard } from './stream-common';
import type { XdsEventListener, XdsRequestKind, XdsStreamInfo } from './xds-events';

interface SotwTypeState {
  wildcard: boolean;
  /** True while the wildcard comes only from the legacy rule (no explicit names ever sent). */
  legacyWildcard: boolean;
  names: Set<string>;
  sentVersion: string | undefined;
  sentNonce: string | undefined;
  awaitingReply: boolean;
  cancelWatch: () => void;
}

export interface SotwStreamOptions {
  stream: XdsStreamInfo;
  cache: SnapshotCache;
  fixedTypeUrl?: ResourceTypeUrl;
  controlPlaneId: string;
  send: (response: DiscoveryResponse) => void;
  onEvent: XdsEventListener;
  log: Logger;
}

export class SotwStream {
  private readonly types = new Map<ResourceTypeUrl, SotwTypeState>();
  private nonceCounter = 0;
  private closed = false;

  constructor(private readonly options: SotwStreamOptions) {}

  /** Handles one request. Throws StreamRequestError for requests that must end the stream. */
  handleRequest(request: DiscoveryRequest): void {
    if (this.closed) return;
    const { stream, cache, onEvent, log } = this.options;
    const typeUrl = resolveRequestType(request.type_url, this.options.fixedTypeUrl);
    rememberNode(stream, request.node);
    const nonce = request.response_nonce ?? '';
    const requestedNames = request.resource_names ?? [];
    let state = this.types.get(typeUrl);

    if (nonce !== '' && nonce !== state?.sentNonce) {
      safeEmit(onEvent, { event: 'request', stream, typeUrl, kind: 'stale', version: request.version_info ?? '', nonce, resourceNames: requestedNames }, log);
      return;
    }

    const isFirst = state === undefined;
    if (state === undefined) {
      const created: SotwTypeState = {
        wildcard: false,
        legacyWildcard: false,
        names: new Set(),
        sentVersion: undefined,
        sentNonce: undefined,
        awaitingReply: false,
        cancelWatch: () => {},
      };
      created.cancelWatch = cache.watch(typeUrl, (snapshot) => this.onSnapshot(typeUrl, snapshot));
      this.types.set(typeUrl, created);
      state = created;
    }

    const addedNames = this.updateSubscription(state, typeUrl, requestedNames, isFirst);
    let kind: XdsRequestKind = 'initial';
    if (nonce !== '') {
      kind = request.error_detail ? 'nack' : 'ack';
      state.awaitingReply = false;
    } else if (!isFirst) {
      kind = 'subscription';
    }
    safeEmit(
      onEvent,
      {
        event: 'request',
        stream,
        typeUrl,
        kind,
        version: request.version_info ?? '',
        nonce,
        resourceNames: requestedNames,
        ...(request.error_detail ? { errorMessage: request.error_detail.message ?? '' } : {}),
      },
      log,
    );
    if (kind === 'nack') {
      log.warn({ streamId: stream.streamId, nodeId: stream.nodeId, typeUrl, rejectedVersion: state.sentVersion, error: request.error_detail?.message }, 'NACK received');
    }

    const snapshot = cache.getSnapshot()?.[typeUrl];
    if (!snapshot || state.awaitingReply) return;
    if (isFirst && state.wildcard && request.version_info !== undefined && request.version_info === snapshot.version) {
      // Reconnect to the same replica with the current version: nothing new to say.
      state.sentVersion = snapshot.version;
      return;
    }
    if (snapshot.version !== state.sentVersion || addedNames || isFirst) this.respond(typeUrl, state, snapshot);
  }

  close(): void {
    this.closed = true;
    for (const state of this.types.values()) state.cancelWatch();
    this.types.clear();
  }

  /** Applies resource_names; returns true if the client now wants something it did not before. */
  private updateSubscription(state: SotwTypeState, typeUrl: ResourceTypeUrl, requested: readonly string[], isFirst: boolean): boolean {
    const wasWildcard = state.wildcard;
    const before = new Set(state.names);
    if (requested.includes('*')) {
      state.wildcard = true;
      state.legacyWildcard = false;
    } else if (requested.length === 0 && (isFirst || state.legacyWildcard) && supportsLegacyWildcard(typeUrl)) {
      state.wildcard = true;
      state.legacyWildcard = true;
    } else {
      state.wildcard = false;
      state.legacyWildcard = false;
    }
    state.names = new Set(requested.filter((name) => name !== '*'));
    if (state.wildcard && !wasWildcard) return true;
    for (const name of state.names) if (!before.has(name)) return true;
    return false;
  }

  private onSnapshot(typeUrl: ResourceTypeUrl, snapshot: TypeSnapshot): void {
    const state = this.types.get(typeUrl);
    if (this.closed || !state || state.awaitingReply || snapshot.version === state.sentVersion) return;
    this.respond(typeUrl, state, snapshot);
  }

  private respond(typeUrl: ResourceTypeUrl, state: SotwTypeState, snapshot: TypeSnapshot): void {
    const { stream, onEvent, log } = this.options;
    const selected = state.wildcard
      ? [...snapshot.resources.values()]
      : [...state.names].flatMap((name) => {
          const resource = snapshot.resources.get(name);
          return resource ? [resource] : [];
        });
    this.nonceCounter += 1;
    const nonce = String(this.nonceCounter);
    state.sentVersion = snapshot.version;
    state.sentNonce = nonce;
    state.awaitingReply = true;
    const response: DiscoveryResponse = {
      version_info: snapshot.version,
      resources: selected.map((r) => r.resource),
      type_url: typeUrl,
      nonce,
      control_plane: { identifier: this.options.controlPlaneId },
    };
    safeEmit(onEvent, { event: 'response', stream, typeUrl, version: snapshot.version, nonce, resourceNames: selected.map((r) => r.name), removedResources: [] }, log);
    this.options.send(response);
  }
}

