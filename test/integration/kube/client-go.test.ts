// client-go (k8s.io/client-go v0.37.2, test/peers/go/client-go-informer) against the local API
// server: a dynamic shared informer on HTTPProxies sees adds, updates and deletes, keeps working
// across the watches the server ends (it resumes from its resourceVersion, it does not relist),
// and UpdateStatus inside retry.RetryOnConflict gets a 409 on a stale resourceVersion, refetches
// and lands. The dynamic client speaks JSON. client-go 0.37 starts informers with a WatchList
// request (sendInitialEvents=true), not a LIST: the test checks that too.
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import { waitFor } from '../../support/eventually';
import { goPeer } from '../../support/peers';
import { meta, request, startTestServer, type TestServer } from './helpers';
import { captureLog } from './log-capture';
import { startPeer, type JsonLine, type PeerProcess } from './peer-process';

const NS = 'go-informer';
const PROXIES = `/apis/projectcontour.io/v1/namespaces/${NS}/httpproxies`;

interface Seen extends JsonLine {
  event: string;
  name?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string> | null;
  conditions?: { type: string; status: string; observedGeneration: number; message: string }[] | null;
}

function proxy(name: string): Record<string, unknown> {
  return { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name }, spec: { virtualhost: { fqdn: `${name}.local` } } };
}

describe('client-go against the local API server', () => {
  let test: TestServer;
  let peer: PeerProcess | undefined;
  const log = captureLog('debug');

  /** The requests the server finished on `path`, in order, with their query and status. */
  const finished = (method: string, path: string): { query: Record<string, string>; status: unknown }[] =>
    log.lines
      .filter((l) => l['msg'] === 'request' && l['method'] === method && String(l['url']).split('?')[0] === path)
      .map((l) => ({ query: Object.fromEntries(new URLSearchParams(String(l['url']).split('?')[1] ?? '')), status: l['status'] }));
  const seen = (event: string, name: string, extra: (line: Seen) => boolean = () => true) => (line: JsonLine) => {
    const s = line as Seen;
    return s.event === event && s.name === name && extra(s);
  };

  beforeAll(async () => {
    // Short watches: client-go asks for 5-10 minutes, the server ends each after a second.
    test = await startTestServer({ logger: log.logger, maxWatchTimeoutSeconds: 1 });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', HTTPPROXY_CRD)).status).toBe(201);
    expect((await request(test, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })).status).toBe(201);
  });
  afterAll(async () => {
    if (peer) await peer.stop();
    await test.cleanup();
  });

  it('informer: add, update, resume after the server ends its watch, status update with a 409 retry, delete', async () => {
    expect((await request(test, 'POST', PROXIES, proxy('pre-existing'))).status).toBe(201);
    peer = startPeer(goPeer('client-go-informer'), ['-kubeconfig', test.kubeconfig, '-namespace', NS]);
    const p = peer;

    // Initial state: the existing object arrives before the informer reports synced.
    await p.waitForLine('synced', (l) => l['event'] === 'synced');
    const syncedAt = p.lines.findIndex((l) => l['event'] === 'synced');
    expect(p.lines.findIndex(seen('add', 'pre-existing'))).toBeLessThan(syncedAt);
    expect(p.lines.filter((l) => l['event'] === 'fatal' || l['event'] === 'error')).toEqual([]);

    // Live add and update.
    expect((await request(test, 'POST', PROXIES, proxy('live'))).status).toBe(201);
    await p.waitForLine('add of live', seen('add', 'live'));
    const labelled = await request(test, 'PATCH', `${PROXIES}/live`, { metadata: { labels: { tier: 'edge' } } }, 'application/merge-patch+json');
    expect(labelled.status).toBe(200);
    await p.waitForLine('update of live', seen('update', 'live', (s) => s.labels?.['tier'] === 'edge' && s.resourceVersion === meta(labelled.body).resourceVersion));

    // The server ends each watch after a second; wait until it has ended the first (WatchList)
    // watch and a resumed one, then check that the informer is still current.
    await waitFor('two watches ended by the server', () => (finished('GET', PROXIES).filter((r) => r.query['watch'] === 'true').length >= 2 ? true : undefined), { timeoutMs: 20_000 });
    expect((await request(test, 'POST', PROXIES, proxy('after-resume'))).status).toBe(201);
    await p.waitForLine('add of after-resume', seen('add', 'after-resume'));

    // A status update whose first attempt carries a stale resourceVersion: 409, refetch, success.
    const before = meta((await request(test, 'GET', `${PROXIES}/live`)).body);
    const bumped = await request(test, 'PATCH', `${PROXIES}/live`, { metadata: { labels: { tier: 'core' } } }, 'application/merge-patch+json');
    const bumpedVersion = meta(bumped.body).resourceVersion;
    await p.waitForLine('update to the bumped version', seen('update', 'live', (s) => s.resourceVersion === bumpedVersion));
    p.send({ op: 'updateStatus', name: 'live', staleResourceVersion: before.resourceVersion, message: 'programmed by client-go' });
    const result = (await p.waitForLine('the status update', (l) => l['event'] === 'statusUpdated')) as Seen & { attempts: number; conflicts: number; error?: string };
    expect(result).toMatchObject({ name: 'live', attempts: 2, conflicts: 1, generation: 1 });
    expect(result.error).toBeUndefined();
    expect(Number(result.resourceVersion)).toBeGreaterThan(Number(bumpedVersion));
    const statusPuts = finished('PUT', `${PROXIES}/live/status`).map((r) => r.status);
    expect(statusPuts).toEqual([409, 200]);

    // The informer sees the condition at the written resourceVersion; the server kept spec and generation.
    const withCondition = (await p.waitForLine('the condition through the watch', seen('update', 'live', (s) => s.resourceVersion === result.resourceVersion))) as Seen;
    expect(withCondition.conditions).toEqual([expect.objectContaining({ type: 'EnvoyProgrammed', status: 'True', observedGeneration: 1, message: 'programmed by client-go' })]);
    expect(withCondition.generation).toBe(1);
    const stored = await request(test, 'GET', `${PROXIES}/live`);
    expect(meta(stored.body)).toMatchObject({ resourceVersion: result.resourceVersion, generation: 1, labels: { tier: 'core' } });
    expect((stored.body as { spec: unknown }).spec).toEqual({ virtualhost: { fqdn: 'live.local' } });

    // Delete.
    expect((await request(test, 'DELETE', `${PROXIES}/live`)).status).toBe(200);
    await p.waitForLine('delete of live', seen('delete', 'live'));

    expect(await p.stop()).toBe(0);
    peer = undefined;

    // How client-go talked to the server: one WatchList request for the initial state, then only
    // watches resumed from a resourceVersion, never a LIST and never a second initial state.
    const gets = finished('GET', PROXIES);
    const watches = gets.filter((r) => r.query['watch'] === 'true');
    expect(gets.filter((r) => r.query['watch'] !== 'true')).toEqual([]);
    expect(watches[0]?.query).toMatchObject({ sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' });
    const resumed = watches.slice(1);
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    for (const r of resumed) {
      expect(r.query['sendInitialEvents']).toBeUndefined();
      expect(Number(r.query['resourceVersion'])).toBeGreaterThan(0);
    }
    const versions = resumed.map((r) => Number(r.query['resourceVersion']));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(p.lines.filter((l) => l['event'] === 'fatal' || l['event'] === 'error')).toEqual([]);
  });
});
