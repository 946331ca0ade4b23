// startGateway: wires the relay, tracking (tracker, recorder, watermarks), the store, the Kubernetes
// watches and the ops server from a validated GatewayConfig. main.ts adds process signals; tests call
// this directly. Shutdown order matters (docs/GATEWAY.md, "Shutdown"): report not-ready, close the
// relay (Envoys reconnect elsewhere; their disconnects are queued), then flush the recorder.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock, VersionLog } from '../../common/core';
import { describeError } from '../../common/describe-error';
import { openTable, registerLineageHeartbeats, type DynamoEventStore, type StoreClientSeams } from '../../common/store';
import { AdmissionRefused, DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS, ownsLineage, startRelay, type Relay, type RelayListenTls, type RelayUpstreamTls } from '../relay';
import { nodeGroupingFromSpec } from '../relay/relay';
import type { UpstreamContent } from '../relay/relay-group';
import { ObservedGenerationBarrier } from '../tracking/barrier';
import { EnvoyTracker, FORGET_DISCONNECTED_MS } from '../tracking/envoy-tracker';
import { mergeEnvoyState } from '../tracking/envoy-state-merge';
import { LeaderFollower } from '../tracking/leader-follower';
import { NackAttributor, ObjectOwnership } from '../tracking/nack-attribution';
import { ObjectWatcher } from '../tracking/object-watcher';
import { ProvenanceWatermarks } from '../tracking/provenance-watermarks';
import { Recorder, UnrecordableEnvoyError } from '../tracking/recorder';
import { ProgressPublisher } from '../tracking/progress/progress-publisher';
import { recordsWithProgress } from '../tracking/progress/records-tee';
import { StateDemotion } from '../tracking/progress/state-demotion';
import { BackpressureController } from './backpressure';
import type { GatewayConfig } from './config';
import { GATEWAY_REDACT } from './logging';
import { createGatewayMetrics, type GatewayMetrics } from './metrics';
import { startOpsServer, type OpsServer } from './ops-server';

export interface GatewaySeams {
  clock?: Clock;
  /** Wraps the DynamoDB client's HTTP handler (tests inject faults below the SDK's retries). */
  store?: StoreClientSeams;
  /** Register default process metrics (off in tests that run several gateways in one process). */
  defaultMetrics?: boolean;
}

/**
 * How long a demoted Envoy's ACK events wait to share one event-log item (RecorderOptions.orphanEventHoldMs):
 * a change wave's answers arrive within about a second; nothing waits on these writes (the PROGRESS
 * item decides), but they are queued events meanwhile (the backpressure measure).
 */
const DEMOTED_EVENT_HOLD_MS = 1000;

export interface Gateway {
  xdsPort: number;
  opsPort: number;
  bootId: string;
  relay: Relay;
  tracker: EnvoyTracker;
  recorder: Recorder;
  /** The PROGRESS publisher (--progress; absent otherwise). */
  progress?: ProgressPublisher;
  /** Which states the recorder is handed (--state-writes class-changes; absent otherwise). */
  stateDemotion?: StateDemotion;
  store: DynamoEventStore;
  /** The version log's table side (written with --event-log-mode chunks; read by tests and diagnostics). */
  versionLog: VersionLog;
  barrier?: ObservedGenerationBarrier;
  provenance?: ProvenanceWatermarks;
  leader?: LeaderFollower;
  metrics: GatewayMetrics;
  /** Pauses the relay above the recorder's high-water mark (absent with --pause-on-backpressure false). */
  backpressure?: BackpressureController;
  ready(): boolean;
  /** Graceful shutdown; resolves when the recorder is flushed (or its timeout passed). */
  close(): Promise<void>;
}

const systemClock: Clock = { now: () => Date.now() };

function upstreamTls(config: GatewayConfig): RelayUpstreamTls | undefined {
  if (config.upstreamTlsCa === undefined) return undefined;
  // Paths only in config and logs; the bytes go straight to grpc.
  return {
    rootCerts: readFileSync(config.upstreamTlsCa),
    ...(config.upstreamTlsKey === undefined ? {} : { privateKey: readFileSync(config.upstreamTlsKey) }),
    ...(config.upstreamTlsCert === undefined ? {} : { certChain: readFileSync(config.upstreamTlsCert) }),
    ...(config.upstreamTlsServerName === undefined ? {} : { serverName: config.upstreamTlsServerName }),
  };
}

