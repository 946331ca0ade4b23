// Real gRPC clients (grpc-js-xds 1.14 in this process; C-core and grpc-go as peers,
// test/support/xds-peers.ts) in one node group behind the relay, and a cluster their route uses that
// a new upstream does not have at first.
//
// grpc-js-xds mishandles a cluster that is deleted while its route still uses it and then comes back
// with the same bytes: it ACKs the cluster again but never asks for its endpoints again, and its RPCs
// keep failing with "Cluster resource … does not exist" (its XdsClient keeps a deleted resource cached,
// and a returning resource equal to the cache notifies no watcher). The truth checker met that as
// grpc-0's endless EDS hold after lineage moves (docs/RELIABILITY.md).
//
// 1. A lineage move (another upstream target, the clients reconnect) must not delete a cluster a
//    client's route still uses: the new group's make-before-break starts from what the old group
//    served (RelayGroupDeps.retainedFrom), so the clients are moved off it by the new route before it
//    goes. Here the new upstream sends its CDS (without the old cluster) before its RDS; before, that CDS
//    reached the clients first and grpc-go failed its RPCs ("resource … has been removed").
// 2. A gateway restart has no such memory: the deletion reaches the clients. Then the gateway's verdict
//    must match what each client can do. grpc-js-xds cannot route: its EDS subscription lacks a name its
//    accepted CDS references, the tracker holds EDS back (a reference hold, core reference-hold.ts), and
//    past the ACK timeout convergence says Stuck — "has not asked for the EDS names its accepted config
//    references", not "has not answered". grpc-go fails while the cluster is gone and routes again
//    after, C-core keeps routing: both count as programmed at the returned seq.
// Ground truth is each client's own RPCs, not the product's state. Between the relay and the tracker
// nothing is stored: the tracker's records go to an in-memory sink (what is judged here is the
// tracker's reading of real clients, not how it is written).
import pino from 'pino';
import {
  buildCondition,
  computeConvergence,
  type EnvoyEvent,
  type EnvoyState,
  type LineageState,
  type LineageWatermark,
} from '../../../common/core';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, type AnyResource } from '../../../common/xds';
import { grpcCluster, grpcClusterLoadAssignment, grpcListener, grpcRouteConfiguration } from '../../../infra/local/envoys/grpcXdsResources';
import { RealXdsClient, startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';
import type { Relay } from '../../../xds-gateway/relay';
import type { RelayObserver, RequestClassifiedEvent, ResponseSentEvent, StreamClosedEvent, StreamOpenedEvent, UpstreamAppliedEvent, UpstreamStateEvent } from '../../../xds-gateway/relay/observer';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { EnvoyRecords } from '../../../xds-gateway/tracking/recorder';
import { startXdsPeers, type XdsPeer } from '../../support/xds-peers';
import { eventually, sleep, startTestRelay } from '../gateway-relay/helpers';
import { ScriptedUpstream } from '../gateway-relay/scripted-upstream';

jest.setTimeout(120_000);

const GRPC_JS = 'grpc-js-client';
const ACK_TIMEOUT_MS = 500;
const GROUP = 'grpc';
const OBJECT = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };

/** The tracker's records, kept in memory (the store is not what this test is about). */
class InMemoryRecords implements EnvoyRecords {
  enqueueEvent(_event: EnvoyEvent): void {}
  enqueueEnvoyState(_state: EnvoyState): void {}
  enqueueLineageState(_state: LineageState): void {}
  forgetEnvoy(): boolean {
    return true;
  }
}

/** The tracker, and every upstreamApplied the relay reported (what it served per seq, carried-over names too). */
class TrackerAndApplied implements RelayObserver {
  readonly applied: UpstreamAppliedEvent[] = [];
  constructor(readonly tracker: EnvoyTracker) {}
  streamOpened(e: StreamOpenedEvent): void {
    this.tracker.streamOpened(e);
  }
  requestClassified(e: RequestClassifiedEvent): void {
    this.tracker.requestClassified(e);
  }
  responseSent(e: ResponseSentEvent): void {
    this.tracker.responseSent(e);
  }
  streamClosed(e: StreamClosedEvent): void {
    this.tracker.streamClosed(e);
  }
  upstreamApplied(e: UpstreamAppliedEvent): void {
    this.applied.push(e);
    this.tracker.upstreamApplied(e);
  }
  upstreamState(e: UpstreamStateEvent): void {
    this.tracker.upstreamState(e);
  }
}

