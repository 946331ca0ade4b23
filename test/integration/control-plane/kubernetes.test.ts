// Kubernetes adapters against the local API server (infra/local/kube): two control-plane replicas
// read HTTPProxies through informers, elect a leader on a Lease, and only the leader writes the Valid
// condition (merge-patch of /status keeping foreign conditions, re-read + retry on 409).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CoordinationV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import { KubeLeaseElector, XDS_ADDRESS_ANNOTATION } from '../../../infra/local/control-plane/kube-lease-elector';
import { KubeRouteSource } from '../../../infra/local/control-plane/kube-route-source';
import { KubeStatusWriter } from '../../../infra/local/control-plane/kube-status-writer';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { Condition } from '../../../infra/local/control-plane/status';
import { kubeconfigYaml } from '../../../infra/local/kube/kubeconfig';
import { type KubeApiServer, startKubeApiServer } from '../../../infra/local/kube/server';
import { endpoints, eventually, proxy, testLogger } from './helpers';

const PROXY_API = { group: 'projectcontour.io', version: 'v1', namespace: 'default', plural: 'httpproxies' };

interface StoredProxy {
  metadata: { generation?: number; resourceVersion?: string };
  status?: { conditions?: Condition[]; currentStatus?: string };
}

function kubeConfigFor(url: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kubeconfigYaml(url));
  return kubeConfig;
}

/**
 * An HTTP interposer in front of the API server that, once armed, changes the target object between
 * the status writer's read and its patch, so the patch deterministically meets a 409 Conflict.
 */
