// Real xDS clients nobody here wrote (gRPC C-core through grpcio, and grpc-go), each a child process
// (test/support/xds-peers.ts), against the reference control plane started in this process. The
// ground truth is the client's own: what its CSDS says it holds, decoded into the chain it routes by
// (test/truth/client-view.ts), and whether its RPCs reach the backend that chain names.
//
// Two C-core peers and one grpc-go peer share one control plane and one HTTPProxy, so each step
// below is checked on all three: first config, a route moved to another Service, a NACK, and what the
// control plane's force-nack annotation does to these two clients.
import pino from 'pino';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
  unpackAny,
} from '../../../common/xds';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { FORCE_NACK_ANNOTATION } from '../../../infra/local/control-plane/model';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';
import { startXdsPeer, startXdsPeers, type ClientSnapshot, type XdsPeer } from '../../support/xds-peers';
import { clientView, describeView, type ClientView } from '../../truth/client-view';

const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const TARGET = 'web.example.com';
const SOURCE = 'projectcontour.io/HTTPProxy/default/web';
const WAIT_MS = 20_000;

const CHAIN_TYPES = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL] as const;

interface Service {
  name: string;
  port: number;
  weight?: number;
}

function httpProxy(services: Service[], annotations?: Record<string, string>): unknown {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name: 'web', namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: { virtualhost: { fqdn: TARGET }, routes: [{ services }] },
  };
}

