// The leader follower against the local API server with its Lease watch behind: `confirm` reads the
// Lease as it is now, and a watch event that arrives after that read, but is older than it, must not
// take the gateway back to the former holder (docs/GATEWAY.md, "Watermarks": the barrier would then
// trust a replica that no longer writes status).
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoordinationV1Api, KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import { LeaderFollower } from '../../../xds-gateway/tracking/leader-follower';
import { eventually, testLogger } from './helpers';

const LAG_MS = 1500;
const TARGETS = { 'replica-a': '10.0.0.1:8001', 'replica-b': '10.0.0.2:8001' };

let kube: KubeApiServer;
let leases: CoordinationV1Api;
let kubeConfig: KubeConfig;

beforeAll(async () => {
  kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kube.kubeconfigPath(mkdtempSync(path.join(os.tmpdir(), 'leader-follower-'))));
  leases = kubeConfig.makeApiClient(CoordinationV1Api);
});

afterAll(async () => {
  await kube.close();
});

async function hold(holderIdentity: string): Promise<V1Lease> {
  const current = await leases.readNamespacedLease({ namespace: 'default', name: 'cp' });
  return leases.replaceNamespacedLease({ namespace: 'default', name: 'cp', body: { ...current, spec: { ...current.spec, holderIdentity, renewTime: new Date() } } });
}

test('a fresh read wins over a late watch event: the follower never goes back to a former holder', async () => {
  await leases.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'cp' }, spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 2 } } });
  const targets: string[] = [];
  const follower = new LeaderFollower({ kubeConfig, namespace: 'default', leaseName: 'cp', mapping: { targets: TARGETS }, relay: { setUpstreamTarget: (target) => targets.push(target) }, logger: testLogger });
  await follower.start();
  try {
    await eventually(() => follower.currentTarget() === TARGETS['replica-a'], 'follows replica-a');

    kube.setWatchLag('leases.coordination.k8s.io', LAG_MS);
    await hold('replica-a'); // a renewal: reaches the watch LAG_MS late
    await hold('replica-b'); // replica-b takes over
    expect(follower.currentTarget()).toBe(TARGETS['replica-a']); // the watch has not shown it yet
    const epoch = follower.epoch();
    await follower.confirm();
    expect(follower.currentTarget()).toBe(TARGETS['replica-b']);
    expect(follower.epoch()).toBe(epoch + 1);

    // Both lagged events arrive now, the renewal by replica-a first.
    await new Promise((resolve) => setTimeout(resolve, LAG_MS + 500));
    expect(follower.currentTarget()).toBe(TARGETS['replica-b']);
    expect(targets).toEqual([TARGETS['replica-a'], TARGETS['replica-b']]);
    expect(follower.epoch()).toBe(epoch + 1);
  } finally {
    kube.setWatchLag('leases.coordination.k8s.io', 0);
    await follower.stop();
  }
});

test('confirm after the Lease is deleted: no holder, barriers paused', async () => {
  await leases.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'gone' }, spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 2 } } });
  const follower = new LeaderFollower({ kubeConfig, namespace: 'default', leaseName: 'gone', mapping: { targets: TARGETS }, relay: { setUpstreamTarget: () => undefined }, logger: testLogger });
  await follower.start();
  try {
    await eventually(() => follower.trusted(), 'follows replica-a');
    kube.setWatchLag('leases.coordination.k8s.io', LAG_MS);
    await leases.deleteNamespacedLease({ namespace: 'default', name: 'gone' });
    await follower.confirm();
    expect(follower.trusted()).toBe(false);
    expect(follower.currentHolder()).toBe('');
  } finally {
    kube.setWatchLag('leases.coordination.k8s.io', 0);
    await follower.stop();
  }
});
