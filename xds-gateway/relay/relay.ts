// startRelay: the gateway's xDS relay (docs/ARCHITECTURE.md, "The gateway"). Envoys connect downstream (ADS or per-type,
// SotW or Delta); per node group the relay holds one wildcard SotW subscription per type to the
// control plane, caches the latest resources, stamps its own versions (one counter per lineage) and
// serves every Envoy of the group from that cache. Everything observed goes to the RelayObserver;
// the rest of the gateway steers it through RelayControl.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { checkGroupKey, groupByCluster, groupByMetadata, lineageGroupId, makeLineage, type Clock, type EnvoyIdentity, type NodeGroupKeyFn } from '../../common/core';
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
import {
  certificateNames,
  peerAddressOf,
  type DownstreamLimits,
  type JoiningStream,
  type LiveStream,
  type Membership,
  type RelayContext,
  type StreamAdmission,
  type StreamRefusalReason,
} from './downstream-common';
import type { RelayControl, RelayObserver } from './observer';
import type { NamedResource } from './make-before-break';
import { RelayGroup, type MonotonicityGuard } from './relay-group';
import { lineageBootPart } from './lineage-boot-part';
import { RequestError } from './request-error';
import { installPreframedResponses } from './grpc-message-framing';
import { SotwResponseEncoder, withSharedResponseEncoding, type ResponseEncodingStats } from './response-encoding';
import { DELTA_REQUEST_FIELDS, RequestDecoding, SOTW_REQUEST_FIELDS, withRequestDecoding, type RequestDecodingStats } from './request-decoding';
import { SotwDownstream } from './sotw-downstream';
import type { RequestRateLimit } from './token-bucket';
import type { BackoffOptions } from './upstream-stream';

export interface RelayUpstreamTls {
  rootCerts?: Buffer;
  privateKey?: Buffer;
  certChain?: Buffer;
  /**
   * The name the control plane's certificate is checked against (and sent as SNI), whatever
   * address is dialled: following a leader by its pod address (docs/GATEWAY.md, leader following)
   * reaches a replica whose certificate names the Service. Default: the dialled host.
   */
  serverName?: string;
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
  /**
   * A stream's node.id must be one of its client certificate's DNS or URI SANs, else the stream ends
   * PERMISSION_DENIED. Needs requireClientCert. Without it any client that reaches the port may
   * claim any node id (and take it over from the Envoy using it, see README "Node ids").
   */
  bindNodeIdToCert?: boolean;
}

/** How Envoys are grouped; also decides what of an Envoy's node the control plane sees (README "Upstream node"). */
export type NodeGrouping = { by: 'cluster' } | { by: 'metadata'; field: string };

/** Counters the relay reports to (ops/metrics.ts). Labels are fixed enums, never Envoy strings. */
export interface RelayMetrics {
  streamRefused(reason: StreamRefusalReason): void;
  /** A node id's streams were ended because a newer connection claimed the node id. */
  nodeIdTakenOver(): void;
}

/** Why a group's lineage was retired: moved to a new lineage (target change, guard), or freed when idle. */
export type LineageRetirement = 'moved' | 'idle';