describe('real C-core and grpc-go xDS clients, judged by their own CSDS', () => {
  let app: EchoBackend;
  let canary: EchoBackend;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let peers: XdsPeer[] = [];
  let appCluster = '';
  let canaryCluster = '';

  /** The control plane's current version_info of a type. */
  const served = (typeUrl: (typeof CHAIN_TYPES)[number]): string => {
    const version = controlPlane.currentSnapshot()?.[typeUrl].version;
    if (version === undefined) throw new Error('control plane has no snapshot');
    return version;
  };

  /** The peer's view once complete at the versions the control plane serves now, routing to `cluster`. */
  const completeAt = (cluster: string) => (peer: XdsPeer): { view: ClientView; snapshot: ClientSnapshot } | undefined => {
    const snapshot = peer.latest();
    if (snapshot === undefined) return undefined;
    const view = clientView(snapshot, TARGET);
    if (!view.complete || view.clusterNames.join() !== cluster) return undefined;
    const versions = [view.listener?.version, view.routeConfiguration?.version, view.clusters[0]?.cluster.version, view.clusters[0]?.endpoints?.version];
    return versions.every((v, i) => v === served(CHAIN_TYPES[i] ?? LISTENER_TYPE_URL)) ? { view, snapshot } : undefined;
  };

  beforeAll(async () => {
    app = await startEchoBackend('echo-app');
    canary = await startEchoBackend('echo-canary');
    appCluster = `default/app/${app.port}`;
    canaryCluster = `default/app-canary/${canary.port}`;
    source = new InMemoryRouteSource();
    source.applyEndpoints({ metadata: { name: 'app', namespace: 'default' }, subsets: [{ addresses: [{ ip: app.host }], ports: [{ port: app.port }] }] });
    source.applyEndpoints({ metadata: { name: 'app-canary', namespace: 'default' }, subsets: [{ addresses: [{ ip: canary.host }], ports: [{ port: canary.port }] }] });
    source.applyProxy(httpProxy([{ name: 'app', port: app.port }]));
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-xds-peers', source, provenance: true, holdoffMs: 10, holdoffMaxMs: 50, logger: quiet });
    const peer = (kind: 'grpc-core' | 'grpc-go', nodeId: string) => ({ kind, nodeId, nodeCluster: 'real-peers', xdsServer: controlPlane.address, target: TARGET, rpcIntervalMs: 50, logger: quiet });
    peers = await startXdsPeers([peer('grpc-core', 'core-0'), peer('grpc-core', 'core-1'), peer('grpc-go', 'go-0')]);
    for (const p of peers) quiet.info({ nodeId: p.nodeId, client: p.clientVersion, startupMs: p.startupMs, rssBytes: p.rssBytes() }, 'xds peer started');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close()));
    await controlPlane?.close();
    await app?.close();
    await canary?.close();
  });

  afterEach(() => {
    // A peer that died or broke the protocol fails the test it happened in, not only a later wait.
    expect(peers.map((p) => p.failure()?.message).filter((m) => m !== undefined)).toEqual([]);
  });

  test('each becomes READY through LDS → RDS → CDS → EDS: its own CSDS holds the complete chain, RPCs reach the backend', async () => {
    expect(peers.map((p) => p.clientVersion)).toEqual([expect.stringMatching(/^grpc-core\/1\.\d+\.\d+$/), expect.stringMatching(/^grpc-core\/1\.\d+\.\d+$/), expect.stringMatching(/^grpc-go\/1\.\d+\.\d+$/)]);
    for (const peer of peers) {
      const { view, snapshot } = await peer.waitFor(completeAt(appCluster), WAIT_MS, `a complete view routing to ${appCluster}`);
      expect(view).toMatchObject({
        complete: true,
        routable: true,
        listener: { name: TARGET, status: 'ACKED', provenance: [`${SOURCE}@1`] },
        routeConfigName: 'ingress_http',
        routeConfiguration: { status: 'ACKED', provenance: [`${SOURCE}@1`] },
        virtualHost: { name: TARGET, domains: [TARGET], provenance: [`${SOURCE}@1`] },
        clusters: [{ cluster: { name: appCluster, status: 'ACKED', provenance: [`${SOURCE}@1`] }, edsServiceName: appCluster, endpoints: { status: 'ACKED' }, endpointCount: 1 }],
      });
      // A by-name client can only ask for a link once it holds the one before it, so the first time it
      // held each type follows the chain (equal when one CSDS query saw several arrive).
      const firstHeld = CHAIN_TYPES.map((typeUrl) => peer.snapshots().find((s) => s.resources.some((r) => r.typeUrl === typeUrl && r.value !== undefined))?.at);
      expect(firstHeld.every((at) => at !== undefined && at <= snapshot.at)).toBe(true);
      expect([...firstHeld].sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(firstHeld);
      // It reports nothing beyond its chain: it subscribes by name.
      expect(snapshot.resources.map((r) => `${r.typeUrl}|${r.name}`).sort()).toEqual(
        [`${CLUSTER_TYPE_URL}|${appCluster}`, `${CLUSTER_LOAD_ASSIGNMENT_TYPE_URL}|${appCluster}`, `${LISTENER_TYPE_URL}|${TARGET}`, `${ROUTE_CONFIGURATION_TYPE_URL}|ingress_http`].sort(),
      );
      const rpc = await peer.waitFor((p) => p.rpcs().find((r) => r.ok), WAIT_MS, 'a successful RPC');
      expect(rpc).toMatchObject({ ok: true, backend: 'echo-app' });
      expect(peer.rpcs().filter((r) => r.ok).every((r) => r.ok && r.backend === 'echo-app')).toBe(true);
    }
    expect(app.calls).toBeGreaterThanOrEqual(peers.length);
    expect(canary.calls).toBe(0);
    // The server heard each node ACK each type at the version the client holds (the client says so first).
    const serverAcked = (nodeId: string, typeUrl: string, version: string): boolean =>
      controlPlane.xdsEvents.all().some((e) => e.event === 'request' && e.kind === 'ack' && e.stream.nodeId === nodeId && e.typeUrl === typeUrl && e.version === version);
    for (const peer of peers) {
      await peer.waitFor(() => CHAIN_TYPES.every((typeUrl) => serverAcked(peer.nodeId, typeUrl, served(typeUrl))), WAIT_MS, 'the control plane to log its ACKs');
    }
  });

  test('a route moved to another Service: each view follows to the new cluster, RPCs name the new backend', async () => {
    const changedAt = Date.now();
    expect(source.applyProxy(httpProxy([{ name: 'app-canary', port: canary.port }]))).toBe(2);
    for (const peer of peers) {
      const { view, snapshot } = await peer.waitFor(completeAt(canaryCluster), WAIT_MS, `a complete view routing to ${canaryCluster}`);
      expect(snapshot.at).toBeGreaterThanOrEqual(changedAt);
      expect(view.virtualHost?.provenance).toEqual([`${SOURCE}@2`]);
      expect(view.clusters.map((c) => [c.cluster.name, c.edsServiceName, c.endpointCount])).toEqual([[canaryCluster, canaryCluster, 1]]);
      // The view in force just before the change was the old one: the timeline is the client's.
      const before = peer.latestAt(changedAt - 1);
      expect(before && clientView(before, TARGET).clusterNames).toEqual([appCluster]);

      const first = await peer.waitFor((p) => p.rpcsSince(changedAt).find((r) => r.ok && r.backend === 'echo-canary'), WAIT_MS, 'an RPC answered by echo-canary');
      // Once routed to the new backend, it never goes back (the old cluster is gone from its config).
      await peer.waitFor((p) => p.rpcsSince(first.at).filter((r) => r.ok).length >= 3, WAIT_MS, 'three more RPCs');
      expect(peer.rpcsSince(first.at).filter((r) => r.ok && r.backend !== 'echo-canary')).toEqual([]);
      // The client drops the old cluster once its route no longer names it: no bytes of it anywhere.
      await peer.waitFor((p) => !p.latest()?.resources.some((r) => r.name === appCluster), WAIT_MS, `${appCluster} to leave its CSDS`);
      const oldStates = [...new Set(peer.snapshots().filter((s) => s.at >= changedAt).flatMap((s) => s.resources.filter((r) => r.typeUrl === CLUSTER_TYPE_URL && r.name === appCluster).map((r) => `${r.status}${r.value ? '+bytes' : ''}`)))];
      quiet.info({ nodeId: peer.nodeId, oldClusterStates: oldStates }, 'old cluster as the client reported it after the change');
    }
  });

  test('a NACK shows as NACKED in the client’s own CSDS: its error, the last good version held, RPCs still routed by it', async () => {
    const lastGood = served(ROUTE_CONFIGURATION_TYPE_URL);
    const changedAt = Date.now();
    // Every weight 0: the reference control plane serves it (the spec is valid), and gRPC clients
    // reject a weighted_clusters action with no cluster of weight > 0.
    expect(source.applyProxy(httpProxy([{ name: 'app', port: app.port, weight: 0 }, { name: 'app-canary', port: canary.port, weight: 0 }]))).toBe(3);
    for (const peer of peers) {
      const nacked = await peer.waitFor(
        (p) => p.latest()?.resources.find((r) => r.typeUrl === ROUTE_CONFIGURATION_TYPE_URL && r.name === 'ingress_http' && r.status === 'NACKED'),
        WAIT_MS,
        'ingress_http NACKED',
      );
      expect(nacked.error).toMatch(/no valid cluster/i);
      // CSDS's version_info is what the client holds: the last version it accepted.
      expect(nacked.version).toBe(lastGood);
      const snapshot = peer.latest();
      if (snapshot === undefined) throw new Error('no snapshot');
      const view = clientView(snapshot, TARGET);
      expect(view.routable).toBe(true);
      expect(view.complete).toBe(false);
      expect(view.problem).toMatchObject({ kind: 'route-configuration', name: 'ingress_http', status: 'NACKED' });
      expect(view.virtualHost?.provenance).toEqual([`${SOURCE}@2`]);
      expect(view.clusterNames).toEqual([canaryCluster]);
      const after = snapshot.at;
      await peer.waitFor((p) => p.rpcsSince(after).filter((r) => r.ok).length >= 2, WAIT_MS, 'RPCs after the NACK');
      expect(peer.rpcsSince(after).filter((r) => r.ok && r.backend !== 'echo-canary')).toEqual([]);
      expect(peer.rpcsSince(changedAt).some((r) => !r.ok)).toBe(false);
    }
    // The control plane saw each node's NACK too. Its error_detail is worded apart from the CSDS
    // detail (C-core wraps it as "xDS response validation errors: [resource index 0: ingress_http:
    // …]", grpc-go as "error parsing … resource \"ingress_http\": …"), but names the same fault.
    for (const peer of peers) {
      const nacks = (): string[] =>
        controlPlane.xdsEvents.all().flatMap((e) => (e.event === 'request' && e.kind === 'nack' && e.stream.nodeId === peer.nodeId && e.typeUrl === ROUTE_CONFIGURATION_TYPE_URL ? [e.errorMessage ?? ''] : []));
      await peer.waitFor(() => nacks().length > 0, WAIT_MS, 'the control plane to log its NACK');
      expect(nacks().every((m) => m.includes('ingress_http') && /no valid cluster/i.test(m))).toBe(true);
    }
  });

  test('the force-nack annotation (a domain with two wildcards) is ACKED by C-core and grpc-go, unlike grpc-js-xds', async () => {
    // FORCE_NACK_ANNOTATION makes the route configuration carry `*.force-nack.*`, which Envoy and
    // grpc-js-xds reject; these two clients accept it, so it cannot stand for a NACK with them (the
    // NACK above uses zero weights instead). This pins that, so a change on either side shows.
    expect(source.applyProxy(httpProxy([{ name: 'app-canary', port: canary.port }], { [FORCE_NACK_ANNOTATION]: 'true' }))).toBe(4);
    for (const peer of peers) {
      const { view, snapshot } = await peer.waitFor(completeAt(canaryCluster), WAIT_MS, 'a complete view at the annotated version');
      expect(view.virtualHost?.provenance).toEqual([`${SOURCE}@4`]);
      const route = snapshot.resources.find((r) => r.typeUrl === ROUTE_CONFIGURATION_TYPE_URL && r.name === 'ingress_http');
      expect(route?.status).toBe('ACKED');
      if (route?.value === undefined) throw new Error('route configuration not held');
      const decoded = unpackAny({ type_url: ROUTE_CONFIGURATION_TYPE_URL, value: Buffer.from(route.value) }) as { virtual_hosts?: { domains?: string[] }[] };
      expect(decoded.virtual_hosts?.[0]?.domains).toEqual([TARGET, '*.force-nack.*']);
      quiet.info({ nodeId: peer.nodeId, view: describeView(view) }, 'force-nack ACKED');
    }
  });
});

