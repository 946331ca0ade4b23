// The system under test, in one process, with settings small enough that a schedule takes seconds:
// local DynamoDB (with its fault seam), the local Kubernetes API server, two control-plane replicas
// (Lease election, provenance stamps), the gateway through its own startGateway with short
// heartbeats, the functions on the table stream, and a simulated fleet owned by the checker (so each
// Envoy's faults can be driven). Components are reused from infra/local/system, except the gateway
// and the fleet, whose settings the checker needs to control.
import { mkdtempSync, rmSync } from 'node:fs';
import type { StateWrites } from '../../xds-gateway/tracking/progress/state-demotion';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { Fleet, type SimEnvoy } from '../../infra/local/envoys';
import { startControlPlaneComponent, type ControlPlaneComponent, type LeaseTimings } from '../../infra/local/system/control-plane';
import { startDynamoComponent, type DynamoComponent } from '../../infra/local/system/dynamo';
import { startBackendComponent, type BackendComponent } from '../../infra/local/system/fleet';
import { startFunctionsComponent, type FunctionsComponent } from '../../infra/local/system/functions';
import { startKubeComponent, type KubeComponent } from '../../infra/local/system/kube';
import { HTTPPROXY_TRACKED_KIND } from '../../infra/local/system/system';
import { SAMPLE_NAMESPACE, sampleCanaryService, sampleService } from '../../infra/local/system/samples';
import { parseGatewayConfig } from '../../xds-gateway/ops/config';
import { startGateway, type Gateway } from '../../xds-gateway/ops/gateway';
import { startGatewayProcess, truthGatewayArgs, type GatewayProcess } from './gateway-process';
import type { TruthTimings } from './timings';
import { DEFAULT_FLEET_MIX, modeForEnvoy, protocolOf, transportOf, type EnvoyMode, type FleetMix } from './fleet-mix';

export const CONDITION_TYPE = 'EnvoyProgrammed';
/** Control-plane Lease timings of the truth system (client-go rules: duration > renew deadline > retry). */
export const TRUTH_LEASE_TIMINGS: LeaseTimings = { leaseDurationSeconds: 2, renewDeadlineMs: 1500, retryPeriodMs: 250 };
export const SUBSCRIBED_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];

export type { TruthTimings };

export const DEFAULT_TIMINGS: TruthTimings = {
  envoyTtlMs: 4000,
  ackTimeoutMs: 1500,
  envoyHeartbeatMs: 1000,
  expireEveryMs: 500,
  batchWindowMs: 30,
};

export interface TruthSystem {
  timings: TruthTimings;
  dynamo: DynamoComponent;
  kube: KubeComponent;
  controlPlane: ControlPlaneComponent;
  functions: FunctionsComponent;
  fleet: Fleet;
  gatewayAddress: string;
  /** Set when the gateway runs as a child process: a SIGKILL + restart fault is available. */
  gatewayProcess?: GatewayProcess;
  /** Set when the gateway runs in this process: its readiness, tracker, recorder and metrics. */
  gateway?: Gateway;
  /** Creates, connects and returns a new simulated Envoy (all four types; its mode from the fleet mix). */
  addEnvoy(): SimEnvoy;
  /** The mode (transport + protocol) of a simulated Envoy this system created. */
  modeOf(nodeId: string): EnvoyMode | undefined;
  close(): Promise<void>;
}