/** `--group-by` text (`cluster` or `metadata:<field>`) as a NodeGrouping. */
export function nodeGroupingFromSpec(spec: string): NodeGrouping {
  return spec.startsWith('metadata:') ? { by: 'metadata', field: spec.slice('metadata:'.length) } : { by: 'cluster' };
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
     * The node the control plane sees for a group. Default (defaultUpstreamNode): made from the
     * group, not from the Envoy that happened to join first: id `xds-gateway.<instanceId>.<group id>`,
     * user_agent_name `xds-gateway`, and only what the group key is made of (node.cluster, or the
     * grouping metadata field).
     */
    node?: (group: string, firstEnvoyNode: XdsNode) => XdsNode;
    backoff?: BackoffOptions;
    /** Largest upstream response accepted (grpc max receive on the upstream channel). Default 64 MiB. */
    maxMessageBytes?: number;
  };
  instanceId: string;
  bootId: string;
  /**
   * Node group of an Envoy (default: node.cluster). A NodeGrouping also lets the default upstream
   * node carry what the key is made of; a bare key function gives the upstream node no Envoy field.
   */
  groupBy?: NodeGroupKeyFn | NodeGrouping;
  /**
   * How long a node group with no downstream stream is kept (its upstream subscriptions and cache)
   * before it is freed; an Envoy of the group arriving later starts it anew on a new lineage.
   * Default 60 s.
   */
  groupIdleMs?: number;
  metrics?: RelayMetrics;
  /**
   * Checked before each upstream response is cached (the provenance watermarks implement it); a
   * refusal moves the group to a new lineage. Undefined: only upstream target changes do.
   */
  monotonicityGuard?: MonotonicityGuard;
  /**
   * Called after a group left `lineage`: `moved` to a new one (its Envoys were sent away), or freed
   * after `groupIdleMs` without streams (`idle`: it had no Envoys left). Nothing is served on the
   * lineage afterwards. Must not throw.
   */
  onLineageRetired?: (group: string, lineage: string, cause: LineageRetirement) => void;
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
    /** Most live node groups (each costs upstream streams); Envoys of further groups are refused. */
    maxGroups?: number;
    /** Most live downstream streams from one remote IP address (all its connections). */
    maxStreamsPerPeer?: number;
    /** Most distinct node ids with a live stream. */
    maxNodeIds?: number;
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
  /**
   * Per group: how many times it moved to a new lineage (target changes, guard refusals) since it was
   * last created (a group freed when idle starts again at 0; recent groups only, diagnostics).
   */
  lineageEpochs(): Record<string, number>;
  control: RelayControl;
  /** Per group and type: upstream streams opened so far (diagnostics and tests). */
  upstreamStreamsOpened(): Record<string, Record<string, number>>;
  /** Downstream streams currently open. */
  openStreams(): number;
  /** SotW responses serialized and resource lists encoded for them (shared lists are encoded once). */
  responseEncoding(): ResponseEncodingStats;
  /** Requests decoded without their node until read, given a shared name list, or decoded whole; name lists kept (request-decoding.ts). */
  requestDecoding(): RequestDecodingStats & { sharedNameLists: number };
}

