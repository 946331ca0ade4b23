// One simulated Envoy: an xDS client that speaks ADS or per-type streams, SotW or Delta, over a
// gRPC channel it shares with many others. It holds no timers of its own (ACK delays and reconnect
// backoff go through the fleet's Scheduler) and records everything it accepts or rejects into the
// shared GroundTruth at the moment it sends the ACK/NACK. What it subscribes to follows a subscription
// model (subscriptionModel.ts): Envoy's (LDS/CDS wildcard, RDS/EDS by the names accepted listeners and
// clusters reference), gRPC's (everything by name, from the target down), or plain wildcard.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  ADS_SERVICE,
  LISTENER_TYPE_URL,
  PER_TYPE_SERVICES,
  isResourceTypeUrl,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type XdsNode,
} from '../../../common/xds';
import { DEFAULT_BEHAVIOUR, type SimBehaviour } from './behaviour';
import type { DiscoveryCodec } from './codec';
import type { GroundTruth } from './groundTruth';
import type { ResourceVersion } from './groundTruth';
import { internNames, sameNames, type AnyLike } from './referencedNames';
import { sharedSotwNames } from './resourceNames';
import type { ScheduledTask, Scheduler, SchedulerClock } from './scheduler';
import {
  DEFAULT_INITIAL_FETCH_TIMEOUT_MS,
  DependentSubscriptions,
  MODEL_TYPE_URLS,
  type DeltaUpsert,
  type ModelReaction,
  type NamesChange,
  type SubscriptionModelName,
} from './subscriptionModel';
import { TypeProtocolState, type ResponsePlan } from './typeState';
import type { XdsProtocol } from './xds-protocol';

export type XdsTransport = 'ads' | 'per-type';

export interface SimNode {
  id: string;
  cluster: string;
  /** String-valued node metadata (sent as a google.protobuf.Struct). */
  metadata?: Record<string, string>;
  userAgentName?: string;
}

export interface Subscription {
  typeUrl: string;
  /** Empty or absent: wildcard ('wildcard' model). The 'grpc' model takes the targets from LDS's names. */
  resourceNames?: readonly string[];
}

export interface SimEnvoyOptions {
  node: SimNode;
  transport: XdsTransport;
  protocol: XdsProtocol;
  /** Types to subscribe to, in the order the first requests are sent. */
  subscriptions: readonly Subscription[];
  /** Envoy's default is to send `node` on every request; false = only a stream's first request. */
  nodeOnEveryRequest?: boolean;
  behaviour?: SimBehaviour;
  /** Reopen a stream the server ended or failed (like Envoy's retry), after `reconnectDelayMs`. */
  reconnectOnError?: boolean;
  reconnectDelayMs?: number;
  /**
   * How the names of each type are chosen (docs/ENVOY-FLEET.md, "Subscription models"). Default
   * (`defaultSubscriptionModel`): 'envoy' when `subscriptions` are exactly CDS, EDS, LDS and RDS with
   * no names, else 'wildcard'.
   */
  subscriptionModel?: SubscriptionModelName;
  /**
   * 'envoy' model: the longest initialisation waits for CDS (and its clusters' EDS) before LDS is
   * requested, and the longest a cluster or listener warms. Default 15 s, Envoy's initial_fetch_timeout.
   */
  initialFetchTimeoutMs?: number;
  /**
   * Called with what each ACK accepted, resources included, when the ACK is sent (the moment the
   * ground truth records it). The ground truth keeps names and versions only; a test that judges
   * what an Envoy holds by content (a route's prefix) keeps its own copy from here. Unset by
   * default, so a fleet keeps no resource bytes per Envoy.
   */
  onAccepted?: (accepted: AcceptedContent) => void;
}

/**
 * One ACKed response of one type, as `SimEnvoyOptions.onAccepted` receives it; or the part of a NACKed
 * response the Envoy applied anyway (`nacked`, always as `delta`, whatever the protocol: see typeState.ts).
 */
export interface AcceptedContent {
  typeUrl: string;
  /** The response's version_info (system_version_info); for `nacked`, that of the rejected response. */
  versionInfo: string;
  /** Clock reading (ms) when the ACK was sent. */
  at: number;
  /** SotW: the accepted resources (only those asked for; a by-name type keeps the others it held). */
  sotw?: readonly AnyLike[];
  /** Delta: the accepted upserts and the removed names. */
  delta?: { upserts: readonly DeltaUpsert[]; removed: readonly string[] };
  /** Set when this is what a NACKed response applied (upserts over the held set, not a replacement). */
  nacked?: true;
}