function startConflictInjector(upstream: string, custom: CustomObjectsApi) {
  let armed: string | undefined;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const name = armed;
        if (req.method === 'PATCH' && name !== undefined && req.url?.includes(`/httpproxies/${name}/status`)) {
          armed = undefined;
          // Someone else writes the status in between: a foreign condition.
          await custom.patchNamespacedCustomObjectStatus(
            { ...PROXY_API, name, body: { status: { conditions: [{ type: 'Other', status: 'True', reason: 'Injected', message: 'x', lastTransitionTime: '2026-01-01T00:00:00Z' }] } } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          );
        }
        const headers: Record<string, string> = {};
        for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string' && key !== 'host') headers[key] = value;
        const response = await fetch(`${upstream}${req.url ?? ''}`, {
          method: req.method ?? 'GET',
          headers,
          ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
        });
        res.writeHead(response.status, { 'content-type': response.headers.get('content-type') ?? 'application/json' });
        res.end(Buffer.from(await response.arrayBuffer()));
      })().catch((error: unknown) => {
        res.writeHead(502);
        res.end(String(error));
      });
    });
  });
  return {
    listen: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    arm: (name: string) => {
      armed = name;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Kubernetes adapters: informers, Lease leader election, status writes', () => {
  let kube: KubeApiServer;
  let kubeConfig: KubeConfig;
  let custom: CustomObjectsApi;
  let injector: ReturnType<typeof startConflictInjector>;
  const replicas: Array<{ controlPlane: ControlPlane; elector: KubeLeaseElector; statusWriter: KubeStatusWriter; source: KubeRouteSource }> = [];

  const getProxy = async (name: string): Promise<StoredProxy> =>
    (await custom.getNamespacedCustomObject({ ...PROXY_API, name })) as StoredProxy;
  const validOf = (stored: StoredProxy) => stored.status?.conditions?.find((c) => c.type === 'Valid');

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
    kubeConfig = kubeConfigFor(kube.url);
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const crdResponse = await fetch(`${kube.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(HTTPPROXY_CRD),
    });
    expect(crdResponse.status).toBe(201);
    injector = startConflictInjector(kube.url, custom);
    const injectorUrl = await injector.listen();

    for (const replicaId of ['replica-a', 'replica-b']) {
      const endpointsSource = new InMemoryRouteSource();
      endpointsSource.applyEndpoints(endpoints('app', '10.0.0.1', 80));
      const elector = new KubeLeaseElector({
        kubeConfig,
        namespace: 'default',
        leaseName: 'xds-control-plane',
        identity: replicaId,
        leaseDurationSeconds: 2,
        renewDeadlineMs: 1500,
        retryPeriodMs: 100,
        logger: testLogger,
      });
      // Status goes through the conflict injector; everything else talks to the server directly.
      const statusWriter = new KubeStatusWriter({ kubeConfig: kubeConfigFor(injectorUrl), logger: testLogger });
      const source = new KubeRouteSource({ kubeConfig, logger: testLogger, endpointsAndSecrets: endpointsSource });
      const controlPlane = await startControlPlane({
        port: 0,
        replicaId,
        source,
        statusWriter,
        leaderElector: elector,
        holdoffMs: 10,
        holdoffMaxMs: 50,
        statusRetryMs: 100,
        logger: testLogger,
      });
      elector.advertise(controlPlane.address);
      await elector.start();
      replicas.push({ controlPlane, elector, statusWriter, source });
    }
  });

  afterAll(async () => {
    for (const { controlPlane, elector, source } of replicas) {
      await elector.stop();
      await controlPlane.close();
      await source.close();
    }
    await injector.close();
    await kube.close();
  });

  it('elects exactly one leader and records it in the Lease', async () => {
    const leaders = await eventually(() => {
      const current = replicas.filter((r) => r.elector.isLeader());
      return current.length === 1 ? current : undefined;
    }, 'one leader');
    const lease = await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'xds-control-plane', namespace: 'default' });
    expect(lease.spec?.holderIdentity).toBe(leaders[0]?.controlPlane.replicaId);
    // The holder advertises its xDS address for gateways that follow the status writer.
    expect(lease.metadata?.annotations?.[XDS_ADDRESS_ANNOTATION]).toBe(leaders[0]?.controlPlane.address);
  });

  it('serves HTTPProxies from the informer and writes Valid with observedGeneration, keeping foreign conditions', async () => {
    await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]) });
    const first = await pollProxy('web', (p) => validOf(p)?.observedGeneration === 1);
    expect(validOf(first)).toMatchObject({ status: 'True', reason: 'Valid', message: 'Valid HTTPProxy' });
    expect(first.status?.currentStatus).toBe('valid');
    for (const { controlPlane } of replicas) {
      await eventually(() => controlPlane.rebuildLog.firstContaining('projectcontour.io/HTTPProxy/default/web', 1, 'RDS'), 'each replica built it');
    }

    // A foreign condition (e.g. our EnvoyProgrammed) survives our next write.
    await custom.patchNamespacedCustomObjectStatus(
      {
        ...PROXY_API,
        name: 'web',
        body: { status: { conditions: [...(first.status?.conditions ?? []), { type: 'EnvoyProgrammed', status: 'False', reason: 'Pending', message: '0/1', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await custom.patchNamespacedCustomObject(
      { ...PROXY_API, name: 'web', body: { spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ conditions: [{ prefix: '/v2' }], services: [{ name: 'app', port: 80 }] }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const second = await pollProxy('web', (p) => validOf(p)?.observedGeneration === 2);
    expect(second.metadata.generation).toBe(2);
    // Every replica rebuilt, but only the leader wrote status.
    const follower = replicas.find((r) => !r.elector.isLeader());
    expect(follower?.statusWriter.patches).toBe(0);
    await eventually(
      () => follower?.controlPlane.rebuildLog.firstContaining('projectcontour.io/HTTPProxy/default/web', 2, 'RDS'),
      'the follower built generation 2',
    );
    expect(second.status?.conditions?.map((c) => c.type).sort()).toEqual(['EnvoyProgrammed', 'Valid']);
  });

  it('writes Valid=False with a message for an invalid HTTPProxy', async () => {
    await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('orphan', 'orphan.example.com', [{ name: 'missing', port: 80 }]) });
    const stored = await pollProxy('orphan', (p) => validOf(p) !== undefined);
    expect(validOf(stored)).toMatchObject({ status: 'False', reason: 'ErrorPresent', observedGeneration: 1 });
    expect(validOf(stored)?.message).toContain('Service "default/missing" not found');
  });

  it('writes Valid=False for a spec the API server accepted but the control plane cannot use', async () => {
    await custom.createNamespacedCustomObject({
      ...PROXY_API,
      body: { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name: 'garbage', namespace: 'default' }, spec: { virtualhost: 'nope', routes: 7 } },
    });
    const stored = await pollProxy('garbage', (p) => validOf(p) !== undefined);
    expect(validOf(stored)).toMatchObject({ status: 'False', reason: 'ErrorPresent' });
    expect(validOf(stored)?.message).toMatch(/spec\.virtualhost/);
    // The other proxies are still served.
    const leader = replicas.find((r) => r.elector.isLeader());
    expect(leader?.controlPlane.rebuildLog.latest()?.contained.RDS.some((s) => s.includes('/web@'))).toBe(true);
  });

  it('takes over a Lease whose holder stopped renewing, after the lease duration of observed time', async () => {
    const coordination = kubeConfig.makeApiClient(CoordinationV1Api);
    await coordination.createNamespacedLease({
      namespace: 'default',
      body: { metadata: { name: 'ghost-lease', namespace: 'default' }, spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, renewTime: new Date(), leaseTransitions: 3 } },
    });
    const elector = new KubeLeaseElector({ kubeConfig, namespace: 'default', leaseName: 'ghost-lease', identity: 'successor', leaseDurationSeconds: 1, retryPeriodMs: 100, logger: testLogger });
    const transitions: boolean[] = [];
    elector.onLeadershipChange((leader) => transitions.push(leader));
    await elector.start();
    try {
      expect(elector.isLeader()).toBe(false);
      await eventually(() => elector.isLeader(), 'successor took over the expired lease');
      const lease = await coordination.readNamespacedLease({ name: 'ghost-lease', namespace: 'default' });
      expect(lease.spec).toMatchObject({ holderIdentity: 'successor', leaseTransitions: 4 });
      expect(transitions).toEqual([true]);
    } finally {
      await elector.stop();
    }
    const released = await coordination.readNamespacedLease({ name: 'ghost-lease', namespace: 'default' });
    expect(released.spec?.holderIdentity ?? '').toBe('');
  });

  it('re-reads and retries when the status patch meets 409 Conflict', async () => {
    const leader = replicas.find((r) => r.elector.isLeader());
    if (!leader) throw new Error('no leader');
    const conflictsBefore = leader.statusWriter.conflicts;
    injector.arm('racy');
    await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('racy', 'racy.example.com', [{ name: 'app', port: 80 }]) });
    const stored = await pollProxy('racy', (p) => validOf(p) !== undefined);
    expect(leader.statusWriter.conflicts).toBe(conflictsBefore + 1);
    // Both the injected foreign condition and ours are there.
    expect(stored.status?.conditions?.map((c) => c.type).sort()).toEqual(['Other', 'Valid']);
  });

  it('fails over: when the leader releases the Lease, the other replica takes over status writes', async () => {
    const oldLeader = replicas.find((r) => r.elector.isLeader());
    const follower = replicas.find((r) => !r.elector.isLeader());
    if (!oldLeader || !follower) throw new Error('expected a leader and a follower');
    await oldLeader.elector.stop();
    expect(oldLeader.elector.isLeader()).toBe(false);
    await eventually(() => follower.elector.isLeader(), 'follower became leader');
    const lease = await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'xds-control-plane', namespace: 'default' });
    expect(lease.metadata?.annotations?.[XDS_ADDRESS_ANNOTATION]).toBe(follower.controlPlane.address);

    await custom.patchNamespacedCustomObject(
      { ...PROXY_API, name: 'web', body: { spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ conditions: [{ prefix: '/v3' }], services: [{ name: 'app', port: 80 }] }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const third = await pollProxy('web', (p) => validOf(p)?.observedGeneration === 3);
    expect(validOf(third)?.status).toBe('True');
  });

  async function pollProxy(name: string, done: (stored: StoredProxy) => boolean): Promise<StoredProxy> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const stored = await getProxy(name);
      if (done(stored)) return stored;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${name}: ${JSON.stringify(stored.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
});
