// Options of the whole local system (`npm start`, tests), with the embedded defaults. Validated with
// zod at the edge so a bad flag is a clear message, never a half-started system.
import { z } from 'zod';
import { routeWatchSchema } from '../envoys/route-watch';

/** Where the local system runs the gateway (localSystemOptions gatewayProcess). */
export const GATEWAY_PROCESSES = ['inline', 'child', 'bundle'] as const;
export type GatewayProcess = (typeof GATEWAY_PROCESSES)[number];

export const localSystemOptionsSchema = z
  .object({
    /** Simulated Envoys (ADS SotW, all four types, wildcard); beyond 5,000, split among gateway replicas. */
    envoys: z.number().int().min(0).max(10_000).default(8),
    /** Real @grpc/grpc-js-xds clients (each its own node id and ADS stream). */
    grpcClients: z.number().int().min(0).max(50).default(2),
    /** Sample HTTPProxy objects applied at start (created a few at a time; the bench goes to 10,000). */
    objects: z.number().int().min(0).max(10_000).default(3),
    /** Fraction of the simulated Envoys that NACK the clusters of the first sample object. */
    nackRate: z.number().min(0).max(1).default(0),
    /** Simulated Envoys that ACK only after `slowAckMs` (longer than the ACK timeout: reported stuck first). */
    slowEnvoys: z.number().int().min(0).default(0),
    slowAckMs: z.number().int().min(0).default(15_000),
    /**
     * The simulated Envoys' xDS variant on their ADS stream: 'sotw' (default; Contour's Envoys) or
     * 'delta' (incremental; Envoy Gateway's default), whose responses carry only what changed.
     */
    fleetProtocol: z.enum(['sotw', 'delta']).default('sotw'),
    /** Control-plane replicas (Lease leader election; only the leader writes status). */
    controlPlaneReplicas: z.number().int().min(1).max(5).default(2),
    /**
     * Which control plane: 'reference' (default) is infra/local/control-plane, which stamps
     * provenance; 'contour' runs unmodified `contour serve` replicas (installed by `npm run
     * contour:install`) and puts the gateway in barrier mode, following Contour's Lease
     * (docs/CONTOUR.md). Contour serves no API listeners, so no gRPC clients are started with it.
     * 'reference-child' is the reference control plane with the API server in a child process of
     * their own (cluster-process.ts: the e2e bench's layout), without the in-process replicas tests
     * reach into.
     */
    controlPlane: z.enum(['reference', 'reference-child', 'contour']).default('reference'),
    /**
     * With `controlPlane: 'contour'`: Gateway API too. The Gateway API CRDs Contour's go.mod pins are
     * registered, a GatewayClass and the Gateway `projectcontour/contour` (one HTTP listener, routes
     * from every namespace) are applied, Contour processes that Gateway (`gateway.gatewayRef` in its
     * config file), and HTTPRoute is tracked next to HTTPProxy by the gateway's barrier and the
     * functions (docs/CONVERGENCE.md, "Gateway API routes").
     */
    gatewayApi: z.boolean().default(false),
    /**
     * With the reference control plane, the gateway's watermark source: 'provenance' (default) or
     * 'barrier' (the gateway watches HTTPProxy status and follows the control plane's Lease, as with
     * unmodified Contour): tests of the barrier path against a controller whose status we control.
     */
    gatewayWatermarks: z.enum(['provenance', 'barrier']).default('provenance'),
    /**
     * The control plane's leader-election timings (default: a 5 s Lease, renew deadline 3 s, retry
     * 0.5 s, so a stopped leader hands over in seconds). client-go's rule: duration > renew deadline
     * > 1.2 × retry period.
     */
    controlPlaneLease: z
      .object({ leaseDurationSeconds: z.number().int().min(1), renewDeadlineMs: z.number().int().positive(), retryPeriodMs: z.number().int().positive() })
      .strict()
      .refine((lease) => lease.leaseDurationSeconds * 1000 > lease.renewDeadlineMs && lease.renewDeadlineMs > 1.2 * lease.retryPeriodMs, {
        message: 'lease duration must exceed the renew deadline, which must exceed 1.2 × the retry period',
      })
      .optional(),
    /**
     * First port of a fixed layout (kube, dynamo, control planes, gateway xDS/ops, query); 0 = random
     * ports (tests). The layout is documented in docs/OPERATIONS.md.
     */
    portBase: z.number().int().min(0).max(65_000).default(0),
    /** Where the kubeconfig and logs go (default: a fresh temporary directory). */
    stateDir: z.string().min(1).optional(),
    /** Bearer token the local function URL requires (default: random). */
    queryToken: z.string().min(16).optional(),
    tableName: z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/).default('xds-programmed'),
    conditionType: z.string().min(1).default('EnvoyProgrammed'),
    /** Gateway and convergence: an unanswered response is STUCK after this. */
    ackTimeoutMs: z.number().int().positive().default(10_000),
    /** Convergence/query: an Envoy not seen for this long leaves the denominator. */
    envoyTtlMs: z.number().int().positive().default(120_000),
    /** Local schedules (AWS: expire every minute, resync every 15 minutes). */
    expireEveryMs: z.number().int().positive().default(15_000),
    resyncEveryMs: z.number().int().positive().default(60_000),
    /**
     * Batching window of the convergence stream mapping (serverless.yml `batchWindow`). Each
     * convergence batch re-evaluates every pending generation of the lineages it touches, so a longer
     * window means fewer, larger batches (less work per change) and more latency (bench/README.md).
     */
    batchWindowMs: z.number().int().min(0).default(100),
    /**
     * Batching window of the status stream mapping. A status batch costs per object record, not per
     * pending generation, so batching buys little: 0, as on AWS by default.
     */
    statusBatchWindowMs: z.number().int().min(0).default(0),
    /** Convergence: count-only decision rewrites at most this often per generation (DECISION_REFRESH_MS). */
    decisionRefreshMs: z.number().int().min(0).default(1000),
    /**
     * Where dynalite runs: 'child' (default) is its own Node process, so its CPU is on the other core
     * instead of this process's one event loop (docs/LOCAL-DYNAMO.md); 'inline' keeps it in-process.
     */
    dynaliteProcess: z.enum(['child', 'inline']).default('child'),
    /**
     * Where the simulated Envoys run: 'inline' (default) in this process, where tests reach into the
     * fleet's ground truth directly; 'child' in a child Node process of their own, as Envoys are other
     * machines in production (the e2e bench's default; docs/ENVOY-FLEET.md).
     */
    fleetProcess: z.enum(['inline', 'child']).default('inline'),
    /**
     * With fleetProcess 'child': the child records the provenance stamps of every response its Envoys
     * receive, so invariant 1 can be judged there against what they held (the soak). Off by default:
     * it keeps one set of stamps per response version.
     */
    fleetContentTap: z.boolean().default(false),
    /**
     * Hosts whose route to a cluster the simulated Envoys' accepted content is watched for
     * (infra/local/envoys/route-watch.ts; `fleet.queries.routable`): the e2e bench's "change →
     * routable", judged by content beside the watermark-based last ACK. None by default.
     */
    fleetRouteWatches: z.array(routeWatchSchema).default([]),
    /**
     * Where the xDS gateway runs: 'inline' (default) in this process; 'child' as its own Node process
     * running xds-gateway/main.ts with the same flags, as it is deployed (the e2e bench's default);
     * 'bundle' as 'child' but running the esbuild bundle the image runs (`npm run build` first).
     */
    gatewayProcess: z.enum(GATEWAY_PROCESSES).default('inline'),
    /**
     * Gateway processes (replicas), each with its own instance id and so its own lineages; the
     * simulated Envoys are split evenly among them (the first takes the fixed ports and the real
     * clients). A deployment runs one per few thousand Envoys: docs/bench/README.md.
     */
    gatewayReplicas: z.number().int().min(1).max(8).default(1),
    /**
     * Most records per convergence invocation (the mapping's batchSize; serverless.yml sets the same).
     * A batch's DynamoDB requests are mostly fixed (aggregate shards, pending index, OBJECT items), so
     * larger batches consume the stream faster (docs/LOCAL-DYNAMO.md, "Convergence batch size").
     */
    convergenceBatchSize: z.number().int().min(1).max(10_000).optional(),
    /**
     * The gateway's `--queue-high-water` (default: the gateway's own, 50,000 events). A small mark lets
     * a test reach backpressure with a few Envoys (test/integration/system/dynamo-outage.test.ts).
     */
    gatewayQueueHighWater: z.number().int().min(1).optional(),
    /**
     * The fleet-size path (docs/ARCHITECTURE.md, "Design: work per change proportional to gateways"):
     * the gateway publishes PROGRESS and writes Envoy states on class changes only (--progress,
     * --state-writes class-changes) and the functions decide from PROGRESS (PROGRESS_EVALUATION).
     * On by default; false: the shard path (every Envoy state written, the shards decide).
     */
    progressPath: z.boolean().default(true),
  })
  .strict()
  .refine((options) => !options.gatewayApi || options.controlPlane === 'contour', { message: 'gatewayApi needs controlPlane: contour', path: ['gatewayApi'] });

/** The gateway's per-Envoy heartbeat in the local system: a quarter of the TTL, at most the deployed 30 s. */
export function localEnvoyHeartbeatMs(envoyTtlMs: number): number {
  return Math.min(30_000, Math.floor(envoyTtlMs / 4));
}

export type LocalSystemOptions = z.input<typeof localSystemOptionsSchema>;
export type ResolvedSystemOptions = z.output<typeof localSystemOptionsSchema>;

/** Fixed port layout from `--port-base` (so bookmarks and scripts keep working across restarts). */
export interface PortLayout {
  kube: number;
  dynamo: number;
  controlPlane: (replica: number) => number;
  gatewayXds: number;
  gatewayOps: number;
  query: number;
}

export function portLayout(base: number): PortLayout {
  if (base === 0) return { kube: 0, dynamo: 0, controlPlane: () => 0, gatewayXds: 0, gatewayOps: 0, query: 0 };
  return {
    kube: base,
    dynamo: base + 1,
    query: base + 2,
    gatewayXds: base + 3,
    gatewayOps: base + 4,
    controlPlane: (replica) => base + 10 + replica,
  };
}