const lineagePart = z.string().regex(/^[a-z0-9-]{1,63}$/, 'must match [a-z0-9-]{1,63}');
const optionsSchema = z.object({
  listen: z.object({
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    tls: z
      .object({
        certChain: z.instanceof(Buffer),
        privateKey: z.instanceof(Buffer),
        rootCerts: z.instanceof(Buffer).optional(),
        requireClientCert: z.boolean(),
        bindNodeIdToCert: z.boolean().optional(),
      })
      .refine((tls) => !tls.requireClientCert || tls.rootCerts !== undefined, 'requireClientCert needs rootCerts (the CA client certificates must chain to)')
      .refine((tls) => tls.bindNodeIdToCert !== true || tls.requireClientCert, 'bindNodeIdToCert needs requireClientCert (mTLS)')
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
  groupIdleMs: z.number().int().min(0).max(2_147_483_647).optional(),
  makeBeforeBreakGraceMs: z.number().int().min(0).max(600_000).optional(),
  limits: z.object({
    maxMessageBytes: z.number().int().positive(),
    maxStreamsPerConnection: z.number().int().positive().optional(),
    maxResourceNamesPerRequest: z.number().int().positive().optional(),
    maxResourceNameLength: z.number().int().positive().optional(),
    maxTypesPerStream: z.number().int().positive().optional(),
    maxGroups: z.number().int().positive().optional(),
    maxStreamsPerPeer: z.number().int().positive().optional(),
    maxNodeIds: z.number().int().positive().optional(),
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
  maxStreamsPerPeer: 256,
  maxNodeIds: 20_000,
  maxTypesPerGroup: 64,
  maxResourcesPerResponse: 100_000,
} as const;

export const DEFAULT_GROUP_IDLE_MS = 60_000;

/**
 * Group ids remembered as having used their first (plain boot part) lineage. Past this many, new
 * groups take a counter-suffixed lineage at once (bootPartFor), so a stream of fresh node.cluster
 * values cannot grow the relay's memory without end; ~100 bytes each.
 */
const MAX_FIRST_LINEAGE_GROUP_IDS = 100_000;

/** Move counts kept for lineageEpochs() (diagnostics), oldest forgotten first. */
const MAX_EPOCH_ENTRIES = 10_000;
/** Moved groups whose served content is kept for their next group (RelayGroupDeps.retainedFrom). */
const MAX_MOVED_CONTENT = 256;

/** Refusals of one reason are logged at most this often (a flood must not flood the log too). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

const UPSTREAM_USER_AGENT = 'xds-gateway';

/** The node field a group key came from, for refusal messages. */
function groupKeySource(grouping: NodeGrouping | undefined, identity: EnvoyIdentity, key: string): string {
  if (grouping === undefined) return 'groupBy';
  if (grouping.by === 'metadata' && identity.metadata[grouping.field] === key) return `node.metadata.${grouping.field.slice(0, 100)}`;
  return 'node.cluster';
}

/**
 * The node the control plane sees for a group: the gateway's own id for it, and only what the group
 * key is made of, so every Envoy of the group could have sent it. (Copying the first Envoy's node
 * let whichever Envoy joined first choose the metadata, locality and user agent the control plane
 * sees for the whole group.) With metadata grouping and the field absent, the key fell back to
 * node.cluster (common/core groupByMetadata), which is then what is sent.
 */
export function defaultUpstreamNode(instanceId: string, group: string, grouping: NodeGrouping | undefined, identity: EnvoyIdentity): XdsNode {
  const node: XdsNode = { id: `xds-gateway.${instanceId}.${lineageGroupId(group)}`, user_agent_name: UPSTREAM_USER_AGENT };
  if (grouping === undefined) return node;
  if (grouping.by === 'metadata' && identity.metadata[grouping.field] === group) {
    return { ...node, metadata: { fields: { [grouping.field]: { stringValue: group } } } };
  }
  return { ...node, cluster: group };
}

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
  const grouping: NodeGrouping | undefined = typeof options.groupBy === 'function' ? undefined : (options.groupBy ?? { by: 'cluster' });
  const groupBy: NodeGroupKeyFn =
    typeof options.groupBy === 'function' ? options.groupBy : grouping?.by === 'metadata' ? groupByMetadata(grouping.field) : groupByCluster;
  const limits: DownstreamLimits = {
    maxResourceNamesPerRequest: options.limits.maxResourceNamesPerRequest ?? DEFAULT_RELAY_LIMITS.maxResourceNamesPerRequest,
    maxResourceNameLength: options.limits.maxResourceNameLength ?? DEFAULT_RELAY_LIMITS.maxResourceNameLength,
    maxTypesPerStream: options.limits.maxTypesPerStream ?? DEFAULT_RELAY_LIMITS.maxTypesPerStream,
    requestRate: options.limits.requestRate,
  };
  const maxGroups = options.limits.maxGroups ?? DEFAULT_RELAY_LIMITS.maxGroups;
  const maxStreamsPerPeer = options.limits.maxStreamsPerPeer ?? DEFAULT_RELAY_LIMITS.maxStreamsPerPeer;
  const maxNodeIds = options.limits.maxNodeIds ?? DEFAULT_RELAY_LIMITS.maxNodeIds;
  const groupIdleMs = options.groupIdleMs ?? DEFAULT_GROUP_IDLE_MS;
  const bindNodeIdToCert = options.listen.tls?.bindNodeIdToCert === true;
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
    ...(options.upstream.tls?.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': options.upstream.tls.serverName }),
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

  // Lineages never repeat within a boot: a repeated lineage would restart its seqs under watermarks
  // already recorded for it (invariant 1). A group id's first lineage has the plain boot part;
  // every later one (a move to a new lineage, or a group created again after it was freed when idle)
  // takes `-l<n>` from one relay-wide counter, so it differs from every lineage before it whatever
  // the key. Which group ids used their plain lineage is remembered up to a bound; a group id not
  // remembered never used it, and past the bound new groups simply start on a counter lineage.
  const firstLineageUsed = new Set<string>();
  let lastEpoch = 0;
  const bootPartFor = (groupId: string): string => {
    if (!firstLineageUsed.has(groupId) && firstLineageUsed.size < MAX_FIRST_LINEAGE_GROUP_IDS) {
      firstLineageUsed.add(groupId);
      return lineageBootPart(bootId, undefined);
    }
    lastEpoch += 1;
    return lineageBootPart(bootId, lastEpoch);
  };
  /** group key → moves to a new lineage since the group was last created (diagnostics, bounded). */
  const lineageMoves = new Map<string, number>();
  /**
   * Group key → what its group served when it moved to a new lineage, until the group is created again
   * (its Envoys reconnect at once) or `groupIdleMs` has passed. Bounded: a seed is only worth keeping
   * for clients that are about to reconnect.
   */
  const movedContent = new Map<string, { at: number; content: Map<string, NamedResource[]> }>();

  const retireLineage = (group: RelayGroup, cause: LineageRetirement): void => {
    try {
      options.onLineageRetired?.(group.group, group.lineage, cause);
    } catch (error) {
      logger.error({ err: error, group: group.group }, 'relay: onLineageRetired threw');
    }
  };

  /**
   * Replaces `group` by a successor on a new lineage (created when its first Envoy reconnects). Used
   * whenever the content served on the group's lineage could stop being monotone (docs/PROVENANCE.md,
   * "Switching upstreams"); the old lineage keeps the watermarks its own content earned.
   */
  const startNewLineage = (group: RelayGroup, reason: string): void => {
    if (closing || groups.get(group.group) !== group) return;
    groups.delete(group.group);
    const moves = (lineageMoves.get(group.group) ?? 0) + 1;
    lineageMoves.delete(group.group);
    lineageMoves.set(group.group, moves);
    if (lineageMoves.size > MAX_EPOCH_ENTRIES) lineageMoves.delete(lineageMoves.keys().next().value as string);
    logger.warn({ group: group.group, lineage: group.lineage, reason }, 'relay: node group moves to a new lineage; its Envoys reconnect');
    // The next group of this key starts its make-before-break from what this one served (RelayGroupDeps.retainedFrom).
    movedContent.delete(group.group);
    movedContent.set(group.group, { at: clock.now(), content: group.servedContent() });
    if (movedContent.size > MAX_MOVED_CONTENT) movedContent.delete(movedContent.keys().next().value as string);
    group.retire(reason);
    retireLineage(group, 'moved');
  };

  /**
   * Frees a group that has had no stream for groupIdleMs: its upstream subscriptions are cancelled
   * and its cache dropped. Its lineage is retired like a moved group's (nothing is served on it any
   * more and it has no Envoy left, so its heartbeat stops and it leaves the live set after the TTL,
   * as a dead gateway's lineage does); an Envoy of the group arriving later gets a new group on a new
   * lineage (bootPartFor), never the old lineage with its seqs restarted.
   */
  const freeIdleGroup = (group: RelayGroup): void => {
    if (closing || groups.get(group.group) !== group || group.memberCount > 0) return;
    groups.delete(group.group);
    lineageMoves.delete(group.group);
    logger.info({ group: group.group, lineage: group.lineage, idleMs: groupIdleMs }, 'relay: node group freed (no stream for the idle time)');
    group.close();
    retireLineage(group, 'idle');
  };

  const liveStreams = new Set<LiveStream>();
  /** remote IP → live streams from it (all its connections). */
  const streamsByAddress = new Map<string, number>();
  /**
   * node id → the connection (peer) whose streams are that Envoy's, and those streams. One
   * connection per node id: the streams of an Envoy on one connection (ADS, or several per-type
   * streams) share its tracked state; a stream of the same node id from another connection replaces
   * them (join), since two connections must never feed one Envoy's state.
   */
  const nodeStreams = new Map<string, { peer: string; streams: Set<JoiningStream> }>();
  let streamCounter = 0;
  let closing = false;
  let paused = false;

  const refusalsLoggedAt = new Map<StreamRefusalReason, { at: number; suppressed: number }>();
  const refuse = (reason: StreamRefusalReason, code: grpc.status, message: string, log: Record<string, unknown>): RequestError => {
    try {
      options.metrics?.streamRefused(reason);
    } catch (error) {
      logger.error({ err: error }, 'relay: metrics.streamRefused threw');
    }
    const now = clock.now();
    const last = refusalsLoggedAt.get(reason);
    if (last === undefined || now - last.at >= REFUSAL_LOG_INTERVAL_MS) {
      logger.warn({ ...log, reason, suppressedSinceLast: last?.suppressed ?? 0, details: message }, 'relay: stream refused');
      refusalsLoggedAt.set(reason, { at: now, suppressed: 0 });
    } else {
      last.suppressed += 1;
    }
    return new RequestError(code, message, true);
  };

  const createGroup = (key: string, identity: EnvoyIdentity, node: XdsNode): RelayGroup => {
    const groupId = lineageGroupId(key);
    const lineage = makeLineage(instanceId, bootPartFor(groupId), groupId);
    if (!lineage.ok) throw new RequestError(grpc.status.INTERNAL, lineage.error);
    const upstreamNode = options.upstream.node?.(key, node) ?? defaultUpstreamNode(instanceId, key, grouping, identity);
    const moved = movedContent.get(key);
    movedContent.delete(key);
    const retainedFrom = moved !== undefined && clock.now() - moved.at < groupIdleMs ? moved.content : undefined;
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
      ...(retainedFrom === undefined ? {} : { retainedFrom }),
      requestNewLineage: (reason) => startNewLineage(group, reason),
      idleMs: groupIdleMs,
      onIdle: () => freeIdleGroup(group),
    });
    groups.set(key, group);
    logger.info({ group: key, lineage: lineage.value, upstreamNodeId: upstreamNode.id }, 'relay: new node group');
    return group;
  };

  /** At the group cap, a group without streams (waiting out its idle time) gives way to a new one. */
  const freeOneIdleGroup = (): boolean => {
    for (const group of groups.values()) {
      if (group.memberCount === 0) {
        freeIdleGroup(group);
        return true;
      }
    }
    return false;
  };

  const join = (identity: EnvoyIdentity, node: XdsNode, stream: JoiningStream): Membership => {
    if (closing) throw new RequestError(grpc.status.UNAVAILABLE, 'relay shutting down');
    const nodeId = identity.nodeId;
    const log = { nodeId, peer: stream.peer };
    // Every check that can refuse comes before the takeover: a refused stream takes nothing over.
    if (bindNodeIdToCert && !certificateNames(stream.peerCertificate()).includes(nodeId)) {
      throw refuse('node_id_not_in_cert', grpc.status.PERMISSION_DENIED, `node.id ${JSON.stringify(nodeId.slice(0, 200))} is not a DNS or URI subject alternative name of the client certificate`, log);
    }
    const key = groupBy(identity);
    // node.ts bounds node.cluster and the metadata as a whole; the key (held per group, stored with
    // every state and lineage of the group) has its own bound, whichever field it came from.
    const keyProblem = checkGroupKey(key, groupKeySource(grouping, identity, key));
    if (keyProblem !== undefined) throw refuse('invalid_node', grpc.status.INVALID_ARGUMENT, keyProblem, log);
    const current = nodeStreams.get(nodeId);
    if (current === undefined && nodeStreams.size >= maxNodeIds) {
      throw refuse('node_ids', grpc.status.RESOURCE_EXHAUSTED, `relay serves at most ${maxNodeIds} node ids (limit maxNodeIds)`, log);
    }
    if (!groups.has(key) && groups.size >= maxGroups && !freeOneIdleGroup()) {
      throw refuse('node_groups', grpc.status.RESOURCE_EXHAUSTED, `relay serves at most ${maxGroups} node groups (limit maxGroups)`, log);
    }
    if (current !== undefined && current.peer !== stream.peer) {
      // The newest connection wins: an Envoy restarted under the same node id (a pod re-created with
      // its name) takes over at once from its previous connection, which may linger half-open for
      // minutes. Ending those streams here, synchronously, reports them closed to the observer
      // before this stream is reported opened (DownstreamStream.identify), so the tracker sees a
      // normal disconnect of the old connection, then a new connection.
      logger.warn({ nodeId, peer: stream.peer, previousPeer: current.peer, previousStreams: current.streams.size }, 'relay: node id claimed by a newer connection; ending its streams on the previous one');
      try {
        options.metrics?.nodeIdTakenOver();
      } catch (error) {
        logger.error({ err: error }, 'relay: metrics.nodeIdTakenOver threw');
      }
      for (const previous of [...current.streams]) previous.end(grpc.status.UNAVAILABLE, 'replaced by a newer connection with the same node id');
    }
    const group = groups.get(key) ?? createGroup(key, identity, node);
    group.join(stream);
    let entry = nodeStreams.get(nodeId);
    if (entry === undefined || entry.peer !== stream.peer) {
      entry = { peer: stream.peer, streams: new Set() };
      nodeStreams.set(nodeId, entry);
    }
    const streams = entry.streams;
    streams.add(stream);
    return {
      group,
      leave: () => {
        group.leave(stream);
        streams.delete(stream);
        if (streams.size === 0 && nodeStreams.get(nodeId)?.streams === streams) nodeStreams.delete(nodeId);
      },
    };
  };

  const context: RelayContext = {
    observer,
    clock,
    logger,
    limits,
    nextStreamId: () => `${bootId}-${++streamCounter}`,
    join,
    track: (stream) => {
      const address = peerAddressOf(stream.peer);
      const count = streamsByAddress.get(address) ?? 0;
      if (count >= maxStreamsPerPeer) {
        throw refuse('peer_streams', grpc.status.RESOURCE_EXHAUSTED, `relay serves at most ${maxStreamsPerPeer} streams per peer address (limit maxStreamsPerPeer)`, { peer: stream.peer });
      }
      streamsByAddress.set(address, count + 1);
      liveStreams.add(stream);
      return () => {
        if (!liveStreams.delete(stream)) return;
        const left = (streamsByAddress.get(address) ?? 1) - 1;
        if (left <= 0) streamsByAddress.delete(address);
        else streamsByAddress.set(address, left);
      };
    },
    paused: () => paused,
    ...(options.admission === undefined ? {} : { admission: options.admission }),
  };

  const serverOptions: grpc.ServerOptions = { 'grpc.max_receive_message_length': options.limits.maxMessageBytes };
  if (options.limits.maxStreamsPerConnection !== undefined) serverOptions['grpc.max_concurrent_streams'] = options.limits.maxStreamsPerConnection;
  const server = new grpc.Server(serverOptions);
  // One encoder for the relay: a resource list shared by many streams is encoded once (response-encoding.ts),
  // and a response shared by many streams is framed once (grpc-message-framing.ts).
  const sotwEncoder = new SotwResponseEncoder();
  if (installPreframedResponses() === 'unavailable') {
    logger.warn('relay: this grpc-js has no framing step to replace; every response is copied into a frame per stream');
  }
  const requestDecoding = new RequestDecoding();
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
  const adsDefinition = withRequestDecoding(serviceDefinition(ADS_SERVICE), { StreamAggregatedResources: SOTW_REQUEST_FIELDS, DeltaAggregatedResources: DELTA_REQUEST_FIELDS }, requestDecoding);
  server.addService(withSharedResponseEncoding(adsDefinition, ['StreamAggregatedResources'], sotwEncoder), {
    StreamAggregatedResources: sotwHandler('ads'),
    DeltaAggregatedResources: deltaHandler('ads'),
  });
  for (const typeUrl of RESOURCE_TYPE_URLS) {
    const service = PER_TYPE_SERVICES[typeUrl];
    const definition = withRequestDecoding(serviceDefinition(service.service), { [service.sotwMethod]: SOTW_REQUEST_FIELDS, [service.deltaMethod]: DELTA_REQUEST_FIELDS }, requestDecoding);
    server.addService(withSharedResponseEncoding(definition, [service.sotwMethod], sotwEncoder), {
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
    endStreamsOf: (nodeId, code, details) => {
      const entry = nodeStreams.get(nodeId);
      if (entry === undefined) return 0;
      const streams = [...entry.streams];
      for (const stream of streams) stream.end(code, details);
      return streams.length;
    },
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
    lineageEpochs: () => Object.fromEntries(lineageMoves),
    upstreamStreamsOpened: () => Object.fromEntries([...groups].map(([key, group]) => [key, group.upstreamStreamsOpened()])),
    openStreams: () => liveStreams.size,
    responseEncoding: () => sotwEncoder.stats(),
    requestDecoding: () => ({ ...requestDecoding.stats, sharedNameLists: requestDecoding.sharedNameLists() }),
  };
}