/** 'envoy' for a subscription to exactly the four xDS core types with no names; else 'wildcard'. */
export function defaultSubscriptionModel(subscriptions: readonly Subscription[]): SubscriptionModelName {
  const types = new Set(subscriptions.map((s) => s.typeUrl));
  const coreTypes = subscriptions.length === MODEL_TYPE_URLS.length && MODEL_TYPE_URLS.every((typeUrl) => types.has(typeUrl));
  const named = subscriptions.some((s) => (s.resourceNames ?? []).length > 0);
  return coreTypes && !named ? 'envoy' : 'wildcard';
}

/** Throws unless `subscriptions` fit `model` (the four core types; names only where the model takes them). */
function checkModel(nodeId: string, model: SubscriptionModelName, subscriptions: readonly Subscription[]): void {
  if (model === 'wildcard') return;
  const types = new Set(subscriptions.map((s) => s.typeUrl));
  if (subscriptions.length !== MODEL_TYPE_URLS.length || !MODEL_TYPE_URLS.every((typeUrl) => types.has(typeUrl))) {
    throw new Error(`envoy ${nodeId}: the ${model} subscription model needs exactly CDS, EDS, LDS and RDS subscriptions`);
  }
  for (const subscription of subscriptions) {
    const names = subscription.resourceNames ?? [];
    const mayName = model === 'grpc' && subscription.typeUrl === LISTENER_TYPE_URL;
    if (mayName && names.length === 0) throw new Error(`envoy ${nodeId}: the grpc subscription model needs the targets as LDS resourceNames`);
    if (!mayName && names.length > 0) throw new Error(`envoy ${nodeId}: the ${model} subscription model derives the names of ${subscription.typeUrl}; give none`);
  }
}

/** What a SimEnvoy needs from its fleet; shared by every Envoy of the fleet. */
export interface SimEnvoyContext {
  client: grpc.Client;
  codec: DiscoveryCodec;
  scheduler: Scheduler;
  clock: SchedulerClock;
  truth: GroundTruth;
  logger: Logger;
}

export type SimEnvoyStatus = 'idle' | 'connected' | 'disconnected' | 'vanished';

type AnyCall = grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> | grpc.ClientDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

/** One open gRPC stream and the types it carries (ADS: all; per-type: one). */
interface OpenStream {
  call: AnyCall;
  types: Map<string, TypeProtocolState>;
  open: boolean;
  nodeSent: boolean;
  /** Types whose first request went out on this stream (a model may start a type later). */
  started: Set<string>;
  /** Keeps ACKs of one stream in arrival order even if the delay changes between responses. */
  lastDueAt: number;
}

export class SimEnvoy {
  readonly node: SimNode;
  readonly transport: XdsTransport;
  readonly protocol: XdsProtocol;
  readonly subscriptionModel: SubscriptionModelName;
  private readonly nodeMessage: XdsNode;
  private readonly nodeOnEveryRequest: boolean;
  private readonly reconnectOnError: boolean;
  private readonly reconnectDelayMs: number;
  private readonly types = new Map<string, TypeProtocolState>();
  /** Undefined for the 'wildcard' model. */
  private readonly dependents: DependentSubscriptions | undefined;
  private readonly initialFetchTimeoutMs: number;
  private everConnected = false;
  /** 'envoy' model: the initial fetch timeout, until initialisation is over. */
  private initialFetchTimer: ScheduledTask | undefined;
  private behaviour: SimBehaviour;
  private streams: OpenStream[] = [];
  /** Streams left open by `vanish('silent')`, cancelled only by `dispose()`. */
  private readonly silentStreams: OpenStream[] = [];
  private statusValue: SimEnvoyStatus = 'idle';
  /** Latest unanswered response per type while hung, answered if the hang is lifted. */
  private heldWhileHung: Array<() => void> = [];
  private readonly onAccepted: ((accepted: AcceptedContent) => void) | undefined;

