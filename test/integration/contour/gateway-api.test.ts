// Unmodified Contour (v1.33.6) serving a Gateway API HTTPRoute behind the gateway, end to end: the
// local system with `gatewayApi: true` (Gateway API CRDs from Contour's go.mod, a Gateway Contour
// processes through `gateway.gatewayRef`, HTTPRoute tracked by the barrier with Contour's
// controllerName and by the functions). Our verdict goes under status.parents in entries of our own
// (docs/CONVERGENCE.md, "Gateway API routes"): `kubectl wait --for=jsonpath` and our CLI read it
// there, and Contour's own entries stay as Contour writes them.
//
// Each True is judged by what the Envoys hold: the route for web.local must encode the generation
// (prefix `/gen-<G>`, `/` for 1) with its clusters and endpoints held; one Envoy ACKs 1.5 s late, so a
// verdict taken before Contour's snapshot, or from our own status entries, would show.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/xds';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { CONTOUR_GATEWAY_CONTROLLER, CONTOUR_GATEWAY_NAME, CONTOUR_NAMESPACE } from '../../../infra/local/system/contour';
import { SAMPLE_NAMESPACE, sampleCanaryService, sampleService } from '../../../infra/local/system/samples';
import { waitFor } from '../../support/eventually';
import { cli, kubectl } from '../system/helpers';
import { HeldConfig } from './held-content';

jest.setTimeout(240_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

const OURS = 'xds-programmed.dev/status';
const TYPE = 'xds-programmed.dev/Programmed';
const ROUTE = 'web';
const FQDN = 'web.local';
const ROUTE_PATH = `/apis/gateway.networking.k8s.io/v1/namespaces/${SAMPLE_NAMESPACE}/httproutes`;
const ENVOYS = [
  { id: 'envoy-a', ackDelayMs: 0 },
  { id: 'envoy-b', ackDelayMs: 0 },
  { id: 'envoy-slow', ackDelayMs: 1500 },
];

interface ParentCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}
interface RouteJson {
  metadata: { generation: number; resourceVersion: string };
  status?: { parents?: Array<{ controllerName: string; parentRef: Record<string, unknown>; conditions: ParentCondition[] }> };
}

// Written out in full: the Gateway API CRDs default `group`/`kind` of these references through their
// OpenAPI schema, which kube-apiserver applies and the local API server does not (docs/LOCAL-KUBERNETES.md).
function routeSpec(generation: number, service: string): Record<string, unknown> {
  return {
    parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: CONTOUR_GATEWAY_NAME, namespace: CONTOUR_NAMESPACE }],
    hostnames: [FQDN],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: generation === 1 ? '/' : `/gen-${generation}` } }], backendRefs: [{ group: '', kind: 'Service', name: service, port: 8080, weight: 1 }] }],
  };
}

