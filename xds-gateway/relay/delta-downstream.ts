// One downstream Delta (incremental) stream, served from the SotW-fed cache by diffing per stream:
// the relay keeps what the client holds (name → resource version) and sends only resources whose
// version differs, plus removals (xDS protocol, "Incremental xDS"). A resource's version is the
// gateway version of the seq at which it last changed; system_version_info is the type's version.
// Rules:
// - node on the first request only, as for SotW.
// - Subscription changes (resource_names_subscribe / _unsubscribe) apply on every request, even one
//   with a stale nonce; only ACK/NACK state ignores stale nonces.
// - initial_resource_versions seed what the client holds; a version that is not ours on this lineage
//   (another gateway instance, a restart, the control plane itself) is unknown: that resource is sent
//   again in full, and if it no longer exists it is reported in removed_resources.
// - The first request for a type is always answered once the cache has data, even with nothing new,
//   so the tracking sees an ACK at our current version.
// - A request that adds names is always answered once the cache has data, even with nothing new
//   (see namesAdded below), except at a seq the stream NACKed.
// - What we send is recorded as held when sent, and rolled back if the client NACKs it: Envoy rejects
//   a Delta response whole, so after a NACK it still holds what it held before (found by the truth
//   checker: with the rejected resources kept as held, a later ACK of an unrelated diff cleared the
//   NACK and the object turned True on an Envoy lacking its cluster). A NACK is never answered by
//   resending the same response; the next change of the type resends the rejected resources with it.
import * as grpc from '@grpc/grpc-js';
import { classifyRequest, parseVersion, recordAnswered, recordSent, type SentRecord } from '../../common/core';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse, DeltaResource, ResourceTypeUrl } from '../../common/xds';
import { checkNames, checkTypeCount, deltaRequestSchema, DownstreamStream, notify, requestTypeUrl, type RelayContext } from './downstream-common';
import { RequestError } from './request-error';
import type { TypeSnapshot } from './type-cache';

interface DeltaTypeState {
  wildcard: boolean;
  names: Set<string>;
  /** What the client holds: name → version ('' = a version we cannot vouch for). */
  held: Map<string, string>;
  record: SentRecord | undefined;
  pending: boolean;
  needsResponse: boolean;
  /** Type seq of the last response sent; -1 before any. */
  sentSeq: number;
  /** What the response awaiting an answer changed in `held`: name → previous version (undefined = not held). */
  unanswered: Map<string, string | undefined> | undefined;
  /** Type seq of the last NACKed response: nothing is sent at that seq again (see maybeSend). */
  rejectedSeq: number;
  /**
   * A request added a name to the subscription (or `*`) since the last response was sent: the next
   * response is due even if it carries nothing. The tracker holds the type back from such a request
   * until the ACK of a response sent after it (core applyNamesAdded); a name the cache lacks, or one
   * the client already holds at its cached version, gives no resource to send, so without this no
   * response came and the hold lasted until the name appeared, for ever for a name the control plane
   * never serves (docs/RELIABILITY.md, the EDS names hold against Contour).
   */
  namesAdded: boolean;
  /**
   * The subscription as a list (`*` first when wildcard), as the observer is told it with every
   * request; rebuilt only when a request changes the subscription, so the usual ACK (no names) hands
   * the tracker the same array and its same-names check is one identity check, not a copy and a
   * comparison of every subscribed name.
   */
  view: readonly string[] | undefined;
  /**
   * `held` is what the cache had at `sentSeq` for the whole subscription, but for the names in
   * `subscribedSince`: true after a response was sent, or after a diff found nothing to send; false
   * after `held` changes otherwise (initial versions, a NACK) or `*` is subscribed. While true, what the
   * client may lack is only what changed in the cache since `sentSeq` (GroupCache.changesSince) and
   * the names subscribed since, not the whole subscription: the diff of every stream on every ACK was
   * the largest part of the gateway's CPU with 1,000 Delta clients of 1,000 resources
   * (docs/bench/README.md, round 17). An unsubscribed name leaves `held` with the subscription.
   */
  inSync: boolean;
  /** Names subscribed since the last diff (meaningful while `inSync`). */
  subscribedSince: Set<string>;
}