  constructor(
    options: SimEnvoyOptions,
    private readonly context: SimEnvoyContext,
  ) {
    this.node = options.node;
    this.transport = options.transport;
    this.protocol = options.protocol;
    this.nodeOnEveryRequest = options.nodeOnEveryRequest ?? true;
    this.reconnectOnError = options.reconnectOnError ?? true;
    this.reconnectDelayMs = options.reconnectDelayMs ?? 500;
    this.behaviour = options.behaviour ?? DEFAULT_BEHAVIOUR;
    this.onAccepted = options.onAccepted;
    if (options.subscriptions.length === 0) throw new Error(`envoy ${options.node.id}: no subscriptions`);
    this.subscriptionModel = options.subscriptionModel ?? defaultSubscriptionModel(options.subscriptions);
    checkModel(options.node.id, this.subscriptionModel, options.subscriptions);
    this.initialFetchTimeoutMs = options.initialFetchTimeoutMs ?? DEFAULT_INITIAL_FETCH_TIMEOUT_MS;
    const targets = options.subscriptions.find((s) => s.typeUrl === LISTENER_TYPE_URL)?.resourceNames ?? [];
    this.dependents =
      this.subscriptionModel === 'wildcard'
        ? undefined
        : new DependentSubscriptions({
            model: this.subscriptionModel,
            protocol: this.protocol,
            targets,
            now: () => context.clock.now(),
            initialFetchTimeoutMs: this.initialFetchTimeoutMs,
          });
    for (const subscription of options.subscriptions) {
      if (this.transport === 'per-type' && !isResourceTypeUrl(subscription.typeUrl)) {
        throw new Error(`envoy ${options.node.id}: no per-type discovery service for ${subscription.typeUrl}`);
      }
      const dependents = this.dependents;
      const state =
        dependents === undefined
          ? new TypeProtocolState(subscription.typeUrl, subscription.resourceNames ?? [])
          : new TypeProtocolState(subscription.typeUrl, dependents.names(subscription.typeUrl) ?? [], sharedSotwNames, {
              named: !dependents.isWildcard(subscription.typeUrl),
              requested: dependents.names(subscription.typeUrl) !== undefined,
            });
      this.types.set(subscription.typeUrl, state);
    }
    this.nodeMessage = toNodeMessage(options.node);
    context.truth.registerEnvoy(options.node.id, options.node.cluster);
    if (this.dependents !== undefined) {
      const dependents = this.dependents;
      context.truth.attachLiveState(options.node.id, {
        subscribedNames: (typeUrl) => this.subscribedNames(typeUrl),
        warming: (typeUrl) => dependents.warming(typeUrl),
      });
    }
  }

  get id(): string {
    return this.node.id;
  }

  get status(): SimEnvoyStatus {
    return this.statusValue;
  }

  /** Number of gRPC streams currently open (ADS: 1; per-type: one per subscribed type). */
  get openStreams(): number {
    return this.streams.filter((s) => s.open).length;
  }

  /** The version this Envoy last ACKed for a type (from its own state, equal to the ground truth). */
  acceptedVersion(typeUrl: string): string | undefined {
    return this.types.get(typeUrl)?.acceptedVersionInfo;
  }

  /** Resources held for a type now (the last ACK and what NACKed responses applied since): name -> version. */
  heldResources(typeUrl: string): ReadonlyMap<string, string> {
    return this.types.get(typeUrl)?.heldResources() ?? new Map();
  }

  /**
   * The names this Envoy asks for on a type: empty for a wildcard type, undefined while the type is not
   * asked for at all (the 'envoy' model starts RDS and EDS once something references them, LDS once
   * CDS is initialised).
   */
  subscribedNames(typeUrl: string): readonly string[] | undefined {
    const state = this.types.get(typeUrl);
    return state === undefined || !state.requested ? undefined : state.resourceNames;
  }

  /** 'envoy' model: clusters (CDS) or listeners (LDS) accepted but still warming. */
  warming(typeUrl: string): readonly string[] {
    return this.dependents?.warming(typeUrl) ?? [];
  }

  setBehaviour(behaviour: SimBehaviour): void {
    const wasHung = this.behaviour.hang;
    this.behaviour = behaviour;
    if (wasHung && !behaviour.hang) {
      const held = this.heldWhileHung;
      this.heldWhileHung = [];
      for (const answer of held) answer();
    }
  }

