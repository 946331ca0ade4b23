// What SotW and Delta downstream streams share: the relay context they run in, request validation at
// the edge, and the stream's identity (node kept from the first request).
import { isIP } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isValidTypeUrl, type Clock, type EnvoyIdentity } from '../../common/core';
import type { ResourceTypeUrl, XdsNode } from '../../common/xds';
import { identityOf } from './node';
import type { RelayObserver } from './observer';
import type { GroupMember, RelayGroup } from './relay-group';
import { RequestError } from './request-error';
import { TokenBucket, type RequestRateLimit } from './token-bucket';

export interface DownstreamLimits {
  /** Most resource names one request may carry (SotW names; Delta subscribe+unsubscribe+initial versions). */
  maxResourceNamesPerRequest: number;
  /** Longest resource name accepted. */
  maxResourceNameLength: number;
  /** Most distinct type URLs one ADS stream may subscribe to. */
  maxTypesPerStream: number;
  /** Per-stream request rate limit; undefined: unlimited. Over it the stream ends RESOURCE_EXHAUSTED. */
  requestRate: RequestRateLimit | undefined;
}

/** What the relay needs of a live downstream stream: its connection, end it, or pause/resume it (backpressure). */
export interface LiveStream {
  /**
   * `call.getPeer()` when the stream started: `<remote address>:<remote port>` of its HTTP/2
   * connection, so equal for every stream of one connection and different between connections.
   */
  readonly peer: string;
  end(code: grpc.status, details: string): void;
  setPaused(paused: boolean): void;
}

/** A stream asking to join the relay under a node id (its first request named the node). */
export interface JoiningStream extends LiveStream, GroupMember {
  /** The connection's verified client certificate (mTLS), if any. */
  peerCertificate(): PeerCertificate | undefined;
}

/** What a joined stream holds: its group, and the call that undoes the join when it closes. */
export interface Membership {
  group: RelayGroup;
  leave(): void;
}

/**
 * Why the relay refused a stream (the `reason` of `xds_programmed_gateway_streams_refused_total`). A fixed set:
 * metric labels never carry Envoy-supplied strings.
 */
export type StreamRefusalReason = 'peer_streams' | 'node_ids' | 'node_groups' | 'node_id_not_in_cert' | 'invalid_node';

/** The remote IP of a grpc-js peer string (`1.2.3.4:5678`, `::ffff:1.2.3.4:5678`, or `unknown`). */
export function peerAddressOf(peer: string): string {
  if (isIP(peer) !== 0) return peer;
  const colon = peer.lastIndexOf(':');
  if (colon <= 0 || !/^[0-9]+$/.test(peer.slice(colon + 1))) return peer;
  return peer.slice(0, colon);
}

/**
 * The DNS and URI subject alternative names of a certificate. Node gives them as one string
 * (`DNS:a, URI:spiffe://x`); a value holding a comma, quote or other special character is written as
 * a JSON string (`DNS:"a,b"`), so a certificate cannot smuggle in a second entry through its value.
 */
export function certificateNames(certificate: PeerCertificate | undefined): string[] {
  const text = certificate?.subjectaltname;
  if (typeof text !== 'string' || text === '') return [];
  const names: string[] = [];
  let at = 0;
  while (at < text.length) {
    const colon = text.indexOf(':', at);
    if (colon < 0) break;
    const kind = text.slice(at, colon);
    let value: string;
    let next: number;
    if (text[colon + 1] === '"') {
      // A JSON string: find its closing quote (one not escaped by a backslash).
      let end = colon + 2;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(text.slice(colon + 1, end + 1)) as string;
      } catch {
        return names; // not what Node writes: keep what was read before, trust nothing after
      }
      next = text.indexOf(', ', end + 1);
    } else {
      next = text.indexOf(', ', colon + 1);
      value = text.slice(colon + 1, next < 0 ? text.length : next);
    }
    if (kind === 'DNS' || kind === 'URI') names.push(value);
    if (next < 0) break;
    at = next + 2;
  }
  return names;
}

/**
 * Stream admission (docs/GATEWAY.md, "Stream admission"): called once a stream's first request named
 * its node, right after the observer heard the stream open. A promise holds every response on the
 * stream until it resolves (the gateway resolves it once the recorder durably wrote the Envoy's state
 * for this connection, so its lineage's `envoysRecorded` counts it); undefined admits at once.
 */
export type StreamAdmission = (stream: { streamId: string; nodeId: string; lineage: string }) => Promise<void> | undefined;