export async function startGatewayForTruth(opts: { port: number; upstream: string; dynamo: DynamoComponent; timings: TruthTimings; kubeconfigPath?: string; progress?: boolean; stateWrites?: StateWrites; logger: Logger }): Promise<Gateway> {
  const args = truthGatewayArgs({ ...opts, listenPort: opts.port, opsPort: 0 });
  const parsed = parseGatewayConfig(Object.entries(args).flatMap(([key, value]) => [`--${key}`, value]), {});
  if (parsed.kind !== 'ok') throw new Error(`gateway configuration: ${parsed.kind === 'error' ? parsed.message : 'help requested'}`);
  const gateway = await startGateway(parsed.config, opts.logger.child({ component: 'gateway' }), { defaultMetrics: false });
  const deadline = Date.now() + 20_000;
  while (!gateway.ready()) {
    if (Date.now() > deadline) {
      await gateway.close();
      throw new Error('gateway not ready after 20 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return gateway;
}

export async function startTruthSystem(opts: {
  objects: number;
  envoys: number;
  timings?: TruthTimings;
  gatewayAsProcess?: boolean;
  /** With gatewayAsProcess: append the gateway process's log to this file. */
  gatewayLogFile?: string;
  fleetMix?: FleetMix;
  mixSeed?: number;
  /** The gateway publishes PROGRESS too (--progress). */
  progress?: boolean;
  /** The functions decide from those PROGRESS items (PROGRESS_EVALUATION; needs `progress`). */
  progressEvaluation?: boolean;
  /** The gateway's --state-writes (class-changes needs `progress` and `progressEvaluation`). */
  stateWrites?: StateWrites;
  logger: Logger;
}): Promise<TruthSystem> {
  const timings = opts.timings ?? DEFAULT_TIMINGS;
  const logger = opts.logger;
  const stateDir = mkdtempSync(join(tmpdir(), 'xp-truth-'));
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async (): Promise<void> => {
    for (const close of closers.splice(0).reverse()) {
      await close().catch((error: unknown) => logger.error({ err: error }, 'truth system: closing failed'));
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    const dynamo = await startDynamoComponent({ port: 0, tableName: 'xds-programmed', logger });
    closers.push(() => dynamo.close());
    const kube = await startKubeComponent({ port: 0, stateDir, logger });
    closers.push(() => kube.close());
    const backend: BackendComponent = await startBackendComponent();
    closers.push(() => backend.close());
    const endpoints = Array.from({ length: opts.objects }, (_, index) =>
      [sampleService(index), sampleCanaryService(index)].map((service) => ({ service, namespace: SAMPLE_NAMESPACE, ip: backend.backend.host, port: backend.backend.port })),
    ).flat();
    // A 2 s Lease (renew deadline 1.5 s, retry 250 ms): a leader change costs a schedule ~2 s, not 5.
    const controlPlane = await startControlPlaneComponent({ replicas: 2, port: () => 0, kubeConfig: kube.kubeConfig, endpoints, logger, lease: TRUTH_LEASE_TIMINGS });
    closers.push(() => controlPlane.close());
    let gatewayAddress: string;
    let gatewayProcess: GatewayProcess | undefined;
    let inProcessGateway: Gateway | undefined;
    if (opts.gatewayAsProcess) {
      const child = await startGatewayProcess({ upstream: controlPlane.leader()?.controlPlane.address ?? controlPlane.addresses[0] ?? '', dynamo, timings, kubeconfigPath: kube.kubeconfigPath, progress: opts.progress === true, ...(opts.stateWrites === undefined ? {} : { stateWrites: opts.stateWrites }), ...(opts.gatewayLogFile === undefined ? {} : { logFile: opts.gatewayLogFile }), logger });
      closers.push(() => child.close());
      gatewayAddress = child.address;
      gatewayProcess = child;
    } else {
      const gateway = await startGatewayForTruth({ port: 0, upstream: controlPlane.leader()?.controlPlane.address ?? controlPlane.addresses[0] ?? '', dynamo, timings, kubeconfigPath: kube.kubeconfigPath, progress: opts.progress === true, ...(opts.stateWrites === undefined ? {} : { stateWrites: opts.stateWrites }), logger });
      closers.push(() => gateway.close());
      gatewayAddress = `127.0.0.1:${gateway.xdsPort}`;
      inProcessGateway = gateway;
    }
    const functions = await startFunctionsComponent({
      tableStreams: dynamo.local.tableStreams,
      storeEnv: dynamo.storeEnv,
      kubeconfigPath: kube.kubeconfigPath,
      trackedKinds: [HTTPPROXY_TRACKED_KIND],
      conditionType: CONDITION_TYPE,
      ackTimeoutMs: timings.ackTimeoutMs,
      envoyTtlMs: timings.envoyTtlMs,
      expireEveryMs: timings.expireEveryMs,
      // Resync repairs aggregate drift; the checker runs it itself at the end of each schedule and
      // requires it to find nothing to fix (invariant 5), so the timer must not run first.
      resyncEveryMs: 3_600_000,
      batchWindowMs: timings.batchWindowMs,
      ...(opts.progressEvaluation === true ? { progressEvaluation: true } : {}),
      queryPort: 0,
      queryToken: 'truth-checker-query-token',
      logger,
    });
    closers.push(() => functions.close());
    const fleet = new Fleet({ target: gatewayAddress, channels: 2, logger: logger.child({ component: 'fleet' }) });
    closers.push(async () => fleet.close());
    let nextIndex = 0;
    const modes = new Map<string, EnvoyMode>();
    const addEnvoy = (): SimEnvoy => {
      const index = nextIndex++;
      const mode = modeForEnvoy(opts.fleetMix ?? DEFAULT_FLEET_MIX, index, opts.mixSeed ?? 0);
      const id = `envoy-${index}`;
      modes.set(id, mode);
      const envoy = fleet.add({
        node: { id, cluster: 'ingress', userAgentName: 'envoy' },
        transport: transportOf(mode),
        protocol: protocolOf(mode),
        subscriptions: SUBSCRIBED_TYPES.map((typeUrl) => ({ typeUrl })),
        reconnectOnError: true,
        reconnectDelayMs: 200,
      });
      envoy.connect();
      return envoy;
    };
    for (let index = 0; index < opts.envoys; index++) addEnvoy();
    return { timings, dynamo, kube, controlPlane, functions, fleet, gatewayAddress, ...(gatewayProcess ? { gatewayProcess } : {}), ...(inProcessGateway ? { gateway: inProcessGateway } : {}), addEnvoy, modeOf: (nodeId) => modes.get(nodeId), close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