  /** Opens the streams and sends the initial requests (with initial_resource_versions on Delta). */
  connect(): void {
    if (this.statusValue === 'vanished') throw new Error(`envoy ${this.id} has vanished`);
    if (this.statusValue === 'connected') return;
    this.statusValue = 'connected';
    this.context.truth.recordConnection(this.id, { kind: 'connected', at: this.context.clock.now() });
    if (!this.everConnected) {
      this.everConnected = true;
      // Envoy's initialisation gives up waiting for CDS and its clusters' endpoints after the initial
      // fetch timeout and starts LDS anyway; one timer per Envoy, in the shared scheduler.
      if (this.dependents !== undefined && !this.dependents.initialisedClusters) {
        const dependents = this.dependents;
        this.initialFetchTimer = this.context.scheduler.schedule(this.initialFetchTimeoutMs, () => {
          this.initialFetchTimer = undefined;
          if (this.statusValue !== 'vanished') this.react(dependents.initialFetchTimedOut(), 'before');
        });
      }
    }
    if (this.transport === 'ads') {
      this.openStream([...this.types.values()], ADS_SERVICE, this.protocol === 'sotw' ? 'StreamAggregatedResources' : 'DeltaAggregatedResources');
    } else {
      for (const state of this.types.values()) if (asksForSomething(state)) this.openPerTypeStream(state);
    }
  }

  private openPerTypeStream(state: TypeProtocolState): void {
    // Constructor checked these type URLs have a per-type service.
    const service = PER_TYPE_SERVICES[state.typeUrl as keyof typeof PER_TYPE_SERVICES];
    this.openStream([state], service.service, this.protocol === 'sotw' ? service.sotwMethod : service.deltaMethod);
  }

  /** Closes the streams (the server sees a cancel). State and ground truth are kept for `connect()`. */
  disconnect(): void {
    if (this.statusValue !== 'connected') return;
    this.closeStreams();
    this.statusValue = 'disconnected';
    this.context.truth.recordConnection(this.id, { kind: 'disconnected', at: this.context.clock.now() });
  }

  /**
   * Goes away for good. `cancel` (default): the streams are cancelled, as when a pod is deleted and
   * its connection closes. `silent`: the Envoy stops reading and answering but leaves its streams
   * open, as behind a network partition where no FIN/RST ever arrives; the server only learns from
   * its own timeouts. Silent streams are cancelled by `dispose()` (Fleet.close).
   */
  vanish(mode: 'cancel' | 'silent' = 'cancel'): void {
    if (this.statusValue === 'vanished') return;
    if (mode === 'silent') {
      for (const stream of this.streams) stream.open = false;
      this.silentStreams.push(...this.streams);
      this.streams = [];
      this.heldWhileHung = [];
    } else {
      this.closeStreams();
    }
    this.statusValue = 'vanished';
    this.context.truth.recordConnection(this.id, { kind: 'vanished', at: this.context.clock.now(), detail: mode });
  }

  /** Cancels every stream, including silently abandoned ones; records nothing. */
  dispose(): void {
    this.closeStreams();
    for (const stream of this.silentStreams.splice(0)) stream.call.cancel();
    if (this.statusValue !== 'vanished') this.statusValue = 'disconnected';
  }

  /** Changes the names subscribed for a type on the open stream(s) ('wildcard' model only). */
  subscribe(typeUrl: string, resourceNames: readonly string[]): void {
    const state = this.types.get(typeUrl);
    if (!state) throw new Error(`envoy ${this.id}: not subscribed to ${typeUrl}`);
    if (this.dependents !== undefined) throw new Error(`envoy ${this.id}: the ${this.subscriptionModel} subscription model derives the names of ${typeUrl}`);
    state.named = resourceNames.length > 0;
    const stream = this.streams.find((s) => s.open && s.types.has(typeUrl));
    if (!stream) {
      state.resourceNames = [...resourceNames];
      return;
    }
    if (this.protocol === 'sotw') this.send(stream, state.sotwSubscriptionRequest(resourceNames));
    else this.send(stream, state.deltaSubscriptionRequest(resourceNames));
  }

