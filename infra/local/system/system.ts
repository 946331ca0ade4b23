// startLocalSystem: the whole system in one process, in an explicit order, each step with its own
// readiness check, and closed in reverse order. Used by `npm start` (infra/local/start.ts) and tests.
//
//   1 dynamo (table ACTIVE) → 2 kubernetes (CRD served, kubeconfig written) → 3 echo backend →
//   4 control plane replicas (a Lease leader) → 5 gateway (/readyz) → 6 functions (stream
//   consumers, schedules, query URL) → 7 Envoy fleet (connected) → 8 sample HTTPProxies applied.
//
// The control plane is the reference one (provenance watermarks) or, with `controlPlane:
// 'contour'`, unmodified Contour: its CRDs and the built-in kinds it reads in the API server, the
// samples' Services and EndpointSlices before it starts, and the gateway in barrier mode following
// its Lease (docs/CONTOUR.md, "Putting the gateway in front of Contour").
//
// If the gateway or the functions cannot start, the rest still runs and `unavailable` says why: a
// partial local system is more useful than none, and the report makes the gap impossible to miss.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { closeAll, type Component } from './component';
import { CONTOUR_GATEWAY_CONTROLLER, CONTOUR_LEASE, contourInstall, startContourComponent, yamlObjects, type ContourComponent } from './contour';
import { HTTPPROXY_KIND, HTTPROUTE_KIND } from '../../../xds-gateway/tracking/tracked-kinds';
import { HTTPROUTE_TRACKED_KIND, REFERENCE_CONTROLLER_NAME } from '../control-plane/gateway-api';
import { DEFAULT_LEASE_TIMINGS, LEASE_NAME, LEASE_NAMESPACE, startControlPlaneComponent, type ControlPlaneComponent, type ServiceEndpoint } from './control-plane';
import { startDynamoComponent, type DynamoComponent } from './dynamo';
import { startBackendComponent, startFleetComponentIn, type BackendComponent, type FleetComponentOf, type FleetProcessMode } from './fleet';
import { DEFAULT_REQUIRED_TYPE_URLS, startFunctionsComponent, type FunctionsComponent } from './functions';
import { startGatewayComponent, type GatewayComponent } from './gateway';
import { startKubeComponent, type KubeEndpointsComponent } from './kube';
import { startClusterProcess, type ChildControlPlaneComponent, type ClusterProcess } from './cluster-process';
import { localEnvoyHeartbeatMs, localSystemOptionsSchema, portLayout, type LocalSystemOptions, type ResolvedSystemOptions } from './options';
import { applySampleBackends, applySamples, SAMPLE_NAMESPACE, sampleCanaryService, sampleService } from './samples';

export const HTTPPROXY_TRACKED_KIND = { group: 'projectcontour.io', version: 'v1', kind: 'HTTPProxy', plural: 'httpproxies', namespaced: true };
/**
 * The gateway's `--tracked-kinds` when HTTPRoutes are served too: HTTPProxy, and HTTPRoute with
 * "processed" read from the status.parents entries of `controllerName` only (the control plane's).
 */
function barrierKindsWithRoutes(controllerName: string): string {
  return JSON.stringify([HTTPPROXY_KIND, { ...HTTPROUTE_KIND, signal: { ...HTTPROUTE_KIND.signal, controllerName } }]);
}

export interface SystemEndpoints {
  stateDir: string;
  kubeconfigPath: string;
  kubeUrl: string;
  dynamoEndpoint: string;
  tableName: string;
  controlPlanes: string[];
  gatewayXds?: string;
  gatewayOpsUrl?: string;
  metricsUrl?: string;
  queryUrl?: string;
  queryToken: string;
  conditionType: string;
}

export interface StartupStep {
  component: string;
  /** Milliseconds from the call to startLocalSystem until this step was ready. */
  readyAtMs: number;
}

/** Which control plane runs (options.controlPlane). */
export type ControlPlaneMode = 'reference' | 'reference-child' | 'contour';

/** The component of a control-plane mode; a mode not known statically gets the union. */
export type ControlPlaneComponentOf<C extends ControlPlaneMode> = C extends 'contour' ? ContourComponent : C extends 'reference-child' ? ChildControlPlaneComponent : ControlPlaneComponent;

/**
 * P: where the simulated Envoys run (options.fleetProcess). With the default ('inline') `fleet.sim`
 * is there; a caller choosing at run time gets the union and uses `fleet.queries`.
 * C: which control plane runs (options.controlPlane), the reference one by default.
 */