type DeltaCall = grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

/**
 * What a Delta client lacks of the cache's snapshot for its subscription: the resources it does not
 * hold at their cached version, and the names it holds that the snapshot no longer has. `changed`
 * (GroupCache.changesSince) limits the names looked at when `held` was the cache at an earlier seq:
 * only those can differ, and the answer is the same as looking at every name.
 */
export function deltaDiff(
  snapshot: Pick<TypeSnapshot, 'resources'>,
  client: { wildcard: boolean; names: ReadonlySet<string>; held: ReadonlyMap<string, string> },
  changed?: ReadonlySet<string>,
): { resources: DeltaResource[]; removed: string[] } {
  const resources: DeltaResource[] = [];
  const removed: string[] = [];
  const consider = (name: string): void => {
    const cached = snapshot.resources.get(name);
    if (cached !== undefined && client.held.get(name) !== cached.version) resources.push({ name, version: cached.version, resource: cached.resource });
  };
  const subscribed = (name: string): boolean => client.wildcard || client.names.has(name);
  if (changed !== undefined) {
    for (const name of changed) {
      if (!subscribed(name)) continue;
      if (snapshot.resources.has(name)) consider(name);
      else if (client.held.has(name)) removed.push(name);
    }
    return { resources, removed };
  }
  if (client.wildcard) for (const name of snapshot.resources.keys()) consider(name);
  for (const name of client.names) if (!client.wildcard || !snapshot.resources.has(name)) consider(name);
  for (const name of client.held.keys()) if (!snapshot.resources.has(name) && subscribed(name)) removed.push(name);
  return { resources, removed };
}

/** The names a diff of an in-sync client looks at: the cache's changes since it and the names it subscribed since (undefined: every name). */
export function namesToDiff(changed: ReadonlySet<string> | undefined, subscribedSince: ReadonlySet<string>): ReadonlySet<string> | undefined {
  if (changed === undefined || subscribedSince.size === 0) return changed;
  const names = new Set(changed);
  for (const name of subscribedSince) names.add(name);
  return names;
}

export class DeltaDownstream extends DownstreamStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse, DeltaTypeState> {
  constructor(call: DeltaCall, service: 'ads' | ResourceTypeUrl, context: RelayContext) {
    super(call, service, context, 'delta');
  }