function newTracker(): EnvoyTracker {
  return new EnvoyTracker({
    recorder: new InMemoryRecords(),
    logger: pino({ level: 'silent' }),
    clock: { now: () => Date.now() },
    ackTimeoutMs: ACK_TIMEOUT_MS,
    stuckCheckIntervalMs: 100,
    envoyHeartbeatMs: 200,
    lineageHeartbeatMs: 3_600_000,
  });
}

type Content = Record<string, AnyResource[]>;

/** The web listener's routes to `cluster`, the cluster and its endpoints at `backend`. */
function contentFor(cluster: string, backend: EchoBackend): Content {
  return {
    [LISTENER_TYPE_URL]: [grpcListener('web', 'web-routes')],
    [ROUTE_CONFIGURATION_TYPE_URL]: [grpcRouteConfiguration('web-routes', cluster)],
    [CLUSTER_TYPE_URL]: [grpcCluster(cluster)],
    [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: [grpcClusterLoadAssignment(cluster, [{ host: backend.host, port: backend.port }])],
  };
}

/** Answers each type as the relay subscribes it upstream (on its first downstream demand), in `order`. */
async function serve(upstream: ScriptedUpstream, version: string, content: Content, order: readonly string[]): Promise<void> {
  for (const typeUrl of order) {
    await eventually(() => upstream.subscribed(typeUrl, /^xds-gateway\.gw-test\./), `the relay subscribed ${typeUrl} upstream`);
    upstream.respond(typeUrl, version, content[typeUrl] ?? []);
  }
}

const ADS_ORDER = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];
/** Clusters before routes: a removal ahead of the route that stops using it, unless the relay holds it. */
const CLUSTERS_FIRST = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL];

