// The Envoy fleet: simulated Envoys (ADS SotW on all four types, as Envoy with an ADS bootstrap) and
// a few real @grpc/grpc-js-xds clients, all connected to the gateway. Plus the echo backend the
// sample routes point at, so the real clients can finish LDS→RDS→CDS→EDS and reach READY.
//
// The simulated Envoys run in this process ('inline', the default: tests reach into `sim`) or in a
// child process ('child': the e2e bench). Why a child: at 1,000 Envoys × 1,000 objects a fleet-wide
// SotW push is ~1 GB of responses to decode, and inline that work shares one event loop with the
// gateway, the functions and the DynamoDB front; in production Envoys are other machines
// (docs/ENVOY-FLEET.md, "The fleet in a child process"). Both modes build the fleet from the same
// FleetSpec and answer the same FleetQueries.
import type { Logger } from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/core';
import type { Fleet, RouteWatchSpec, SimEnvoy } from '../envoys';
import { inlineFleetQueries, startFleetProcess, type FleetQueries } from '../envoys/fleet-process';
import { buildFleet, nodeFromTemplate, type FleetEnvoyGroup, type FleetSpec } from '../envoys/fleet-spec';
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

/** Where the simulated Envoys run. */
export type FleetProcessMode = 'inline' | 'child';

interface FleetComponentBase extends Component {
  /** Connection counts and ground-truth summaries, the same in both modes. */
  queries: FleetQueries;
  real: RealClientFleet | undefined;
  /** Node ids, by role, for the summary and tests. */
  roles: { nacking: string[]; slow: string[]; real: string[] };
}

export interface InlineFleetComponent extends FleetComponentBase {
  process: 'inline';
  sim: Fleet;
  simEnvoys: SimEnvoy[];
}

export interface ChildFleetComponent extends FleetComponentBase {
  process: 'child';
  /** The fleet child's pid. Its Envoys and ground truth live there: ask through `queries`. */
  pid: number;
  /** Fork → fleet created and connecting (includes loading TypeScript in the child). */
  startupMs: number;
}

/** The component for a mode: `FleetComponentOf<'inline'>` has `sim`; a mode not known statically has neither. */
export type FleetComponentOf<P extends FleetProcessMode> = P extends 'child' ? ChildFleetComponent : InlineFleetComponent;
export type FleetComponent = InlineFleetComponent | ChildFleetComponent;

export interface FleetComponentOptions {
  /**
   * The gateways' xDS addresses (at least one): the simulated Envoys are split among them in equal
   * contiguous ranges of each role, and real clients connect to the first.
   */
  gatewayAddresses: readonly string[];
  envoys: number;
  grpcClients: number;
  nackRate: number;
  slowEnvoys: number;
  slowAckMs: number;
  /** The simulated Envoys' xDS variant (LocalSystemOptions.fleetProtocol; default 'sotw'). */
  protocol?: 'sotw' | 'delta';
  /** Real clients resolve `xds:///<fqdn of sample 0>`; without samples they have nothing to resolve. */
  objects: number;
  /** Child fleets only: record the stamps of every response received (LocalSystemOptions.fleetContentTap). */
  tapContents?: boolean;
  /** LocalSystemOptions.fleetRouteWatches. */
  routeWatches?: readonly RouteWatchSpec[];
  logger: Logger;
}

const ALL_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].map((typeUrl) => ({ typeUrl }));
const NODE_TEMPLATE = { idPrefix: 'envoy-', cluster: 'ingress', userAgentName: 'envoy', alternating: { key: 'zone', values: ['a', 'b'] } };

/** The local system's simulated fleet as data: the same in both modes. */
export function systemFleetSpec(opts: Pick<FleetComponentOptions, 'gatewayAddresses' | 'envoys' | 'nackRate' | 'slowEnvoys' | 'slowAckMs' | 'routeWatches' | 'protocol'>): FleetSpec {
  const [target] = opts.gatewayAddresses;
  if (target === undefined) throw new Error('the fleet needs a gateway address');
  const nackCount = Math.min(opts.envoys, Math.round(opts.envoys * opts.nackRate));
  const slowCount = Math.min(opts.envoys - nackCount, opts.slowEnvoys);
  const common = { transport: 'ads' as const, protocol: opts.protocol ?? 'sotw', subscriptions: ALL_TYPES, reconnectOnError: true, reconnectDelayMs: 500, node: NODE_TEMPLATE };
  const groups: FleetEnvoyGroup[] = [
    // NACKing Envoys reject the cluster of sample 0 (a SotW NACK rejects the whole CDS update, as Envoy does).
    {
      ...common,
      role: 'nacking',
      count: nackCount,
      firstIndex: 0,
      behaviour: { nackRules: [{ typeUrl: CDS_TYPE_URL, resourceName: `^${sampleClusterPrefix(0)}`, message: 'simulated rejection: cluster failed validation' }] },
    },
    { ...common, role: 'slow', count: slowCount, firstIndex: nackCount, behaviour: { ackDelayMs: opts.slowAckMs } },
    { ...common, role: 'normal', count: opts.envoys - nackCount - slowCount, firstIndex: nackCount + slowCount },
  ];
  const perGateway = opts.gatewayAddresses.length;
  return {
    target,
    // The initial channels are the first gateway's; another's open as its Envoys need them.
    channels: Math.min(8, Math.max(1, Math.ceil(opts.envoys / perGateway / 250))),
    groups: perGateway === 1 ? groups : groups.flatMap((group) => splitAmong(group, opts.gatewayAddresses)),
    ...(opts.routeWatches === undefined || opts.routeWatches.length === 0 ? {} : { routeWatches: [...opts.routeWatches] }),
  };
}

