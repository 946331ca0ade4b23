// Gateway configuration from flags and environment (flags win). commander reads them, zod validates
// them: a bad value is a clear error naming the flag and its variable, never a half-started gateway.
// docs/GATEWAY.md has the reference table; keep both in sync.
import { Command, CommanderError, Option } from 'commander';
import { STATE_WRITES } from '../tracking/progress/state-demotion';
import { z } from 'zod';
import { CDS_TYPE_URL, EDS_TYPE_URL, isValidTypeUrl, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { describeTrackedKindIssues } from '../../common/tracked-kinds';
import { HTTPPROXY_KIND, HTTPROUTE_KIND, TrackedKindsSchema, type TrackedKind } from '../tracking/tracked-kinds';

const lineagePart = z.string().regex(/^[a-z0-9-]{1,63}$/, 'must be 1-63 of [a-z0-9-]');
const port = z.coerce.number().int().min(0).max(65535);
const positiveMs = z.coerce.number().int().positive();
const flag = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
  .transform((value) => value === true || value === 'true' || value === '1');

const WATERMARK_SOURCES = ['provenance', 'barrier'] as const;

/** Presets for --tracked-kinds; anything else must be a JSON array of TrackedKind. */
const KIND_PRESETS: Record<string, TrackedKind> = { httpproxy: HTTPPROXY_KIND, httproute: HTTPROUTE_KIND };

function parseTrackedKinds(text: string, ctx: z.RefinementCtx): TrackedKind[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  if (!trimmed.startsWith('[')) {
    const kinds: TrackedKind[] = [];
    for (const name of trimmed.split(',').map((part) => part.trim().toLowerCase()).filter(Boolean)) {
      const preset = KIND_PRESETS[name];
      if (preset === undefined) {
        ctx.addIssue({ code: 'custom', message: `unknown kind preset ${JSON.stringify(name)} (presets: ${Object.keys(KIND_PRESETS).join(', ')}; or give a JSON array)` });
        return z.NEVER;
      }
      kinds.push(preset);
    }
    return kinds;
  }
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `not JSON: ${String(error)}` });
    return z.NEVER;
  }
  const parsed = TrackedKindsSchema.safeParse(json);
  if (!parsed.success) {
    ctx.addIssue({ code: 'custom', message: describeTrackedKindIssues(parsed.error) });
    return z.NEVER;
  }
  return parsed.data;
}

function parseJsonRecord(text: string, ctx: z.RefinementCtx): Record<string, string> {
  try {
    const parsed = z.record(z.string(), z.string().min(1)).safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object of holder → "host:port"' });
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `not JSON: ${String(error)}` });
  }
  return z.NEVER;
}