/**
 * A stream admission's rejection that is final: the stream can never be admitted (e.g. the gateway
 * can never record the Envoy's state). The stream ends with INVALID_ARGUMENT and this message, not
 * with the UNAVAILABLE "reconnect" of a transient failure.
 */
export class AdmissionRefused extends Error {
  override readonly name = 'AdmissionRefused';
}

export interface RelayContext {
  observer: RelayObserver;
  clock: Clock;
  logger: Logger;
  limits: DownstreamLimits;
  nextStreamId(): string;
  /**
   * Admits a stream whose first request named its node: the relay's per-node checks (certificate
   * binding, node id and group caps), the takeover of the node id from another connection, and the
   * group (created, with its lineage, on first sight). Throws RequestError to refuse the stream.
   */
  join(identity: EnvoyIdentity, node: XdsNode, stream: JoiningStream): Membership;
  /**
   * Registers a live stream so close() can end it and setPaused() reach it; returns the unregister
   * function. Throws RequestError when the stream's peer address has too many streams already.
   */
  track(stream: LiveStream): () => void;
  /**
   * True while the gateway asked the relay to pause (RelayControl.setPaused): streams neither read
   * requests nor send responses, so no new pending/ACK work is created.
   */
  paused(): boolean;
  /** Absent: every stream is admitted at once. */
  admission?: StreamAdmission;
}

// Fields we read from decoded requests. protobuf decoding already guarantees the types; the schema
// pins the shape we rely on (arrays of strings) so a future loader option change fails loudly here.
// A SotW request's names are checked without being copied: the request decoding hands every request
// that names the same resources the same list (request-decoding.ts), and a copy per request
// would cost per name again and lose that identity.
const nameListSchema = z.custom<readonly string[]>((value) => Array.isArray(value) && value.every((name) => typeof name === 'string'), { message: 'expected an array of strings' });
const errorDetailSchema = z.object({ code: z.number().optional(), message: z.string().optional() }).loose().nullable().optional();
export const sotwRequestSchema = z
  .object({
    version_info: z.string().optional(),
    resource_names: nameListSchema.optional(),
    type_url: z.string().optional(),
    response_nonce: z.string().optional(),
    error_detail: errorDetailSchema,
  })
  .loose();
export const deltaRequestSchema = z
  .object({
    type_url: z.string().optional(),
    resource_names_subscribe: z.array(z.string()).optional(),
    resource_names_unsubscribe: z.array(z.string()).optional(),
    initial_resource_versions: z.record(z.string(), z.string()).optional(),
    response_nonce: z.string().optional(),
    error_detail: errorDetailSchema,
  })
  .loose();

/** The type URL a request is about: required on ADS; on a per-type service it must match (or be empty). */
export function requestTypeUrl(service: 'ads' | ResourceTypeUrl, typeUrl: string | undefined): string {
  const requested = typeUrl ?? '';
  if (service === 'ads') {
    if (requested === '') throw new RequestError(grpc.status.INVALID_ARGUMENT, 'type_url is required on ADS streams');
  } else if (requested !== '' && requested !== service) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `type_url ${requested.slice(0, 300)} on the ${service} service`);
  }
  const effective = requested === '' ? service : requested;
  if (!isValidTypeUrl(effective)) throw new RequestError(grpc.status.INVALID_ARGUMENT, `invalid type_url ${JSON.stringify(effective.slice(0, 300))}`);
  return effective;
}

/** Checks the resource names of one request; several lists (Delta) count together against the limit. */
export function checkNames(lists: readonly (readonly string[])[], limits: DownstreamLimits, what: string): void {
  let count = 0;
  for (const list of lists) count += list.length;
  if (count > limits.maxResourceNamesPerRequest) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `${what}: ${count} resource names exceed the limit of ${limits.maxResourceNamesPerRequest}`);
  }
  for (const list of lists) {
    for (const name of list) {
      if (name.length > limits.maxResourceNameLength) {
        throw new RequestError(grpc.status.INVALID_ARGUMENT, `${what}: a resource name is longer than ${limits.maxResourceNameLength} characters`);
      }
    }
  }
}

/** Calls an observer callback; a throwing observer is logged, never allowed to break the stream. */
export function notify(logger: Logger, name: string, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    logger.error({ err: error, callback: name }, 'relay: observer callback threw');
  }
}

