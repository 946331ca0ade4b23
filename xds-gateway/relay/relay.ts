// startRelay: the gateway's xDS relay (DESIGN §3.1). Envoys connect downstream (ADS or per-type,
// SotW or Delta); per node group the relay holds one wildcard SotW subscription per type to the
// control plane, caches the latest resources, stamps its own versions (one counter per lineage) and
// serves every Envoy of the group from that cache. Everything observed goes to the RelayObserver;
// the rest of the gateway steers it through RelayControl.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { groupByCluster, lineageGroupId, makeLineage, type Clock, type EnvoyIdentity, type NodeGroupKeyFn } from '../../common/core';
import {
  ADS_SERVICE,
  createDiscoveryClient,
  isResourceTypeUrl,
  openAdsSotw,
  openPerTypeSotw,
  PER_TYPE_SERVICES,
  RESOURCE_TYPE_URLS,
  serviceDefinition,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type ResourceTypeUrl,
  type SotwStream,
  type XdsNode,
} from '../../common/xds';
import { DeltaDownstream } from './delta-downstream';
import { RequestError, type DownstreamLimits, type LiveStream, type RelayContext, type StreamAdmission } from './downstream-common';
import type { RelayControl, RelayObserver } from './observer';
import { RelayGroup, type MonotonicityGuard } from './relay-group';
import { SotwResponseEncoder, withSharedResponseEncoding, type ResponseEncodingStats } from './response-encoding';
import { SotwDownstream } from './sotw-downstream';
import type { RequestRateLimit } from './token-bucket';
import type { BackoffOptions } from './upstream-stream';

export interface RelayUpstreamTls {
  rootCerts?: Buffer;
  privateKey?: Buffer;
  certChain?: Buffer;
}

/**
 * TLS for Envoys (downstream). PEM bytes. With `requireClientCert` the handshake fails for a client
 * without a certificate signed by `rootCerts` (mTLS); without it a client certificate is not asked for.
 */
export interface RelayListenTls {
  certChain: Buffer;
  privateKey: Buffer;
  /** CA bundle client certificates must chain to; required with requireClientCert. */
  rootCerts?: Buffer;
  requireClientCert: boolean;
}

export interface RelayOptions {
  listen: { host: string; port: number; tls?: RelayListenTls };
  upstream: {
    /** Control plane `host:port`. */
    target: string;
    /** true: ADS (StreamAggregatedResources); false: the per-type services (unknown types still use ADS). */
    ads: boolean;
    tls?: RelayUpstreamTls;
    /**
     * The node the control plane sees for a group. Default: the group's first Envoy's node with
     * `id` suffixed `.via.<instanceId>` (so the control plane can tell it apart from that Envoy).
     */
    node?: (group: string, firstEnvoyNode: XdsNode) => XdsNode;
    backoff?: BackoffOptions;
    /** Largest upstream response accepted (grpc max receive on the upstream channel). Default 64 MiB. */
    maxMessageBytes?: number;
  };
  instanceId: string;
  bootId: string;
  /** Node group of an Envoy (default: node.cluster). */
  groupBy?: NodeGroupKeyFn;
  /**
   * Checked before each upstream response is cached (the provenance watermarks implement it); a
   * refusal moves the group to a new lineage. Undefined: only upstream target changes do.
   */
  monotonicityGuard?: MonotonicityGuard;
  /** Called after a group left `lineage` for a new one (its Envoys were sent away). Must not throw. */
  onLineageRetired?: (group: string, lineage: string) => void;
  /** Holds a new stream's responses until it resolves (downstream-common StreamAdmission). Absent: none held. */
  admission?: StreamAdmission;
  observer: RelayObserver;
  clock: Clock;
  logger: Logger;
  /**
   * How long to gather upstream changes before pushing them to Envoys in ADS order (CDS, EDS, LDS,
   * RDS). Default 0: the end of the current event-loop turn. A few ms also orders the responses of
   * one control-plane rebuild that arrive on different upstream streams a moment apart.
   */
  /**
   * Longest a resource the control plane removed stays served while clients may still use it
   * (make-before-break.ts; default 10 s).
   */
  makeBeforeBreakGraceMs?: number;
  pushCoalesceMs?: number;
  limits: {
    /** Largest downstream request accepted (grpc max receive). */
    maxMessageBytes: number;
    /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per downstream connection. */
    maxStreamsPerConnection?: number;
    maxResourceNamesPerRequest?: number;
    maxResourceNameLength?: number;
    maxTypesPerStream?: number;
    /** Most node groups (each costs upstream streams); Envoys of further groups are refused. */
    maxGroups?: number;
    /** Most distinct type URLs a node group subscribes to upstream (each is one upstream stream). */
    maxTypesPerGroup?: number;
    /** Largest upstream response, in resources, the relay caches. */
    maxResourcesPerResponse?: number;
    /** Per-stream request rate (token bucket); over it the stream ends with RESOURCE_EXHAUSTED. */
    requestRate?: RequestRateLimit;
  };
}

