// The reference control plane, N replicas like a Contour Deployment: each reads HTTPProxies from the
// local API server through informers and serves xDS; a coordination.k8s.io Lease elects the one
// replica that writes status (Valid with observedGeneration). Provenance stamps are on, so the gateway
// gets exact watermarks from whichever replica it follows (docs/PROVENANCE.md).
// The local API server serves no core/v1 Endpoints, so Endpoints come from an in-memory source.
import { ApiException, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { KubeLeaseElector, kubeLeaseClient, type LeaseClient } from '../control-plane/kube-lease-elector';
import { KubeRouteSource } from '../control-plane/kube-route-source';
import { KubeStatusWriter } from '../control-plane/kube-status-writer';
import { InMemoryRouteSource } from '../control-plane/route-source';
import type { Component } from './component';

export const LEASE_NAMESPACE = 'default';
export const LEASE_NAME = 'xds-control-plane';

export interface ControlPlaneReplica {
  /** The elector's identity (a Contour pod name): a replacement replica gets a new one. */
  replicaId: string;
  controlPlane: ControlPlane;
  elector: KubeLeaseElector;
  source: KubeRouteSource;
  /**
   * Fault seam: every Lease create/replace this replica's elector makes fails with 503 until
   * `Date.now()` passes this time (reads still work), so a leader cannot renew and steps down.
   */
  failLeaseWritesUntil: number;
}

/** client-go leader-election timings (seconds for the Lease itself, as in the API). */
export interface LeaseTimings {
  leaseDurationSeconds: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** Short lease so that stopping the leader (or a replica crash in a demo) hands over in seconds. */
export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { leaseDurationSeconds: 5, renewDeadlineMs: 3000, retryPeriodMs: 500 };

export interface ControlPlaneComponent extends Component {
  replicas: ControlPlaneReplica[];
  /** xDS addresses, replica order (a replaced replica's slot gets its successor's address). */
  addresses: string[];
  leader(): ControlPlaneReplica | undefined;
  /**
   * A control-plane pod replaced (Deployment semantics): the replica in `slot` is stopped (its Lease
   * released, or with `release: false` left to expire, as after a crash), and a fresh replica with a
   * new identity and a new port takes its slot. Resolves with the stopped replica (its rebuild log
   * stays readable) once the new one serves xDS.
   */
  replaceReplica(slot: number, options: { release: boolean }): Promise<ControlPlaneReplica>;
  /**
   * Replaces one Service's endpoint addresses on every replica, and on replicas started later: EDS
   * churn, as a scaling Deployment's pods come and go (the soak, bench/soak.ts). Endpoints come from
   * memory here (the API server serves no core/v1 Endpoints), so this is where they change.
   */
  setServiceEndpoints(endpoints: { service: string; namespace: string; ips: readonly string[]; port: number }): void;
  /** The addresses and port one Service's Endpoints have now (undefined: no such Service). */
  serviceEndpoints(namespace: string, service: string): { ips: readonly string[]; port: number } | undefined;
}

/** A Lease client whose writes fail with 503 while the replica's fault switch is on. */
function faultableLeaseClient(inner: LeaseClient, fault: { failWritesUntil: number }): LeaseClient {
  const check = (): void => {
    if (Date.now() < fault.failWritesUntil) {
      throw new ApiException(503, 'injected: the API server is unavailable for this replica', { kind: 'Status', code: 503 }, {});
    }
  };
  return {
    read: (namespace, name) => inner.read(namespace, name),
    create: async (namespace, body) => {
      check();
      return inner.create(namespace, body);
    },
    replace: async (namespace, name, body) => {
      check();
      return inner.replace(namespace, name, body);
    },
  };
}

export interface ServiceEndpoint {
  service: string;
  namespace: string;
  ip: string;
  port: number;
}

export async function startControlPlaneComponent(opts: {
  replicas: number;
  port: (replica: number) => number;
  kubeConfig: KubeConfig;
  endpoints: ServiceEndpoint[];
  logger: Logger;
  lease?: LeaseTimings;
}): Promise<ControlPlaneComponent> {
  const replicas: ControlPlaneReplica[] = [];
  const lease = opts.lease ?? DEFAULT_LEASE_TIMINGS;
  // The Endpoints every replica serves, by namespace/service: a replacement replica starts from the
  // current set, not the one given at start.
  const currentEndpoints = new Map<string, { name: string; namespace: string; ips: readonly string[]; port: number }>();
  for (const endpoint of opts.endpoints) {
    currentEndpoints.set(`${endpoint.namespace}/${endpoint.service}`, { name: endpoint.service, namespace: endpoint.namespace, ips: [endpoint.ip], port: endpoint.port });
  }
  const endpointsObject = (endpoint: { name: string; namespace: string; ips: readonly string[]; port: number }): Record<string, unknown> => ({
    metadata: { name: endpoint.name, namespace: endpoint.namespace },
    subsets: [{ addresses: endpoint.ips.map((ip) => ({ ip })), ports: [{ port: endpoint.port }] }],
  });
  const endpointSources = new WeakMap<ControlPlaneReplica, InMemoryRouteSource>();
  let started = 0;
  // A replaced replica whose successor failed to start stays in its slot, already closed.
  const closed = new WeakSet<ControlPlaneReplica>();
  const closeReplica = async (replica: ControlPlaneReplica, release = true): Promise<void> => {
    if (closed.has(replica)) return;
    closed.add(replica);
    await replica.elector.stop({ release });
    await replica.controlPlane.close();
    await replica.source.close();
  };
  const startReplica = async (slot: number): Promise<ControlPlaneReplica> => {
    // The first generation of replicas keeps the ids cp-1, cp-2; replacements are cp-<slot>-r<n>.
    const replicaId = started < opts.replicas ? `cp-${slot + 1}` : `cp-${slot + 1}-r${started}`;
    started++;
    const logger = opts.logger.child({ component: 'control-plane', replicaId });
    const endpoints = new InMemoryRouteSource();
    for (const endpoint of currentEndpoints.values()) endpoints.applyEndpoints(endpointsObject(endpoint));
    const source = new KubeRouteSource({ kubeConfig: opts.kubeConfig, logger, endpointsAndSecrets: endpoints });
    const leaseFault = { failWritesUntil: 0 };
    const elector = new KubeLeaseElector({
      kubeConfig: opts.kubeConfig,
      leaseClient: faultableLeaseClient(kubeLeaseClient(opts.kubeConfig), leaseFault),
      namespace: LEASE_NAMESPACE,
      leaseName: LEASE_NAME,
      identity: replicaId,
      ...lease,
      logger,
    });
    let controlPlane: ControlPlane;
    try {
      controlPlane = await startControlPlane({
        port: opts.port(slot),
        host: '127.0.0.1',
        replicaId,
        source,
        statusWriter: new KubeStatusWriter({ kubeConfig: opts.kubeConfig, logger }),
        leaderElector: elector,
        versionScheme: 'contour',
        provenance: true,
        listenerStyle: 'api',
        holdoffMs: 50,
        holdoffMaxMs: 250,
        logger,
      });
    } catch (error) {
      await source.close().catch(() => undefined);
      throw error;
    }
    const replica: ControlPlaneReplica = {
      replicaId,
      controlPlane,
      elector,
      source,
      get failLeaseWritesUntil() {
        return leaseFault.failWritesUntil;
      },
      set failLeaseWritesUntil(until: number) {
        leaseFault.failWritesUntil = until;
      },
    };
    endpointSources.set(replica, endpoints);
    elector.advertise(controlPlane.address);
    await elector.start();
    return replica;
  };
  const component: ControlPlaneComponent = {
    name: 'control-plane',
    replicas,
    addresses: [],
    leader: () => replicas.find((replica) => replica.elector.isLeader()),
    async close() {
      for (const replica of [...replicas].reverse()) await closeReplica(replica);
    },
    async replaceReplica(slot, options) {
      const old = replicas[slot];
      if (old === undefined) throw new Error(`no control-plane replica in slot ${slot}`);
      await closeReplica(old, options.release);
      const fresh = await startReplica(slot);
      replicas[slot] = fresh;
      component.addresses[slot] = fresh.controlPlane.address;
      return old;
    },
    setServiceEndpoints(endpoint) {
      const current = { name: endpoint.service, namespace: endpoint.namespace, ips: [...endpoint.ips], port: endpoint.port };
      currentEndpoints.set(`${endpoint.namespace}/${endpoint.service}`, current);
      for (const replica of replicas) endpointSources.get(replica)?.applyEndpoints(endpointsObject(current));
    },
    serviceEndpoints(namespace, service) {
      const current = currentEndpoints.get(`${namespace}/${service}`);
      return current === undefined ? undefined : { ips: [...current.ips], port: current.port };
    },
  };
  try {
    for (let index = 0; index < opts.replicas; index++) {
      const replica = await startReplica(index);
      replicas.push(replica);
      component.addresses.push(replica.controlPlane.address);
    }
    // Readiness: one replica holds the Lease (someone will write Valid status).
    const deadline = Date.now() + 15_000;
    while (component.leader() === undefined) {
      if (Date.now() > deadline) throw new Error('no control-plane replica became leader within 15 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await component.close().catch(() => undefined);
    throw error;
  }
  return component;
}
