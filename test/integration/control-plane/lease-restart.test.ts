// The leader-change seam the truth checker uses (docs/RELIABILITY.md, "Fault kinds"): an elector can
// be started again after stop(); a leader whose Lease renewals fail steps down and the other replica
// takes over once the Lease expires; a stopped leader either releases the Lease (the successor takes
// it at its next attempt) or leaves it to expire (a crash); and the control-plane component replaces a
// replica with a fresh one (new identity, new address) while the other keeps serving.
import { ApiException, CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubeLeaseElector, kubeLeaseClient, XDS_ADDRESS_ANNOTATION, type LeaseClient } from '../../../infra/local/control-plane/kube-lease-elector';
import { kubeconfigYaml } from '../../../infra/local/kube/kubeconfig';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import { LEASE_NAME, LEASE_NAMESPACE, startControlPlaneComponent, type ControlPlaneComponent } from '../../../infra/local/system/control-plane';
import { eventually } from '../../support/eventually';
import { testLogger } from './helpers';

const LEASE_SECONDS = 2;

function kubeConfigFor(url: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kubeconfigYaml(url));
  return kubeConfig;
}

/** Lease writes fail with 503 while `failing` is set (reads pass), as an API server refusing one client. */
function flakyClient(inner: LeaseClient): LeaseClient & { failing: boolean; failedWrites: number } {
  const client = {
    failing: false,
    failedWrites: 0,
    read: (namespace: string, name: string) => inner.read(namespace, name),
    create: async (namespace: string, body: Parameters<LeaseClient['create']>[1]) => {
      if (client.failing) {
        client.failedWrites++;
        throw new ApiException(503, 'injected', {}, {});
      }
      return inner.create(namespace, body);
    },
    replace: async (namespace: string, name: string, body: Parameters<LeaseClient['replace']>[2]) => {
      if (client.failing) {
        client.failedWrites++;
        throw new ApiException(503, 'injected', {}, {});
      }
      return inner.replace(namespace, name, body);
    },
  };
  return client;
}

describe('KubeLeaseElector restart and takeover', () => {
  let kube: KubeApiServer;
  let kubeConfig: KubeConfig;
  const electors: KubeLeaseElector[] = [];

  const holder = async (leaseName: string): Promise<string> => {
    const lease = await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: leaseName, namespace: 'default' });
    return lease.spec?.holderIdentity ?? '';
  };
  const elector = (identity: string, leaseName: string, leaseClient?: LeaseClient): KubeLeaseElector => {
    const made = new KubeLeaseElector({
      kubeConfig,
      ...(leaseClient === undefined ? {} : { leaseClient }),
      namespace: 'default',
      leaseName,
      identity,
      leaseDurationSeconds: LEASE_SECONDS,
      renewDeadlineMs: 1500,
      retryPeriodMs: 100,
      logger: testLogger,
    });
    electors.push(made);
    return made;
  };

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
    kubeConfig = kubeConfigFor(kube.url);
  });

  afterAll(async () => {
    for (const made of electors) await made.stop();
    await kube.close();
  });

  it('start → stop (release) → start acquires the Lease again, and leadership is reported each time', async () => {
    const a = elector('a', 'restart');
    const changes: boolean[] = [];
    a.onLeadershipChange((leader) => changes.push(leader));
    await a.start();
    expect(a.isLeader()).toBe(true);
    await a.stop();
    expect(a.isLeader()).toBe(false);
    expect(await holder('restart')).toBe(''); // released
    await a.start();
    await eventually(() => a.isLeader(), 'the restarted elector leads again', { timeoutMs: 5000 });
    expect(await holder('restart')).toBe('a');
    expect(changes).toEqual([true, false, true]);
    // Starting a running elector is a no-op (no second timer loop).
    await a.start();
    await a.stop();
  });

  it('a leader whose renewals fail steps down at its renew deadline; the other takes over once the Lease expires', async () => {
    const flaky = flakyClient(kubeLeaseClient(kubeConfig));
    const a = elector('a', 'step-down', flaky);
    const b = elector('b', 'step-down');
    await a.start();
    await b.start();
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    flaky.failing = true;
    const failedAt = Date.now();
    await eventually(() => !a.isLeader(), 'a steps down', { timeoutMs: 5000 });
    await eventually(() => b.isLeader(), 'b takes over', { timeoutMs: 5000 });
    // b waits for the Lease to expire from its own observation (client-go): not before the lease
    // duration (minus a retry period of observation lag) has passed since a's last renewal.
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 200);
    expect(await holder('step-down')).toBe('b');
    expect(flaky.failedWrites).toBeGreaterThan(0);
    // The API heals: a stays a follower while b renews.
    flaky.failing = false;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(a.isLeader()).toBe(false);
    expect(b.isLeader()).toBe(true);
    await a.stop();
    await b.stop();
  });

  it('a leader stopped without releasing (a crash) leaves the Lease to expire; the successor takes it after the lease duration', async () => {
    const a = elector('a', 'crash');
    const b = elector('b', 'crash');
    await a.start();
    await b.start();
    expect(a.isLeader()).toBe(true);
    await a.stop({ release: false });
    expect(await holder('crash')).toBe('a'); // nobody cleared it
    const stoppedAt = Date.now();
    await eventually(() => b.isLeader(), 'b takes over after expiry', { timeoutMs: 6000 });
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 200);
    await b.stop();
  });
});