describe('real gRPC clients and a cluster their route uses that a new upstream lacks', () => {
  let blue: EchoBackend;
  let green: EchoBackend;
  const upstreams: ScriptedUpstream[] = [];
  const relays: Relay[] = [];
  const trackers: EnvoyTracker[] = [];
  const clients: RealXdsClient[] = [];
  const peers: XdsPeer[] = [];

  beforeAll(async () => {
    blue = await startEchoBackend('blue');
    green = await startEchoBackend('green');
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    await Promise.all(peers.map((peer) => peer.close()));
    await sleep(500);
    for (const relay of relays) await relay.control.close();
    for (const tracker of trackers) tracker.stop();
    for (const upstream of upstreams) upstream.close();
    await blue?.close();
    await green?.close();
  });

  const upstream = async (): Promise<ScriptedUpstream> => {
    const started = new ScriptedUpstream();
    await started.start();
    upstreams.push(started);
    return started;
  };
  const relayTo = async (target: ScriptedUpstream, tracker: RelayObserver, extra: Parameters<typeof startTestRelay>[2] = {}): Promise<Relay> => {
    const relay = await startTestRelay(`127.0.0.1:${target.port}`, tracker, extra);
    relays.push(relay);
    return relay;
  };
  /** One grpc-js-xds client and the C-core and grpc-go peers, all in GROUP, routing through the relay at `port`. */
  const startClients = async (port: number, suffix: string): Promise<{ client: RealXdsClient; go: XdsPeer; core: XdsPeer }> => {
    const client = new RealXdsClient({ xdsServerAddress: `127.0.0.1:${port}`, node: { id: `${GRPC_JS}-${suffix}`, cluster: GROUP }, listenerName: 'web' });
    clients.push(client);
    client.connect();
    const started = await startXdsPeers(
      (['grpc-core', 'grpc-go'] as const).map((kind) => ({ kind, xdsServer: `127.0.0.1:${port}`, nodeId: `${kind}-${suffix}`, nodeCluster: GROUP, target: 'web', rpcIntervalMs: 50 })),
    );
    peers.push(...started);
    const [core, go] = started as [XdsPeer, XdsPeer];
    return { client, go, core };
  };
  const echoOutcome = (client: RealXdsClient): Promise<string> =>
    client.echo('hello', 2000).then(
      (reply) => `ok:${reply.backend}`,
      (error: unknown) => `failed:${error instanceof Error ? error.message : String(error)}`,
    );

  test('a lineage move does not delete a cluster the clients still route to: they are moved off it first', async () => {
    const [first, next] = [await upstream(), await upstream()];
    const tracker = newTracker();
    trackers.push(tracker);
    const observer = new TrackerAndApplied(tracker);
    const relay = await relayTo(first, observer);
    const { client, go, core } = await startClients(relay.port, 'move');
    await serve(first, 'a1', contentFor('blue-cluster', blue), ADS_ORDER);
    await client.waitForReady(20_000);
    for (const peer of [go, core]) await peer.waitFor((p) => p.rpcs().some((rpc) => rpc.ok), 20_000, 'an RPC through the first config');

    // grpc-js-xds is asked every 20 ms while the clients move; the peers log every RPC themselves.
    const jsOutcomes: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        jsOutcomes.push(await echoOutcome(client));
        await sleep(20);
      }
    })();
    const movedAt = Date.now();
    relay.control.setUpstreamTarget(`127.0.0.1:${next.port}`);
    // The new upstream moved the route to green and dropped blue. Its clusters, endpoints and listener
    // arrive first and every client ACKs the new CDS, routing as before for a while; only then its routes.
    const moved = contentFor('green-cluster', green);
    await serve(next, 'b1', moved, CLUSTERS_FIRST);
    const newLineage = await eventually(() => relay.control.groups().find((group) => group.group === GROUP && group.lineage !== `gw-test.boot-1.${GROUP}`)?.lineage, 'the new lineage');
    for (const nodeId of [client.nodeId, go.nodeId, core.nodeId]) {
      await eventually(() => {
        const cds = tracker.envoyState(nodeId)?.types[CLUSTER_TYPE_URL];
        return cds?.lineage === newLineage && cds.acked !== undefined;
      }, `${nodeId} to ACK the new lineage's clusters`);
    }
    await sleep(500);
    await serve(next, 'b1', moved, [ROUTE_CONFIGURATION_TYPE_URL]);
    await eventually(async () => (await echoOutcome(client)) === 'ok:green', 'grpc-js-xds on green');
    for (const peer of [go, core]) await peer.waitFor((p) => p.rpcsSince(movedAt).some((rpc) => rpc.ok && rpc.backend === 'green'), 20_000, 'an RPC to green');
    // blue is removed once every client answered the route that moved them off it.
    await eventually(() => relay.control.groups().find((group) => group.group === GROUP)?.pendingRemovals === 0, 'the old cluster released');
    sampling = false;
    await sampler;

    // No client ever saw the cluster its route used go away.
    expect(jsOutcomes.filter((outcome) => /does not exist/.test(outcome))).toEqual([]);
    expect(go.rpcsSince(movedAt).filter((rpc) => !rpc.ok && /removed|does not exist/.test(rpc.details))).toEqual([]);
    expect(core.rpcsSince(movedAt).filter((rpc) => !rpc.ok && /does not exist/.test(rpc.details))).toEqual([]);
    // The move happened (a new lineage), and blue was served on it, reported as carried over (its
    // watermarks must not take it as an appearance: ProvenanceWatermarks), until released.
    const lineage = relay.control.groups().find((group) => group.group === GROUP)?.lineage;
    expect(lineage).not.toBe(`gw-test.boot-1.${GROUP}`);
    const clustersOnNew = observer.applied.filter((e) => e.lineage === lineage && e.typeUrl === CLUSTER_TYPE_URL && e.changed);
    expect(clustersOnNew.map((e) => ({ served: e.resources.map((r) => r.name).sort(), inherited: e.inherited ?? [] }))).toEqual([
      { served: ['blue-cluster', 'green-cluster'], inherited: ['blue-cluster'] },
      { served: ['green-cluster'], inherited: [] },
    ]);
  });

  test('after a gateway restart the deletion reaches the clients: grpc-js-xds cannot route and is Stuck on its missing request, the others recover and count', async () => {
    const [first, next] = [await upstream(), await upstream()];
    const tracker = newTracker();
    trackers.push(tracker);
    const before = await relayTo(first, tracker);
    const port = before.port;
    const { client, go, core } = await startClients(port, 'restart');
    await serve(first, 'a1', contentFor('blue-cluster', blue), ADS_ORDER);
    await client.waitForReady(20_000);
    for (const peer of [go, core]) await peer.waitFor((p) => p.rpcs().some((rpc) => rpc.ok), 20_000, 'an RPC through the first config');

    // A new gateway process on the same address, with nothing of the old one, in front of an upstream
    // whose first CDS lacks the cluster the route still names; the cluster then returns unchanged.
    await before.control.close();
    const restartedTracker = newTracker();
    trackers.push(restartedTracker);
    const movedAt = Date.now();
    const relay = await relayTo(next, restartedTracker, { listen: { host: '127.0.0.1', port }, bootId: 'boot-2' });
    const whole = contentFor('blue-cluster', blue);
    await serve(next, 'b1', { ...whole, [CLUSTER_TYPE_URL]: [] }, ADS_ORDER);
    await eventually(async () => (await echoOutcome(client)).includes('does not exist'), 'grpc-js-xds to see its cluster deleted');
    await go.waitFor((p) => p.rpcsSince(movedAt).some((rpc) => !rpc.ok && /has been removed/.test(rpc.details)), 20_000, 'grpc-go to see the cluster deleted');
    const returnedAt = Date.now();
    next.respond(CLUSTER_TYPE_URL, 'b2', whole[CLUSTER_TYPE_URL] ?? []);

    const nodeId = client.nodeId;
    const lineage = await eventually(() => relay.control.groups().find((group) => group.group === GROUP)?.lineage, 'the group lineage');
    const returned = await eventually(() => {
      const seq = restartedTracker.lineageState(lineage)?.typeHistory[CLUSTER_TYPE_URL]?.at(-1);
      const cds = restartedTracker.envoyState(nodeId)?.types[CLUSTER_TYPE_URL];
      return seq !== undefined && seq > 1 && cds?.lineage === lineage && cds.acked !== undefined && cds.acked >= seq ? seq : undefined;
    }, 'grpc-js-xds to ACK the returned cluster');

    // Ground truth: grpc-js-xds holds the cluster again (ACKed) yet still cannot route to it.
    await sleep(1000);
    expect(await echoOutcome(client)).toMatch(/Cluster resource blue-cluster does not exist/);
    const held = restartedTracker.envoyState(nodeId);
    expect(held?.types[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]?.namesChange?.reference).toBe(true);
    expect(held?.programmedThrough ?? 0).toBeLessThan(returned);

    // Convergence at a watermark on the current seqs.
    const lineageState = restartedTracker.lineageState(lineage);
    if (lineageState === undefined) throw new Error('no lineage state');
    const types = Object.fromEntries(Object.entries(lineageState.typeHistory).map(([typeUrl, seqs]) => [typeUrl, seqs.at(-1) ?? 0]));
    const mark: LineageWatermark = { seq: lineageState.currentSeq, types, at: Date.now() };
    const verdictFor = (state: EnvoyState) =>
      computeConvergence({ object: OBJECT, generation: 2, watermark: { observable: true, lineages: { [lineage]: mark } }, envoys: [state], now: Date.now(), policy: { ttlMs: 60_000, ackTimeoutMs: ACK_TIMEOUT_MS } });
    const stuck = await eventually(() => {
      const state = restartedTracker.envoyState(nodeId);
      const result = state === undefined ? undefined : verdictFor(state);
      return result?.state === 'Stuck' ? result : undefined;
    }, 'a Stuck verdict');
    expect(stuck.blockers).toEqual([expect.objectContaining({ nodeId, reason: 'stuck', typeUrls: [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL], unrequested: [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL] })]);
    expect(buildCondition(stuck, {}, Date.now()).message).toMatch(new RegExp(`^0/1 Envoys programmed at generation 2; ${nodeId} has not asked for the EDS names its accepted config references for \\d+s$`));

    // grpc-go and C-core route again once the cluster is back (their own RPCs say so), and count as
    // programmed at the returned seq: the hold is grpc-js-xds's state, not the deletion's.
    for (const peer of [go, core]) {
      await peer.waitFor((p) => p.rpcsSince(returnedAt).some((rpc) => rpc.ok), 20_000, 'an RPC through the returned cluster');
      const reached = await eventually(() => {
        const state = restartedTracker.envoyState(peer.nodeId);
        return state !== undefined && (state.programmedThrough ?? 0) >= returned ? state : undefined;
      }, `${peer.nodeId} programmed at the returned seq`);
      expect(reached.types[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]?.namesChange).toBeUndefined();
      expect(verdictFor(reached)).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    }
  });
});