export interface LocalSystem<P extends FleetProcessMode = 'inline', C extends ControlPlaneMode = 'reference'> {
  options: ResolvedSystemOptions;
  endpoints: SystemEndpoints;
  /** Parts that could not start, and why. Empty when everything runs. */
  unavailable: Array<{ component: string; reason: string }>;
  steps: StartupStep[];
  objects: string[];
  dynamo: DynamoComponent;
  kube: KubeEndpointsComponent;
  controlPlane: ControlPlaneComponentOf<C>;
  /** The first gateway (fixed ports, the real clients' server). */
  gateway?: GatewayComponent;
  /** Every gateway replica that started (options.gatewayReplicas), the first one first. */
  gateways: GatewayComponent[];
  functions?: FunctionsComponent;
  fleet: FleetComponentOf<P>;
  /** Closes every component, newest first. Idempotent. */
  close(): Promise<void>;
}

export interface StartContext {
  logger: Logger;
  /** Gateway process metrics; off when several systems share one process (tests). */
  processMetrics?: boolean;
  /** Called as each step becomes ready (the start script prints progress). */
  onStep?: (step: StartupStep) => void;
  now?: () => number;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function startLocalSystem<P extends FleetProcessMode = 'inline', C extends ControlPlaneMode = 'reference'>(
  input: LocalSystemOptions & { fleetProcess?: P; controlPlane?: C },
  context: StartContext,
): Promise<LocalSystem<P, C>> {
  const options = localSystemOptionsSchema.parse(input);
  // Before anything starts: a missing Contour is an error that says how to install it.
  const contour = options.controlPlane === 'contour' ? contourInstall() : undefined;
  const lease = options.controlPlaneLease ?? DEFAULT_LEASE_TIMINGS;
  const now = context.now ?? Date.now;
  const startedAt = now();
  const logger = context.logger;
  const ports = portLayout(options.portBase);
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'xds-programmed-'));
  mkdirSync(stateDir, { recursive: true });
  const queryToken = options.queryToken ?? randomBytes(24).toString('base64url');
  const components: Component[] = [];
  const steps: StartupStep[] = [];
  const unavailable: LocalSystem<P, C>['unavailable'] = [];
  const ready = <T extends Component>(component: T): T => {
    components.push(component);
    const step = { component: component.name, readyAtMs: now() - startedAt };
    steps.push(step);
    logger.info(step, 'component ready');
    context.onStep?.(step);
    return component;
  };
  const closeStarted = (): Promise<void> =>
    closeAll(
      components,
      (name, error) => logger.error({ component: name, err: error }, 'closing failed'),
      (name, ms) => logger.info({ component: name, ms }, 'component closed'),
    );

  try {
    const dynamo = ready(await startDynamoComponent({ port: ports.dynamo, tableName: options.tableName, logger, dynaliteProcess: options.dynaliteProcess }));
    const sampleEndpoints = (backend: BackendComponent): ServiceEndpoint[] =>
      Array.from({ length: options.objects }, (_, index) =>
        [sampleService(index), sampleCanaryService(index)].map((service) => ({ service, namespace: SAMPLE_NAMESPACE, ip: backend.backend.host, port: backend.backend.port })),
      ).flat();
    // In this process the API server starts first; in a process of its own (cluster-process.ts, with
    // the reference control plane) it needs the echo backend's address for the samples' Endpoints first.
    const startHere = async (): Promise<{ kube: KubeEndpointsComponent; backend: BackendComponent; cluster?: undefined }> => {
      const kube = ready(
        await startKubeComponent({
          port: ports.kube,
          stateDir,
          logger,
          ...(contour === undefined
            ? {}
            : { ingressControllerKinds: true, crds: [...yamlObjects(contour.contourCrds), ...(options.gatewayApi ? contour.gatewayApiCrds.experimental.flatMap(yamlObjects) : [])] }),
        }),
      );
      return { kube, backend: ready(await startBackendComponent()) };
    };
    const startApart = async (): Promise<{ kube: KubeEndpointsComponent; backend: BackendComponent; cluster: ClusterProcess }> => {
      const backend = ready(await startBackendComponent());
      const spec = {
        kubePort: ports.kube,
        controlPlanePorts: Array.from({ length: options.controlPlaneReplicas }, (_, replica) => ports.controlPlane(replica)),
        stateDir,
        replicas: options.controlPlaneReplicas,
        lease,
        endpoints: sampleEndpoints(backend),
        logLevel: logger.level === 'silent' ? 'error' : logger.level,
      };
      const cluster = ready(await startClusterProcess(spec, logger));
      return { kube: cluster.kube, backend, cluster };
    };
    const { kube, backend, cluster } = options.controlPlane === 'reference-child' ? await startApart() : await startHere();
    let controlPlane: ControlPlaneComponent | ChildControlPlaneComponent | ContourComponent;
    let contourReplicas: ContourComponent | undefined;
    let upstream: string;
    let referenceBarrier: { kubeconfigPath: string; leaderLease: string; leaderTargets: Record<string, string>; trackedKinds: string } | undefined;
    if (contour === undefined) {
      const reference =
        cluster?.controlPlane ??
        ready(await startControlPlaneComponent({ replicas: options.controlPlaneReplicas, port: ports.controlPlane, kubeConfig: kube.kubeConfig, endpoints: sampleEndpoints(backend), logger, lease }));
      controlPlane = reference;
      upstream = reference.addresses[0] ?? '';
      if (options.gatewayWatermarks === 'barrier') {
        const replicaIds = 'process' in reference ? reference.replicaIds : reference.replicas.map((replica) => replica.replicaId);
        const leaderTargets = Object.fromEntries(replicaIds.map((replicaId, slot) => [replicaId, reference.addresses[slot] ?? '']));
        referenceBarrier = { kubeconfigPath: kube.kubeconfigPath, leaderLease: `${LEASE_NAMESPACE}/${LEASE_NAME}`, leaderTargets, trackedKinds: barrierKindsWithRoutes(REFERENCE_CONTROLLER_NAME) };
      }
    } else {
      // Contour reads endpoints from the API server: the samples' Services and EndpointSlices
      // exist before it starts, so its first snapshot has their clusters.
      await applySampleBackends(kube.url, options.objects, { ip: backend.backend.host, port: backend.backend.port });
      const replicas = ready(
        await startContourComponent({
          replicas: options.controlPlaneReplicas,
          kubeUrl: kube.url,
          kubeconfigPath: kube.kubeconfigPath,
          port: ports.controlPlane,
          lease,
          logDir: stateDir,
          install: contour,
          logger,
          ...(options.gatewayApi ? { gatewayApi: { configDir: stateDir } } : {}),
        }),
      );
      controlPlane = replicas;
      contourReplicas = replicas;
      // Start on the status writer; the gateway follows the Lease from there.
      upstream = (await replicas.leader())?.xdsAddress ?? replicas.addresses[0] ?? '';
    }

    const gateways: GatewayComponent[] = [];
    // Replica 1 is the gateway of a one-gateway system (fixed ports, instance id gw-local); others
    // take random ports and instance ids of their own, so each has lineages of its own.
    for (let replica = 1; replica <= options.gatewayReplicas; replica++) {
      const name = replica === 1 ? 'gateway' : `gateway-${replica}`;
      try {
        const started = await startGatewayComponent({
          upstream,
          ...(replica === 1 ? { xdsPort: ports.gatewayXds, opsPort: ports.gatewayOps } : { xdsPort: 0, opsPort: 0, instanceId: `gw-local-${replica}`, name }),
          tableName: dynamo.tableName,
          dynamodbEndpoint: dynamo.local.endpoint,
          region: dynamo.local.region,
          ackTimeoutMs: options.ackTimeoutMs,
          defaultMetrics: context.processMetrics ?? false,
          process: options.gatewayProcess,
          ...(contourReplicas === undefined
            ? referenceBarrier === undefined
              ? {}
              : { barrier: referenceBarrier }
            : {
                barrier: {
                  kubeconfigPath: kube.kubeconfigPath,
                  leaderLease: CONTOUR_LEASE,
                  leaderTargets: contourReplicas.leaderTargets,
                  ...(options.gatewayApi ? { trackedKinds: barrierKindsWithRoutes(CONTOUR_GATEWAY_CONTROLLER) } : {}),
                },
              }),
          // An idle Envoy is refreshed well within the TTL (the defaults suit the default 120 s).
          envoyHeartbeatMs: localEnvoyHeartbeatMs(options.envoyTtlMs),
          lineageHeartbeatMs: Math.min(5000, Math.floor(options.envoyTtlMs / 4)),
          ...(options.gatewayQueueHighWater === undefined ? {} : { queueHighWater: options.gatewayQueueHighWater }),
          clients: options.envoys + options.grpcClients,
          ...(options.progressPath ? { progress: { envoyTtlMs: options.envoyTtlMs, requiredTypeUrls: DEFAULT_REQUIRED_TYPE_URLS } } : {}),
          logger,
        });
        gateways.push(ready(started));
      } catch (error) {
        unavailable.push({ component: name, reason: describe(error) });
        logger.error({ err: error, component: name }, 'gateway unavailable; its share of the Envoys connects to the other gateways, or straight to the control plane when none started, and is not recorded then');
      }
    }
    const gateway = gateways[0];

    let functions: FunctionsComponent | undefined;
    try {
      functions = ready(
        await startFunctionsComponent({
          tableStreams: dynamo.local.tableStreams,
          storeEnv: dynamo.storeEnv,
          kubeconfigPath: kube.kubeconfigPath,
          // HTTPRoute: our verdict goes under status.parents (functions/kube/tracked-kinds.ts). The
          // reference control plane always serves it; Contour only with its Gateway API.
          trackedKinds: contour === undefined || options.gatewayApi ? [HTTPPROXY_TRACKED_KIND, HTTPROUTE_TRACKED_KIND] : [HTTPPROXY_TRACKED_KIND],
          conditionType: options.conditionType,
          ackTimeoutMs: options.ackTimeoutMs,
          envoyTtlMs: options.envoyTtlMs,
          expireEveryMs: options.expireEveryMs,
          resyncEveryMs: options.resyncEveryMs,
          batchWindowMs: options.batchWindowMs,
          statusBatchWindowMs: options.statusBatchWindowMs,
          decisionRefreshMs: options.decisionRefreshMs,
          ...(options.convergenceBatchSize === undefined ? {} : { convergenceBatchSize: options.convergenceBatchSize }),
          ...(options.progressPath ? { progressEvaluation: true } : {}),
          queryPort: ports.query,
          queryToken,
          logger,
        }),
      );
    } catch (error) {
      unavailable.push({ component: 'functions', reason: describe(error) });
      logger.error({ err: error }, 'functions unavailable; no condition will be written');
    }

    // The parsed option is the runtime value of P (absent → 'inline', P's default).
    const fleet = ready(
      await startFleetComponentIn(options.fleetProcess as P, {
        gatewayAddresses: gateways.length === 0 ? [upstream] : gateways.map((started) => started.xdsAddress),
        envoys: options.envoys,
        // gRPC xDS clients resolve `xds:///<fqdn>` through API listeners, which Contour does not serve.
        grpcClients: contour === undefined ? options.grpcClients : 0,
        nackRate: options.nackRate,
        slowEnvoys: options.slowEnvoys,
        slowAckMs: options.slowAckMs,
        protocol: options.fleetProtocol,
        objects: options.objects,
        tapContents: options.fleetContentTap,
        routeWatches: options.fleetRouteWatches,
        logger,
      }),
    );
    const objects = await applySamples(kube.url, options.objects);
    steps.push({ component: 'samples', readyAtMs: now() - startedAt });
    context.onStep?.(steps[steps.length - 1] as StartupStep);

    let closing: Promise<void> | undefined;
    return {
      options,
      endpoints: {
        stateDir,
        kubeconfigPath: kube.kubeconfigPath,
        kubeUrl: kube.url,
        dynamoEndpoint: dynamo.local.endpoint,
        tableName: dynamo.tableName,
        controlPlanes: controlPlane.addresses,
        ...(gateway ? { gatewayXds: gateway.xdsAddress, gatewayOpsUrl: gateway.opsUrl, metricsUrl: gateway.metricsUrl } : {}),
        ...(functions ? { queryUrl: functions.queryUrl } : {}),
        queryToken,
        conditionType: options.conditionType,
      },
      unavailable,
      steps,
      objects,
      dynamo,
      kube,
      // The parsed option is the runtime value of C (absent → 'reference', C's default).
      controlPlane: controlPlane as ControlPlaneComponentOf<C>,
      ...(gateway ? { gateway } : {}),
      gateways,
      ...(functions ? { functions } : {}),
      fleet,
      close() {
        closing ??= closeStarted();
        return closing;
      },
    };
  } catch (error) {
    logger.error({ err: error }, 'local system failed to start; closing what started');
    await closeStarted();
    throw error;
  }
}
