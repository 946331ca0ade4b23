// startLocalSystem: the whole system in one process, in an explicit order, each step with its own
// readiness check, and closed in reverse order. Used by `npm start` (infra/local/start.ts) and tests.
//
//   1 dynamo (table ACTIVE) → 2 kubernetes (CRD served, kubeconfig written) → 3 echo backend →
//   4 control plane replicas (a Lease leader) → 5 gateway (/readyz) → 6 functions (stream
//   consumers, schedules, query URL) → 7 Envoy fleet (connected) → 8 sample HTTPProxies applied.
//
// If the gateway or the functions cannot start, the rest still runs and `unavailable` says why: a
// partial local system is more useful than none, and the report makes the gap impossible to miss.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { closeAll, type Component } from './component';
import { startControlPlaneComponent, type ControlPlaneComponent } from './control-plane';
import { startDynamoComponent, type DynamoComponent } from './dynamo';
import { startBackendComponent, startFleetComponentIn, type FleetComponentOf, type FleetProcessMode } from './fleet';
import { startFunctionsComponent, type FunctionsComponent } from './functions';
import { startGatewayComponent, type GatewayComponent } from './gateway';
import { startKubeComponent, type KubeComponent } from './kube';
import { localSystemOptionsSchema, portLayout, type LocalSystemOptions, type ResolvedSystemOptions } from './options';
import { applySamples, SAMPLE_NAMESPACE, sampleCanaryService, sampleService } from './samples';

export const HTTPPROXY_TRACKED_KIND = { group: 'projectcontour.io', version: 'v1', kind: 'HTTPProxy', plural: 'httpproxies', namespaced: true };

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

/**
 * P: where the simulated Envoys run (options.fleetProcess). With the default ('inline') `fleet.sim`
 * is there; a caller choosing at run time gets the union and uses `fleet.queries`.
 */
export interface LocalSystem<P extends FleetProcessMode = 'inline'> {
  options: ResolvedSystemOptions;
  endpoints: SystemEndpoints;
  /** Parts that could not start, and why. Empty when everything runs. */
  unavailable: Array<{ component: string; reason: string }>;
  steps: StartupStep[];
  objects: string[];
  dynamo: DynamoComponent;
  kube: KubeComponent;
  controlPlane: ControlPlaneComponent;
  gateway?: GatewayComponent;
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

export async function startLocalSystem<P extends FleetProcessMode = 'inline'>(input: LocalSystemOptions & { fleetProcess?: P }, context: StartContext): Promise<LocalSystem<P>> {
  const options = localSystemOptionsSchema.parse(input);
  const now = context.now ?? Date.now;
  const startedAt = now();
  const logger = context.logger;
  const ports = portLayout(options.portBase);
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'xds-programmed-'));
  mkdirSync(stateDir, { recursive: true });
  const queryToken = options.queryToken ?? randomBytes(24).toString('base64url');
  const components: Component[] = [];
  const steps: StartupStep[] = [];
  const unavailable: LocalSystem<P>['unavailable'] = [];
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
    const kube = ready(await startKubeComponent({ port: ports.kube, stateDir, logger }));
    const backend = ready(await startBackendComponent());
    const endpoints = Array.from({ length: options.objects }, (_, index) =>
      [sampleService(index), sampleCanaryService(index)].map((service) => ({ service, namespace: SAMPLE_NAMESPACE, ip: backend.backend.host, port: backend.backend.port })),
    ).flat();
    const controlPlane = ready(
      await startControlPlaneComponent({ replicas: options.controlPlaneReplicas, port: ports.controlPlane, kubeConfig: kube.kubeConfig, endpoints, logger }),
    );

    let gateway: GatewayComponent | undefined;
    try {
      gateway = ready(
        await startGatewayComponent({
          upstream: controlPlane.addresses[0] ?? '',
          xdsPort: ports.gatewayXds,
          opsPort: ports.gatewayOps,
          tableName: dynamo.tableName,
          dynamodbEndpoint: dynamo.local.endpoint,
          region: dynamo.local.region,
          ackTimeoutMs: options.ackTimeoutMs,
          defaultMetrics: context.processMetrics ?? false,
          process: options.gatewayProcess,
          logger,
        }),
      );
    } catch (error) {
      unavailable.push({ component: 'gateway', reason: describe(error) });
      logger.error({ err: error }, 'gateway unavailable; Envoys connect straight to the control plane and nothing is recorded');
    }

    let functions: FunctionsComponent | undefined;
    try {
      functions = ready(
        await startFunctionsComponent({
          tableStreams: dynamo.local.tableStreams,
          storeEnv: dynamo.storeEnv,
          kubeconfigPath: kube.kubeconfigPath,
          trackedKinds: [HTTPPROXY_TRACKED_KIND],
          conditionType: options.conditionType,
          ackTimeoutMs: options.ackTimeoutMs,
          envoyTtlMs: options.envoyTtlMs,
          expireEveryMs: options.expireEveryMs,
          resyncEveryMs: options.resyncEveryMs,
          batchWindowMs: options.batchWindowMs,
          statusBatchWindowMs: options.statusBatchWindowMs,
          decisionRefreshMs: options.decisionRefreshMs,
          ...(options.convergenceBatchSize === undefined ? {} : { convergenceBatchSize: options.convergenceBatchSize }),
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
        gatewayAddress: gateway?.xdsAddress ?? controlPlane.addresses[0] ?? '',
        envoys: options.envoys,
        grpcClients: options.grpcClients,
        nackRate: options.nackRate,
        slowEnvoys: options.slowEnvoys,
        slowAckMs: options.slowAckMs,
        objects: options.objects,
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
      controlPlane,
      ...(gateway ? { gateway } : {}),
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