export interface Relay {
  port: number;
  /** Lineages started so far per group beyond its first (target changes, guard refusals). */
  lineageEpochs(): Record<string, number>;
  control: RelayControl;
  /** Per group and type: upstream streams opened so far (diagnostics and tests). */
  upstreamStreamsOpened(): Record<string, Record<string, number>>;
  /** Downstream streams currently open. */
  openStreams(): number;
  /** SotW responses serialized and resource lists encoded for them (shared lists are encoded once). */
  responseEncoding(): ResponseEncodingStats;
}

const lineagePart = z.string().regex(/^[a-z0-9-]{1,63}$/, 'must match [a-z0-9-]{1,63}');
const optionsSchema = z.object({
  listen: z.object({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    tls: z
      .object({ certChain: z.instanceof(Buffer), privateKey: z.instanceof(Buffer), rootCerts: z.instanceof(Buffer).optional(), requireClientCert: z.boolean() })
      .refine((tls) => !tls.requireClientCert || tls.rootCerts !== undefined, 'requireClientCert needs rootCerts (the CA client certificates must chain to)')
      .optional(),
  }),
  upstream: z.object({
    target: z.string().min(1),
    ads: z.boolean(),
    backoff: z.object({ initialMs: z.number().positive(), maxMs: z.number().positive() }).optional(),
    maxMessageBytes: z.number().int().positive().optional(),
  }),
  instanceId: lineagePart,
  bootId: lineagePart,
  pushCoalesceMs: z.number().int().min(0).max(10_000).optional(),
  makeBeforeBreakGraceMs: z.number().int().min(0).max(600_000).optional(),
  limits: z.object({
    maxMessageBytes: z.number().int().positive(),
    maxStreamsPerConnection: z.number().int().positive().optional(),
    maxResourceNamesPerRequest: z.number().int().positive().optional(),
    maxResourceNameLength: z.number().int().positive().optional(),
    maxTypesPerStream: z.number().int().positive().optional(),
    maxGroups: z.number().int().positive().optional(),
    maxTypesPerGroup: z.number().int().positive().optional(),
    maxResourcesPerResponse: z.number().int().positive().optional(),
    requestRate: z.object({ ratePerSecond: z.number().positive(), burst: z.number().int().positive() }).optional(),
  }),
});

export const DEFAULT_RELAY_LIMITS = {
  maxResourceNamesPerRequest: 100_000,
  maxResourceNameLength: 4096,
  maxTypesPerStream: 64,
  maxGroups: 1000,
  maxTypesPerGroup: 64,
  maxResourcesPerResponse: 100_000,
} as const;

interface UpstreamClients {
  target: string;
  ads: grpc.Client;
  perType: Map<ResourceTypeUrl, grpc.Client>;
}