function listenTls(config: GatewayConfig): RelayListenTls | undefined {
  if (config.listenTlsCert === undefined || config.listenTlsKey === undefined) return undefined;
  return {
    certChain: readFileSync(config.listenTlsCert),
    privateKey: readFileSync(config.listenTlsKey),
    ...(config.listenTlsClientCa === undefined ? {} : { rootCerts: readFileSync(config.listenTlsClientCa) }),
    requireClientCert: config.listenTlsRequireClientCert,
    bindNodeIdToCert: config.bindNodeIdToCert,
  };
}

/** Resolves once an HTTP/2 connection to the control plane is up (the "upstream answered" part of readiness). */
function probeUpstream(target: string, tls: RelayUpstreamTls | undefined, onReady: () => void, logger: Logger): () => void {
  const credentials = tls === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(tls.rootCerts ?? null, tls.privateKey ?? null, tls.certChain ?? null);
  let client: grpc.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = (): void => {
    if (stopped) return;
    client = new grpc.Client(target, credentials, { 'grpc.use_local_subchannel_pool': 1 });
    client.waitForReady(Date.now() + 5000, (error) => {
      client?.close();
      if (stopped) return;
      if (error === undefined || error === null) {
        onReady();
        return;
      }
      logger.info({ target, err: error.message }, 'control plane not reachable yet');
      timer = setTimeout(attempt, 1000);
    });
  };
  attempt();
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    client?.close();
  };
}

function loadKubeConfig(config: GatewayConfig): KubeConfig | undefined {
  if (config.kubeconfig === undefined && !config.inCluster) return undefined;
  const kubeConfig = new KubeConfig();
  if (config.kubeconfig !== undefined) kubeConfig.loadFromFile(config.kubeconfig);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}

