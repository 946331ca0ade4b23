// One upstream SotW subscription: a wildcard subscription to one type URL for one node group, on its
// own gRPC stream (ADS or the per-type service). One stream per (group, type) rather than one ADS
// stream per group: a control plane that rejects a type (e.g. an opaque type URL an Envoy asked for)
// ends only that type's stream, and a barrier re-open is per type with no cross-type head-of-line.
//
// Protocol (xDS "ACK/NACK and resource type instance version"): every response is ACKed by echoing
// its nonce and version_info; a response the relay cannot cache (duplicate names, wrong type) is
// NACKed with error_detail and the last accepted version_info, and the cache keeps serving the last
// good content. Reconnects use capped exponential backoff with jitter; while the upstream is down the
// downstream Envoys keep being served from the cache.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { DiscoveryRequest, DiscoveryResponse, SotwStream, XdsNode } from '../../common/xds';
import type { UpstreamStateName } from './observer';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export interface UpstreamStreamDeps {
  group: string;
  typeUrl: string;
  /** The node the control plane sees (sent on each stream's first request). */
  node: () => XdsNode;
  /** Opens a SotW stream for the type on the current upstream target. */
  open: (typeUrl: string) => { call: SotwStream; target: string };
  /** Applies a response to the cache; returns why it was rejected (→ NACK), or undefined if applied. */
  apply: (response: DiscoveryResponse, arrival: ResponseArrival) => string | undefined;
  onStateChange: () => void;
  backoff: BackoffOptions;
  logger: Logger;
}

/** Where a response came from, for the lineage's monotonicity guard (relay-group.ts). */
export interface ResponseArrival {
  /**
   * The first response on a stream that replaced an earlier one (reconnect after an error, barrier
   * re-open). Such a stream may have reached another control-plane replica (a Service in front of
   * several), or a restarted one, whose content can be older than what this lineage already served.
   * Later responses on the same stream come from the same replica, whose snapshot only moves forward.
   */
  firstOnReplacementStream: boolean;
}

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
}

/** google.rpc.Code INVALID_ARGUMENT, as Envoy sends in error_detail on a NACK. */
const NACK_CODE = grpc.status.INVALID_ARGUMENT;

export class UpstreamTypeStream {
  private stateValue: UpstreamStateName = 'connecting';
  private call: SotwStream | undefined;
  private targetValue = '';
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;
  private lastAcceptedVersion = '';
  private waiters: Waiter[] = [];
  /** Calls opened so far (the first is 1); tests and logs use it. */
  opened = 0;

  constructor(private readonly deps: UpstreamStreamDeps) {}

  get state(): UpstreamStateName {
    return this.stateValue;
  }

  get target(): string {
    return this.targetValue;
  }

  start(): void {
    if (this.call === undefined && this.retryTimer === undefined && !this.closed) this.openCall();
  }

  /**
   * Closes the current stream and opens a new one; resolves when the first response on a stream
   * opened after this call has been applied to the cache (the observed-generation barrier).
   */
  reopen(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`upstream ${this.deps.typeUrl} of group ${this.deps.group} is closed`));
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.cancelCall();
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.failures = 0;
    this.openCall();
    return done;
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.cancelCall();
    this.settleWaiters(new Error(`upstream ${this.deps.typeUrl} of group ${this.deps.group} closed`));
  }

  private cancelCall(): void {
    const call = this.call;
    this.call = undefined;
    if (call !== undefined) {
      call.removeAllListeners('data');
      // A cancelled call still emits 'error' (CANCELLED); swallow it, the stream is no longer ours.
      call.on('error', () => undefined);
      call.cancel();
    }
  }

  private openCall(): void {
    const { typeUrl, logger } = this.deps;
    let opened: { call: SotwStream; target: string };
    try {
      opened = this.deps.open(typeUrl);
    } catch (error) {
      this.failed(`cannot open upstream stream: ${(error as Error).message}`);
      return;
    }
    const { call, target } = opened;
    this.call = call;
    this.targetValue = target;
    this.opened += 1;
    // A stream retrying after a failure stays 'unavailable' until it gets a response, so observers
    // do not see the state flap on every retry.
    if (this.stateValue !== 'unavailable') this.setState('connecting');
    const replacement = this.opened > 1;
    let answered = false;
    call.on('data', (response: DiscoveryResponse) => {
      if (this.call !== call) return;
      const arrival: ResponseArrival = { firstOnReplacementStream: replacement && !answered };
      answered = true;
      this.onResponse(call, response, arrival);
    });
    call.on('error', (error: grpc.ServiceError) => {
      if (this.call !== call) return;
      this.call = undefined;
      this.failed(`upstream stream failed: ${grpc.status[error.code] ?? error.code} ${error.details ?? error.message}`);
    });
    call.on('end', () => {
      if (this.call !== call) return;
      this.call = undefined;
      call.end();
      this.failed('upstream ended the stream');
    });
    // Wildcard subscription (empty resource_names; go-control-plane and Contour read it as "all").
    // version_info stays empty even after a reconnect, so the control plane always answers the first
    // request: the barrier needs a response, and a response with unchanged bytes costs no new seq.
    const initial: DiscoveryRequest = { node: this.deps.node(), type_url: typeUrl, resource_names: [], version_info: '' };
    call.write(initial);
    logger.debug({ group: this.deps.group, typeUrl, target }, 'relay: upstream stream opened');
  }

  private onResponse(call: SotwStream, response: DiscoveryResponse, arrival: ResponseArrival): void {
    const nonce = response.nonce ?? '';
    const version = response.version_info ?? '';
    let rejection: string | undefined;
    try {
      rejection = this.deps.apply(response, arrival);
    } catch (error) {
      rejection = `relay failed to apply the response: ${(error as Error).message}`;
    }
    // apply() may have closed this stream (its group moved to a new lineage): nothing more to say.
    if (this.closed || this.call !== call) return;
    if (rejection === undefined) {
      this.lastAcceptedVersion = version;
      call.write({ type_url: this.deps.typeUrl, version_info: version, response_nonce: nonce, resource_names: [] });
      this.failures = 0;
      this.setState('ready');
      this.settleWaiters();
      return;
    }
    this.deps.logger.warn({ group: this.deps.group, typeUrl: this.deps.typeUrl, upstreamVersion: version, reason: rejection }, 'relay: NACKing upstream response');
    call.write({
      type_url: this.deps.typeUrl,
      version_info: this.lastAcceptedVersion,
      response_nonce: nonce,
      resource_names: [],
      error_detail: { code: NACK_CODE, message: rejection },
    });
    this.setState('ready');
    this.settleWaiters(new Error(`upstream response for ${this.deps.typeUrl} rejected: ${rejection}`));
  }

  private failed(reason: string): void {
    if (this.closed) return;
    const { initialMs, maxMs } = this.deps.backoff;
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures, 20));
    // Jitter (50–100% of the step) so many gateways do not reconnect in lockstep.
    const delay = Math.round(base * (0.5 + Math.random() * 0.5));
    this.failures += 1;
    this.deps.logger.warn({ group: this.deps.group, typeUrl: this.deps.typeUrl, target: this.targetValue, reason, retryInMs: delay }, 'relay: upstream unavailable');
    this.setState('unavailable');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.closed) this.openCall();
    }, delay);
  }

  private setState(state: UpstreamStateName): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.deps.onStateChange();
  }

  private settleWaiters(error?: Error): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      if (error === undefined) waiter.resolve();
      else waiter.reject(error);
    }
  }
}
