// The Envoy fleet: simulated Envoys (ADS SotW on all four types, as Envoy with an ADS bootstrap) and
// a few real @grpc/grpc-js-xds clients, all connected to the gateway. Plus the echo backend the
// sample routes point at, so the real clients can finish LDS→RDS→CDS→EDS and reach READY.
import type { Logger } from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import { Fleet, parseBehaviour, type SimEnvoy } from '../envoys';
import { RealClientFleet, startEchoBackend, type EchoBackend } from '../envoys/realClient';
import type { Component } from './component';
import { sampleClusterPrefix, sampleFqdn } from './samples';

export interface BackendComponent extends Component {
  backend: EchoBackend;
}

export async function startBackendComponent(): Promise<BackendComponent> {
  const backend = await startEchoBackend('echo');
  return { name: 'echo-backend', backend, close: () => backend.close() };
}

export interface FleetComponent extends Component {
  sim: Fleet;
  simEnvoys: SimEnvoy[];
  real: RealClientFleet | undefined;
  /** Node ids, by role, for the summary and tests. */
  roles: { nacking: string[]; slow: string[]; real: string[] };
}

export interface FleetComponentOptions {
  gatewayAddress: string;
  envoys: number;
  grpcClients: number;
  nackRate: number;
  slowEnvoys: number;
  slowAckMs: number;
  /** Real clients resolve `xds:///<fqdn of sample 0>`; without samples they have nothing to resolve. */
  objects: number;
  logger: Logger;
}

const ALL_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].map((typeUrl) => ({ typeUrl }));

export function startFleetComponent(opts: FleetComponentOptions): FleetComponent {
  const sim = new Fleet({ target: opts.gatewayAddress, channels: Math.min(8, Math.max(1, Math.ceil(opts.envoys / 250))), logger: opts.logger.child({ component: 'fleet' }) });
  const nackCount = Math.min(opts.envoys, Math.round(opts.envoys * opts.nackRate));
  const slowCount = Math.min(opts.envoys - nackCount, opts.slowEnvoys);
  const spec = { transport: 'ads' as const, protocol: 'sotw' as const, subscriptions: ALL_TYPES, reconnectOnError: true, reconnectDelayMs: 500 };
  const node = (index: number) => ({ id: `envoy-${index}`, cluster: 'ingress', metadata: { zone: index % 2 === 0 ? 'a' : 'b' }, userAgentName: 'envoy' });
  // NACKing Envoys reject the cluster of sample 0 (a SotW NACK rejects the whole CDS update, as Envoy does).
  const nacking = sim.addMany(nackCount, {
    ...spec,
    node,
    behaviour: parseBehaviour({ nackRules: [{ typeUrl: CDS_TYPE_URL, resourceName: `^${sampleClusterPrefix(0)}`, message: 'simulated rejection: cluster failed validation' }] }),
  }, 0);
  const slow = sim.addMany(slowCount, { ...spec, node, behaviour: parseBehaviour({ ackDelayMs: opts.slowAckMs }) }, nackCount);
  const normal = sim.addMany(opts.envoys - nackCount - slowCount, { ...spec, node }, nackCount + slowCount);
  sim.connectAll();
  const real =
    opts.grpcClients > 0 && opts.objects > 0
      ? new RealClientFleet({ xdsServerAddress: opts.gatewayAddress, listenerName: sampleFqdn(0), count: opts.grpcClients, node: (index) => ({ id: `grpc-${index}`, cluster: 'grpc' }) })
      : undefined;
  // A real channel only starts resolving (its xDS subscription) once something waits on it.
  if (real) void real.waitAllReady(60_000).catch((error: unknown) => opts.logger.warn({ err: error }, 'real xDS clients not READY'));
  return {
    name: 'envoy-fleet',
    sim,
    simEnvoys: [...nacking, ...slow, ...normal],
    real,
    roles: { nacking: nacking.map((e) => e.id), slow: slow.map((e) => e.id), real: real?.clients.map((c) => c.nodeId) ?? [] },
    async close() {
      real?.close();
      sim.close();
    },
  };
}
