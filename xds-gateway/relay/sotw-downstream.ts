// One downstream State-of-the-World stream (ADS or per-type). Rules, from the xDS protocol doc:
// - node may come only on the first request; it is kept for the stream. A first request without a
//   node (or with an empty node.id) ends the stream with INVALID_ARGUMENT: we could not attribute
//   anything it ACKs.
// - Each request is classified by the core (classifyRequest): initial / ack / nack / stale /
//   unknownNonce. Stale and unknown nonces are ignored entirely, as go-control-plane does ("if the
//   nonce is not the latest, ignore the request"), including any resource_names on them.
// - Flow control: at most one unanswered response per type; a newer cache version waits for the
//   ACK/NACK of the previous one, then goes out (coalescing intermediate versions).
// - A NACK is never answered by resending the same version: the next response waits for the cache
//   (or the subscription) to change.
// - A request that changes the names is answered (its names key differs from the last response's),
//   even when the cache has nothing for a new name: the tracker holds a type that gained names until
//   it ACKs a response sent after that request. Nothing defers that answer past a later request that
//   could bring the names back to the last response's: a current request ends the wait for the
//   previous answer, a paused relay reads no request, and before admission every request is initial.
// - The first request for a type is always answered once the cache has data: its version_info may
//   come from another lineage (treated as unknown) and answering even a current one gives the
//   tracking an ACK at our version on this stream.
// - Wildcard: a first request with no names (legacy wildcard, which go-control-plane applies to every
//   type) or any request naming `*`. A stream that started legacy-wildcard stays wildcard while it
//   sends empty names.
import * as grpc from '@grpc/grpc-js';
import { classifyRequest, recordAnswered, recordSent, type SentRecord } from '../../common/core';
import { requestedNameSet, sameRequestedNames, type AnyResource, type DiscoveryRequest, type DiscoveryResponse, type ResourceTypeUrl } from '../../common/xds';
import { checkNames, checkTypeCount, DownstreamStream, notify, requestTypeUrl, sotwRequestSchema, type RelayContext } from './downstream-common';
import { RequestError } from './request-error';

interface SotwTypeState {
  legacyWildcard: boolean;
  wildcard: boolean;
  names: ReadonlySet<string>;
  /** resource_names of the request `names` was built from: an identical request rebuilds nothing. */
  requestedNames: readonly string[];
  /** Subscription key of wildcard/names, kept in step with them (maybeSend runs on every cache change). */
  namesKey: string;
  /** Subscription key of the last response sent (to resend on a subscription change only). */
  sentNamesKey: string | undefined;
  record: SentRecord | undefined;
  pending: boolean;
  /** Type seq of the last response sent; -1 before any. */
  sentSeq: number;
  /** The first request is always answered (see above). */
  needsResponse: boolean;
}

type SotwCall = grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>;

/** A name set's key, memoised per set: streams sharing a request's names share its set (requestedNameSet), so 1,000 names are sorted once, not once per stream. */
const namesKeys = new WeakMap<ReadonlySet<string>, string>();

function namesKeyOf(wildcard: boolean, names: ReadonlySet<string>): string {
  if (wildcard) return '*';
  let key = namesKeys.get(names);
  if (key === undefined) {
    key = [...names].sort().join('\n');
    namesKeys.set(names, key);
  }
  return key;
}

export class SotwDownstream extends DownstreamStream<DiscoveryRequest, DiscoveryResponse, SotwTypeState> {
  constructor(call: SotwCall, service: 'ads' | ResourceTypeUrl, context: RelayContext) {
    super(call, service, context, 'sotw');
  }

