// A fleet of simulated Envoys in one process, built to reach thousands:
// - a small pool of gRPC channels; each channel is one HTTP/2 connection multiplexing the streams
//   of many Envoys (a channel per Envoy costs a socket, TLS/HTTP2 state and timers each);
// - one Scheduler (one Node timer) for every ACK delay and reconnect backoff;
// - one GroundTruth for everybody;
// - behaviours shared by reference.
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import type { SimBehaviour } from './behaviour';
import { discoveryCodec } from './codec';
import { GroundTruth } from './groundTruth';
import { Scheduler, systemClock, type SchedulerClock } from './scheduler';
import { SimEnvoy, type SimEnvoyOptions, type SimNode, type Subscription, type XdsTransport } from './simEnvoy';
import type { XdsProtocol } from './typeState';

export interface FleetOptions {
  /** Control plane address, `host:port`. */
  target: string;
  /** Number of gRPC channels (HTTP/2 connections) the Envoys are spread over. */
  channels?: number;
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
  /** Node for Envoy number `index` (default: id `sim-<index>`, cluster `sim`). */
  node?: (index: number) => SimNode;
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
}

export class Fleet {
  readonly truth = new GroundTruth();
  readonly scheduler: Scheduler;
  private readonly clock: SchedulerClock;
  private readonly logger: Logger;
  private readonly clients: grpc.Client[] = [];
  private readonly envoysById = new Map<string, SimEnvoy>();
  private nextChannel = 0;
  private closed = false;

  constructor(options: FleetOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'warn' });
    this.scheduler = new Scheduler(this.clock, (error) => this.logger.error({ err: error }, 'fleet: scheduled task failed'));
    const channelCount = Math.max(1, options.channels ?? 4);
    const credentials = options.credentials ?? grpc.credentials.createInsecure();
    for (let index = 0; index < channelCount; index++) {
      // grpc-js shares subchannels (connections) between channels with equal options through a
      // global pool; a local pool per channel makes each channel its own HTTP/2 connection.
      const channel = new grpc.Channel(options.target, credentials, {
        'grpc.use_local_subchannel_pool': 1,
        'grpc.max_receive_message_length': 64 * 1024 * 1024,
      });
      this.clients.push(new grpc.Client(options.target, credentials, { channelOverride: channel }));
    }
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

  /** Creates one Envoy (not yet connected) on the next channel of the pool. */
  add(options: SimEnvoyOptions): SimEnvoy {
    if (this.closed) throw new Error('fleet is closed');
    if (this.envoysById.has(options.node.id)) throw new Error(`fleet: duplicate node id ${options.node.id}`);
    const client = this.clients[this.nextChannel++ % this.clients.length] as grpc.Client;
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
      created.push(
        this.add({
          node: spec.node?.(index) ?? { id: `sim-${index}`, cluster: 'sim' },
          transport: spec.transport,
          protocol: spec.protocol,
          subscriptions: spec.subscriptions,
          ...(spec.nodeOnEveryRequest !== undefined ? { nodeOnEveryRequest: spec.nodeOnEveryRequest } : {}),
          ...(spec.behaviour ? { behaviour: spec.behaviour } : {}),
          ...(spec.reconnectOnError !== undefined ? { reconnectOnError: spec.reconnectOnError } : {}),
          ...(spec.reconnectDelayMs !== undefined ? { reconnectDelayMs: spec.reconnectDelayMs } : {}),
        }),
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
    for (const client of this.clients) client.close();
  }
}
