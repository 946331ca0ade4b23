// Invariant 1 judged in the fleet's own process (infra/local/envoys/fleet-process.ts, trueWriteViolations;
// test/truth/fleet-true-writes.ts), as the soak does: a real fleet child, with its content tap, against
// the reference control plane stamping provenance. A True write is judged by the stamps in what each
// Envoy accepted: a generation they all hold passes, one they do not yet hold fails for every Envoy
// and type, and a write judged at a moment before the Envoys had it fails even after they do.
import pino from 'pino';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startFleetProcess, type FleetProcess } from '../../../infra/local/envoys/fleet-process';
import type { FleetSpec } from '../../../infra/local/envoys/fleet-spec';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { JOIN_RACE_MS, typesReflecting } from '../../truth/checker';
import { eventually } from '../../support/eventually';

const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const SUBSCRIBED = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const ENVOYS = 6;
const PREFIX = 'projectcontour.io/HTTPProxy/default/';
const OBJECT = `${PREFIX}app`;
const TIMINGS = { sourcePrefix: PREFIX, envoyTtlMs: 60_000, envoyHeartbeatMs: 15_000 };

function httpProxy(port: number): Record<string, unknown> {
  return { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name: 'app', namespace: 'default' }, spec: { virtualhost: { fqdn: 'app.example.com' }, routes: [{ services: [{ name: 'app', port }] }] } };
}
function endpointsOf(port: number): Record<string, unknown> {
  return { metadata: { name: 'app', namespace: 'default' }, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port }] }] };
}

function specFor(target: string, idPrefix: string, count: number): FleetSpec {
  return {
    target,
    channels: 1,
    maxStreamsPerChannel: 8,
    groups: [
      { transport: 'ads', protocol: 'sotw', subscriptions: SUBSCRIBED.map((typeUrl) => ({ typeUrl })), reconnectOnError: true, reconnectDelayMs: 200, node: { idPrefix, cluster: 'ingress' }, role: 'normal', count, firstIndex: 0 },
    ],
  };
}

describe('invariant 1 judged in the fleet child against the stamps its Envoys received', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let tapped: FleetProcess | undefined;
  let untapped: FleetProcess | undefined;

  beforeAll(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpointsOf(8080));
    source.applyProxy(httpProxy(8080));
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-fleet-true-writes', source, holdoffMs: 10, holdoffMaxMs: 50, provenance: true, logger: quiet });
  });

  afterAll(async () => {
    await tapped?.close();
    await untapped?.close();
    await controlPlane.close();
  });

  test('a held generation passes; one not held, or judged before it was held, fails for every Envoy and type', async () => {
    tapped = await startFleetProcess({ spec: specFor(controlPlane.address, 'tapped-', ENVOYS), logger: quiet, tapContents: true });
    await eventually(async () => (await tapped?.configuredCount()) === ENVOYS, 'every Envoy configured', { timeoutMs: 20_000, intervalMs: 50 });
    const types = typesReflecting(OBJECT, { subscribedTypes: SUBSCRIBED, rebuildLogs: [controlPlane.rebuildLog] });
    // The HTTPProxy is stamped on the route configuration and the listener at least.
    expect(types).toEqual(expect.arrayContaining([ROUTE_CONFIGURATION_TYPE_URL]));
    const judge = (observedGeneration: number, at: number) => (tapped as FleetProcess).trueWriteViolations({ writes: [{ name: 'app', at, observedGeneration }], typesByObject: { [OBJECT]: types }, ...TIMINGS });

    expect(await judge(1, Date.now())).toEqual([]);
    // Past the checker's join race (JOIN_RACE_MS after first connecting), a miss is a violation, not the known race.
    await new Promise((resolve) => setTimeout(resolve, JOIN_RACE_MS + 100));

    const notYet = await judge(2, Date.now());
    expect(notYet).toHaveLength(ENVOYS * types.length);
    expect(notYet.every((violation) => violation.invariant === 'I1-true-only-when-programmed' && violation.known !== true)).toBe(true);
    expect(notYet[0]?.detail).toMatch(/app True at generation 2 .* but tapped-\d+ had accepted \S+ .*containing generation 1/);

    const beforeChange = Date.now();
    expect(source.applyProxy(httpProxy(9090))).toBe(2);
    await eventually(async () => (await judge(2, Date.now())).length === 0, 'every Envoy holds generation 2', { timeoutMs: 20_000, intervalMs: 100 });
    // Judged at a moment before the change reached them, the same True is still a violation.
    expect(await judge(2, beforeChange)).toHaveLength(ENVOYS * types.length);
  });

  test('a fleet started without the tap refuses to judge, precisely', async () => {
    untapped = await startFleetProcess({ spec: specFor(controlPlane.address, 'untapped-', 1), logger: quiet });
    await expect(untapped.trueWriteViolations({ writes: [{ name: 'app', at: Date.now(), observedGeneration: 1 }], typesByObject: { [OBJECT]: [ROUTE_CONFIGURATION_TYPE_URL] }, ...TIMINGS })).rejects.toThrow(
      /trueWrites needs the content tap/,
    );
  });
});
