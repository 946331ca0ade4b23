// Glue for the gateway: apply a classified request (classify.ts) to an Envoy's state and produce the
// event to log. Bad input (a version that is not ours, a stale nonce) is returned as `ignored` with a
// reason for the caller to log; nothing here throws on what an Envoy sends.
import type { RequestClass } from './classify';
import { applyAck, applyNack, applyNamesAdded, applySubscribe } from './envoy-state';
import { type EnvoyEvent } from './envoy-event';
import { type EnvoyState } from './envoy-record';
import { ttlEpochSeconds } from './ttl';
import { stuckTypes } from './staleness';
import { truncateUtf8, MAX_MESSAGE_BYTES } from './truncate';
import { parseVersion, type Lineage } from './version';

export interface RequestContext {
  typeUrl: string;
  /** Lineage of the gateway serving this stream. */
  lineage: Lineage;
  now: number;
  /** How long ACK/NACK/STUCK events are kept (sets their DynamoDB `ttl`). */
  eventRetentionMs: number;
  /**
   * The request adds resource names to the subscription (SotW: resource_names gained a name compared
   * with the stream's previous request for this type; Delta: resource_names_subscribe is not empty).
   * Ignored on an initial request, which starts the subscription afresh. The type then counts at no
   * version until the ACK of a response sent after this request (applyNamesAdded); the relay answers
   * every such request, even with nothing new in it (xds-gateway/relay: SotW because the names
   * changed, Delta by its namesAdded), except while the stream's cache is at a seq it NACKed, where
   * the client lacks what the rejected response carried and must stay held.
   */
  namesAdded?: boolean;
}

export interface RequestOutcome {
  state: EnvoyState;
  /** The event to append to the log (ACK or NACK). */
  event?: EnvoyEvent;
  /** Why the request changed no per-type state, for the caller's log. */
  ignored?: string;
}

/**
 * The highest seq of `typeUrl` on `lineage` this gateway is known to have sent the Envoy: what it
 * ACKed, or a response still awaiting its answer (the ACK can be lost with the stream). -1: none.
 */
function servedThrough(state: EnvoyState, typeUrl: string, lineage: Lineage): number {
  const type = state.types[typeUrl];
  if (type === undefined || type.lineage !== lineage) return -1;
  return Math.max(type.acked ?? -1, type.pending?.seq ?? -1);
}

/** Any request on an open stream proves the Envoy is alive (see envoy-state.ts withType). */
function touched(state: EnvoyState, now: number): EnvoyState {
  return { ...state, status: 'CONNECTED', lastSeenAt: Math.max(state.lastSeenAt, now) };
}

export function applyClassifiedRequest(state: EnvoyState, request: RequestClass, context: RequestContext): RequestOutcome {
  const outcome = applyVerdict(state, request, context);
  if (context.namesAdded !== true || request.kind === 'initial') return outcome;
  return { ...outcome, state: applyNamesAdded(outcome.state, { typeUrl: context.typeUrl, lineage: context.lineage, now: context.now }) };
}

function applyVerdict(state: EnvoyState, request: RequestClass, context: RequestContext): RequestOutcome {
  const { typeUrl, lineage, now } = context;
  const ttl = ttlEpochSeconds(now, context.eventRetentionMs);
  switch (request.kind) {
    case 'initial': {
      // SotW version_info on an initial request: what the Envoy says it already runs. Only one of our
      // own versions on this lineage that this gateway served *to this Envoy* means anything (the
      // client could claim any seq: counting a version it never received would be a false True);
      // anything else (empty, upstream, another gateway's, never sent to it) means "nothing we can
      // vouch for". The relay answers every initial request anyway, so its ACK follows.
      const parsed = request.versionInfo === '' ? undefined : parseVersion(request.versionInfo);
      const ours = parsed?.ok === true && parsed.value.lineage === lineage ? parsed.value : undefined;
      const served = servedThrough(state, typeUrl, lineage);
      const resume = ours !== undefined && ours.seq <= served ? ours : undefined;
      const next = applySubscribe(state, { typeUrl, lineage, now, ...(resume === undefined ? {} : { resume }) });
      if (parsed === undefined || resume !== undefined) return { state: next };
      const claimed = JSON.stringify(request.versionInfo.slice(0, 100));
      return {
        state: next,
        ignored:
          ours === undefined
            ? `initial version_info ${claimed} is not a version of lineage ${lineage}`
            : `initial version_info ${claimed} was not served to this Envoy (${served < 0 ? 'nothing served yet' : `served through seq ${served}`})`,
      };
    }
    case 'ack':
    case 'nack': {
      const parsed = parseVersion(request.version);
      if (!parsed.ok) return { state: touched(state, now), ignored: `${request.kind} of a version we cannot order: ${parsed.error}` };
      const version = parsed.value;
      if (request.kind === 'ack') {
        return {
          state: applyAck(state, { typeUrl, version, now }),
          event: { nodeId: state.nodeId, outcome: 'ACK', lineage: version.lineage, seq: version.seq, typeUrl, at: now, ttl },
        };
      }
      const message = truncateUtf8(request.message, MAX_MESSAGE_BYTES);
      return {
        state: applyNack(state, { typeUrl, version, message, now }),
        event: { nodeId: state.nodeId, outcome: 'NACK', lineage: version.lineage, seq: version.seq, typeUrl, at: now, message, ttl },
      };
    }
    case 'stale':
      return { state: touched(state, now), ignored: `stale nonce ${JSON.stringify(request.nonce)} (not the latest sent for this type)` };
    case 'update':
      return { state: touched(state, now), ignored: `request acknowledges nothing (${request.reason})` };
    case 'unknownNonce':
      return { state: touched(state, now), ignored: `unknown nonce ${JSON.stringify(request.nonce)}` };
  }
}

/**
 * STUCK events for the Envoy's types whose latest response is unanswered for `ackTimeoutMs`. Keyed by
 * the pending version, so emitting them again on every check overwrites the same item (no duplicates).
 */
export function stuckEvents(state: EnvoyState, now: number, ackTimeoutMs: number, eventRetentionMs: number): EnvoyEvent[] {
  const ttl = ttlEpochSeconds(now, eventRetentionMs);
  return stuckTypes(state, now, ackTimeoutMs).flatMap((typeUrl) => {
    const type = state.types[typeUrl];
    if (type?.pending === undefined) return [];
    return [{ nodeId: state.nodeId, outcome: 'STUCK' as const, lineage: type.lineage, seq: type.pending.seq, typeUrl, at: now, sentAt: type.pending.sentAt, ttl }];
  });
}
