// Done criterion of the fleet: 1,000 simulated Envoys connect to the reference control plane and all
// ACK a change. Timing and memory are printed, never asserted (shared, noisy machines).
import pino from 'pino';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { Fleet, type SimEnvoy } from '../../../infra/local/envoys';
import { formatMeasurement, measureFleet } from '../../../infra/local/envoys/fleetScenario';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const ENVOYS = 1000;
const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

const proxyAt = (port: number): Record<string, unknown> => ({
  apiVersion: 'projectcontour.io/v1',
  kind: 'HTTPProxy',
  metadata: { name: 'app', namespace: 'default' },
  spec: { virtualhost: { fqdn: 'app.example.com' }, routes: [{ services: [{ name: 'app', port }] }] },
});
const endpointsAt = (port: number): Record<string, unknown> => ({
  metadata: { name: 'app', namespace: 'default' },
  subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port }] }],
});

describe('1,000 simulated Envoys against the reference control plane', () => {
  let controlPlane: ControlPlane;
  let fleet: Fleet;
  const source = new InMemoryRouteSource();

  beforeAll(async () => {
    source.applyEndpoints(endpointsAt(8080));
    source.applyProxy(proxyAt(8080));
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-1000', source, holdoffMs: 10, holdoffMaxMs: 50, logger: quiet });
    fleet = new Fleet({ target: controlPlane.address, channels: 8, logger: quiet });
  });

  afterAll(async () => {
    fleet.close();
    await controlPlane.close();
  });

  test('all 1,000 ACK the initial config on every type, then ACK a change', async () => {
    let envoys: SimEnvoy[] = [];
    const measurement = await measureFleet({
      fleet,
      typeUrls: TYPES,
      // A new backend port changes the cluster, its endpoints and the route pointing at it.
      changedTypeUrls: [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL],
      timeoutMs: 120_000,
      create: () => {
        // Half ADS SotW with node on every request, half ADS Delta with node once: both paths at scale.
        envoys = [
          ...fleet.addMany(ENVOYS / 2, { transport: 'ads', protocol: 'sotw', subscriptions: TYPES.map((typeUrl) => ({ typeUrl })) }),
          ...fleet.addMany(ENVOYS / 2, {
            transport: 'ads',
            protocol: 'delta',
            nodeOnEveryRequest: false,
            subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
          }),
        ];
        return envoys;
      },
      change: async () => {
        source.applyEndpoints(endpointsAt(9090));
        source.applyProxy(proxyAt(9090));
        await controlPlane.rebuildNow();
      },
    });
    console.log(`fleet of ${ENVOYS} (control plane in-process: memory includes its per-stream state)\n${formatMeasurement(measurement)}`);

    expect(measurement.envoys).toBe(ENVOYS);
    const cds = controlPlane.currentSnapshot()?.[CLUSTER_TYPE_URL];
    expect(cds?.resources.has('default/app/9090')).toBe(true);
    // Ground truth agrees with the Envoys' own state, and with what the server served.
    const versions = new Set(envoys.map((e) => fleet.truth.latestAccepted(e.id, CLUSTER_TYPE_URL)?.versionInfo));
    expect([...versions]).toEqual([cds?.version]);
    for (const envoy of envoys) expect(envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/9090')).toBe(true);
    expect(fleet.truth.nodeIds()).toHaveLength(ENVOYS);
  }, 300_000);
});