/** Known ADS limit check: a stream may not fan out into unbounded per-type state. */
export function checkTypeCount(current: number, limits: DownstreamLimits): void {
  if (current >= limits.maxTypesPerStream) {
    throw new RequestError(grpc.status.INVALID_ARGUMENT, `stream subscribes to more than ${limits.maxTypesPerStream} type URLs`);
  }
}

export function rateLimitError(limit: RequestRateLimit): RequestError {
  return new RequestError(grpc.status.RESOURCE_EXHAUSTED, `request rate above ${limit.ratePerSecond}/s (burst ${limit.burst}) on this stream`);
}

export interface StreamIdentity {
  streamId: string;
  identity: EnvoyIdentity;
  group: RelayGroup;
}

/**
 * The stream skeleton SotW and Delta share: rate limit, pause/resume (backpressure), end/close
 * handling, the stream's identity (node from the first request) and the observer's open/close calls.
 * Subclasses implement the protocol: onRequest and maybeSend.
 */
export abstract class DownstreamStream<Request extends { node?: XdsNode | null }, Response, State> implements JoiningStream {
  readonly peer: string;
  protected stream: StreamIdentity | undefined;
  protected readonly types = new Map<string, State>();
  protected ended = false;
  /** False until the stream's admission resolved: no response is sent before (see responsesHeld). */
  private admitted = true;
  private nonceCounter = 0;
  /** Per type: seq of the last response answered (make-before-break waits on these). */
  private readonly answers = new Map<string, number>();
  private untrack: (() => void) | undefined;
  private leaveGroup: (() => void) | undefined;
  private readonly rate: RequestRateLimit | undefined;
  private readonly bucket: TokenBucket | undefined;

  constructor(
    protected readonly call: grpc.ServerDuplexStream<Request, Response>,
    protected readonly service: 'ads' | ResourceTypeUrl,
    protected readonly context: RelayContext,
    private readonly protocol: 'sotw' | 'delta',
  ) {
    this.rate = context.limits.requestRate;
    this.bucket = this.rate === undefined ? undefined : new TokenBucket(this.rate, context.clock.now());
    this.peer = call.getPeer();
  }

  peerCertificate(): PeerCertificate | undefined {
    return this.call.getAuthContext().sslPeerCertificate;
  }

  protected abstract onRequest(request: Request): void;
  protected abstract maybeSend(typeUrl: string, state: State): void;

  run(): void {
    try {
      this.untrack = this.context.track(this);
    } catch (error) {
      if (!(error instanceof RequestError)) throw error;
      // Refused before anything was read: nothing to report to the observer.
      this.ended = true;
      this.call.emit('error', { code: error.code, details: error.message });
      return;
    }
    // Paused before the 'data' listener is attached, the stream stays paused (Readable semantics).
    if (this.context.paused()) this.call.pause();
    this.call.on('data', (request: Request) => {
      if (this.ended) return;
      try {
        if (this.rate !== undefined && this.bucket?.take(this.context.clock.now()) === false) throw rateLimitError(this.rate);
        this.onRequest(request);
      } catch (error) {
        if (error instanceof RequestError) this.end(error.code, error.message, error.logged);
        else {
          this.context.logger.error({ err: error, streamId: this.stream?.streamId }, `relay: ${this.protocol === 'sotw' ? 'SotW' : 'Delta'} request handling failed`);
          this.end(grpc.status.INTERNAL, 'relay internal error');
        }
      }
    });
    this.call.on('end', () => {
      if (!this.ended) this.call.end();
      this.closed('client closed the stream');
    });
    this.call.on('error', (error: Error) => this.closed(`stream error: ${error.message}`));
    this.call.on('cancelled', () => this.closed('cancelled'));
  }

  /**
   * Backpressure (RelayControl.setPaused). Pausing the Readable stops 'data' events; once grpc-js's
   * small object buffer is full it stops reading the HTTP/2 stream, so HTTP/2 flow control holds the
   * Envoy's requests on its side. Responses wait in maybeSend. Resuming sends what became due.
   */
  setPaused(paused: boolean): void {
    if (this.ended) return;
    if (paused) {
      this.call.pause();
      return;
    }
    this.call.resume();
    for (const [typeUrl, state] of this.types) this.maybeSend(typeUrl, state);
  }

  end(code: grpc.status, details: string, alreadyLogged = false): void {
    if (this.ended) return;
    const log = { streamId: this.stream?.streamId, nodeId: this.stream?.identity.nodeId, code: grpc.status[code], details };
    if (alreadyLogged) this.context.logger.debug(log, 'relay: ending downstream stream');
    else this.context.logger.warn(log, 'relay: ending downstream stream');
    this.closed(details);
    this.call.emit('error', { code, details });
  }