const configSchema = z
  .object({
    listenHost: z.string().min(1),
    listenPort: port,
    opsHost: z.string().min(1),
    opsPort: port,
    upstream: z.string().regex(/^[^\s]+:[0-9]{1,5}$/, 'must be host:port'),
    upstreamAds: flag,
    upstreamTlsCa: z.string().min(1).optional(),
    upstreamTlsCert: z.string().min(1).optional(),
    upstreamTlsKey: z.string().min(1).optional(),
    upstreamTlsServerName: z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'must be a DNS name').optional(),
    listenTlsCert: z.string().min(1).optional(),
    listenTlsKey: z.string().min(1).optional(),
    listenTlsClientCa: z.string().min(1).optional(),
    listenTlsRequireClientCert: flag,
    insecurePlaintext: flag,
    upstreamInsecurePlaintext: flag,
    maxStreamsPerConnection: z.coerce.number().int().positive(),
    maxStreamsPerPeer: z.coerce.number().int().positive(),
    maxNodeIds: z.coerce.number().int().positive(),
    maxNodeGroups: z.coerce.number().int().positive(),
    groupIdleMs: z.coerce.number().int().nonnegative().max(2_147_483_647),
    bindNodeIdToCert: flag,
    maxRequestsPerSecond: z.coerce.number().nonnegative(),
    requestBurst: z.coerce.number().int().positive(),
    instanceId: lineagePart,
    bootId: lineagePart.optional(),
    groupBy: z.string().regex(/^(cluster|metadata:.+)$/, 'must be "cluster" or "metadata:<field>"'),
    table: z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'DynamoDB table names are 3-255 of [A-Za-z0-9_.-]'),
    dynamodbEndpoint: z.url().optional(),
    region: z.string().min(1),
    createTable: flag,
    dynamodbMaxAttempts: z.coerce.number().int().min(1).max(20),
    ackTimeoutMs: positiveMs,
    eventRetentionHours: z.coerce.number().positive(),
    flushIntervalMs: positiveMs,
    eventLogMode: z.enum(['carried', 'items', 'chunks']).optional(),
    queueHighWater: positiveMs,
    queueLowWater: z.coerce.number().int().nonnegative().optional(),
    pauseOnBackpressure: flag,
    streamAdmission: flag,
    progress: flag,
    namesHoldRelief: flag,
    stateWrites: z.enum(STATE_WRITES).optional(),
    stateRefreshMs: positiveMs,
    envoyTtlMs: positiveMs,
    requiredTypeUrls: z
      .string()
      .transform((text) => text.split(',').map((part) => part.trim()).filter(Boolean))
      .refine((urls) => urls.every(isValidTypeUrl), { message: 'has an invalid type URL' }),
    stateWriteConcurrency: z.coerce.number().int().min(1).max(1024),
    stateHoldMs: z.coerce.number().int().nonnegative(),
    lineageHeartbeatMs: positiveMs,
    envoyHeartbeatMs: positiveMs,
    maxMessageBytes: positiveMs,
    watermarks: z
      .string()
      .transform((text) => text.split(',').map((part) => part.trim()).filter(Boolean))
      .pipe(z.array(z.enum(WATERMARK_SOURCES))),
    kubeconfig: z.string().min(1).optional(),
    inCluster: flag,
    trackedKinds: z.string().transform(parseTrackedKinds),
    leaderLease: z.string().regex(/^[a-z0-9-]+\/[a-z0-9.-]+$/, 'must be <namespace>/<name>').optional(),
    leaderTargets: z.string().transform(parseJsonRecord).optional(),
    leaderTargetAnnotation: z.string().min(1).optional(),
    leaderTargetTemplate: z.string().includes('{holder}', { message: 'must contain {holder}' }).optional(),
    leaderSettleMs: z.coerce.number().int().nonnegative(),
    logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    shutdownGraceMs: z.coerce.number().int().nonnegative(),
    flushTimeoutMs: positiveMs,
  })
  .superRefine((config, ctx) => {
    const tls = [config.upstreamTlsCa, config.upstreamTlsCert, config.upstreamTlsKey];
    if ((config.upstreamTlsCert === undefined) !== (config.upstreamTlsKey === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['upstreamTlsCert'], message: '--upstream-tls-cert and --upstream-tls-key go together (mTLS)' });
    }
    if (config.upstreamTlsServerName !== undefined && config.upstreamTlsCa === undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstreamTlsServerName'], message: '--upstream-tls-server-name needs --upstream-tls-ca (TLS to the control plane)' });
    }
    if (tls.some((v) => v !== undefined) && config.upstreamTlsCa === undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstreamTlsCa'], message: '--upstream-tls-ca is required for TLS to the control plane' });
    }
    if ((config.listenTlsCert === undefined) !== (config.listenTlsKey === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['listenTlsCert'], message: '--listen-tls-cert and --listen-tls-key go together' });
    }
    if (config.listenTlsClientCa !== undefined && config.listenTlsCert === undefined) {
      ctx.addIssue({ code: 'custom', path: ['listenTlsClientCa'], message: '--listen-tls-client-ca needs --listen-tls-cert and --listen-tls-key' });
    }
    if (config.listenTlsRequireClientCert && config.listenTlsClientCa === undefined) {
      ctx.addIssue({ code: 'custom', path: ['listenTlsRequireClientCert'], message: '--listen-tls-require-client-cert needs --listen-tls-client-ca (mTLS)' });
    }
    // The binding compares node.id with the SANs of a certificate the handshake verified: without a
    // required client certificate there is nothing trustworthy to compare with.
    if (config.bindNodeIdToCert && (config.listenTlsClientCa === undefined || !config.listenTlsRequireClientCert)) {
      ctx.addIssue({ code: 'custom', path: ['bindNodeIdToCert'], message: '--bind-node-id-to-cert needs --listen-tls-client-ca and --listen-tls-require-client-cert true (mTLS)' });
    }
    // Plaintext is a choice someone makes, never what a forgotten flag gives: over a plaintext xDS
    // port anything that reaches it and names a node cluster receives that group's configuration,
    // SDS secrets included (docs/SECURITY.md). Each link has its own opt-in, because the upstream one
    // is often the control plane's choice (Contour run with --insecure) while the gateway serves TLS.
    if (config.listenTlsCert === undefined && !config.insecurePlaintext) {
      ctx.addIssue({ code: 'custom', path: ['insecurePlaintext'], message: 'downstream xDS has no TLS: give --listen-tls-cert and --listen-tls-key, or --insecure-plaintext to serve Envoys in plaintext' });
    }
    if (config.listenTlsCert !== undefined && config.insecurePlaintext) {
      ctx.addIssue({ code: 'custom', path: ['insecurePlaintext'], message: '--insecure-plaintext contradicts --listen-tls-cert: drop one' });
    }
    if (config.upstreamTlsCa === undefined && !config.upstreamInsecurePlaintext) {
      ctx.addIssue({ code: 'custom', path: ['upstreamInsecurePlaintext'], message: 'the control plane connection has no TLS: give --upstream-tls-ca, or --upstream-insecure-plaintext to subscribe in plaintext' });
    }
    if (config.upstreamTlsCa !== undefined && config.upstreamInsecurePlaintext) {
      ctx.addIssue({ code: 'custom', path: ['upstreamInsecurePlaintext'], message: '--upstream-insecure-plaintext contradicts --upstream-tls-ca: drop one' });
    }
    // Without PROGRESS nothing else carries an Envoy's progress: every state must be written.
    if (config.stateWrites === 'class-changes' && !config.progress) {
      ctx.addIssue({ code: 'custom', path: ['stateWrites'], message: '--state-writes class-changes needs --progress true (the PROGRESS item carries what the demoted states would)' });
    }
    if (config.queueLowWater !== undefined && config.queueLowWater >= config.queueHighWater) {
      ctx.addIssue({ code: 'custom', path: ['queueLowWater'], message: 'must be below --queue-high-water' });
    }
    const kube = config.kubeconfig !== undefined || config.inCluster;
    if (config.watermarks.includes('barrier') && config.trackedKinds.length > 0 && !kube) {
      ctx.addIssue({ code: 'custom', path: ['kubeconfig'], message: 'the barrier watermark source needs --kubeconfig or --in-cluster' });
    }
    if (config.leaderLease !== undefined && config.leaderTargets === undefined && config.leaderTargetTemplate === undefined && config.leaderTargetAnnotation === undefined) {
      ctx.addIssue({ code: 'custom', path: ['leaderLease'], message: '--leader-lease needs --leader-target-annotation, --leader-targets or --leader-target-template' });
    }
    if (config.leaderLease !== undefined && !kube) {
      ctx.addIssue({ code: 'custom', path: ['leaderLease'], message: '--leader-lease needs --kubeconfig or --in-cluster' });
    }
  })
  // The fleet-size path is the default (docs/ARCHITECTURE.md, "Design: work per change proportional to
  // gateways"): with PROGRESS published, states are written on class changes and the answers go to the
  // version log unless said otherwise; --progress false alone gives the shard path whole.
  .transform((config) => {
    const stateWrites = config.stateWrites ?? (config.progress ? 'class-changes' : 'every');
    return { ...config, stateWrites, eventLogMode: config.eventLogMode ?? (stateWrites === 'class-changes' ? 'chunks' : 'carried') };
  });