describe('the xDS peer harness', () => {
  test('a peer that cannot start is an error with its stderr; one that dies is an error for every wait', async () => {
    // rpc interval 0 is refused by both peers' argument checks, before their ready line.
    for (const kind of ['grpc-core', 'grpc-go'] as const) {
      await expect(startXdsPeer({ kind, xdsServer: '127.0.0.1:1', nodeId: 'bad', nodeCluster: 'c', target: TARGET, rpcIntervalMs: 0 })).rejects.toThrow(
        new RegExp(`${kind} peer bad exited \\(code 2\\) before its ready line: .*at least 1 ms`, 's'),
      );
    }
    const peer = await startXdsPeer({ kind: 'grpc-go', xdsServer: '127.0.0.1:1', nodeId: 'doomed', nodeCluster: 'c', target: TARGET });
    try {
      // Nothing listens on port 1: the client reports its listener REQUESTED and its RPCs UNAVAILABLE.
      await peer.waitFor((p) => p.latest()?.resources.some((r) => r.name === TARGET && r.status === 'REQUESTED' && r.value === undefined), WAIT_MS, 'the listener REQUESTED');
      await peer.waitFor((p) => p.rpcs().find((r) => !r.ok && r.code === 'UNAVAILABLE'), WAIT_MS, 'an UNAVAILABLE RPC');
      const pending = peer.waitFor(() => false, WAIT_MS, 'something that never comes');
      process.kill(peer.pid, 'SIGKILL');
      await expect(pending).rejects.toThrow(/grpc-go peer doomed exited \(signal SIGKILL\) while open/);
      expect(peer.failure()?.message).toMatch(/exited \(signal SIGKILL\) while open/);
      await expect(peer.waitFor(() => true, 1000)).rejects.toThrow(/while open/);
    } finally {
      await peer.close();
    }
  });
});