describe('unmodified Contour serving an HTTPRoute behind the gateway', () => {
  let system: LocalSystem<'inline', 'contour'>;
  let dir: string;
  const held = new Map<string, HeldConfig>();
  const kube = (path: string, init?: RequestInit): Promise<Response> => fetch(`${system.endpoints.kubeUrl}${path}`, init);
  const getRoute = async (): Promise<RouteJson> => (await (await kube(`${ROUTE_PATH}/${ROUTE}`)).json()) as RouteJson;
  const entries = (route: RouteJson, controller: string) => route.status?.parents?.filter((entry) => entry.controllerName === controller) ?? [];
  const ourCondition = (route: RouteJson) => entries(route, OURS)[0]?.conditions.find((c) => c.type === TYPE);

  /** Polls until our condition says `status` at `generation`; returns it and when it was first seen. */
  const ourVerdict = async (generation: number, status: string) =>
    waitFor(
      `our ${TYPE}=${status} at generation ${generation}`,
      async () => {
        const route = await getRoute();
        const condition = ourCondition(route);
        return condition?.observedGeneration === generation && condition.status === status ? { route, condition, seenAt: Date.now() } : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    ).catch(async (error: unknown) => {
      const route = await getRoute();
      throw new Error(`${String(error)}; status now ${JSON.stringify(route.status)}; envoys: ${[...held.values()].map((h) => `${h.nodeId} ${JSON.stringify(h.current(ROUTE))}`).join('; ')}`);
    });

  const patchRoute = async (generation: number, service: string): Promise<void> => {
    const response = await kube(`${ROUTE_PATH}/${ROUTE}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: routeSpec(generation, service) }) });
    expect(response.status).toBe(200);
    expect(((await response.json()) as RouteJson).metadata.generation).toBe(generation);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'contour-gwapi-'));
    system = await startLocalSystem({ controlPlane: 'contour', gatewayApi: true, envoys: 0, grpcClients: 0, objects: 1, stateDir: dir, ackTimeoutMs: 5000, controlPlaneReplicas: 1 }, { logger });
    expect(system.unavailable).toEqual([]);
    for (const envoy of ENVOYS) {
      // Contour names a Gateway listener's Envoy listener (and its route configuration) <protocol>-<port>.
      const config = new HeldConfig(envoy.id, new Map([[ROUTE, FQDN]]), 'http-80');
      held.set(envoy.id, config);
      system.fleet.sim
        .add({
          node: { id: envoy.id, cluster: 'ingress', userAgentName: 'envoy' },
          transport: 'per-type',
          protocol: 'sotw',
          subscriptions: [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].map((typeUrl) => ({ typeUrl })),
          reconnectOnError: true,
          reconnectDelayMs: 200,
          ...(envoy.ackDelayMs === 0 ? {} : { behaviour: { ackDelayMs: envoy.ackDelayMs, nackRules: [], hang: false } }),
          onAccepted: config.accept,
        })
        .connect();
    }
    const created = await kube(ROUTE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: ROUTE, namespace: SAMPLE_NAMESPACE }, spec: routeSpec(1, sampleService(0)) }),
    });
    expect(created.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await system?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const everyEnvoyHolds = (generation: number, cluster: RegExp): void => {
    for (const envoy of held.values()) expect({ envoy: envoy.nodeId, view: envoy.current(ROUTE) }).toMatchObject({ envoy: envoy.nodeId, view: { complete: true, generation, clusters: [expect.stringMatching(cluster)] } });
  };

  it('writes our verdict in entries of our own under status.parents, True only once every Envoy routes the generation', async () => {
    const first = await ourVerdict(1, 'True');
    expect(first.condition.message).toBe(`${ENVOYS.length}/${ENVOYS.length} Envoys programmed at generation 1`);
    everyEnvoyHolds(1, new RegExp(`^${SAMPLE_NAMESPACE}/${sampleService(0)}/8080/[0-9a-f]+$`));
    // Contour's own entry, next to ours, says it accepted generation 1.
    const contour = entries(first.route, CONTOUR_GATEWAY_CONTROLLER);
    expect(contour).toHaveLength(1);
    expect(contour[0]?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(entries(first.route, OURS).map((entry) => entry.parentRef)).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: CONTOUR_GATEWAY_NAME, namespace: CONTOUR_NAMESPACE }]);

    // What users run: kubectl's jsonpath wait, and our CLI (which also checks observedGeneration).
    const home = join(dir, 'home');
    const jsonpath = `jsonpath={.status.parents[?(@.controllerName=="${OURS}")].conditions[?(@.type=="${TYPE}")].status}=True`;
    expect(await kubectl(system.endpoints.kubeconfigPath, home, ['wait', `httproute/${ROUTE}`, `--for=${jsonpath}`, '--timeout=30s'])).toMatchObject({ code: 0 });
    const env = { XDS_PROGRAMMED_URL: system.endpoints.queryUrl ?? '', XDS_PROGRAMMED_TOKEN: system.endpoints.queryToken, KUBECONFIG: system.endpoints.kubeconfigPath };
    const waited = await cli(['wait', `httproute/${ROUTE}`, '--timeout', '30s'], env);
    expect(waited).toMatchObject({ code: 0 });
    expect(waited.stdout).toContain(`${TYPE}=True at generation 1`);
  });

  it('a change is True at its generation only after the slow Envoy holds it; Contour\'s entries survive our writes', async () => {
    const changedAt = Date.now();
    await patchRoute(2, sampleCanaryService(0));
    const second = await ourVerdict(2, 'True');
    everyEnvoyHolds(2, new RegExp(`^${SAMPLE_NAMESPACE}/${sampleCanaryService(0)}/8080/[0-9a-f]+$`));
    // The slow Envoy held generation 2 no later than we were seen saying so.
    const slowHeldAt = held.get('envoy-slow')?.firstCompleteAt(ROUTE, 2, changedAt);
    expect(slowHeldAt).toBeDefined();
    expect(slowHeldAt as number).toBeLessThanOrEqual(second.seenAt);
    expect(entries(second.route, CONTOUR_GATEWAY_CONTROLLER)[0]?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True', observedGeneration: 2 });
  });

  it('a generation Contour rejects (ResolvedRefs=False: no such Service) is False/Invalid, quoting Contour', async () => {
    await patchRoute(3, 'no-such-service');
    const rejected = await ourVerdict(3, 'False');
    expect(rejected.condition.reason).toBe('Invalid');
    const resolved = entries(rejected.route, CONTOUR_GATEWAY_CONTROLLER)[0]?.conditions.find((c) => c.type === 'ResolvedRefs');
    expect(resolved).toMatchObject({ status: 'False', observedGeneration: 3 });
    expect(rejected.condition.message).toBe(`the controller rejected generation 3: ResolvedRefs: ${resolved?.message ?? ''}`);
  });
});
