// Gateway API HTTPRoutes through the reference control plane: applied on the local API server, read by
// KubeRouteSource next to HTTPProxies, translated into the same clusters/routes (provenance naming the
// HTTPRoute at its generation), and answered with one status.parents entry per parentRef
// (Accepted/ResolvedRefs at observedGeneration), written only after the snapshot holding that
// generation, never losing the entry another controller (our status function) keeps in the list.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import pino from 'pino';
import { readProvenance } from '../../../common/xds/provenance';
import { unpackAny } from '../../../common/xds/protos';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, type ResourceTypeUrl } from '../../../common/xds/type-urls';
import { crdSupport } from '../../../functions/kube/status-writer';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { HTTPROUTE_TRACKED_KIND, REFERENCE_CONTROLLER_NAME, type RouteStatusUpdate } from '../../../infra/local/control-plane/gateway-api';
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import { HTTPROUTE_CRD } from '../../../infra/local/control-plane/httproute-crd';
import { KubeRouteSource } from '../../../infra/local/control-plane/kube-route-source';
import { endpointsObjectSchema } from '../../../infra/local/control-plane/model';
import { KubeStatusWriter } from '../../../infra/local/control-plane/kube-status-writer';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { ProxyStatusUpdate, StatusWriter } from '../../../infra/local/control-plane/status';
import { translate } from '../../../infra/local/control-plane/translate';
import { kubeconfigYaml } from '../../../infra/local/kube/kubeconfig';
import { type KubeApiServer, startKubeApiServer } from '../../../infra/local/kube/server';
import { endpoints, eventually, proxy, testLogger } from './helpers';

const ROUTE_API = { group: 'gateway.networking.k8s.io', version: 'v1', namespace: 'default', plural: 'httproutes' };
const PROXY_API = { group: 'projectcontour.io', version: 'v1', namespace: 'default', plural: 'httpproxies' };
const FOREIGN_CONTROLLER = 'xds-programmed.dev/status';
const routeRef = (name: string, generation: number) => `gateway.networking.k8s.io/HTTPRoute/default/${name}@${generation}`;

interface ParentEntry {
  parentRef: Record<string, unknown>;
  controllerName: string;
  conditions: Array<{ type: string; status: string; reason: string; message: string; observedGeneration: number; lastTransitionTime: string }>;
}
interface StoredRoute {
  metadata: { generation: number; resourceVersion: string };
  spec: { parentRefs: Array<Record<string, unknown>> };
  status?: { parents?: ParentEntry[] };
}

function kubeConfigFor(url: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kubeconfigYaml(url));
  return kubeConfig;
}