/** `group` as one group per gateway: equal contiguous ranges of its indexes (the first ones one larger). */
function splitAmong(group: FleetEnvoyGroup, targets: readonly string[]): FleetEnvoyGroup[] {
  const parts: FleetEnvoyGroup[] = [];
  let firstIndex = group.firstIndex;
  targets.forEach((target, slot) => {
    const count = Math.floor(group.count / targets.length) + (slot < group.count % targets.length ? 1 : 0);
    parts.push({ ...group, count, firstIndex, target });
    firstIndex += count;
  });
  return parts;
}

function nodeIdsOf(spec: FleetSpec, role: string): string[] {
  return spec.groups.filter((group) => group.role === role).flatMap((group) => Array.from({ length: group.count }, (_, k) => nodeFromTemplate(group.node, group.firstIndex + k).id));
}

function startRealClients(opts: FleetComponentOptions): RealClientFleet | undefined {
  const real =
    opts.grpcClients > 0 && opts.objects > 0
      ? new RealClientFleet({ xdsServerAddress: opts.gatewayAddresses[0] ?? '', listenerName: sampleFqdn(0), count: opts.grpcClients, node: (index) => ({ id: `grpc-${index}`, cluster: 'grpc' }) })
      : undefined;
  // A real channel only starts resolving (its xDS subscription) once something waits on it.
  if (real) void real.waitAllReady(60_000).catch((error: unknown) => opts.logger.warn({ err: error }, 'real xDS clients not READY'));
  return real;
}

/** Which node ids play which part (the truth checker and tests pick their Envoys by it). */
function rolesOf(spec: FleetSpec, real: ReturnType<typeof startRealClients>): FleetComponent['roles'] {
  return { nacking: nodeIdsOf(spec, 'nacking'), slow: nodeIdsOf(spec, 'slow'), real: real?.clients.map((c) => c.nodeId) ?? [] };
}

/** The simulated fleet in this process (synchronous: `npm start` and tests as before). */
export function startFleetComponent(opts: FleetComponentOptions): InlineFleetComponent {
  const spec = systemFleetSpec(opts);
  const built = buildFleet(spec, opts.logger.child({ component: 'fleet' }));
  built.fleet.connectAll();
  const real = startRealClients(opts);
  return {
    name: 'envoy-fleet',
    process: 'inline',
    sim: built.fleet,
    simEnvoys: built.envoys,
    queries: inlineFleetQueries(built),
    real,
    roles: rolesOf(spec, real),
    async close() {
      real?.close();
      built.fleet.close();
    },
  };
}

/** The simulated fleet in a child process; real gRPC clients (if any) stay in this process. */
export async function startChildFleetComponent(opts: FleetComponentOptions): Promise<ChildFleetComponent> {
  const spec = systemFleetSpec(opts);
  const child = await startFleetProcess({ spec, logger: opts.logger.child({ component: 'fleet' }), ...(opts.tapContents === true ? { tapContents: true } : {}) });
  opts.logger.info({ pid: child.pid, envoys: child.envoys, startupMs: child.startupMs }, 'fleet child process started');
  const real = startRealClients(opts);
  return {
    name: 'envoy-fleet',
    process: 'child',
    pid: child.pid,
    startupMs: child.startupMs,
    queries: child,
    real,
    roles: rolesOf(spec, real),
    async close() {
      real?.close();
      await child.close();
    },
  };
}

export async function startFleetComponentIn<P extends FleetProcessMode>(mode: P, opts: FleetComponentOptions): Promise<FleetComponentOf<P>> {
  // The conditional type cannot be narrowed from `mode` by the compiler; each branch returns the component of its mode.
  return (mode === 'child' ? await startChildFleetComponent(opts) : startFleetComponent(opts)) as FleetComponentOf<P>;
}