describe('control-plane component: replacing a replica', () => {
  let kube: KubeApiServer;
  let component: ControlPlaneComponent | undefined;

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
  });

  afterAll(async () => {
    await component?.close();
    await kube.close();
  });

  it('kills the leader (released), starts a fresh replica in its slot, and the Lease advertises the new holder', async () => {
    const kubeConfig = kubeConfigFor(kube.url);
    component = await startControlPlaneComponent({
      replicas: 2,
      port: () => 0,
      kubeConfig,
      endpoints: [],
      logger: testLogger,
      lease: { leaseDurationSeconds: LEASE_SECONDS, renewDeadlineMs: 1500, retryPeriodMs: 100 },
    });
    const started = component;
    const leader = started.leader();
    expect(leader).toBeDefined();
    const slot = started.replicas.indexOf(leader as NonNullable<typeof leader>);
    const oldAddress = started.addresses[slot];
    const old = await started.replaceReplica(slot, { release: true });
    expect(old.replicaId).toBe(leader?.replicaId);
    expect(old.elector.isLeader()).toBe(false);
    const fresh = started.replicas[slot];
    expect(fresh?.replicaId).not.toBe(old.replicaId);
    expect(started.addresses[slot]).toBe(fresh?.controlPlane.address);
    expect(started.addresses[slot]).not.toBe(oldAddress);
    const lease = kubeConfig.makeApiClient(CoordinationV1Api);
    const newLeader = await eventually(() => started.leader(), 'a new leader', { timeoutMs: 5000 });
    expect(newLeader.replicaId).not.toBe(old.replicaId);
    const read = await eventually(async () => {
      const current = await lease.readNamespacedLease({ name: LEASE_NAME, namespace: LEASE_NAMESPACE });
      return current.spec?.holderIdentity === newLeader.replicaId ? current : undefined;
    }, 'the Lease names the new leader');
    expect(read.metadata?.annotations?.[XDS_ADDRESS_ANNOTATION]).toBe(newLeader.controlPlane.address);
  });

  it('the replica fault switch makes its leader step down and the other replica take over', async () => {
    const started = component;
    if (started === undefined) throw new Error('component not started');
    const leader = started.leader();
    if (leader === undefined) throw new Error('no leader');
    leader.failLeaseWritesUntil = Date.now() + 4000;
    await eventually(() => started.leader() !== undefined && started.leader() !== leader, 'the other replica leads', { timeoutMs: 8000 });
    expect(leader.elector.isLeader()).toBe(false);
  });
});