export type GatewayConfig = z.output<typeof configSchema>;

interface FlagSpec {
  key: keyof z.input<typeof configSchema>;
  flags: string;
  env: string;
  description: string;
  default?: string;
  /** A default that depends on other options (resolved after parsing), for help and docs only. */
  defaultNote?: string;
}

/** One row per option: the flag, its environment variable, its default. */
export const FLAGS: readonly FlagSpec[] = [
  // All interfaces: Envoys in other pods are what the port is for. It is TLS unless --insecure-plaintext
  // says otherwise, and the NetworkPolicy (infra/kubernetes) limits who may connect.
  { key: 'listenHost', flags: '--listen-host <host>', env: 'XDS_LISTEN_HOST', description: 'address Envoys connect to', default: '0.0.0.0' },
  { key: 'listenPort', flags: '--listen-port <port>', env: 'XDS_LISTEN_PORT', description: 'xDS port (0: random)', default: '18000' },
  // Loopback by default: /metrics tells whoever reaches it the fleet's size and node groups. A pod
  // sets its own address (kubelet probes reach the pod IP) and a NetworkPolicy narrows it.
  { key: 'opsHost', flags: '--ops-host <host>', env: 'OPS_HOST', description: 'address of /healthz, /readyz, /metrics (kubelet probes need the pod address, e.g. 0.0.0.0)', default: '127.0.0.1' },
  { key: 'opsPort', flags: '--ops-port <port>', env: 'OPS_PORT', description: 'ops HTTP port (0: random)', default: '9090' },
  { key: 'upstream', flags: '--upstream <host:port>', env: 'UPSTREAM_TARGET', description: 'control plane xDS address (required)' },
  { key: 'upstreamAds', flags: '--upstream-ads <bool>', env: 'UPSTREAM_ADS', description: 'subscribe upstream over ADS (false: per-type services)', default: 'true' },
  { key: 'upstreamTlsCa', flags: '--upstream-tls-ca <path>', env: 'UPSTREAM_TLS_CA', description: 'CA bundle to verify the control plane (enables TLS)' },
  { key: 'upstreamTlsCert', flags: '--upstream-tls-cert <path>', env: 'UPSTREAM_TLS_CERT', description: 'client certificate for mTLS to the control plane' },
  { key: 'upstreamTlsKey', flags: '--upstream-tls-key <path>', env: 'UPSTREAM_TLS_KEY', description: 'client key for mTLS to the control plane' },
  {
    key: 'upstreamTlsServerName',
    flags: '--upstream-tls-server-name <name>',
    env: 'UPSTREAM_TLS_SERVER_NAME',
    description: "name the control plane's certificate must carry, whatever address is dialled (following a leader by pod address: Contour's certificate names its Service, not each pod)",
  },
  { key: 'listenTlsCert', flags: '--listen-tls-cert <path>', env: 'XDS_LISTEN_TLS_CERT', description: 'PEM certificate chain Envoys see (enables TLS downstream)' },
  { key: 'listenTlsKey', flags: '--listen-tls-key <path>', env: 'XDS_LISTEN_TLS_KEY', description: 'PEM private key of --listen-tls-cert' },
  { key: 'listenTlsClientCa', flags: '--listen-tls-client-ca <path>', env: 'XDS_LISTEN_TLS_CLIENT_CA', description: 'CA bundle Envoy client certificates must chain to' },
  { key: 'listenTlsRequireClientCert', flags: '--listen-tls-require-client-cert <bool>', env: 'XDS_LISTEN_TLS_REQUIRE_CLIENT_CERT', description: 'refuse Envoys without a valid client certificate (mTLS)', default: 'false' },
  { key: 'insecurePlaintext', flags: '--insecure-plaintext [bool]', env: 'INSECURE_PLAINTEXT', description: 'serve Envoys without TLS (required when --listen-tls-cert is not given; local use)', default: 'false' },
  { key: 'upstreamInsecurePlaintext', flags: '--upstream-insecure-plaintext [bool]', env: 'UPSTREAM_INSECURE_PLAINTEXT', description: 'subscribe to the control plane without TLS (required when --upstream-tls-ca is not given)', default: 'false' },
  { key: 'maxStreamsPerConnection', flags: '--max-streams-per-connection <n>', env: 'MAX_STREAMS_PER_CONNECTION', description: 'HTTP/2 concurrent streams per Envoy connection', default: '100' },
  { key: 'maxStreamsPerPeer', flags: '--max-streams-per-peer <n>', env: 'MAX_STREAMS_PER_PEER', description: 'live xDS streams per remote IP address (all its connections); over it RESOURCE_EXHAUSTED', default: '256' },
  { key: 'maxNodeIds', flags: '--max-node-ids <n>', env: 'MAX_NODE_IDS', description: 'distinct node ids with a live stream; a new one over it is refused RESOURCE_EXHAUSTED', default: '20000' },
  { key: 'maxNodeGroups', flags: '--max-node-groups <n>', env: 'MAX_NODE_GROUPS', description: 'live node groups (each holds upstream streams); a new one over it is refused RESOURCE_EXHAUSTED', default: '1000' },
  { key: 'groupIdleMs', flags: '--group-idle-ms <ms>', env: 'GROUP_IDLE_MS', description: 'a node group without streams this long is freed (upstream subscriptions cancelled); its next Envoy starts a new lineage', default: '60000' },
  { key: 'bindNodeIdToCert', flags: '--bind-node-id-to-cert <bool>', env: 'BIND_NODE_ID_TO_CERT', description: 'node.id must be a DNS or URI SAN of the client certificate, else PERMISSION_DENIED (needs mTLS)', default: 'false' },
  { key: 'maxRequestsPerSecond', flags: '--max-requests-per-second <n>', env: 'MAX_REQUESTS_PER_SECOND', description: 'per-stream request rate (0: unlimited); over it the stream ends RESOURCE_EXHAUSTED', default: '100' },
  { key: 'requestBurst', flags: '--request-burst <n>', env: 'REQUEST_BURST', description: 'requests a stream may send at once above the rate', default: '200' },
  { key: 'instanceId', flags: '--instance-id <id>', env: 'INSTANCE_ID', description: 'this gateway instance ([a-z0-9-]); default: sanitised HOSTNAME' },
  { key: 'bootId', flags: '--boot-id <id>', env: 'BOOT_ID', description: 'this process lifetime ([a-z0-9-]); default: random (tests only should set it)' },
  { key: 'groupBy', flags: '--group-by <key>', env: 'GROUP_BY', description: 'node group: "cluster" or "metadata:<field>"', default: 'cluster' },
  { key: 'table', flags: '--table <name>', env: 'TABLE_NAME', description: 'DynamoDB table (required)' },
  { key: 'dynamodbEndpoint', flags: '--dynamodb-endpoint <url>', env: 'DYNAMODB_ENDPOINT', description: 'DynamoDB endpoint (local dynamo); default: AWS' },
  { key: 'region', flags: '--region <region>', env: 'AWS_REGION', description: 'AWS region', default: 'us-east-1' },
  { key: 'dynamodbMaxAttempts', flags: '--dynamodb-max-attempts <n>', env: 'DYNAMODB_MAX_ATTEMPTS', description: 'SDK attempts per request (throttling, 5xx) before the recorder re-queues', default: '5' },
  { key: 'createTable', flags: '--create-table <bool>', env: 'CREATE_TABLE', description: 'create the table if missing (local use)', default: 'false' },
  { key: 'ackTimeoutMs', flags: '--ack-timeout-ms <ms>', env: 'ACK_TIMEOUT_MS', description: 'unanswered response → STUCK after this', default: '30000' },
  { key: 'eventRetentionHours', flags: '--event-retention-hours <h>', env: 'EVENT_RETENTION_HOURS', description: 'ttl of ACK/NACK/STUCK events', default: '168' },
  { key: 'flushIntervalMs', flags: '--flush-interval-ms <ms>', env: 'FLUSH_INTERVAL_MS', description: 'recorder flush window (state writes coalesce within it)', default: '100' },
  { key: 'eventLogMode', flags: '--event-log-mode <mode>', env: 'EVENT_LOG_MODE', description: 'carried: ACK/NACK/STUCK events ride in the Envoy\'s STATE write and move to log items in groups (≤ 1 item write per ACK); items: one EVENT item per event (the earlier layout; use it while older gateways or expire functions still run); chunks: as carried, but the ACK and STUCK events of Envoys with no state write to carry them go into their lineage\'s version log, one item per type, seq and second (docs/GATEWAY.md, "The version log"; for --state-writes class-changes)', defaultNote: 'chunks with --state-writes class-changes, else carried' },
  { key: 'queueHighWater', flags: '--queue-high-water <n>', env: 'QUEUE_HIGH_WATER', description: 'queued events above which the gateway reports not ready', default: '50000' },
  { key: 'queueLowWater', flags: '--queue-low-water <n>', env: 'QUEUE_LOW_WATER', description: 'queued events at or below which paused streams resume; default: half the high-water mark' },
  { key: 'pauseOnBackpressure', flags: '--pause-on-backpressure <bool>', env: 'PAUSE_ON_BACKPRESSURE', description: 'pause downstream reads and responses above the high-water mark', default: 'true' },
  { key: 'streamAdmission', flags: '--stream-admission <bool>', env: 'STREAM_ADMISSION', description: 'hold a new stream\'s first response until the Envoy is durably counted (false: config flows even while DynamoDB is unwritable, and an Envoy can be uncounted for one flush)', default: 'true' },
  { key: 'progress', flags: '--progress <bool>', env: 'PROGRESS', description: 'publish each lineage\'s PROGRESS item (docs/GATEWAY.md, "PROGRESS"), from which the functions decide (PROGRESS_EVALUATION, on by default); false: the shard path, for functions with PROGRESS_EVALUATION=false', default: 'true' },
  { key: 'namesHoldRelief', flags: '--names-hold-relief <bool>', env: 'NAMES_HOLD_RELIEF', description: 'with --progress and --watermarks provenance: an Envoy held by names it added and was not served counts as programmed for the objects those names do not matter to, by their provenance stamps (docs/ARCHITECTURE.md, "A names hold is held against the objects that route to the names"); false: held for every object', default: 'true' },
  { key: 'stateWrites', flags: '--state-writes <mode>', env: 'STATE_WRITES', description: 'every: each Envoy state change is written; class-changes: only connects, disconnects, NACKs, STUCK, subscription changes and a refresh (needs --progress and PROGRESS_EVALUATION=true on the functions; docs/GATEWAY.md, "PROGRESS")', defaultNote: 'class-changes with --progress, else every' },
  { key: 'stateRefreshMs', flags: '--state-refresh-ms <ms>', env: 'STATE_REFRESH_MS', description: 'with --state-writes class-changes: longest time an Envoy state that only moved progress waits for its write', default: '900000' },
  { key: 'envoyTtlMs', flags: '--envoy-ttl-ms <ms>', env: 'ENVOY_TTL_MS', description: 'the convergence functions\' ENVOY_TTL_MS: PROGRESS counts a disconnected Envoy this long', default: '300000' },
  // The same four types serverless.yml gives the functions: an item judged with fewer is read as
  // unknown by them (core requiredTypesMissing), so the two defaults must agree.
  { key: 'requiredTypeUrls', flags: '--required-type-urls <list>', env: 'REQUIRED_TYPE_URLS', description: 'the convergence functions\' REQUIRED_TYPE_URLS (comma-separated; "" for none), for PROGRESS: an item judged with fewer types than the functions require is read as unknown', default: [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].join(',') },
  { key: 'stateWriteConcurrency', flags: '--state-write-concurrency <n>', env: 'STATE_WRITE_CONCURRENCY', description: 'parallel conditional Envoy state writes per flush', default: '64' },
  { key: 'stateHoldMs', flags: '--state-hold-ms <ms>', env: 'STATE_HOLD_MS', description: 'how long an Envoy state may wait for the answers still due from that Envoy (other types sent, not yet ACKed) so that one write records them all; at most half the ACK timeout; 0: never held', default: '8000' },
  { key: 'lineageHeartbeatMs', flags: '--lineage-heartbeat-ms <ms>', env: 'LINEAGE_HEARTBEAT_MS', description: 'LINEAGE item heartbeat period', default: '5000' },
  { key: 'envoyHeartbeatMs', flags: '--envoy-heartbeat-ms <ms>', env: 'ENVOY_HEARTBEAT_MS', description: 'refresh lastSeenAt of idle connected Envoys (< expiry TTL)', default: '60000' },
  { key: 'maxMessageBytes', flags: '--max-message-bytes <n>', env: 'MAX_MESSAGE_BYTES', description: 'largest downstream xDS request', default: String(4 * 1024 * 1024) },
  { key: 'watermarks', flags: '--watermarks <list>', env: 'WATERMARKS', description: 'watermark sources: provenance and/or barrier (barrier needs Kubernetes access)', default: 'provenance' },
  { key: 'kubeconfig', flags: '--kubeconfig <path>', env: 'KUBECONFIG', description: 'kubeconfig for the barrier and leader watch' },
  { key: 'inCluster', flags: '--in-cluster <bool>', env: 'IN_CLUSTER', description: 'use the pod service account', default: 'false' },
  { key: 'trackedKinds', flags: '--tracked-kinds <kinds>', env: 'TRACKED_KINDS', description: 'presets (httpproxy,httproute) or a JSON array of {group,version,kind,plural,signal}', default: 'httpproxy' },
  { key: 'leaderLease', flags: '--leader-lease <ns/name>', env: 'LEADER_LEASE', description: 'control plane leader-election Lease to follow' },
  { key: 'leaderTargets', flags: '--leader-targets <json>', env: 'LEADER_TARGETS', description: 'JSON map holderIdentity → "host:port"' },
  { key: 'leaderTargetAnnotation', flags: '--leader-target-annotation <key>', env: 'LEADER_TARGET_ANNOTATION', description: 'Lease annotation holding the leader\'s xDS address (e.g. xds-programmed.dev/xds-address)' },
  { key: 'leaderTargetTemplate', flags: '--leader-target-template <t>', env: 'LEADER_TARGET_TEMPLATE', description: 'upstream for a holder, e.g. "{holder}.contour:8001"' },
  { key: 'leaderSettleMs', flags: '--leader-settle-ms <ms>', env: 'LEADER_SETTLE_MS', description: 'wait after a leader change before trusting barriers', default: '500' },
  { key: 'logLevel', flags: '--log-level <level>', env: 'LOG_LEVEL', description: 'pino level', default: 'info' },
  { key: 'shutdownGraceMs', flags: '--shutdown-grace-ms <ms>', env: 'SHUTDOWN_GRACE_MS', description: 'time Envoys get to finish before streams are cancelled', default: '2000' },
  { key: 'flushTimeoutMs', flags: '--flush-timeout-ms <ms>', env: 'FLUSH_TIMEOUT_MS', description: 'longest final recorder flush on shutdown', default: '10000' },
];

