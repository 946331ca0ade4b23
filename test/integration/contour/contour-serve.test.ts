// The real, unmodified Contour (v1.33.6, `go install`ed by `npm run contour:install`) against the
// local API server (infra/local/kube): its CRDs and the Gateway API CRDs straight from the Go
// module cache, leader election through a coordination.k8s.io Lease (written in protobuf), its
// informers on Services, EndpointSlices, Secrets, Ingresses and HTTPProxies, the xDS it serves to
// a raw ADS client, and the HTTPProxy status it writes; then a spec change: new route content and
// a new observedGeneration. docs/CONTOUR.md says what was verified and how it differs from
// infra/local/control-plane.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/xds';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import { waitFor } from '../../support/eventually';
import { captureLog } from '../kube/log-capture';
import { openAdsClient, type AdsClient, type Resource } from './ads-client';
import { contourInstall, startContour, yamlObjects, type ContourInstall, type ContourProcess } from './contour-process';

const NS = 'app';
const CONTOUR_NS = 'projectcontour';
const PROXY = `/apis/projectcontour.io/v1/namespaces/${NS}/httpproxies/echo`;
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${CONTOUR_NS}/leases/leader-elect`;

interface Condition {
  type: string;
  status: string;
  observedGeneration?: number;
  reason?: string;
}
interface ProxyBody {
  metadata: { generation: number };
  status?: { currentStatus?: string; description?: string; conditions?: Condition[] };
}

describe('unmodified Contour against the local API server', () => {
  let install: ContourInstall;
  const log = captureLog('debug');
  let kube: KubeApiServer | undefined;
  let dir: string | undefined;
  let contour: ContourProcess | undefined;
  let ads: AdsClient | undefined;

  const server = (): KubeApiServer => {
    if (!kube) throw new Error('the local API server did not start');
    return kube;
  };
  const api = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${server().url}${path}`, {
      method,
      headers: { 'Content-Type': contentType },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  const create = async (path: string, object: Record<string, unknown>): Promise<void> => {
    const response = await api('POST', path, object);
    if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  };
  const contourLog = (): string => contour?.log().slice(-6000) ?? '(not started)';

  beforeAll(async () => {
    // Throws "run `npm run contour:install`" when Contour is missing: every test then fails with it.
    install = contourInstall();
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', ingressControllerKinds: true, logger: log.logger });
    dir = mkdtempSync(join(tmpdir(), 'contour-serve-'));
  });
  afterAll(async () => {
    ads?.close();
    await contour?.stop();
    await kube?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("registers Contour's CRDs and the Gateway API CRDs its go.mod pins, read from the module cache", async () => {
    const contourCrds = yamlObjects(install.contourCrds);
    const gatewayCrds = install.gatewayApiCrds.experimental.flatMap(yamlObjects);
    expect(contourCrds.map((crd) => (crd['metadata'] as { name: string }).name)).toEqual(expect.arrayContaining(['httpproxies.projectcontour.io', 'tlscertificatedelegations.projectcontour.io', 'extensionservices.projectcontour.io']));
    for (const crd of [...contourCrds, ...gatewayCrds]) await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    // Served at once, with their status subresources, as discovery tells controller-runtime's RESTMapper.
    const discovery = (await api('GET', '/apis/projectcontour.io/v1')).body as { resources: { name: string }[] };
    expect(discovery.resources.map((r) => r.name)).toEqual(expect.arrayContaining(['httpproxies', 'httpproxies/status', 'tlscertificatedelegations']));
    const gateways = (await api('GET', '/apis/gateway.networking.k8s.io/v1')).body as { resources: { name: string }[] };
    expect(gateways.resources.map((r) => r.name)).toEqual(expect.arrayContaining(['gateways', 'gateways/status', 'httproutes', 'httproutes/status']));
    expect(gatewayCrds.length).toBeGreaterThanOrEqual(9);
  });

  it('contour serve elects itself leader through a Lease and reports it with an Event', async () => {
    for (const name of [CONTOUR_NS, NS]) await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    // The Service and its EndpointSlice exist before Contour starts (its informers LIST them);
    // the HTTPProxy arrives afterwards (through the watch).
    await create(`/api/v1/namespaces/${NS}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'echo', namespace: NS },
      spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    await create(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'echo-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'echo' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.5'], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080 }],
    });

    // Contour's default source of the address it writes into Ingress and HTTPProxy status: the
    // LoadBalancer Service of its Envoys (--envoy-service-namespace/-name, projectcontour/envoy).
    await create(`/api/v1/namespaces/${CONTOUR_NS}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'envoy', namespace: CONTOUR_NS },
      spec: { type: 'LoadBalancer', selector: { app: 'envoy' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }, { name: 'https', port: 443, targetPort: 8443 }] },
    });

    contour = await startContour(install.binary, server().kubeconfigPath(dir ?? tmpdir()));
    const lease = await waitFor(
      'a Lease held by Contour',
      async () => {
        const response = await api('GET', LEASE);
        const spec = (response.body as { spec?: { holderIdentity?: string; leaseDurationSeconds?: number } }).spec;
        return response.status === 200 && spec?.holderIdentity ? spec : undefined;
      },
      { timeoutMs: 20_000 },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\ncontour log:\n${contourLog()}`);
    });
    expect(lease.leaseDurationSeconds).toBe(15);
    // controller-runtime writes Leases and Events in protobuf (infra/local/kube/protobuf.ts).
    const leaseWrites = log.lines.filter((l) => l['msg'] === 'request' && String(l['url']).startsWith(LEASE.replace(/\/leader-elect$/, '')) && l['method'] !== 'GET');
    expect(leaseWrites.length).toBeGreaterThan(0);
    expect(new Set(leaseWrites.map((l) => l['contentType']))).toEqual(new Set(['application/vnd.kubernetes.protobuf']));
    const events = await waitFor('the LeaderElection Event', async () => {
      const list = (await api('GET', `/api/v1/namespaces/${CONTOUR_NS}/events`)).body as { items: { reason?: string; message?: string; involvedObject?: { kind?: string } }[] };
      return list.items.find((e) => e.reason === 'LeaderElection') ? list.items : undefined;
    });
    expect(events.find((e) => e.reason === 'LeaderElection')).toMatchObject({ message: `${lease.holderIdentity ?? ''} became leader`, involvedObject: { kind: 'Lease' } });
  });

  let clusterName = '';

  it('serves xDS for an HTTPProxy created after it started: the cluster, its endpoints, the listener and the route for the fqdn', async () => {
    if (!contour) throw new Error('Contour did not start');
    await create(`/apis/projectcontour.io/v1/namespaces/${NS}/httpproxies`, {
      apiVersion: 'projectcontour.io/v1',
      kind: 'HTTPProxy',
      metadata: { name: 'echo', namespace: NS },
      spec: { virtualhost: { fqdn: 'echo.example.com' }, routes: [{ services: [{ name: 'echo', port: 80 }] }] },
    });
    const client = openAdsClient(contour.xdsAddress, { id: 'contour-serve-test', cluster: 'contour-serve-test' });
    ads = client;
    client.subscribe(CDS_TYPE_URL);
    const cluster = await client.waitFor('the cluster of Service app/echo port 80', CDS_TYPE_URL, (clusters) => clusters.find((c) => String(c['name']).startsWith(`${NS}/echo/80/`)));
    clusterName = String(cluster['name']);
    const edsName = String((cluster['eds_cluster_config'] as { service_name?: string } | undefined)?.service_name ?? clusterName);
    client.subscribe(EDS_TYPE_URL, [edsName]);
    const assignment = await client.waitFor('the endpoints from the EndpointSlice', EDS_TYPE_URL, (assignments) => assignments.find((a) => a['cluster_name'] === edsName));
    expect(endpointAddresses(assignment)).toEqual(['10.0.0.5:8080']);
    client.subscribe(LDS_TYPE_URL);
    await client.waitFor('the HTTP listener', LDS_TYPE_URL, (listeners) => listeners.find((l) => l['name'] === 'ingress_http'));
    client.subscribe(RDS_TYPE_URL, ['ingress_http']);
    const host = await client.waitFor('a virtual host for echo.example.com', RDS_TYPE_URL, (routes) => virtualHost(routes, 'echo.example.com'));
    expect(routeClusters(host)).toEqual([clusterName]);
  });

  it('an Ingress is served too, and Contour copies the Envoy Service load-balancer address into Ingress and HTTPProxy status', async () => {
    if (!ads) throw new Error('no xDS client');
    await create(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'echo', namespace: NS },
      spec: { rules: [{ host: 'ingress.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'echo', port: { number: 80 } } } }] } }] },
    });
    const host = await ads.waitFor('a virtual host for the Ingress', RDS_TYPE_URL, (routes) => virtualHost(routes, 'ingress.example.com'));
    expect(routeClusters(host)).toEqual([clusterName]);
    // What a cloud load-balancer controller does: write the address into the Service's status.
    const lb = await api('PATCH', `/api/v1/namespaces/${CONTOUR_NS}/services/envoy/status`, { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } }, 'application/merge-patch+json');
    expect(lb.status).toBe(200);
    const addressOf = (body: unknown): string | undefined =>
      (body as { status?: { loadBalancer?: { ingress?: { ip?: string }[] } } }).status?.loadBalancer?.ingress?.[0]?.ip;
    await waitFor('the address in the Ingress status', async () => addressOf((await api('GET', `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses/echo`)).body));
    expect(addressOf((await api('GET', `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses/echo`)).body)).toBe('192.0.2.10');
    await waitFor('the address in the HTTPProxy status', async () => addressOf((await api('GET', PROXY)).body));
    expect(addressOf((await api('GET', PROXY)).body)).toBe('192.0.2.10');
    // controller-runtime writes built-in kinds in protobuf (the Ingress), custom resources in JSON.
    const writes = (path: string): string[] => log.lines.filter((l) => l['msg'] === 'request' && l['method'] === 'PUT' && String(l['url']).split('?')[0] === path).map((l) => String(l['contentType']));
    expect(writes(`/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses/echo/status`)).toContain('application/vnd.kubernetes.protobuf');
    expect(new Set(writes(`${PROXY}/status`))).toEqual(new Set(['application/json']));
  });

  it('writes the HTTPProxy status: currentStatus valid and a Valid condition at observedGeneration 1', async () => {
    const proxy = await waitFor('status from Contour', async () => {
      const body = (await api('GET', PROXY)).body as ProxyBody;
      return body.status?.currentStatus ? body : undefined;
    });
    expect(proxy.metadata.generation).toBe(1);
    expect(proxy.status).toMatchObject({ currentStatus: 'valid', description: 'Valid HTTPProxy' });
    expect(proxy.status?.conditions).toEqual([expect.objectContaining({ type: 'Valid', status: 'True', observedGeneration: 1, reason: 'Valid' })]);
  });

  it('a patched spec reaches xDS as new route content, and the status speaks about generation 2', async () => {
    if (!ads) throw new Error('no xDS client');
    const client = ads;
    const routeVersionsBefore = client.versions(RDS_TYPE_URL).length;
    const patched = await api('PATCH', PROXY, { spec: { virtualhost: { fqdn: 'echo-v2.example.com' } } }, 'application/merge-patch+json');
    expect(patched.status).toBe(200);
    expect((patched.body as ProxyBody).metadata.generation).toBe(2);
    const host = await client.waitFor('a virtual host for echo-v2.example.com', RDS_TYPE_URL, (routes) => virtualHost(routes, 'echo-v2.example.com'));
    expect(routeClusters(host)).toEqual([clusterName]);
    expect(virtualHost(client.latest(RDS_TYPE_URL)?.resources ?? [], 'echo.example.com')).toBeUndefined();
    expect(client.versions(RDS_TYPE_URL).length).toBeGreaterThan(routeVersionsBefore);
    const proxy = await waitFor('the Valid condition at generation 2', async () => {
      const body = (await api('GET', PROXY)).body as ProxyBody;
      return body.status?.conditions?.some((c) => c.type === 'Valid' && c.observedGeneration === 2) ? body : undefined;
    });
    expect(proxy.status).toMatchObject({ currentStatus: 'valid' });
    expect(proxy.status?.conditions).toEqual([expect.objectContaining({ type: 'Valid', status: 'True', observedGeneration: 2 })]);
  });

  it('Contour made no request the server refused but the first read of its Lease, and releases the Lease when it stops', async () => {
    if (!contour) throw new Error('Contour did not start');
    const refused = log.lines.filter((l) => l['msg'] === 'request' && typeof l['status'] === 'number' && l['status'] >= 400).map((l) => `${String(l['method'])} ${String(l['url'])} ${String(l['status'])}`);
    expect(refused.filter((r) => !(r.startsWith(`GET ${LEASE}`) && r.endsWith(' 404')))).toEqual([]);
    expect(await contour.stop()).toBe(0);
    const lease = (await api('GET', LEASE)).body as { spec?: { holderIdentity?: string } };
    expect(lease.spec?.holderIdentity ?? '').toBe('');
  });
});

function endpointAddresses(assignment: Resource): string[] {
  const endpoints = (assignment['endpoints'] as { lb_endpoints?: { endpoint?: { address?: { socket_address?: { address?: string; port_value?: number } } } }[] }[] | undefined) ?? [];
  return endpoints.flatMap((locality) => (locality.lb_endpoints ?? []).map((e) => `${e.endpoint?.address?.socket_address?.address ?? '?'}:${e.endpoint?.address?.socket_address?.port_value ?? '?'}`));
}

interface VirtualHost {
  name?: string;
  domains?: string[];
  routes?: { route?: { cluster?: string; weighted_clusters?: { clusters?: { name?: string }[] } } }[];
}

function virtualHost(routeConfigurations: Resource[], fqdn: string): VirtualHost | undefined {
  for (const configuration of routeConfigurations) {
    const hosts = (configuration['virtual_hosts'] as VirtualHost[] | undefined) ?? [];
    const found = hosts.find((h) => (h.domains ?? []).includes(fqdn));
    if (found) return found;
  }
  return undefined;
}

function routeClusters(host: VirtualHost): string[] {
  return [...new Set((host.routes ?? []).flatMap((r) => (r.route?.cluster ? [r.route.cluster] : (r.route?.weighted_clusters?.clusters ?? []).map((c) => c.name ?? ''))))];
}
