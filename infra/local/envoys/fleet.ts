// A fleet of simulated Envoys in one process, built to reach thousands:
// - a small pool of gRPC channels; each channel is one HTTP/2 connection multiplexing the streams
//   of many Envoys (a channel per Envoy costs a socket, TLS/HTTP2 state and timers each), at most
//   maxStreamsPerChannel streams each (the server's per-connection stream cap);
// - one Scheduler (one Node timer) for every ACK delay and reconnect backoff;
// - one GroundTruth for everybody;
// - behaviours shared by reference.
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import type { SimBehaviour } from './behaviour';
import { discoveryCodec } from './codec';
import { GroundTruth } from './groundTruth';
import { Scheduler, systemClock, type SchedulerClock } from './scheduler';
import { SimEnvoy, type AcceptedContent, type SimEnvoyOptions, type SimNode, type Subscription, type XdsTransport } from './simEnvoy';
import type { SubscriptionModelName } from './subscriptionModel';
import type { XdsProtocol } from './xds-protocol';

export interface FleetOptions {
  /** Control plane address, `host:port`. */
  target: string;
  /** Number of gRPC channels (HTTP/2 connections) the Envoys are spread over at first. */
  channels?: number;
  /**
   * Most streams the fleet opens on one channel (default 100, DEFAULT_MAX_STREAMS_PER_CHANNEL); more
   * Envoys open more channels. Why: an HTTP/2 server caps concurrent streams per connection
   * (SETTINGS_MAX_CONCURRENT_STREAMS; the gateway's default is 100), and a client over the cap does not
   * fail, it queues the stream until another one on that connection ends. 1,000 Envoys on 4 channels
   * behind the gateway used to leave 600 of them silently never connected.
   */
  maxStreamsPerChannel?: number;
  clock?: SchedulerClock;
  logger?: Logger;
  credentials?: grpc.ChannelCredentials;
}

export interface FleetEnvoySpec {
  transport: XdsTransport;
  protocol: XdsProtocol;
  subscriptions: readonly Subscription[];
  nodeOnEveryRequest?: boolean;
  behaviour?: SimBehaviour;
  reconnectOnError?: boolean;
  reconnectDelayMs?: number;
  /** See SimEnvoyOptions.subscriptionModel (default: 'envoy' for exactly the four core types, unnamed). */
  subscriptionModel?: SubscriptionModelName;
  /** See SimEnvoyOptions.initialFetchTimeoutMs. */
  initialFetchTimeoutMs?: number;
  /** Node for Envoy number `index` (default: id `sim-<index>`, cluster `sim`). */
  node?: (index: number) => SimNode;
  /** SimEnvoyOptions.onAccepted of every Envoy, told which Envoy accepted. */
  onAccepted?: (nodeId: string, accepted: AcceptedContent) => void;
  /** The server these Envoys connect to (default: the fleet's `target`): one of several gateways. */
  target?: string;
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
}

/** The gateway's default `--max-streams-per-connection` (xds-gateway/ops/config.ts). */
export const DEFAULT_MAX_STREAMS_PER_CHANNEL = 100;

/**
 * The gRPC channels (HTTP/2 connections) to one server: round robin over channels with room for a new
 * Envoy's streams, a new channel when none has (an Envoy keeps its channel across reconnects).
 */
class ChannelPool {
  readonly clients: grpc.Client[] = [];
  /** Streams assigned per channel. */
  private readonly channelStreams: number[] = [];
  private nextChannel = 0;

  constructor(
    private readonly target: string,
    private readonly credentials: grpc.ChannelCredentials,
    private readonly maxStreamsPerChannel: number,
    initialChannels: number,
  ) {
    for (let index = 0; index < initialChannels; index++) this.addChannel();
  }

  private addChannel(): number {
    // grpc-js shares subchannels (connections) between channels with equal options through a
    // global pool; a local pool per channel makes each channel its own HTTP/2 connection.
    const channel = new grpc.Channel(this.target, this.credentials, {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    });
    this.clients.push(new grpc.Client(this.target, this.credentials, { channelOverride: channel }));
    this.channelStreams.push(0);
    return this.clients.length - 1;
  }

  channelFor(streams: number): grpc.Client {
    const count = this.clients.length;
    for (let step = 0; step < count; step++) {
      const index = (this.nextChannel + step) % count;
      if ((this.channelStreams[index] ?? 0) + streams <= this.maxStreamsPerChannel) {
        this.nextChannel = index + 1;
        this.channelStreams[index] = (this.channelStreams[index] ?? 0) + streams;
        return this.clients[index] as grpc.Client;
      }
    }
    const index = this.addChannel();
    this.nextChannel = index + 1;
    this.channelStreams[index] = streams;
    return this.clients[index] as grpc.Client;
  }
}

export class Fleet {
  readonly truth = new GroundTruth();
  readonly scheduler: Scheduler;
  private readonly clock: SchedulerClock;
  private readonly logger: Logger;
  /** One pool per server Envoys connect to: the fleet's target, and any other an Envoy names. */
  private readonly pools = new Map<string, ChannelPool>();
  private readonly newPool: (target: string, initialChannels: number) => ChannelPool;
  private readonly defaultTarget: string;
  private readonly envoysById = new Map<string, SimEnvoy>();
  private closed = false;

