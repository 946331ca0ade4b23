// Classifying a DiscoveryRequest / DeltaDiscoveryRequest (brief §3.2). Pure: the caller passes the
// request's fields and the stream's record of what it sent for that type URL.
//
// The xDS protocol ("ACK/NACK and resource type instance version" in the xDS REST/gRPC protocol doc):
// - a request with an empty response_nonce is the first request for that type on the stream (or a
//   subscription change before any response); it acknowledges nothing;
// - a request whose response_nonce names a response carries that response's verdict: error_detail
//   set = NACK (the config was rejected; version_info then holds the *previous* accepted version, so
//   the rejected version is the one we sent under that nonce), error_detail unset = ACK;
// - only the newest nonce matters: a request echoing an older nonce is stale and ignored for state
//   (go-control-plane does the same: "if the nonce is not the latest, ignore the request").
// Delta xDS follows the same rules keyed by DeltaDiscoveryResponse.nonce echoed in
// DeltaDiscoveryRequest.response_nonce; Delta requests carry no version_info.
//
// Two Envoy behaviours make "latest nonce, no error_detail" not enough for an ACK:
// - SotW: after a NACK, Envoy's later requests for that type (e.g. a resource_names change) echo the
//   same nonce *without* error_detail and with version_info = the last version it accepted. Reading
//   them as ACKs would launder the NACK, so a SotW ACK must also echo the version we sent.
// - Delta: subscription changes are sent without a response_nonce ("ackless"); after the first
//   response on the stream such a request is not an initial request and acknowledges nothing.

export type XdsProtocol = 'sotw' | 'delta';

export interface SentResponse {
  nonce: string;
  /** The version the response carried (SotW version_info, Delta system_version_info). */
  version: string;
}

/** Per stream and type URL: the responses sent, oldest first; the last one is the latest. */
export interface SentRecord {
  sent: readonly SentResponse[];
  /** Nonce of the latest response already answered (ACK or NACK) on this stream: recordAnswered. */
  answered?: string;
}

export interface RequestFacts {
  protocol: XdsProtocol;
  typeUrl: string;
  responseNonce: string;
  /** SotW version_info ('' for Delta). */
  versionInfo: string;
  /** error_detail as received: present (even with an empty message) means NACK. */
  errorDetail?: { code?: number; message?: string } | null;
}

export type RequestClass =
  | { kind: 'initial'; versionInfo: string }
  | { kind: 'ack'; nonce: string; version: string }
  | { kind: 'nack'; nonce: string; version: string; message: string; lastAcceptedVersionInfo: string }
  | { kind: 'stale'; nonce: string }
  /**
   * Acknowledges nothing but is current: the relay should apply its subscription changes (as
   * go-control-plane does for a matching nonce) while the Envoy's state stays as it is.
   */
  | { kind: 'update'; nonce: string; reason: UpdateReason }
  | { kind: 'unknownNonce'; nonce: string };

/**
 * Why a current request acknowledges nothing: it echoes the latest nonce but not the version we sent
 * under it (SotW, after a NACK), or it is a Delta subscription change sent without a nonce.
 */
export type UpdateReason = 'versionNotAccepted' | 'acklessUpdate' | 'alreadyAnswered';

export function classifyRequest(request: RequestFacts, record: SentRecord | undefined): RequestClass {
  // Rule 1: empty response_nonce → initial request. Its version_info (SotW) is the version the Envoy
  // already runs (e.g. after reconnecting); it is not an ACK of anything we sent on this stream.
  // An error_detail on such a request names no response, so it cannot be a NACK of ours either.
  const sent = record?.sent ?? [];
  if (request.responseNonce === '') {
    if (request.protocol === 'delta' && sent.length > 0) return { kind: 'update', nonce: '', reason: 'acklessUpdate' };
    return { kind: 'initial', versionInfo: request.protocol === 'sotw' ? request.versionInfo : '' };
  }
  const latest = sent[sent.length - 1];
  // Rule 4: the latest response was answered already. A client that re-sends its last request (the
  // same nonce, with or without error_detail) says nothing new: the first answer stands, and a copy
  // must not become another ACK or NACK (one write per copy would let one client drive the table's
  // writes). Its subscription changes still apply, as for any current request.
  if (latest !== undefined && latest.nonce === request.responseNonce && record?.answered === latest.nonce) {
    return { kind: 'update', nonce: latest.nonce, reason: 'alreadyAnswered' };
  }
  // Rule 3: a nonce that is not the latest we sent for this type is stale; one we never sent (or no
  // longer remember) is unknown. Both are ignored for state: acting on them could record an ACK for a
  // version the Envoy has since replaced.
  if (latest === undefined || latest.nonce !== request.responseNonce) {
    const known = sent.some((response) => response.nonce === request.responseNonce);
    return known ? { kind: 'stale', nonce: request.responseNonce } : { kind: 'unknownNonce', nonce: request.responseNonce };
  }
  // Rule 2: error_detail present → NACK of the latest response. Checked before anything else so a
  // NACK can never be read as an ACK (Istio's bug), whatever version_info says.
  if (request.errorDetail !== undefined && request.errorDetail !== null) {
    return {
      kind: 'nack',
      nonce: latest.nonce,
      version: latest.version,
      message: request.errorDetail.message ?? '',
      lastAcceptedVersionInfo: request.protocol === 'sotw' ? request.versionInfo : '',
    };
  }
  // SotW: an ACK echoes the accepted version. The latest nonce with another version_info and no
  // error_detail is a later request from an Envoy that did not accept that response (see above).
  if (request.protocol === 'sotw' && request.versionInfo !== latest.version) {
    return { kind: 'update', nonce: latest.nonce, reason: 'versionNotAccepted' };
  }
  // No error_detail → ACK of the latest response's version (the one we sent under that nonce).
  return { kind: 'ack', nonce: latest.nonce, version: latest.version };
}

/** Appends a sent response to the record, keeping at most `keep` (the latest is what matters). */
export function recordSent(record: SentRecord | undefined, response: SentResponse, keep = 8): SentRecord {
  const sent = [...(record?.sent ?? []), response];
  return { ...(record?.answered === undefined ? {} : { answered: record.answered }), sent: sent.slice(Math.max(0, sent.length - Math.max(1, keep))) };
}

/** After an ACK or NACK of the response sent under `nonce`: a copy of that answer is classified `update` (rule 4). */
export function recordAnswered(record: SentRecord | undefined, nonce: string): SentRecord {
  return { sent: record?.sent ?? [], answered: nonce };
}
