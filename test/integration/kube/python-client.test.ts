// The official Python client (python-kubernetes, pinned in test/peers/requirements.txt) against the
// local API server: paging, watch.Watch().stream(), a watch whose booleans are spelled "True", an
// informer-style relist after 410 Gone, and the status subresource of the project's HTTPProxy CRD.
// The scenarios are test/peers/python-kube/kube_peer.py; each prints JSON lines this test reads.
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import { peerPython, peerScript } from '../../support/peers';
import { request, startTestServer, type TestServer } from './helpers';
import { resultOf, runPeer } from './peer-process';

// Small, so that the relist scenario can push a resourceVersion out of the window with a few writes.
const HISTORY = 8;

interface WatchedEvent {
  type: string;
  name: string;
  resourceVersion: string;
  generation: number | null;
  fqdn: string | null;
}

function proxy(name: string, labels: Record<string, string> = {}): Record<string, unknown> {
  return { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name, labels }, spec: { virtualhost: { fqdn: `${name}.local` } } };
}

describe('python-kubernetes against the local API server', () => {
  let test: TestServer;
  let python: string;
  let script: string;

  const scenario = async <T>(name: string, namespace: string, names: string[] = []): Promise<T> =>
    resultOf<T>(await runPeer(python, [script, name, '--kubeconfig', test.kubeconfig, '--namespace', namespace, '--names', names.join(',')]));

  const namespace = async (name: string): Promise<string> => {
    expect((await request(test, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } })).status).toBe(201);
    return name;
  };
  const create = async (ns: string, body: Record<string, unknown>): Promise<void> => {
    expect((await request(test, 'POST', `/apis/projectcontour.io/v1/namespaces/${ns}/httpproxies`, body)).status).toBe(201);
  };

  beforeAll(async () => {
    python = peerPython();
    script = peerScript('python-kube', 'kube_peer.py');
    test = await startTestServer({ watchHistoryLimit: HISTORY });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', HTTPPROXY_CRD)).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('lists with limit/continue, a label selector, and a typed Namespace page', async () => {
    const ns = await namespace('py-list');
    for (const name of ['a', 'b', 'c', 'd', 'e']) await create(ns, proxy(name, name === 'c' ? { tier: 'edge' } : {}));
    const result = await scenario<{
      pages: { names: string[]; continue: boolean; remainingItemCount: number | null }[];
      selected: string[];
      typedNamespacePage: { names: string[]; continue: boolean; kind: string };
    }>('list', ns);
    expect(result.pages.map((p) => p.names)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(result.pages.map((p) => p.continue)).toEqual([true, true, false]);
    expect(result.pages.map((p) => p.remainingItemCount)).toEqual([3, 1, null]);
    expect(result.selected).toEqual(['c']);
    // Namespaces sort by name: default, kube-node-lease, kube-public, kube-system, py-list.
    expect(result.typedNamespacePage).toEqual({ names: ['default'], continue: true, kind: 'V1NamespaceList' });
  });

  it('watch.Watch().stream(): the existing object as ADDED, then create, patch and delete in order', async () => {
    const ns = await namespace('py-watch');
    await create(ns, proxy('existing'));
    const result = await scenario<{ listedResourceVersion: string; events: WatchedEvent[] }>('watch', ns, ['moving']);
    expect(result.events.map((e) => `${e.type}:${e.name}`)).toEqual(['ADDED:existing', 'ADDED:moving', 'MODIFIED:moving', 'DELETED:moving']);
    expect(result.events.map((e) => e.fqdn)).toEqual(['existing.local', 'moving.local', 'moving-2.local', 'moving-2.local']);
    expect(result.events[2]?.generation).toBe(2);
    const versions = result.events.slice(1).map((e) => Number(e.resourceVersion));
    expect(versions[0]).toBeGreaterThan(Number(result.listedResourceVersion));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
  });

  it('a watch sent as watch=True&allowWatchBookmarks=True is a watch, as kube-apiserver reads those booleans', async () => {
    const ns = await namespace('py-watch-true');
    const run = await runPeer(python, [script, 'watch-bool-spellings', '--kubeconfig', test.kubeconfig, '--namespace', ns, '--names', 'spelled']);
    const result = resultOf<{ status: number; events: WatchedEvent[] }>(run);
    const sent = run.lines.find((l) => typeof l['request'] === 'string');
    expect(String(sent?.['request'])).toMatch(/[?&]watch=True(&|$)/);
    expect(result.status).toBe(200);
    // Replayed from the listed resourceVersion: the three changes the scenario made before watching.
    expect(result.events.map((e) => `${e.type}:${e.name}`)).toEqual(['ADDED:spelled', 'MODIFIED:spelled', 'DELETED:spelled']);
  });

  it('an informer-style client watching from a resourceVersion out of the window gets 410, relists and resumes', async () => {
    const ns = await namespace('py-gone');
    const names = Array.from({ length: HISTORY + 2 }, (_, i) => `filler-${i}`);
    const result = await scenario<{
      staleResourceVersion: string;
      gone: { status: number; reason: string } | null;
      relisted: string[];
      relistedResourceVersion: string;
      resumed: WatchedEvent[];
    }>('relist-after-gone', ns, names);
    expect(result.gone?.status).toBe(410);
    expect(result.gone?.reason).toMatch(/^Expired: too old resource version/);
    expect(result.relisted).toEqual([...names].sort());
    expect(Number(result.relistedResourceVersion)).toBeGreaterThan(Number(result.staleResourceVersion));
    expect(result.resumed.map((e) => `${e.type}:${e.name}`)).toEqual(['ADDED:after-relist']);
    expect(Number(result.resumed[0]?.resourceVersion)).toBeGreaterThan(Number(result.relistedResourceVersion));
  });

  it('patches HTTPProxy status through /status: spec is ignored, generation kept, a stale replace gets 409', async () => {
    const ns = await namespace('py-status');
    const result = await scenario<{
      created: { resourceVersion: string; generation: number };
      patched: { resourceVersion: string; generation: number; fqdn: string; conditions: { type: string; status: string; observedGeneration: number }[] | null };
      conflict: { status: number; reason: string } | null;
      fetched: { resourceVersion: string; conditions: { status: string }[] | null };
    }>('status', ns, ['programmed']);
    expect(result.created.generation).toBe(1);
    expect(result.patched.generation).toBe(1);
    expect(result.patched.fqdn).toBe('programmed.local');
    expect(Number(result.patched.resourceVersion)).toBeGreaterThan(Number(result.created.resourceVersion));
    expect(result.patched.conditions).toEqual([expect.objectContaining({ type: 'EnvoyProgrammed', status: 'True', observedGeneration: 1 })]);
    expect(result.conflict).toEqual({ status: 409, reason: 'Conflict' });
    // The refused replace changed nothing.
    expect(result.fetched.resourceVersion).toBe(result.patched.resourceVersion);
    expect(result.fetched.conditions?.map((c) => c.status)).toEqual(['True']);
  });
});