  /**
   * Sends what a subscription model asked for (`when`: the half of the reaction to send now), recorded
   * at `at` (the instant of the ACK/NACK that caused it, so the truth shows them together).
   */
  private react(reaction: ModelReaction, when: 'before' | 'after', at: number = this.context.clock.now()): void {
    for (const change of when === 'before' ? reaction.before : reaction.after) this.applyNames(change, at);
    if (this.initialFetchTimer !== undefined && this.dependents?.initialisedClusters === true) {
      this.initialFetchTimer.cancel();
      this.initialFetchTimer = undefined;
    }
  }

  /** Applies one change of a type's names: a first request, a subscription change, or just the new names. */
  private applyNames(change: NamesChange, at: number): void {
    const state = this.types.get(change.typeUrl);
    if (state === undefined) return;
    this.context.truth.recordSubscription(this.id, change.typeUrl, { names: change.names, at });
    state.requested = true;
    const stream = this.streams.find((s) => s.open && s.types.has(change.typeUrl));
    if (stream === undefined) {
      state.resourceNames = change.names;
      // Per-type streams of a type that was not asked for yet open when it first is.
      if (this.statusValue === 'connected' && this.transport === 'per-type' && asksForSomething(state)) this.openPerTypeStream(state);
      return;
    }
    if (!stream.started.has(change.typeUrl)) {
      state.resourceNames = change.names;
      this.startType(stream, state);
      return;
    }
    if (this.protocol === 'sotw') {
      if (sameNames(state.resourceNames, change.names) && !change.resend) return;
      this.send(stream, state.sotwSubscriptionRequest(change.names));
      return;
    }
    const request = state.deltaSubscriptionRequest(change.names);
    if ((request.resource_names_subscribe ?? []).length > 0 || (request.resource_names_unsubscribe ?? []).length > 0) this.send(stream, request);
  }

  /** Sends a type's first request on `stream`, unless it asks by name for nothing yet. */
  private startType(stream: OpenStream, state: TypeProtocolState): void {
    if (!asksForSomething(state)) return;
    stream.started.add(state.typeUrl);
    this.send(stream, this.protocol === 'sotw' ? state.sotwInitialRequest() : state.deltaInitialRequest());
  }

  private openStream(states: TypeProtocolState[], service: string, method: string): void {
    const { client, codec } = this.context;
    const path = `/${service}/${method}`;
    const call: AnyCall =
      this.protocol === 'sotw'
        ? client.makeBidiStreamRequest(path, codec.encodeSotwRequest, codec.decodeSotwResponse, new grpc.Metadata())
        : client.makeBidiStreamRequest(path, codec.encodeDeltaRequest, codec.decodeDeltaResponse, new grpc.Metadata());
    const stream: OpenStream = {
      call,
      types: new Map(states.map((s) => [s.typeUrl, s])),
      open: true,
      nodeSent: false,
      started: new Set(),
      lastDueAt: 0,
    };
    this.streams.push(stream);
    call.on('data', (response: DiscoveryResponse | DeltaDiscoveryResponse) => this.onResponse(stream, response));
    call.on('error', (error: grpc.ServiceError) => this.onStreamEnd(stream, `${grpc.status[error.code] ?? error.code}: ${error.details}`));
    call.on('end', () => this.onStreamEnd(stream, 'server ended the stream'));
    for (const state of states) {
      state.resetStream();
      this.startType(stream, state);
    }
  }

  private send(stream: OpenStream, request: DiscoveryRequest | DeltaDiscoveryRequest): void {
    if (!stream.open) return;
    if (this.nodeOnEveryRequest || !stream.nodeSent) {
      request.node = this.nodeMessage;
      stream.nodeSent = true;
    }
    // The call is typed by protocol; both request shapes go through the codec picked in openStream.
    (stream.call as grpc.ClientDuplexStream<typeof request, unknown>).write(request);
  }

