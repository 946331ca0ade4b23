// The reference control plane, N replicas like a Contour Deployment: each reads HTTPProxies from the
// local API server through informers and serves xDS; a coordination.k8s.io Lease elects the one
// replica that writes status (Valid with observedGeneration). Provenance stamps are on, so the gateway
// gets exact watermarks from whichever replica it follows (docs/PROVENANCE.md).
// The local API server serves no core/v1 Endpoints, so Endpoints come from an in-memory source.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { KubeLeaseElector } from '../control-plane/kube-lease-elector';
import { KubeRouteSource } from '../control-plane/kube-route-source';
import { KubeStatusWriter } from '../control-plane/kube-status-writer';
import { InMemoryRouteSource } from '../control-plane/route-source';
import type { Component } from './component';

export const LEASE_NAMESPACE = 'default';
export const LEASE_NAME = 'xds-control-plane';

export interface ControlPlaneReplica {
  controlPlane: ControlPlane;
  elector: KubeLeaseElector;
  source: KubeRouteSource;
}

export interface ControlPlaneComponent extends Component {
  replicas: ControlPlaneReplica[];
  /** xDS addresses, replica order. */
  addresses: string[];
  leader(): ControlPlaneReplica | undefined;
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
}): Promise<ControlPlaneComponent> {
  const replicas: ControlPlaneReplica[] = [];
  const closeReplica = async (replica: ControlPlaneReplica): Promise<void> => {
    await replica.elector.stop();
    await replica.controlPlane.close();
    await replica.source.close();
  };
  const component: ControlPlaneComponent = {
    name: 'control-plane',
    replicas,
    addresses: [],
    leader: () => replicas.find((replica) => replica.elector.isLeader()),
    async close() {
      for (const replica of [...replicas].reverse()) await closeReplica(replica);
    },
  };
  try {
    for (let index = 0; index < opts.replicas; index++) {
      const replicaId = `cp-${index + 1}`;
      const logger = opts.logger.child({ component: 'control-plane', replicaId });
      const endpoints = new InMemoryRouteSource();
      for (const endpoint of opts.endpoints) {
        endpoints.applyEndpoints({
          metadata: { name: endpoint.service, namespace: endpoint.namespace },
          subsets: [{ addresses: [{ ip: endpoint.ip }], ports: [{ port: endpoint.port }] }],
        });
      }
      const source = new KubeRouteSource({ kubeConfig: opts.kubeConfig, logger, endpointsAndSecrets: endpoints });
      // Short lease so that stopping the leader (or a replica crash in a demo) hands over in seconds.
      const elector = new KubeLeaseElector({
        kubeConfig: opts.kubeConfig,
        namespace: LEASE_NAMESPACE,
        leaseName: LEASE_NAME,
        identity: replicaId,
        leaseDurationSeconds: 5,
        renewDeadlineMs: 3000,
        retryPeriodMs: 500,
        logger,
      });
      const controlPlane = await startControlPlane({
        port: opts.port(index),
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
      const replica = { controlPlane, elector, source };
      elector.advertise(controlPlane.address);
      await elector.start();
      replicas.push(replica);
      component.addresses.push(controlPlane.address);
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