export async function startGateway(config: GatewayConfig, logger: Logger, seams: GatewaySeams = {}): Promise<Gateway> {
  const clock = seams.clock ?? systemClock;
  const bootId = config.bootId ?? randomBytes(6).toString('hex');
  // Redaction is set here, not only in main.ts, so every way of starting a gateway gets it.
  const log = logger.child({ instanceId: config.instanceId, bootId }, { redact: GATEWAY_REDACT });
  const metrics = createGatewayMetrics({ defaultMetrics: seams.defaultMetrics ?? true });

  // --- store
  const localCredentials = config.dynamodbEndpoint !== undefined && process.env['AWS_ACCESS_KEY_ID'] === undefined ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {};
  const table = openTable(
    {
      tableName: config.table,
      client: { region: config.region, maxAttempts: config.dynamodbMaxAttempts, ...(config.dynamodbEndpoint === undefined ? {} : { endpoint: config.dynamodbEndpoint }), ...localCredentials },
      logger: log.child({ component: 'store' }),
      clock,
    },
    seams.store ?? {},
  );
  const { store } = table;
  if (config.createTable) await table.ensureTable();
  let storeReachable = false;
  const probeStore = async (): Promise<void> => {
    // A read proves the table exists and we are authorised; the recorder's state proves writes.
    try {
      await store.getLineageState(`probe.${bootId}.probe`);
      storeReachable = true;
    } catch (error) {
      log.warn({ err: describeError(error) }, 'store not reachable yet');
      setTimeout(() => void probeStore(), 1000).unref();
    }
  };
  await probeStore();

  // --- tracking
  const lineageRegistry = table.aggregates;
  const recorder = new Recorder({
    store,
    logger: log.child({ component: 'recorder' }),
    clock,
    flushIntervalMs: config.flushIntervalMs,
    eventLogMode: config.eventLogMode === 'items' ? 'items' : 'carried',
    // --event-log-mode chunks: demoted Envoys' answers go to their lineage's version log.
    ...(config.eventLogMode === 'chunks' ? { versionLog: { log: table.versionLog, retentionMs: config.eventRetentionHours * 3600 * 1000 } } : {}),
    // Demoted states (below) leave most ACKs without a state to ride in: they go to event-log items,
    // a change wave's answers of one Envoy gathered into one (they arrive type by type).
    ...(config.progress && config.stateWrites === 'class-changes' ? { carryEventsInStoredState: false, orphanEventHoldMs: DEMOTED_EVENT_HOLD_MS } : {}),
    // A state that only records "a response was sent" waits for its ACK to share one write; never
    // longer than half the ACK timeout, so a STUCK report is never delayed past it.
    pendingStateHoldMs: Math.min(config.stateHoldMs, config.ackTimeoutMs / 2),
    highWaterEvents: config.queueHighWater,
    stateWriteConcurrency: config.stateWriteConcurrency,
    // This process's own lineages are told apart from other gateways' (envoy-state-merge.ts).
    mergeEnvoyState: (ours, stored) => mergeEnvoyState(ours, stored, (lineage) => ownsLineage(lineage, config.instanceId, bootId)),
    metrics: metrics.recorder,
    // Write-ahead registration of each new lineage in the convergence registry (docs/CONVERGENCE.md).
    registerLineage: (lineage, heartbeatAt) => registerLineageHeartbeats(lineageRegistry, new Map([[lineage, heartbeatAt]])),
    // A state the table can never hold: the Envoy is refused, not left waiting for a write that
    // never comes (docs/GATEWAY.md, "What an Envoy may send"). The relay exists by the time a
    // flush can find one (states come from its streams).
    onUnrecordable: (nodeId, reason) => {
      refusals.relay?.control.endStreamsOf(nodeId, grpc.status.INVALID_ARGUMENT, `the gateway cannot record this Envoy: ${reason.slice(0, 400)}`);
    },
  });
  // PROGRESS (--progress): the publisher is handed what the recorder is handed (records-tee.ts).
  const progress = config.progress
    ? new ProgressPublisher({
        store: table.progress,
        logger: log.child({ component: 'progress' }),
        clock,
        policy: { ttlMs: config.envoyTtlMs, ackTimeoutMs: config.ackTimeoutMs },
        requiredTypeUrls: config.requiredTypeUrls,
        timing: { heartbeatMs: config.lineageHeartbeatMs },
        // A lineage's item only once readers look at it (the registry): else a node could be in no read item.
        registered: (lineage) => recorder.lineageRegistered(lineage),
      })
    : undefined;
  // --state-writes class-changes: the recorder writes an Envoy's state only when its class changes
  // or its refresh is due (state-demotion.ts); the publisher still sees every state.
  const demotion =
    progress !== undefined && config.stateWrites === 'class-changes'
      ? new StateDemotion({ refreshMs: config.stateRefreshMs, ackTimeoutMs: config.ackTimeoutMs, requiredTypeUrls: config.requiredTypeUrls })
      : undefined;
  const records = progress === undefined ? recorder : recordsWithProgress(recorder, progress, demotion === undefined ? undefined : { filter: demotion, now: () => clock.now() });
  const refusals: { relay?: Relay } = {};
  /** Parts created after the relay that keep something per lineage (the barrier). */
  const forgetRetiredLineage: Array<(lineage: string) => void> = [];
  // NACK attribution (docs/CONVERGENCE.md): owners by the tracked objects' specs (the object watcher
  // feeds them) and, exactly, by provenance stamps (created just below, hence the late lookup).
  const ownership = new ObjectOwnership();
  const stampedOwners: { provenance?: ProvenanceWatermarks } = {};
  const tracker = new EnvoyTracker({
    attributor: new NackAttributor({ ownership, provenance: { ownersOf: (lineage, typeUrl, name) => stampedOwners.provenance?.ownersOf(lineage, typeUrl, name) } }),
    recorder: records,
    logger: log.child({ component: 'tracker' }),
    clock,
    ackTimeoutMs: config.ackTimeoutMs,
    eventRetentionMs: config.eventRetentionHours * 3600 * 1000,
    lineageHeartbeatMs: config.lineageHeartbeatMs,
    envoyHeartbeatMs: config.envoyHeartbeatMs,
    // PROGRESS counts a disconnected Envoy for the TTL from the tracker's memory (the publisher is
    // handed what the tracker forgets): forgotten sooner, it would leave the denominator while the
    // shard path, and the functions' rule, still count it.
    forgetDisconnectedMs: Math.max(FORGET_DISCONNECTED_MS, config.envoyTtlMs),
    metrics: metrics.tracker,
    // Only PROGRESS carries a relief, and only provenance stamps say which names matter to an object.
    namesHoldRelief: config.namesHoldRelief && config.progress && config.watermarks.length > 0 && config.watermarks.every((source) => source === 'provenance'),
  });
  const provenance = config.watermarks.includes('provenance')
    ? new ProvenanceWatermarks({ recorder: records, logger: log.child({ component: 'provenance' }), clock, lineageState: (lineage) => tracker.lineageState(lineage) })
    : undefined;
  if (provenance !== undefined) stampedOwners.provenance = provenance;

  // --- relay
  const tls = upstreamTls(config);
  const downstreamTls = listenTls(config);
  // The config parser lets plaintext through only on an explicit --insecure-plaintext /
  // --upstream-insecure-plaintext; say at every start what that exposes, so it is never silent.
  if (downstreamTls === undefined) {
    log.warn(
      { listen: `${config.listenHost}:${config.listenPort}` },
      'downstream xDS is PLAINTEXT (--insecure-plaintext): any pod that reaches this port and names a node cluster receives that group\'s configuration, SDS secrets included, and its ACK/NACKs are recorded as that node id',
    );
  }
  if (tls === undefined) {
    log.warn(
      { upstream: config.upstream },
      'upstream xDS is PLAINTEXT (--upstream-insecure-plaintext): anything on the path to the control plane can read the configuration, SDS secrets included, or change what every Envoy behind this gateway receives',
    );
  }
  const relay = await startRelay({
    listen: { host: config.listenHost, port: config.listenPort, ...(downstreamTls === undefined ? {} : { tls: downstreamTls }) },
    upstream: { target: config.upstream, ads: config.upstreamAds, ...(tls === undefined ? {} : { tls }) },
    instanceId: config.instanceId,
    bootId,
    // A grouping, not just a key function: the upstream node then carries what the key is made of.
    groupBy: nodeGroupingFromSpec(config.groupBy),
    groupIdleMs: config.groupIdleMs,
    metrics: metrics.relay,
    // Provenance watermarks promise monotone content per lineage; the guard refuses a response that
    // would break one (a lagging replica) and the relay moves the group to a new lineage.
    ...(provenance === undefined ? {} : { monotonicityGuard: (content: UpstreamContent) => provenance.regressionOf(content) }),
    // Moved or freed when idle, the lineage serves nothing more: its heartbeat stops (it leaves the
    // live set after the TTL, as a dead gateway's does) and what is kept per lineage goes.
    onLineageRetired: (group, lineage, cause) => {
      if (cause === 'moved') metrics.lineageMoved(group);
      else {
        metrics.groupFreed();
        tracker.forgetGroup(group);
      }
      tracker.retireLineage(lineage);
      recorder.retireLineage(lineage);
      progress?.retireLineage(lineage);
      provenance?.forgetLineage(lineage);
      seenLineages.delete(lineage);
      for (const forget of forgetRetiredLineage) forget(lineage);
    },
    // Stream admission: a new stream's first response waits until the recorder wrote the Envoy's
    // state for it, so its lineage's envoysRecorded counts it (docs/GATEWAY.md, "Stream admission").
    ...(config.streamAdmission ? { admission: ({ nodeId }: { nodeId: string }) => admitWhenRecorded(recorder, nodeId) } : {}),
    observer: tracker,
    // A removal waits for clients to move off what it removes (make-before-break.ts), but never past
    // the ACK timeout: a client silent that long is stuck, and holding the removal (and with it the
    // provenance watermark, which follows served content) would hide that behind "no watermark yet".
    makeBeforeBreakGraceMs: Math.min(config.ackTimeoutMs, DEFAULT_MAKE_BEFORE_BREAK_GRACE_MS),
    clock,
    logger: log.child({ component: 'relay' }),
    limits: {
      maxMessageBytes: config.maxMessageBytes,
      maxStreamsPerConnection: config.maxStreamsPerConnection,
      maxStreamsPerPeer: config.maxStreamsPerPeer,
      maxNodeIds: config.maxNodeIds,
      maxGroups: config.maxNodeGroups,
      ...(config.maxRequestsPerSecond > 0 ? { requestRate: { ratePerSecond: config.maxRequestsPerSecond, burst: config.requestBurst } } : {}),
    },
  });
  refusals.relay = relay;
  const backpressure = config.pauseOnBackpressure
    ? new BackpressureController({
        recorder,
        relay: relay.control,
        lowWaterEvents: config.queueLowWater ?? Math.floor(config.queueHighWater / 2),
        checkIntervalMs: config.flushIntervalMs,
        logger: log.child({ component: 'backpressure' }),
        onChange: (paused) => {
          metrics.relayPaused(paused);
          // The Envoys' answers wait unread while paused: not theirs to be stuck for.
          if (paused) tracker.readingPaused();
          else tracker.readingResumed();
        },
      })
    : undefined;

  // --- Kubernetes: leader following and barriers (read-only)
  const kubeConfig = loadKubeConfig(config);
  let leader: LeaderFollower | undefined;
  if (kubeConfig !== undefined && config.leaderLease !== undefined) {
    const [namespace, leaseName] = config.leaderLease.split('/') as [string, string];
    leader = new LeaderFollower({
      kubeConfig,
      namespace,
      leaseName,
      mapping: {
        ...(config.leaderTargetAnnotation === undefined ? {} : { annotation: config.leaderTargetAnnotation }),
        ...(config.leaderTargets === undefined ? {} : { targets: config.leaderTargets }), ...(config.leaderTargetTemplate === undefined ? {} : { template: config.leaderTargetTemplate }) },
      relay: relay.control,
      logger: log.child({ component: 'leader' }),
    });
  }
  let barrier: ObservedGenerationBarrier | undefined;
  let watcher: ObjectWatcher | undefined;
  if (kubeConfig !== undefined && config.watermarks.includes('barrier') && config.trackedKinds.length > 0) {
    barrier = new ObservedGenerationBarrier({
      relay: relay.control,
      recorder: records,
      logger: log.child({ component: 'barrier' }),
      clock,
      ...(leader === undefined ? {} : { leader }),
      leaderSettleMs: config.leaderSettleMs,
      metrics: metrics.barrier,
    });
    const created = barrier;
    forgetRetiredLineage.push((lineage) => created.forgetLineage(lineage));
    watcher = new ObjectWatcher({ kubeConfig, kinds: config.trackedKinds, barrier, ownership, logger: log.child({ component: 'watch' }) });
  }
  const seenLineages = new Set<string>();
  tracker.onUpstreamApplied((e) => {
    provenance?.upstreamApplied(e);
    // A new lineage needs barriers for everything already known once its upstream has answered.
    if (!seenLineages.has(e.lineage)) {
      seenLineages.add(e.lineage);
      barrier?.lineagesChanged();
    }
  });
  await leader?.start();
  await watcher?.start();

  // --- ops
  let upstreamAnswered = false;
  const stopProbe = probeUpstream(config.upstream, tls, () => {
    upstreamAnswered = true;
    log.info({ target: config.upstream }, 'control plane reachable');
  }, log);
  let shuttingDown = false;
  const readiness = [
    { name: 'shutting-down', ok: () => !shuttingDown },
    { name: 'upstream', ok: () => upstreamAnswered || tracker.upstreamReady() },
    { name: 'store', ok: () => storeReachable && recorder.stats().consecutiveFailures < 3 },
    { name: 'backpressure', ok: () => !recorder.pressure() },
  ];
  metrics.attach({
    tracker,
    recorder,
    openStreams: () => relay.openStreams(),
    liveGroups: () => relay.control.groups().map((info) => info.group),
    ...(demotion === undefined ? {} : { stateDemotion: () => demotion.stats() }),
    ...(progress === undefined ? {} : { progressWrites: () => progress.stats().writesBy }),
  });
  const ops: OpsServer = await startOpsServer({ host: config.opsHost, port: config.opsPort, registry: metrics.registry, readiness, logger: log.child({ component: 'ops' }) });
  log.info({ xdsPort: relay.port, opsPort: ops.port, upstream: config.upstream, watermarks: config.watermarks, kinds: config.trackedKinds.map((k) => k.kind) }, 'gateway started');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shuttingDown = true;
      log.info('gateway shutting down');
      stopProbe();
      await watcher?.stop().catch((error: unknown) => log.warn({ err: describeError(error) }, 'watch stop failed'));
      await leader?.stop().catch((error: unknown) => log.warn({ err: describeError(error) }, 'lease watch stop failed'));
      barrier?.stop();
      backpressure?.stop();
      await relay.control.close({ graceMs: config.shutdownGraceMs });
      tracker.stop();
      const left = await recorder.close(config.flushTimeoutMs);
      if (!recorder.isEmpty()) log.error({ left }, 'recorder could not flush everything before the timeout');
      else log.info({ eventsWritten: left.eventsWritten }, 'recorder flushed');
      await progress?.close(config.flushTimeoutMs);
      await ops.close();
      table.close();
    })();
    return closing;
  };

  return {
    xdsPort: relay.port,
    opsPort: ops.port,
    bootId,
    relay,
    tracker,
    recorder,
    ...(progress === undefined ? {} : { progress }),
    ...(demotion === undefined ? {} : { stateDemotion: demotion }),
    store,
    versionLog: table.versionLog,
    ...(barrier === undefined ? {} : { barrier }),
    ...(provenance === undefined ? {} : { provenance }),
    ...(leader === undefined ? {} : { leader }),
    ...(backpressure === undefined ? {} : { backpressure }),
    metrics,
    ready: () => readiness.every((check) => check.ok()),
    close,
  };
}

/**
 * Stream admission (docs/GATEWAY.md, "Stream admission"): waits until the recorder wrote the Envoy's
 * state; a state the recorder can never write refuses the stream for good (INVALID_ARGUMENT with the
 * reason) instead of the "reconnect" of a transient failure.
 */
function admitWhenRecorded(recorder: Recorder, nodeId: string): Promise<void> {
  return recorder.whenStateWritten(nodeId).catch((error: unknown) => {
    if (error instanceof UnrecordableEnvoyError) throw new AdmissionRefused(`the gateway cannot record this Envoy: ${error.message.slice(0, 400)}`);
    throw error;
  });
}