  constructor(options: FleetOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'warn' });
    this.scheduler = new Scheduler(this.clock, (error) => this.logger.error({ err: error }, 'fleet: scheduled task failed'));
    const maxStreamsPerChannel = Math.max(1, options.maxStreamsPerChannel ?? DEFAULT_MAX_STREAMS_PER_CHANNEL);
    const credentials = options.credentials ?? grpc.credentials.createInsecure();
    this.newPool = (target, initialChannels) => new ChannelPool(target, credentials, maxStreamsPerChannel, initialChannels);
    this.defaultTarget = options.target;
    this.pools.set(options.target, this.newPool(options.target, Math.max(1, options.channels ?? 4)));
  }

  /** gRPC channels (HTTP/2 connections) in use: the initial pool plus any opened for the stream cap. */
  get channels(): number {
    let count = 0;
    for (const pool of this.pools.values()) count += pool.clients.length;
    return count;
  }

  private channelFor(target: string, streams: number): grpc.Client {
    let pool = this.pools.get(target);
    if (pool === undefined) {
      // Another server (a second gateway): its channels open as its Envoys need them.
      pool = this.newPool(target, 0);
      this.pools.set(target, pool);
    }
    return pool.channelFor(streams);
  }

  get size(): number {
    return this.envoysById.size;
  }

  envoys(): SimEnvoy[] {
    return [...this.envoysById.values()];
  }

  envoy(nodeId: string): SimEnvoy {
    const envoy = this.envoysById.get(nodeId);
    if (!envoy) throw new Error(`fleet: no envoy ${nodeId}`);
    return envoy;
  }

  /**
   * Creates one Envoy (not yet connected) on the next channel with room for its streams, of the pool
   * of `target` (default: the fleet's).
   */
  add(options: SimEnvoyOptions, target = this.defaultTarget): SimEnvoy {
    if (this.closed) throw new Error('fleet is closed');
    if (this.envoysById.has(options.node.id)) throw new Error(`fleet: duplicate node id ${options.node.id}`);
    // ADS: one stream for every type; per-type: one stream per subscribed type.
    const client = this.channelFor(target, options.transport === 'ads' ? 1 : options.subscriptions.length);
    const envoy = new SimEnvoy(options, {
      client,
      codec: discoveryCodec(),
      scheduler: this.scheduler,
      clock: this.clock,
      truth: this.truth,
      logger: this.logger,
    });
    this.envoysById.set(envoy.id, envoy);
    return envoy;
  }

  /** Creates `count` Envoys from one spec, numbered from `firstIndex`. */
  addMany(count: number, spec: FleetEnvoySpec, firstIndex = this.envoysById.size): SimEnvoy[] {
    const created: SimEnvoy[] = [];
    for (let offset = 0; offset < count; offset++) {
      const index = firstIndex + offset;
      const node = spec.node?.(index) ?? { id: `sim-${index}`, cluster: 'sim' };
      const onAccepted = spec.onAccepted;
      created.push(
        this.add({
          node,
          transport: spec.transport,
          protocol: spec.protocol,
          subscriptions: spec.subscriptions,
          ...(spec.nodeOnEveryRequest !== undefined ? { nodeOnEveryRequest: spec.nodeOnEveryRequest } : {}),
          ...(spec.behaviour ? { behaviour: spec.behaviour } : {}),
          ...(spec.reconnectOnError !== undefined ? { reconnectOnError: spec.reconnectOnError } : {}),
          ...(spec.reconnectDelayMs !== undefined ? { reconnectDelayMs: spec.reconnectDelayMs } : {}),
          ...(spec.subscriptionModel !== undefined ? { subscriptionModel: spec.subscriptionModel } : {}),
          ...(spec.initialFetchTimeoutMs !== undefined ? { initialFetchTimeoutMs: spec.initialFetchTimeoutMs } : {}),
          ...(onAccepted !== undefined ? { onAccepted: (accepted: AcceptedContent) => onAccepted(node.id, accepted) } : {}),
        }, spec.target),
      );
    }
    return created;
  }

  connectAll(): void {
    for (const envoy of this.envoysById.values()) if (envoy.status !== 'vanished') envoy.connect();
  }

  /** Envoys whose latest accepted version of `typeUrl` is `versionInfo`. */
  countAt(typeUrl: string, versionInfo: string): number {
    let count = 0;
    for (const envoy of this.envoysById.values()) if (envoy.acceptedVersion(typeUrl) === versionInfo) count++;
    return count;
  }

  /**
   * Resolves once `predicate()` holds, polling with one timer; rejects with `describe()` after the
   * timeout. For tests and benches: "wait until all 1,000 Envoys ACKed version 7".
   */
  waitFor(predicate: () => boolean, options: WaitOptions, describe: () => string = () => 'condition'): Promise<void> {
    const pollMs = options.pollMs ?? 20;
    const deadline = this.clock.now() + options.timeoutMs;
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (predicate()) return resolve();
        if (this.closed) return reject(new Error(`fleet closed while waiting for ${describe()}`));
        if (this.clock.now() >= deadline) return reject(new Error(`timed out after ${options.timeoutMs} ms waiting for ${describe()}`));
        setTimeout(check, pollMs);
      };
      check();
    });
  }

  /** Disconnects every Envoy, stops the scheduler and closes the channels. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const envoy of this.envoysById.values()) envoy.dispose();
    this.scheduler.close();
    for (const pool of this.pools.values()) for (const client of pool.clients) client.close();
  }
}