  answeredSeq(typeUrl: string): number {
    return this.answers.get(typeUrl) ?? -1;
  }

  /** The client answered (ACK or NACK) the response of `typeUrl` at type seq `seq`. */
  protected recordAnswer(typeUrl: string, seq: number): void {
    if (seq <= (this.answers.get(typeUrl) ?? -1)) return;
    this.answers.set(typeUrl, seq);
    this.stream?.group.answered();
  }

  onTypeChanged(typeUrl: string): void {
    const state = this.types.get(typeUrl);
    if (state !== undefined && !this.ended) this.maybeSend(typeUrl, state);
  }

  protected nextNonce(): string {
    this.nonceCounter += 1;
    return String(this.nonceCounter);
  }

  private closed(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.untrack?.();
    const stream = this.stream;
    if (stream === undefined) return;
    // Leaves the group and the node id's stream set before the observer hears of the close, so a
    // stream taking the node id over is reported opened only after this one is reported closed.
    this.leaveGroup?.();
    notify(this.context.logger, 'streamClosed', () =>
      this.context.observer.streamClosed({ streamId: stream.streamId, nodeId: stream.identity.nodeId, at: this.context.clock.now(), reason }),
    );
  }

  /** The stream's identity; the first request's node creates it (and reports the stream opened). */
  /**
   * The stream's identity, from the node of its first request: `nodeOf` is called only then (later
   * requests' nodes are never read or decoded: request-decoding.ts).
   */
  protected identify(nodeOf: () => XdsNode | null | undefined): StreamIdentity {
    if (this.stream !== undefined) return this.stream;
    let node: XdsNode | null | undefined;
    try {
      node = nodeOf();
    } catch (error) {
      throw new RequestError(grpc.status.INVALID_ARGUMENT, `DiscoveryRequest.node does not decode: ${error instanceof Error ? error.message.slice(0, 200) : String(error)}`);
    }
    const parsed = identityOf(node);
    if (!parsed.ok) throw new RequestError(grpc.status.INVALID_ARGUMENT, parsed.error);
    const { group, leave } = this.context.join(parsed.identity, node as XdsNode, this);
    const stream: StreamIdentity = { streamId: this.context.nextStreamId(), identity: parsed.identity, group };
    this.stream = stream;
    this.leaveGroup = leave;
    notify(this.context.logger, 'streamOpened', () =>
      this.context.observer.streamOpened({
        streamId: stream.streamId,
        node: stream.identity,
        group: group.group,
        lineage: group.lineage,
        protocol: this.protocol,
        service: this.service,
        at: this.context.clock.now(),
      }),
    );
    this.awaitAdmission(stream, group.lineage);
    return stream;
  }

  /**
   * Why: an Envoy that got a response before its lineage's count included it could hold (or NACK)
   * config while convergence, not seeing it in `envoysRecorded`, decides without it (invariant 1; the
   * join race in docs/RELIABILITY.md). Holding the first response until it is counted makes that
   * impossible by construction: an uncounted Envoy holds nothing from this lineage.
   */
  /**
   * Whether a response of a type must wait: one is already awaiting its answer (one response in flight
   * per type, as go-control-plane), the relay is paused (backpressure), or the stream is not admitted.
   */
  protected responsesHeld(state: { pending: boolean }): boolean {
    return state.pending || this.context.paused() || !this.admitted;
  }

  private awaitAdmission(stream: StreamIdentity, lineage: string): void {
    let waiting: Promise<void> | undefined;
    try {
      waiting = this.context.admission?.({ streamId: stream.streamId, nodeId: stream.identity.nodeId, lineage });
    } catch (error) {
      this.context.logger.error({ err: error, streamId: stream.streamId }, 'relay: stream admission threw; admitting the stream');
    }
    if (waiting === undefined) return;
    this.admitted = false;
    waiting.then(
      () => {
        if (this.ended) return;
        this.admitted = true;
        for (const [typeUrl, state] of this.types) this.maybeSend(typeUrl, state);
      },
      (error: unknown) => {
        if (error instanceof AdmissionRefused) {
          this.end(grpc.status.INVALID_ARGUMENT, error.message);
          return;
        }
        this.context.logger.error({ err: error, streamId: stream.streamId, nodeId: stream.identity.nodeId }, 'relay: stream admission failed');
        this.end(grpc.status.UNAVAILABLE, 'the gateway could not record this stream; reconnect');
      },
    );
  }
}