async function installCrd(url: string, crd: object): Promise<number> {
  const response = await fetch(`${url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(crd),
  });
  return response.status;
}

function httpRoute(name: string, spec: Record<string, unknown>, namespace = 'default'): Record<string, unknown> {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name, namespace }, spec };
}

const PARENT_REFS = [{ name: 'gw-a' }, { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw-b', sectionName: 'http' }];
const webSpec = (prefix: string) => ({
  parentRefs: PARENT_REFS,
  hostnames: ['web.example.com'],
  rules: [
    { matches: [{ path: { type: 'PathPrefix', value: prefix } }], backendRefs: [{ name: 'app', port: 80, weight: 3 }, { name: 'canary', port: 8080, weight: 1 }] },
    { backendRefs: [{ kind: 'Service', name: 'app', port: 80 }] },
  ],
});

function foreignEntry(parentRef: Record<string, unknown>, message: string): Record<string, unknown> {
  return {
    parentRef,
    controllerName: FOREIGN_CONTROLLER,
    conditions: [{ type: 'xds-programmed.dev/EnvoyProgrammed', status: 'False', reason: 'Pending', message, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' }],
  };
}

/**
 * An HTTP interposer in front of the API server that, once armed for a route, lets another
 * controller rewrite status.parents between the writer's read and its patch (so the patch meets a
 * 409), the way the status function writes concurrently.
 */
function startConcurrentWriter(upstream: string, custom: CustomObjectsApi) {
  let armed: { name: string; entry: Record<string, unknown> } | undefined;
  let injected = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const target = armed;
        if (req.method === 'PATCH' && target !== undefined && req.url?.includes(`/httproutes/${target.name}/status`)) {
          armed = undefined;
          const current = (await custom.getNamespacedCustomObjectStatus({ ...ROUTE_API, name: target.name })) as StoredRoute;
          const others = (current.status?.parents ?? []).filter((p) => p.controllerName !== FOREIGN_CONTROLLER);
          await custom.patchNamespacedCustomObjectStatus(
            { ...ROUTE_API, name: target.name, body: { metadata: { resourceVersion: current.metadata.resourceVersion }, status: { parents: [...others, target.entry] } } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          );
          injected += 1;
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
    arm: (name: string, entry: Record<string, unknown>) => {
      armed = { name, entry };
    },
    injected: () => injected,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('HTTPRoute through the reference control plane (local API server)', () => {
  let kube: KubeApiServer;
  let custom: CustomObjectsApi;
  let source: KubeRouteSource;
  let statusWriter: KubeStatusWriter;
  let concurrent: ReturnType<typeof startConcurrentWriter>;
  const handle: { controlPlane?: ControlPlane } = {};
  /** Every route status write: was its generation in a published snapshot when it started? */
  const routeWrites: Array<{ update: RouteStatusUpdate; processed: boolean; inRds: boolean }> = [];
  /**
   * After every route status write, read back: the foreign entries the route then held (expected to be
   * the test's) and our observedGeneration there. `resolved`: the writer returned rather than threw.
   */
  const foreignAfterWrite: Array<{ name: string; generation: number; resolved: boolean; observed: number | undefined; foreign: unknown[] }> = [];

  const controlPlane = (): ControlPlane => {
    if (!handle.controlPlane) throw new Error('control plane not started');
    return handle.controlPlane;
  };
  const getRoute = async (name: string): Promise<StoredRoute> => (await custom.getNamespacedCustomObject({ ...ROUTE_API, name })) as StoredRoute;
  const ours = (stored: StoredRoute) => (stored.status?.parents ?? []).filter((p) => p.controllerName === REFERENCE_CONTROLLER_NAME);
  const foreign = (stored: StoredRoute) => (stored.status?.parents ?? []).filter((p) => p.controllerName === FOREIGN_CONTROLLER);
  const observedBy = (stored: StoredRoute) => {
    const generations = ours(stored).flatMap((p) => p.conditions.map((c) => c.observedGeneration));
    return generations.length === 0 ? undefined : Math.min(...generations);
  };
  async function pollRoute(name: string, done: (stored: StoredRoute) => boolean): Promise<StoredRoute> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const stored = await getRoute(name);
      if (done(stored)) return stored;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${name}: ${JSON.stringify(stored.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const decoded = (typeUrl: ResourceTypeUrl, name: string): Record<string, unknown> => {
    const resource = controlPlane().currentSnapshot()?.[typeUrl].resources.get(name);
    if (!resource) throw new Error(`no ${name} in the snapshot`);
    return unpackAny(resource.resource);
  };
  const patchSpec = (name: string, spec: Record<string, unknown>) =>
    custom.patchNamespacedCustomObject({ ...ROUTE_API, name, body: { spec } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  /** Another controller's status write, as the status function makes it: others' entries kept, its own replaced. */
  const writeForeign = async (name: string, message: string): Promise<Record<string, unknown>> => {
    const current = await getRoute(name);
    const entry = foreignEntry(current.spec.parentRefs[0] ?? {}, message);
    const others = (current.status?.parents ?? []).filter((p) => p.controllerName !== FOREIGN_CONTROLLER);
    await custom.patchNamespacedCustomObjectStatus(
      { ...ROUTE_API, name, body: { metadata: { resourceVersion: current.metadata.resourceVersion }, status: { parents: [...others, entry] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return entry;
  };

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
    const kubeConfig = kubeConfigFor(kube.url);
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    expect(await installCrd(kube.url, HTTPPROXY_CRD)).toBe(201);
    expect(await installCrd(kube.url, HTTPROUTE_CRD)).toBe(201);
    concurrent = startConcurrentWriter(kube.url, custom);
    const concurrentUrl = await concurrent.listen();

    const endpointsSource = new InMemoryRouteSource();
    endpointsSource.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    endpointsSource.applyEndpoints(endpoints('canary', '10.0.0.2', 8080));
    source = new KubeRouteSource({ kubeConfig, logger: testLogger, endpointsAndSecrets: endpointsSource });
    statusWriter = new KubeStatusWriter({ kubeConfig: kubeConfigFor(concurrentUrl), logger: testLogger });
    const checking: StatusWriter = {
      writeProxyStatus: (update: ProxyStatusUpdate) => statusWriter.writeProxyStatus(update),
      async writeRouteStatus(update: RouteStatusUpdate) {
        const log = handle.controlPlane?.rebuildLog;
        routeWrites.push({
          update,
          processed: log?.processed(`gateway.networking.k8s.io/HTTPRoute/${update.namespace}/${update.name}`, update.generation) !== undefined,
          inRds: log?.latest()?.contained.RDS.includes(routeRef(update.name, update.generation)) ?? false,
        });
        let resolved = false;
        try {
          await statusWriter.writeRouteStatus(update);
          resolved = true;
        } finally {
          // Also after a throw: the patch may have landed before the error, and its result is checked too.
          const stored = await getRoute(update.name);
          foreignAfterWrite.push({ name: update.name, generation: update.generation, resolved, observed: observedBy(stored), foreign: foreign(stored) });
        }
      },
    };
    handle.controlPlane = await startControlPlane({
      port: 0,
      replicaId: 'routes',
      source,
      statusWriter: checking,
      provenance: true,
      holdoffMs: 10,
      holdoffMaxMs: 50,
      statusRetryMs: 100,
      logger: testLogger,
    });
  });

  afterAll(async () => {
    await handle.controlPlane?.close();
    await source.close();
    await concurrent.close();
    await kube.close();
  });

  it('installs a CRD whose schema keeps status.parents (what the status function checks before writing)', () => {
    expect(crdSupport(HTTPROUTE_CRD, { ...HTTPROUTE_TRACKED_KIND, placement: 'parents' })).toEqual({ supported: true, verified: true });
  });

  it('translates an HTTPRoute into clusters and routes stamped with the HTTPRoute at its generation, sharing clusters with HTTPProxies', async () => {
    await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('shop', 'shop.example.com', [{ name: 'app', port: 80 }]) });
    await custom.createNamespacedCustomObject({ ...ROUTE_API, body: httpRoute('web', webSpec('/api')) });
    await eventually(() => controlPlane().rebuildLog.firstContaining('gateway.networking.k8s.io/HTTPRoute/default/web', 1, 'RDS'), 'the route is served');
    await eventually(() => controlPlane().rebuildLog.firstContaining('projectcontour.io/HTTPProxy/default/shop', 1, 'RDS'), 'the proxy is served');

    const rds = decoded(ROUTE_CONFIGURATION_TYPE_URL, 'ingress_http') as { virtual_hosts: Array<{ name: string; domains: string[]; routes: unknown[]; metadata: unknown }>; metadata: unknown };
    const web = rds.virtual_hosts.find((v) => v.name === 'web.example.com');
    expect(web?.domains).toEqual(['web.example.com']);
    expect(web?.routes).toMatchObject([
      {
        match: { prefix: '/api' },
        route: { weighted_clusters: { clusters: [{ name: 'default/app/80', weight: { value: 3 } }, { name: 'default/canary/8080', weight: { value: 1 } }] } },
      },
      { match: { prefix: '/' }, route: { cluster: 'default/app/80' } },
    ]);
    expect(readProvenance(web?.metadata)).toEqual([routeRef('web', 1)]);
    expect(readProvenance(rds.metadata)).toEqual(expect.arrayContaining([routeRef('web', 1), 'projectcontour.io/HTTPProxy/default/shop@1']));
    expect(readProvenance(decoded(LISTENER_TYPE_URL, 'web.example.com')['metadata'])).toEqual([routeRef('web', 1)]);
    // One cluster per Service port, shared by the HTTPProxy and the HTTPRoute (so EDS is shared too).
    expect(readProvenance(decoded(CLUSTER_TYPE_URL, 'default/app/80')['metadata'])).toEqual([routeRef('web', 1), 'projectcontour.io/HTTPProxy/default/shop@1']);
    expect(readProvenance(decoded(CLUSTER_TYPE_URL, 'default/canary/8080')['metadata'])).toEqual([routeRef('web', 1)]);
    expect(decoded(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'default/canary/8080')).toMatchObject({
      cluster_name: 'default/canary/8080',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '10.0.0.2', port_value: 8080 } } } }] }],
    });
  });

  it('writes one status.parents entry per parentRef, verbatim, with Accepted and ResolvedRefs at observedGeneration, after the snapshot', async () => {
    const stored = await pollRoute('web', (r) => observedBy(r) === 1);
    expect(ours(stored).map((p) => p.parentRef)).toEqual(PARENT_REFS);
    for (const entry of ours(stored)) {
      expect(entry.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([
        ['Accepted', 'True', 'Accepted', 1],
        ['ResolvedRefs', 'True', 'ResolvedRefs', 1],
      ]);
      for (const condition of entry.conditions) expect(condition.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const writes = routeWrites.filter((w) => w.update.name === 'web');
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((w) => w.processed && w.inRds)).toBe(true);
  });

  it('bumps both conditions on a spec change and keeps the entry of another controller through every write, also one written concurrently', async () => {
    const first = await writeForeign('web', 'written between updates');
    await patchSpec('web', webSpec('/v2'));
    const second = await pollRoute('web', (r) => observedBy(r) === 2);
    expect(second.metadata.generation).toBe(2);
    expect(foreign(second)).toEqual([first]);
    expect(ours(second).flatMap((p) => p.conditions.map((c) => c.observedGeneration))).toEqual([2, 2, 2, 2]);
    expect(controlPlane().rebuildLog.latest()?.contained.RDS).toContain(routeRef('web', 2));

    // The other controller writes between our read and our patch: the resourceVersion precondition
    // turns that into a 409, and the re-read keeps its entry.
    const conflictsBefore = statusWriter.conflicts;
    const racing = foreignEntry(PARENT_REFS[0] ?? {}, 'written concurrently');
    concurrent.arm('web', racing);
    await patchSpec('web', webSpec('/v3'));
    // Wait for the control plane's own write of generation 3 to return, not for the API server to show
    // it: the patch is visible there before its response has come back through the interposer and
    // before the read-back above records it, so a poll on the stored status raced that record.
    // whenIdle then covers whatever that rebuild still had to write.
    await eventually(() => foreignAfterWrite.some((w) => w.name === 'web' && w.generation === 3 && w.resolved), 'the control plane writes generation 3 of web');
    await controlPlane().whenIdle();
    const third = await getRoute('web');
    // What a spec change promises: once the write for it returned, the status speaks about it.
    expect(observedBy(third)).toBe(3);
    expect(concurrent.injected()).toBe(1);
    expect(statusWriter.conflicts).toBe(conflictsBefore + 1);
    expect(foreign(third)).toEqual([racing]);
    expect(ours(third)).toHaveLength(2);

    // Every control-plane write on `web` since the first foreign entry left one there, unchanged, and
    // none moved our status backwards. How many writes carry a generation is not promised (a write
    // that failed is retried by the next writeStatuses, the writer skips a stale update); that both
    // generations got one is, since the test waited for generation 2's status before changing the spec.
    const afterForeign = foreignAfterWrite.filter((w) => w.name === 'web' && w.generation >= 2);
    expect([...new Set(afterForeign.map((w) => w.generation))]).toEqual([2, 3]);
    expect(afterForeign.every((w) => w.foreign.length === 1)).toBe(true);
    const observedAfter = afterForeign.map((w) => w.observed ?? 0);
    expect(observedAfter).toEqual([...observedAfter].sort((a, b) => a - b));
    expect(afterForeign.filter((w) => w.resolved).every((w) => (w.observed ?? 0) >= w.generation)).toBe(true);
    expect(routeWrites.filter((w) => w.update.name === 'web').every((w) => w.processed && w.inRds)).toBe(true);
  });

  it('reports a backend Service without Endpoints as ResolvedRefs=False/BackendNotFound (Accepted stays True) and does not serve the route', async () => {
    await custom.createNamespacedCustomObject({
      ...ROUTE_API,
      body: httpRoute('orphan', { parentRefs: [{ name: 'gw-a' }], hostnames: ['orphan.example.com'], rules: [{ backendRefs: [{ name: 'missing', port: 80 }] }] }),
    });
    const stored = await pollRoute('orphan', (r) => observedBy(r) === 1);
    const [entry] = ours(stored);
    expect(entry?.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
    const resolved = entry?.conditions.find((c) => c.type === 'ResolvedRefs');
    expect(resolved).toMatchObject({ status: 'False', reason: 'BackendNotFound', observedGeneration: 1 });
    expect(resolved?.message).toContain('Service "default/missing" not found');
    const rds = decoded(ROUTE_CONFIGURATION_TYPE_URL, 'ingress_http') as { virtual_hosts: Array<{ name: string }> };
    expect(rds.virtual_hosts.map((v) => v.name)).not.toContain('orphan.example.com');
    expect(controlPlane().rebuildLog.processed('gateway.networking.k8s.io/HTTPRoute/default/orphan', 1)?.objects).toContainEqual({
      object: 'gateway.networking.k8s.io/HTTPRoute/default/orphan',
      generation: 1,
      valid: false,
    });
  });
});

describe('HTTPRoute CRD absent', () => {
  it('starts without it, serves HTTPProxies and logs the absence once', async () => {
    const kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => { lines.push(chunk.toString()); done(); } }));
    const endpointsSource = new InMemoryRouteSource();
    endpointsSource.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    const kubeConfig = kubeConfigFor(kube.url);
    const source = new KubeRouteSource({ kubeConfig, logger, endpointsAndSecrets: endpointsSource });
    let cp: ControlPlane | undefined;
    try {
      expect(await installCrd(kube.url, HTTPPROXY_CRD)).toBe(201);
      cp = await startControlPlane({ port: 0, replicaId: 'no-routes', source, holdoffMs: 10, holdoffMaxMs: 50, logger: testLogger });
      await kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...PROXY_API, body: proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]) });
      const started = cp;
      await eventually(() => started.rebuildLog.firstContaining('projectcontour.io/HTTPProxy/default/web', 1, 'RDS'), 'the proxy is served');
      expect(source.list().httpRoutes).toEqual([]);
      expect(lines.filter((line) => line.includes('HTTPRoute CRD not served'))).toHaveLength(1);
      expect(lines.filter((line) => line.includes('informer error'))).toEqual([]);
    } finally {
      await cp?.close();
      await source.close();
      await kube.close();
    }
  });
});

describe('HTTPRoute translation rules (pure)', () => {
  const base = { endpoints: [endpoints('app', '10.0.0.1', 80), endpoints('api', '10.0.0.3', 9000, 'backends')].map((e) => endpointsObjectSchema.parse(e)), secrets: [] };
  const route = (name: string, spec: Record<string, unknown>, generation = 1) => ({ metadata: { name, namespace: 'default', generation }, spec });

  it('applies the HTTPProxy duplicate-fqdn rule across both kinds: every claimant is invalid', () => {
    const translation = translate(
      {
        ...base,
        proxies: [{ metadata: { name: 'p', namespace: 'default', generation: 1 }, spec: { virtualhost: { fqdn: 'dup.example.com' }, routes: [{ services: [{ name: 'app', port: 80 }] }] } }],
        httpRoutes: [route('r', { parentRefs: [{ name: 'gw' }], hostnames: ['dup.example.com'], rules: [{ backendRefs: [{ name: 'app', port: 80 }] }] })],
      },
      { provenance: true },
    );
    expect(translation.proxies[0]?.message).toContain('fqdn "dup.example.com" is used in multiple HTTPProxies/HTTPRoutes: default/p, HTTPRoute default/r');
    expect(translation.httpRoutes[0]).toMatchObject({ served: false, accepted: { status: 'False', reason: 'UnsupportedValue' } });
    expect(translation.resources[CLUSTER_TYPE_URL]).toEqual([]);
  });

  it('serves Exact as a prefix, defaults weights to 1, honours a backend namespace, rejects what it cannot serve', () => {
    const translation = translate(
      {
        ...base,
        proxies: [],
        httpRoutes: [
          route('ok', {
            parentRefs: [{ name: 'gw' }],
            hostnames: ['ok.example.com', 'other.example.com'],
            rules: [{ matches: [{ path: { type: 'Exact', value: '/exact' } }], backendRefs: [{ name: 'app', port: 80 }, { name: 'api', namespace: 'backends', port: 9000 }] }],
          }),
          route('nohost', { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs: [{ name: 'app', port: 80 }] }] }),
          route('regex', { parentRefs: [{ name: 'gw' }], hostnames: ['re.example.com'], rules: [{ matches: [{ path: { type: 'RegularExpression', value: '/a.*' } }], backendRefs: [{ name: 'app', port: 80 }] }] }),
          route('kind', { parentRefs: [{ name: 'gw' }], hostnames: ['kind.example.com'], rules: [{ backendRefs: [{ group: 'example.com', kind: 'Bucket', name: 'b', port: 1 }] }] }),
          route('orphaned', { hostnames: ['lonely.example.com'], rules: [{ backendRefs: [{ name: 'app', port: 80 }] }] }),
        ],
      },
      { provenance: false },
    );
    const verdict = (name: string) => translation.httpRoutes.find((r) => r.name === name);
    expect(verdict('ok')).toMatchObject({ served: true, accepted: { status: 'True', message: 'Accepted HTTPRoute; served under "ok.example.com" only (1 more hostname ignored)' } });
    expect(verdict('nohost')).toMatchObject({ served: false, accepted: { status: 'False', reason: 'UnsupportedValue' } });
    expect(verdict('regex')?.accepted.message).toContain('RegularExpression is not supported');
    expect(verdict('kind')).toMatchObject({ served: false, accepted: { status: 'True' }, resolvedRefs: { status: 'False', reason: 'InvalidKind' } });
    expect(verdict('orphaned')).toMatchObject({ served: false, parentRefs: [], accepted: { reason: 'NoMatchingParent' } });
    const rds = translation.resources[ROUTE_CONFIGURATION_TYPE_URL][0]?.message as { virtual_hosts: Array<{ name: string; routes: unknown[] }> };
    expect(rds.virtual_hosts).toEqual([
      {
        name: 'ok.example.com',
        domains: ['ok.example.com'],
        routes: [
          {
            match: { prefix: '/exact' },
            route: { weighted_clusters: { clusters: [{ name: 'default/app/80', weight: { value: 1 } }, { name: 'backends/api/9000', weight: { value: 1 } }] } },
          },
        ],
      },
    ]);
  });
});