  protected onRequest(raw: DeltaDiscoveryRequest): void {
    const stream = this.identify(() => raw.node);
    const parsed = deltaRequestSchema.safeParse(raw);
    if (!parsed.success) throw new RequestError(grpc.status.INVALID_ARGUMENT, `malformed DeltaDiscoveryRequest: ${parsed.error.message.slice(0, 300)}`);
    const request = parsed.data;
    const typeUrl = requestTypeUrl(this.service, request.type_url);
    const subscribe = request.resource_names_subscribe ?? [];
    const unsubscribe = request.resource_names_unsubscribe ?? [];
    const initialVersions = request.initial_resource_versions ?? {};
    const initialNames = Object.keys(initialVersions);
    checkNames([subscribe, unsubscribe, initialNames], this.context.limits, typeUrl);
    const { group, identity, streamId } = stream;

    let state = this.types.get(typeUrl);
    const classification = classifyRequest(
      {
        protocol: 'delta',
        typeUrl,
        responseNonce: request.response_nonce ?? '',
        versionInfo: '',
        ...(request.error_detail === undefined ? {} : { errorDetail: request.error_detail }),
      },
      state?.record,
    );

    if (state === undefined) {
      checkTypeCount(this.types.size, this.context.limits);
      // Legacy wildcard: the first request for a type names nothing.
      state = { wildcard: subscribe.length === 0, names: new Set(), held: new Map(), record: undefined, pending: false, needsResponse: true, sentSeq: -1, unanswered: undefined, rejectedSeq: -1, namesAdded: false, view: undefined, inSync: false, subscribedSince: new Set() };
      this.types.set(typeUrl, state);
      group.subscribe(typeUrl, this);
    }
    if (classification.kind === 'initial' && initialNames.length > 0) {
      state.inSync = false;
      for (const [name, version] of Object.entries(initialVersions)) {
        const parsedVersion = parseVersion(version);
        state.held.set(name, parsedVersion.ok && parsedVersion.value.lineage === group.lineage ? version : '');
      }
    }
    // The same test as the tracker's (subscription-references.ts addedNames), on the view before and
    // after this request: a wildcard subscription already covers every name.
    const wasWildcard = state.wildcard;
    const added = wasWildcard ? [] : subscribe.filter((name) => name === '*' || !state.names.has(name));
    for (const name of subscribe) {
      if (name === '*') state.wildcard = true;
      else state.names.add(name);
    }
    for (const name of unsubscribe) {
      if (name === '*') {
        state.wildcard = false;
        // Envoy drops every resource it held only through the wildcard when it unsubscribes from it
        // (DeltaSubscriptionState::updateSubscriptionInterest clears its wildcard and ambiguous
        // resources); kept here, a later `*` would find them "held" and never send them again.
        for (const held of [...state.held.keys()]) if (!state.names.has(held)) state.held.delete(held);
      } else {
        state.names.delete(name);
        // The client forgets what it unsubscribed from; if it subscribes again it gets it anew.
        if (!state.wildcard) state.held.delete(name);
      }
    }

    if (added.some((name) => (name === '*' ? state.wildcard : state.names.has(name)))) state.namesAdded = true;
    for (const name of added) {
      if (name === '*') state.inSync = false;
      else state.subscribedSince.add(name);
    }

    const at = this.context.clock.now();
    // Only subscribe and unsubscribe change `wildcard` and `names` (above).
    // Shared with every stream of the group asking for the same names (name-list-interner.ts): the
    // same view and the same change give the same names in the same order.
    if (state.view === undefined || subscribe.length > 0 || unsubscribe.length > 0) {
      const names = state.names;
      const wildcard = state.wildcard;
      state.view = group.subscriptionViews.derive(state.view, JSON.stringify([subscribe, unsubscribe]), () => (wildcard ? ['*', ...names] : [...names]));
    }
    const resourceNames = state.view;
    notify(this.context.logger, 'requestClassified', () =>
      this.context.observer.requestClassified({ streamId, nodeId: identity.nodeId, typeUrl, lineage: group.lineage, classification, resourceNames, at }),
    );
    switch (classification.kind) {
      case 'initial':
        state.needsResponse = true;
        break;
      case 'ack':
        state.pending = false;
        state.unanswered = undefined;
        this.recordAnswer(typeUrl, state.sentSeq);
        state.record = recordAnswered(state.record, classification.nonce);
        break;
      case 'nack':
        state.pending = false;
        this.recordAnswer(typeUrl, state.sentSeq);
        state.record = recordAnswered(state.record, classification.nonce);
        // Envoy applied none of it: it holds what it held before this response.
        for (const [name, previous] of state.unanswered ?? []) {
          // What the client lost interest in since (an unsubscribed `*` or name) it no longer holds.
          if (previous === undefined || !(state.wildcard || state.names.has(name))) state.held.delete(name);
          else state.held.set(name, previous);
        }
        state.rejectedSeq = state.sentSeq;
        state.unanswered = undefined;
        state.inSync = false;
        this.context.logger.info(
          { streamId, nodeId: identity.nodeId, typeUrl, version: classification.version, message: classification.message.slice(0, 500) },
          'relay: NACK from Envoy',
        );
        break;
      case 'stale':
        this.context.logger.debug({ streamId, typeUrl, nonce: classification.nonce.slice(0, 100) }, 'relay: stale nonce (subscription changes applied)');
        break;
      case 'unknownNonce':
        this.context.logger.warn({ streamId, nodeId: identity.nodeId, typeUrl, nonce: classification.nonce.slice(0, 100) }, 'relay: unknown nonce ignored');
        break;
    }
    this.maybeSend(typeUrl, state);
  }

