// The whole local system with an HTTPRoute translated by the reference control plane, with provenance
// watermarks (stamps name the HTTPRoute at its generation) and with the barrier (the control plane's
// own status.parents entries are the "processed" signal). Our verdict is in entries of our own under
// status.parents (docs/CONVERGENCE.md, "Gateway API routes"): kubectl's jsonpath wait and our CLI
// find it there, the control plane's entries stay, and with the barrier a generation the control
// plane rejects (a backend without Endpoints: ResolvedRefs=False) is False/Invalid.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { REFERENCE_CONTROLLER_NAME } from '../../../infra/local/control-plane/gateway-api';
import { sampleCanaryService, sampleService, startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { cli, eventually, kubectl } from './helpers';

jest.setTimeout(180_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

const OURS = 'xds-programmed.dev/status';
const TYPE = 'xds-programmed.dev/Programmed';
const ROUTES = '/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}
interface RouteJson {
  metadata: { generation: number };
  status?: { parents?: Array<{ controllerName: string; parentRef: Record<string, unknown>; conditions: Condition[] }> };
}

const spec = (prefix: string, service: string) => ({
  parentRefs: [{ name: 'edge' }],
  hostnames: ['web.local'],
  rules: [{ matches: [{ path: { type: 'PathPrefix', value: prefix } }], backendRefs: [{ name: service, port: 8080 }] }],
});

describe.each(['provenance', 'barrier'] as const)('local system: an HTTPRoute of the reference control plane (%s watermarks)', (gatewayWatermarks) => {
  let system: LocalSystem;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-httproute-'));
    system = await startLocalSystem({ envoys: 3, grpcClients: 0, objects: 1, stateDir: dir, ackTimeoutMs: 5000, gatewayWatermarks }, { logger });
  }, 90_000);
  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const kube = (path: string, init?: RequestInit): Promise<Response> => fetch(`${system.endpoints.kubeUrl}${path}`, init);
  const route = async (): Promise<RouteJson> => (await (await kube(`${ROUTES}/web`)).json()) as RouteJson;
  const ours = (body: RouteJson) => body.status?.parents?.find((entry) => entry.controllerName === OURS)?.conditions.find((c) => c.type === TYPE);
  const verdict = (generation: number, status: string, reason: string) =>
    eventually(async () => {
      const body = await route();
      const condition = ours(body);
      return condition?.observedGeneration === generation && condition.status === status && condition.reason === reason ? body : undefined;
    }, `our ${TYPE}=${status}/${reason} at generation ${generation}`, 60_000);
  const patch = async (prefix: string, service: string): Promise<void> => {
    const response = await kube(`${ROUTES}/web`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: spec(prefix, service) }) });
    expect(response.status).toBe(200);
  };

  it('is True at each generation in an entry of our own, next to the control plane\'s', async () => {
    expect(system.unavailable).toEqual([]);
    const created = await kube(ROUTES, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'web' }, spec: spec('/', sampleService(0)) }) });
    expect(created.status).toBe(201);
    const first = await verdict(1, 'True', 'Programmed');
    expect(ours(first)?.message).toBe('3/3 Envoys programmed at generation 1');
    expect(first.status?.parents?.map((entry) => [entry.controllerName, entry.parentRef])).toEqual([
      [REFERENCE_CONTROLLER_NAME, { name: 'edge' }],
      [OURS, { name: 'edge' }],
    ]);

    const home = join(dir, 'home');
    const jsonpath = `jsonpath={.status.parents[?(@.controllerName=="${OURS}")].conditions[?(@.type=="${TYPE}")].status}=True`;
    expect(await kubectl(system.endpoints.kubeconfigPath, home, ['wait', 'httproute/web', `--for=${jsonpath}`, '--timeout=30s'])).toMatchObject({ code: 0 });
    const env = { XDS_PROGRAMMED_URL: system.endpoints.queryUrl ?? '', XDS_PROGRAMMED_TOKEN: system.endpoints.queryToken, KUBECONFIG: system.endpoints.kubeconfigPath };
    expect(await cli(['wait', 'httproute/web', '--timeout', '30s'], env)).toMatchObject({ code: 0 });

    await patch('/v2', sampleCanaryService(0));
    const second = await verdict(2, 'True', 'Programmed');
    expect(second.status?.parents?.find((entry) => entry.controllerName === REFERENCE_CONTROLLER_NAME)?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True', observedGeneration: 2 });
    expect(await cli(['wait', 'httproute/web', '--timeout', '30s'], env)).toMatchObject({ code: 0 });
  });

  if (gatewayWatermarks === 'barrier') {
    it('a generation the control plane rejects (ResolvedRefs=False) is False/Invalid quoting it', async () => {
      await patch('/v3', 'no-such-service');
      const rejected = await verdict(3, 'False', 'Invalid');
      const resolved = rejected.status?.parents?.find((entry) => entry.controllerName === REFERENCE_CONTROLLER_NAME)?.conditions.find((c) => c.type === 'ResolvedRefs');
      expect(resolved).toMatchObject({ status: 'False', observedGeneration: 3 });
      expect(ours(rejected)?.message).toBe(`the controller rejected generation 3: ResolvedRefs: ${resolved?.message ?? ''}`);
    });
  }
});