  private onResponse(stream: OpenStream, response: DiscoveryResponse | DeltaDiscoveryResponse): void {
    if (!stream.open) return;
    const typeUrl = response.type_url ?? '';
    const state = stream.types.get(typeUrl);
    const now = this.context.clock.now();
    const versionInfo = 'system_version_info' in response ? response.system_version_info : (response as DiscoveryResponse).version_info;
    if (!state || !stream.started.has(typeUrl)) {
      // Envoy ignores (and logs) responses for types it did not ask for on this stream.
      this.context.logger.warn({ envoy: this.id, typeUrl, nonce: response.nonce }, 'simulated envoy: response for an unsubscribed type ignored');
      return;
    }
    this.context.truth.recordReceived(this.id, typeUrl, { versionInfo: versionInfo ?? '', nonce: response.nonce ?? '', at: now });
    state.noteResponse(response.nonce ?? '');
    const answer = (): void => this.answer(stream, state, response);
    if (this.behaviour.hang) {
      // Keep only the latest response per type: that is all Envoy would act on once unstuck.
      this.heldWhileHung = this.heldWhileHung.filter((held) => (held as HeldAnswer).typeUrl !== typeUrl);
      this.heldWhileHung.push(Object.assign(answer, { typeUrl }));
      return;
    }
    answer();
  }

  private answer(stream: OpenStream, state: TypeProtocolState, response: DiscoveryResponse | DeltaDiscoveryResponse): void {
    if (!stream.open) return;
    const now = this.context.clock.now();
    const delay = Math.max(this.behaviour.ackDelayMs, stream.lastDueAt - now);
    stream.lastDueAt = now + delay;
    // Decide when the delay is over, not on arrival: Envoy applies responses one after another, so a
    // NACK of response 2 must name the version accepted from response 1 even if both arrived at once.
    this.context.scheduler.schedule(delay, () => {
      if (!stream.open) return;
      const { nackRules: rules, nackMessageFormat: format } = this.behaviour;
      const plan: ResponsePlan<DiscoveryRequest> | ResponsePlan<DeltaDiscoveryRequest> =
        this.protocol === 'sotw'
          ? state.planSotw(response as DiscoveryResponse, rules, format)
          : state.planDelta(response as DeltaDiscoveryResponse, rules, format);
      this.complete(stream, state, plan);
    });
  }

  private complete(
    stream: OpenStream,
    state: TypeProtocolState,
    plan: ResponsePlan<DiscoveryRequest> | ResponsePlan<DeltaDiscoveryRequest>,
  ): void {
    // A stream closed before the delay ran out never sent this ACK: nothing was accepted.
    if (!stream.open) return;
    const now = this.context.clock.now();
    // Every Envoy on the same config gets the same list: keep one copy of it for the whole fleet.
    plan.resources = this.context.truth.internResources(state.typeUrl, plan.resources);
    let reaction: ModelReaction | undefined;
    if (plan.outcome === 'ack' && this.dependents !== undefined) {
      // The model reads the accepted resources before anything is applied: a resource it cannot decode
      // turns the ACK into a NACK, as Envoy rejects a Listener or Cluster it cannot parse.
      try {
        reaction = this.dependents.accepted(state.typeUrl, {
          ...(plan.anys !== undefined ? { sotw: plan.anys } : {}),
          ...(plan.upserts !== undefined ? { delta: { upserts: plan.upserts, removed: plan.removed } } : {}),
          names: namesOf(plan.resources),
        });
      } catch (error) {
        plan = state.rejectPlan(plan, `resource of ${state.typeUrl} could not be decoded: ${(error as Error).message}`);
      }
    }
    if (plan.outcome === 'ack') {
      if (this.protocol === 'sotw') state.applySotwAck(plan as ResponsePlan<DiscoveryRequest>);
      else state.applyDeltaAck(plan as ResponsePlan<DeltaDiscoveryRequest>);
      this.context.truth.recordAccepted(this.id, state.typeUrl, {
        versionInfo: plan.versionInfo,
        nonce: plan.nonce,
        acceptedAt: now,
        resources: plan.resources,
        removed: plan.removed,
      });
      this.onAccepted?.({
        typeUrl: state.typeUrl,
        versionInfo: plan.versionInfo,
        at: now,
        ...(plan.anys !== undefined ? { sotw: plan.anys } : {}),
        ...(plan.upserts !== undefined ? { delta: { upserts: plan.upserts, removed: plan.removed } } : {}),
      });
    } else {
      let partial = plan.partial;
      if (partial !== undefined && this.dependents !== undefined) {
        // What Envoy applies of a NACKed response goes through the model like an ACK's (a cluster it
        // adds warms and asks for its endpoints); one the model cannot decode rejects the whole response.
        try {
          reaction = this.dependents.accepted(state.typeUrl, { delta: { upserts: partial.upserts, removed: partial.removed }, names: internNames(partial.applied.map((r) => r.name)) });
        } catch (error) {
          plan = state.rejectPlan(plan, `resource of ${state.typeUrl} could not be decoded: ${(error as Error).message}`);
          partial = undefined;
        }
      }
      state.applyNack(plan);
      const failed = this.dependents?.rejected(state.typeUrl);
      if (failed !== undefined) reaction = reaction === undefined ? failed : { before: [...reaction.before, ...failed.before], after: [...reaction.after, ...failed.after] };
      const applied = partial === undefined ? undefined : this.context.truth.internResources(state.typeUrl, partial.applied);
      this.context.truth.recordNack(this.id, state.typeUrl, {
        versionInfo: plan.versionInfo,
        nonce: plan.nonce,
        message: plan.message ?? '',
        at: now,
        resourceNames: plan.resources.map((r) => r.name),
        ...(plan.rejected !== undefined ? { rejected: plan.rejected } : {}),
        ...(applied !== undefined && partial !== undefined ? { applied, appliedRemoved: partial.removed } : {}),
      });
      if (partial !== undefined) this.onAccepted?.({ typeUrl: state.typeUrl, versionInfo: plan.versionInfo, at: now, delta: { upserts: partial.upserts, removed: partial.removed }, nacked: true });
    }
    // Envoy sends the requests an update causes while applying it, before its mux queues the ACK;
    // gRPC sends the ACK first (subscriptionModel.ts).
    if (reaction !== undefined) this.react(reaction, 'before', now);
    this.send(stream, plan.request);
    if (reaction !== undefined) this.react(reaction, 'after', now);
  }