export function buildCommand(): Command {
  const command = new Command('xds-gateway')
    .description('xDS gateway: relays config to Envoys and records every ACK/NACK in DynamoDB')
    .exitOverride()
    .configureOutput({ writeErr: () => undefined })
    .allowExcessArguments(false);
  for (const spec of FLAGS) {
    const option = new Option(spec.flags, spec.description);
    if (spec.default !== undefined) option.default(spec.default);
    command.addOption(option);
  }
  return command;
}

export type ConfigResult =
  | { kind: 'ok'; config: GatewayConfig }
  | { kind: 'help'; text: string }
  | { kind: 'error'; message: string };

/** Sanitises a hostname into a lineage part (pod names are already close). */
export function instanceIdFromHostname(hostname: string | undefined): string | undefined {
  if (hostname === undefined) return undefined;
  const cleaned = hostname.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 63).replace(/^-+|-+$/g, '');
  return cleaned === '' ? undefined : cleaned;
}

/** Parses argv (without node and script) and env (flags win over env, env over defaults); never exits. */
export function parseGatewayConfig(argv: readonly string[], env: Record<string, string | undefined>): ConfigResult {
  const command = buildCommand();
  if (argv.includes('--help') || argv.includes('-h')) return { kind: 'help', text: helpText(command) };
  try {
    command.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return { kind: 'error', message: error.message };
    throw error;
  }
  const raw = command.opts<Record<string, unknown>>();
  for (const spec of FLAGS) {
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined && fromEnv !== '' && command.getOptionValueSource(spec.key) !== 'cli') raw[spec.key] = fromEnv;
  }
  if (raw['instanceId'] === undefined) {
    const fromHost = instanceIdFromHostname(env['HOSTNAME']);
    if (fromHost !== undefined) raw['instanceId'] = fromHost;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? '');
      const spec = FLAGS.find((f) => f.key === key);
      const where = spec === undefined ? key : `${spec.flags.split(' ')[0]} (${spec.env})`;
      return `${where}: ${issue.message}`;
    });
    return { kind: 'error', message: `invalid configuration:\n  ${lines.join('\n  ')}` };
  }
  return { kind: 'ok', config: parsed.data };
}

function helpText(command: Command): string {
  const rows = FLAGS.map((f) => `  ${f.flags.padEnd(34)} ${f.description} [env ${f.env}${(f.default ?? f.defaultNote) === undefined ? '' : `, default ${f.default ?? f.defaultNote}`}]`);
  return `${command.description()}\n\nUsage: xds-gateway [options]\n\nOptions:\n${rows.join('\n')}\n  -h, --help                         this text\n`;
}