function serverCredentials(tls: RelayListenTls | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  // checkClientCertificate=true makes the TLS handshake fail without a valid client certificate.
  return grpc.ServerCredentials.createSsl(tls.rootCerts ?? null, [{ cert_chain: tls.certChain, private_key: tls.privateKey }], tls.requireClientCert);
}

export async function startRelay(options: RelayOptions): Promise<Relay> {
  const checked = optionsSchema.safeParse(options);
  if (!checked.success) throw new Error(`relay options: ${checked.error.message}`);
  const { observer, clock, logger, instanceId, bootId } = options;
  const groupBy = options.groupBy ?? groupByCluster;
  const limits: DownstreamLimits = {
    maxResourceNamesPerRequest: options.limits.maxResourceNamesPerRequest ?? DEFAULT_RELAY_LIMITS.maxResourceNamesPerRequest,
    maxResourceNameLength: options.limits.maxResourceNameLength ?? DEFAULT_RELAY_LIMITS.maxResourceNameLength,
    maxTypesPerStream: options.limits.maxTypesPerStream ?? DEFAULT_RELAY_LIMITS.maxTypesPerStream,
    requestRate: options.limits.requestRate,
  };
  const maxGroups = options.limits.maxGroups ?? DEFAULT_RELAY_LIMITS.maxGroups;
  const maxResourcesPerResponse = options.limits.maxResourcesPerResponse ?? DEFAULT_RELAY_LIMITS.maxResourcesPerResponse;
  const backoff = options.upstream.backoff ?? { initialMs: 250, maxMs: 10_000 };
  const credentials =
    options.upstream.tls === undefined
      ? grpc.credentials.createInsecure()
      : grpc.credentials.createSsl(options.upstream.tls.rootCerts ?? null, options.upstream.tls.privateKey ?? null, options.upstream.tls.certChain ?? null);
  const upstreamChannelOptions: grpc.ChannelOptions = {
    'grpc.max_receive_message_length': options.upstream.maxMessageBytes ?? 64 * 1024 * 1024,
    'grpc.max_send_message_length': -1,
    // One HTTP/2 connection per target for this relay, not shared with other clients in the process.
    'grpc.use_local_subchannel_pool': 1,
  };

  const makeClients = (target: string): UpstreamClients => {
    const channel = new grpc.Channel(target, credentials, upstreamChannelOptions);
    const shared = { ...upstreamChannelOptions, channelOverride: channel };
    const perType = new Map<ResourceTypeUrl, grpc.Client>();
    for (const typeUrl of RESOURCE_TYPE_URLS) perType.set(typeUrl, createDiscoveryClient(PER_TYPE_SERVICES[typeUrl].service, target, credentials, shared));
    return { target, ads: createDiscoveryClient(ADS_SERVICE, target, credentials, shared), perType };
  };
  const closeClients = (clients: UpstreamClients): void => {
    clients.ads.close();
    for (const client of clients.perType.values()) client.close();
  };
  let clients = makeClients(options.upstream.target);

  const openUpstream = (typeUrl: string): { call: SotwStream; target: string } => {
    const current = clients;
    if (options.upstream.ads || !isResourceTypeUrl(typeUrl)) return { call: openAdsSotw(current.ads), target: current.target };
    const client = current.perType.get(typeUrl) as grpc.Client;
    return { call: openPerTypeSotw(client, typeUrl), target: current.target };
  };

  const groups = new Map<string, RelayGroup>();
  /** group key → how many times the group moved to a new lineage (0: its first). */
  const lineageEpochs = new Map<string, number>();
  // The boot part of a lineage after the group's first: a suffix keeps it unique within this boot
  // (bootId is random per process) and inside the part's [a-z0-9-]{1,63}.
  const bootPartFor = (epoch: number): string => {
    if (epoch === 0) return bootId;
    const suffix = `-l${epoch}`;
    return `${bootId.slice(0, 63 - suffix.length)}${suffix}`;
  };

  /**
   * Replaces `group` by a successor on a new lineage (created when its first Envoy reconnects). Used
   * whenever the content served on the group's lineage could stop being monotone (docs/PROVENANCE.md,
   * "Switching upstreams"); the old lineage keeps the watermarks its own content earned.
   */
  const startNewLineage = (group: RelayGroup, reason: string): void => {
    if (closing || groups.get(group.group) !== group) return;
    groups.delete(group.group);
    lineageEpochs.set(group.group, (lineageEpochs.get(group.group) ?? 0) + 1);
    logger.warn({ group: group.group, lineage: group.lineage, reason }, 'relay: node group moves to a new lineage; its Envoys reconnect');
    group.retire(reason);
    try {
      options.onLineageRetired?.(group.group, group.lineage);
    } catch (error) {
      logger.error({ err: error, group: group.group }, 'relay: onLineageRetired threw');
    }
  };
  const liveStreams = new Set<LiveStream>();
  let streamCounter = 0;
  let closing = false;
  let paused = false;

  const groupFor = (identity: EnvoyIdentity, node: XdsNode): RelayGroup => {
    if (closing) throw new RequestError(grpc.status.UNAVAILABLE, 'relay shutting down');
    const key = groupBy(identity);
    const existing = groups.get(key);
    if (existing !== undefined) return existing;
    if (groups.size >= maxGroups) throw new RequestError(grpc.status.RESOURCE_EXHAUSTED, `relay serves at most ${maxGroups} node groups`);
    const lineage = makeLineage(instanceId, bootPartFor(lineageEpochs.get(key) ?? 0), lineageGroupId(key));
    if (!lineage.ok) throw new RequestError(grpc.status.INTERNAL, lineage.error);
    const upstreamNode = options.upstream.node?.(key, node) ?? { ...node, id: `${identity.nodeId}.via.${instanceId}` };
    const group: RelayGroup = new RelayGroup({
      group: key,
      lineage: lineage.value,
      upstreamNode,
      openUpstream,
      currentTarget: () => clients.target,
      observer,
      clock,
      logger,
      backoff,
      maxResourcesPerResponse,
      maxTypes: options.limits.maxTypesPerGroup ?? DEFAULT_RELAY_LIMITS.maxTypesPerGroup,
      pushCoalesceMs: options.pushCoalesceMs ?? 0,
      ...(options.makeBeforeBreakGraceMs === undefined ? {} : { makeBeforeBreakGraceMs: options.makeBeforeBreakGraceMs }),
      ...(options.monotonicityGuard === undefined ? {} : { guard: options.monotonicityGuard }),
      requestNewLineage: (reason) => startNewLineage(group, reason),
    });
    groups.set(key, group);
    logger.info({ group: key, lineage: lineage.value, upstreamNodeId: upstreamNode.id }, 'relay: new node group');
    return group;
  };

  const context: RelayContext = {
    observer,
    clock,
    logger,
    limits,
    nextStreamId: () => `${bootId}-${++streamCounter}`,
    groupFor,
    track: (stream) => {
      liveStreams.add(stream);
      return () => liveStreams.delete(stream);
    },
    paused: () => paused,
    ...(options.admission === undefined ? {} : { admission: options.admission }),
  };

  const serverOptions: grpc.ServerOptions = { 'grpc.max_receive_message_length': options.limits.maxMessageBytes };
  if (options.limits.maxStreamsPerConnection !== undefined) serverOptions['grpc.max_concurrent_streams'] = options.limits.maxStreamsPerConnection;
  const server = new grpc.Server(serverOptions);
  // One encoder for the relay: a resource list shared by many streams is encoded once (response-encoding.ts).
  const sotwEncoder = new SotwResponseEncoder();
  const sotwHandler = (service: 'ads' | ResourceTypeUrl) => (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
    if (closing) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'relay shutting down' });
      return;
    }
    new SotwDownstream(call, service, context).run();
  };
  const deltaHandler = (service: 'ads' | ResourceTypeUrl) => (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>) => {
    if (closing) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'relay shutting down' });
      return;
    }
    new DeltaDownstream(call, service, context).run();
  };
  server.addService(withSharedResponseEncoding(serviceDefinition(ADS_SERVICE), ['StreamAggregatedResources'], sotwEncoder), {
    StreamAggregatedResources: sotwHandler('ads'),
    DeltaAggregatedResources: deltaHandler('ads'),
  });
  for (const typeUrl of RESOURCE_TYPE_URLS) {
    const service = PER_TYPE_SERVICES[typeUrl];
    server.addService(withSharedResponseEncoding(serviceDefinition(service.service), [service.sotwMethod], sotwEncoder), {
      [service.sotwMethod]: sotwHandler(typeUrl),
      [service.deltaMethod]: deltaHandler(typeUrl),
    });
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.listen.host}:${options.listen.port}`, serverCredentials(options.listen.tls), (error, boundPort) => {
      if (error) reject(error);
      else resolve(boundPort);
    });
  });
  logger.info(
    { port, tls: options.listen.tls === undefined ? 'off' : options.listen.tls.requireClientCert ? 'mtls' : 'tls', upstream: clients.target, ads: options.upstream.ads, instanceId, bootId },
    'relay: listening',
  );

  const control: RelayControl = {
    reopenUpstream: (group) => {
      const found = groups.get(group);
      if (found === undefined) return Promise.reject(new Error(`relay has no node group ${JSON.stringify(group)}`));
      return found.reopen();
    },
    setUpstreamTarget: (target) => {
      if (closing || target === clients.target) return;
      logger.info({ from: clients.target, to: target }, 'relay: switching upstream target');
      const previous = clients;
      clients = makeClients(target);
      // The new target (another control-plane replica) may be behind the old one: its content, relayed
      // on the same lineage at higher seqs, would pass watermarks the old content earned while Envoys
      // run older config (invariant 1). So every group starts a new lineage, fed only by the new
      // target; this holds for provenance and barrier watermarks alike (a barrier's watermark is
      // about the status writer's content, which the lineage no longer serves).
      for (const group of [...groups.values()]) startNewLineage(group, `upstream target changed to ${target}`);
      // The retired groups cancelled their calls; the old channel has nothing left to carry.
      closeClients(previous);
    },
    groups: () => [...groups.values()].map((group) => group.info()),
    setPaused: (next) => {
      if (next === paused || closing) return;
      paused = next;
      logger.warn({ paused, streams: liveStreams.size }, paused ? 'relay: paused downstream streams (backpressure)' : 'relay: resumed downstream streams');
      for (const stream of [...liveStreams]) stream.setPaused(paused);
    },
    paused: () => paused,
    close: async (closeOptions) => {
      if (closing) return;
      closing = true;
      const graceMs = closeOptions?.graceMs ?? 0;
      // Envoys reconnect (to another gateway instance) when their stream ends with UNAVAILABLE.
      for (const stream of [...liveStreams]) stream.end(grpc.status.UNAVAILABLE, 'relay shutting down');
      if (graceMs > 0) {
        // Let the status frames reach the clients (and them hang up) before connections are cut.
        let timer: NodeJS.Timeout | undefined;
        const shutdown = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
        await Promise.race([shutdown, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        if (timer !== undefined) clearTimeout(timer);
      }
      server.forceShutdown();
      for (const group of groups.values()) group.close();
      closeClients(clients);
      logger.info({ port }, 'relay: closed');
    },
  };

  return {
    port,
    control,
    lineageEpochs: () => Object.fromEntries(lineageEpochs),
    upstreamStreamsOpened: () => Object.fromEntries([...groups].map(([key, group]) => [key, group.upstreamStreamsOpened()])),
    openStreams: () => liveStreams.size,
    responseEncoding: () => sotwEncoder.stats(),
  };
}