  private onStreamEnd(stream: OpenStream, detail: string): void {
    if (!stream.open) return;
    stream.open = false;
    this.heldWhileHung = [];
    this.context.truth.recordConnection(this.id, { kind: 'stream-error', at: this.context.clock.now(), detail });
    this.context.logger.debug({ envoy: this.id, detail }, 'simulated envoy: stream ended');
    this.streams = this.streams.filter((s) => s !== stream);
    if (this.statusValue !== 'connected') return;
    // Envoy drops all its xDS streams' state on a failure and retries; reopen everything after a delay.
    this.closeStreams();
    this.statusValue = 'disconnected';
    if (!this.reconnectOnError) return;
    const jitter = Math.floor(Math.random() * this.reconnectDelayMs);
    this.context.scheduler.schedule(this.reconnectDelayMs + jitter, () => {
      if (this.statusValue === 'disconnected') this.connect();
    });
  }

  private closeStreams(): void {
    const streams = this.streams;
    this.streams = [];
    this.heldWhileHung = [];
    for (const stream of streams) {
      if (!stream.open) continue;
      stream.open = false;
      stream.call.cancel();
    }
  }
}

type HeldAnswer = (() => void) & { typeUrl: string };

/**
 * Whether a type's first request on a new stream has anything to ask. A by-name type with no names
 * left is not asked for: an empty first request would read as a legacy wildcard to servers that allow
 * it for every type (go-control-plane, infra/local/control-plane's supportsLegacyWildcard).
 */
function asksForSomething(state: TypeProtocolState): boolean {
  return state.requested && !(state.named && state.resourceNames.length === 0);
}

/** The names of an (interned, shared) accepted list, the same array for every Envoy accepting it. */
const namesOfList = new WeakMap<readonly ResourceVersion[], readonly string[]>();
function namesOf(resources: readonly ResourceVersion[]): readonly string[] {
  let names = namesOfList.get(resources);
  if (names === undefined) {
    names = internNames(resources.map((r) => r.name));
    namesOfList.set(resources, names);
  }
  return names;
}

function toNodeMessage(node: SimNode): XdsNode {
  // protobufjs's bundled google.protobuf.Struct uses camelCase field names (stringValue), not the
  // proto's snake_case: with string_value the values arrive empty.
  const fields: Record<string, { stringValue: string }> = {};
  for (const [key, value] of Object.entries(node.metadata ?? {})) fields[key] = { stringValue: value };
  return {
    id: node.id,
    cluster: node.cluster,
    metadata: { fields },
    user_agent_name: node.userAgentName ?? 'envoy',
  };
}