  protected onRequest(raw: DiscoveryRequest): void {
    const stream = this.identify(() => raw.node);
    const parsed = sotwRequestSchema.safeParse(raw);
    if (!parsed.success) throw new RequestError(grpc.status.INVALID_ARGUMENT, `malformed DiscoveryRequest: ${parsed.error.message.slice(0, 300)}`);
    const request = parsed.data;
    const typeUrl = requestTypeUrl(this.service, request.type_url);
    const names = request.resource_names ?? [];
    checkNames([names], this.context.limits, typeUrl);
    let state = this.types.get(typeUrl);
    if (state === undefined) checkTypeCount(this.types.size, this.context.limits);

    const classification = classifyRequest(
      {
        protocol: 'sotw',
        typeUrl,
        responseNonce: request.response_nonce ?? '',
        versionInfo: request.version_info ?? '',
        ...(request.error_detail === undefined ? {} : { errorDetail: request.error_detail }),
      },
      state?.record,
    );
    const at = this.context.clock.now();
    const { group, identity, streamId } = stream;
    notify(this.context.logger, 'requestClassified', () =>
      this.context.observer.requestClassified({ streamId, nodeId: identity.nodeId, typeUrl, lineage: group.lineage, classification, resourceNames: names, at }),
    );
    if (classification.kind === 'stale' || classification.kind === 'unknownNonce') {
      const log = { streamId, nodeId: identity.nodeId, typeUrl, nonce: classification.nonce.slice(0, 100) };
      if (classification.kind === 'stale') this.context.logger.debug(log, 'relay: stale nonce ignored');
      else this.context.logger.warn(log, 'relay: unknown nonce ignored');
      return;
    }

    if (state === undefined) {
      const legacyWildcard = names.length === 0;
      const { names: nameSet, star } = requestedNameSet(names);
      const wildcard = legacyWildcard || star;
      state = {
        legacyWildcard,
        wildcard,
        names: nameSet,
        requestedNames: names,
        namesKey: namesKeyOf(wildcard, nameSet),
        sentNamesKey: undefined,
        record: undefined,
        pending: false,
        sentSeq: -1,
        needsResponse: true,
      };
      this.types.set(typeUrl, state);
      group.subscribe(typeUrl, this);
    } else if (!sameRequestedNames(state.requestedNames, names)) {
      if (names.length > 0) state.legacyWildcard = false;
      const { names: nameSet, star } = requestedNameSet(names);
      state.wildcard = state.legacyWildcard || star;
      state.names = nameSet;
      state.requestedNames = names;
      state.namesKey = namesKeyOf(state.wildcard, state.names);
    }

    if (classification.kind === 'initial') {
      // A repeated initial request on a type (no nonce yet, e.g. a subscription change before the
      // first response) re-arms the first answer.
      state.needsResponse = true;
      state.pending = false;
    } else {
      state.pending = false;
      if (classification.kind === 'ack' || classification.kind === 'nack') {
        this.recordAnswer(typeUrl, state.sentSeq);
        state.record = recordAnswered(state.record, classification.nonce);
      }
      if (classification.kind === 'nack') {
        this.context.logger.info(
          { streamId, nodeId: identity.nodeId, typeUrl, version: classification.version, message: classification.message.slice(0, 500) },
          'relay: NACK from Envoy',
        );
      }
    }
    this.maybeSend(typeUrl, state);
  }

  protected maybeSend(typeUrl: string, state: SotwTypeState): void {
    const stream = this.stream;
    if (stream === undefined || this.responsesHeld(state)) return;
    const snapshot = stream.group.cache.snapshot(typeUrl);
    if (snapshot === undefined || !snapshot.hasData) return; // answered when the upstream first responds
    const namesKey = state.namesKey;
    const due = state.needsResponse || snapshot.seq !== state.sentSeq || namesKey !== state.sentNamesKey;
    if (!due) return;
    // Shared arrays (every wildcard subscriber's, or every subscriber's of the same names) are encoded
    // once for all the streams they go to (response-encoding.ts).
    const resources = state.wildcard ? snapshot.anyList : stream.group.cache.namedList(typeUrl, namesKey, state.names);
    const nonce = this.nextNonce();
    const version = snapshot.version;
    // The cached array is shared by other subscribers; serialization does not mutate it.
    const response: DiscoveryResponse = { version_info: version, resources: resources as AnyResource[], type_url: typeUrl, nonce };
    state.record = recordSent(state.record, { nonce, version });
    state.pending = true;
    state.needsResponse = false;
    state.sentSeq = snapshot.seq;
    state.sentNamesKey = namesKey;
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