  protected maybeSend(typeUrl: string, state: DeltaTypeState): void {
    const stream = this.stream;
    if (stream === undefined || this.responsesHeld(state)) return;
    const snapshot = stream.group.cache.snapshot(typeUrl);
    if (snapshot === undefined || !snapshot.hasData) return;
    // While the cache is still at a NACKed seq nothing is sent: the rejected content would only be
    // rejected again (go-control-plane does not resend on NACK either), and any other response at
    // that seq would be ACKed *at* the rejected version, which clears the NACK in the tracking
    // although the rejected resources are still missing. Names subscribed meanwhile are served with
    // the type's next change (or on a new stream).
    if (!state.needsResponse && snapshot.seq === state.rejectedSeq) return;
    // In sync with nothing to re-send: only what changed since sentSeq can be lacking; on the same seq
    // with no name added that is nothing, so the usual ACK costs no diff.
    const narrowed = state.inSync && !state.needsResponse;
    if (narrowed && !state.namesAdded && snapshot.seq === state.sentSeq) return;
    const changed = narrowed ? namesToDiff(stream.group.cache.changesSince(typeUrl, state.sentSeq), state.subscribedSince) : undefined;
    const { resources, removed } = deltaDiff(snapshot, state, changed);
    state.subscribedSince.clear();
    // A type version move with nothing new for this client still gets an (empty) response carrying
    // the new system_version_info: its ACK tells the tracking the Envoy is at the type's current
    // version, which convergence needs for every subscribed type.
    //
    // So does a request that added names (namesAdded). The diff above is against what the client
    // holds, so an empty one means the client holds everything the cache has at this seq for its whole
    // subscription, the new names included: each is absent from the content at this seq, or held at
    // its version here. The ACK of this response then proves what the tracker's names hold waits for
    // (the Envoy is at this seq for every name it asks for), and only that: a name the cache gains
    // later takes a new seq, so the Envoy does not count past that seq until it ACKs the response
    // carrying it. The NACKed seq stays excluded above: there the client lacks what the rejected
    // response carried, and the hold must stay until the type's next change re-sends it.
    // A client told nothing of a name it asked for simply keeps waiting for it (Envoy: until its
    // initial fetch timeout), as when no response is sent; a missing name is not reported removed.
    if (resources.length === 0 && removed.length === 0 && !state.needsResponse && !state.namesAdded && snapshot.seq === state.sentSeq) {
      state.inSync = true;
      return;
    }

    const nonce = this.nextNonce();
    const version = snapshot.version;
    const response: DeltaDiscoveryResponse = { system_version_info: version, type_url: typeUrl, resources, removed_resources: removed, nonce };
    const unanswered = new Map<string, string | undefined>();
    for (const resource of resources) {
      const name = resource.name as string;
      unanswered.set(name, state.held.get(name));
      state.held.set(name, resource.version as string);
    }
    for (const name of removed) {
      if (!unanswered.has(name)) unanswered.set(name, state.held.get(name));
      state.held.delete(name);
    }
    state.unanswered = unanswered;
    state.record = recordSent(state.record, { nonce, version });
    state.pending = true;
    state.needsResponse = false;
    state.namesAdded = false;
    state.sentSeq = snapshot.seq;
    state.inSync = true;
    this.call.write(response);
    const { group, identity, streamId } = stream;
    notify(this.context.logger, 'responseSent', () =>
      this.context.observer.responseSent({
        streamId,
        nodeId: identity.nodeId,
        typeUrl,
        version: { lineage: group.lineage, seq: snapshot.seq },
        nonce,
        resourceCount: resources.length,
        at: this.context.clock.now(),
      }),
    );
  }
}
