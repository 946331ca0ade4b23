// A real @grpc/grpc-js-xds client (1.14) whose cluster is deleted while its route still uses it, then
// comes back with the same bytes: the client ACKs the cluster again but never asks for its endpoints
// again, and its RPCs keep failing with "Cluster resource … does not exist" (its XdsClient keeps a
// deleted resource cached, and a returning resource equal to the cache notifies no watcher, so the
// cluster's entry stays in its does-not-exist state). This is the state the truth checker met as
// grpc-0's endless EDS hold after lineage moves (docs/RELIABILITY.md).
//
// Within one node group the relay never sends such a deletion (make-before-break keeps a cluster a
// served route references). A new lineage starts from the new upstream's content alone, so here the
// relay moves to a second, scripted upstream whose first CDS lacks the cluster its route names, and
// which then sends the cluster back: the shortest way to put the client in that state.
//
// The gateway's verdict must match what the client can do: its EDS subscription lacks a name its
// accepted CDS references, so the tracker holds EDS back (a reference hold, core reference-hold.ts),
// the client never counts as programmed at the returned seq, and past the ACK timeout convergence says
// Stuck — "has not asked for the EDS names its accepted config references", not "has not answered".
// Ground truth is the client's own RPC, not the product's state. The C-core and grpc-go clients of
// the same node group (test/support/xds-peers.ts) get the same deletion and return: grpc-go fails its
// RPCs while the cluster is gone and routes again after, C-core keeps routing; the gateway must count
// both programmed at the returned seq (a hold that outlived the client's recovery would be a liveness bug).
//
// Between the relay and the tracker nothing is stored: the tracker's records go to an in-memory sink
// (what is judged here is the tracker's reading of a real client, not how it is written).
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
import { grpcXdsResources } from '../../../infra/local/envoys/grpcXdsResources';
import { RealXdsClient, startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';
import type { Relay } from '../../../xds-gateway/relay';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { EnvoyRecords } from '../../../xds-gateway/tracking/recorder';
import { eventually, sleep, startTestRelay } from '../gateway-relay/helpers';
import { ScriptedUpstream } from '../gateway-relay/scripted-upstream';
import { startXdsPeers, type XdsPeer } from '../../support/xds-peers';

jest.setTimeout(120_000);

const NODE = 'grpc-deleted';
const ACK_TIMEOUT_MS = 500;
const TYPES = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];

/** The tracker's records, kept in memory (the store is not what this test is about). */
class InMemoryRecords implements EnvoyRecords {
  readonly lineages = new Map<string, LineageState>();
  enqueueEvent(_event: EnvoyEvent): void {}
  enqueueEnvoyState(_state: EnvoyState): void {}
  enqueueLineageState(state: LineageState): void {
    this.lineages.set(state.lineage, state);
  }
  forgetEnvoy(): boolean {
    return true;
  }
}

describe('a real gRPC client whose cluster is deleted and returns unchanged', () => {
  let upstream: ScriptedUpstream;
  let next: ScriptedUpstream;
  let backend: EchoBackend;
  let tracker: EnvoyTracker;
  let relay: Relay;
  let client: RealXdsClient | undefined;
  let peers: XdsPeer[] = [];

  beforeAll(async () => {
    upstream = new ScriptedUpstream();
    await upstream.start();
    next = new ScriptedUpstream();
    await next.start();
    backend = await startEchoBackend('blue');
    tracker = new EnvoyTracker({
      recorder: new InMemoryRecords(),
      logger: pino({ level: 'silent' }),
      clock: { now: () => Date.now() },
      ackTimeoutMs: ACK_TIMEOUT_MS,
      stuckCheckIntervalMs: 100,
      envoyHeartbeatMs: 200,
      lineageHeartbeatMs: 3_600_000,
    });
    relay = await startTestRelay(`127.0.0.1:${upstream.port}`, tracker);
  });

  afterAll(async () => {
    client?.close();
    await Promise.all(peers.map((peer) => peer.close()));
    await sleep(500);
    await relay?.control.close();
    tracker?.stop();
    upstream?.close();
    next?.close();
    await backend?.close();
  });

  const echoError = async (): Promise<string | undefined> => {
    try {
      await client?.echo('hello', 2000);
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };

  test('the client cannot route, and the gateway says Stuck on its missing request', async () => {
    const resources = grpcXdsResources({ listenerName: 'web', routeConfigName: 'web-routes', clusterName: 'web-cluster', endpoints: [{ host: backend.host, port: backend.port }] });
    client = new RealXdsClient({ xdsServerAddress: `127.0.0.1:${relay.port}`, node: { id: NODE, cluster: 'grpc' }, listenerName: 'web' });
    client.connect();
    const serve = async (from: ScriptedUpstream, version: string, content: Record<string, AnyResource[]>): Promise<void> => {
      // The relay subscribes upstream per type on its first downstream demand; answer each as it comes.
      for (const typeUrl of TYPES) {
        await eventually(() => from.subscribed(typeUrl, /^xds-gateway\.gw-test\./), `the relay subscribed ${typeUrl} upstream`);
        from.respond(typeUrl, version, content[typeUrl] ?? []);
      }
    };
    const whole = {
      [LISTENER_TYPE_URL]: [resources.listener],
      [ROUTE_CONFIGURATION_TYPE_URL]: [resources.routeConfiguration],
      [CLUSTER_TYPE_URL]: [resources.cluster],
      [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: [resources.clusterLoadAssignment],
    };
    await serve(upstream, 'u1', whole);
    await client.waitForReady(20_000);
    expect((await client.echo('before')).backend).toBe('blue');
    // The other real clients, in the same node group: gRPC C-core and grpc-go.
    peers = await startXdsPeers(
      (['grpc-core', 'grpc-go'] as const).map((kind) => ({ kind, xdsServer: `127.0.0.1:${relay.port}`, nodeId: `${kind}-deleted`, nodeCluster: 'grpc', target: 'web', rpcIntervalMs: 100 })),
    );
    for (const peer of peers) await peer.waitFor((p) => p.rpcs().some((rpc) => rpc.ok), 20_000, 'an RPC through the first config');

    // A new upstream target (a new lineage, the client reconnects): its first CDS lacks the cluster
    // its route still names, then the cluster comes back with the same bytes.
    const movedAt = Date.now();
    relay.control.setUpstreamTarget(`127.0.0.1:${next.port}`);
    await serve(next, 'v1', { ...whole, [CLUSTER_TYPE_URL]: [] });
    await eventually(async () => (await echoError())?.includes('does not exist'), 'the client to see its cluster deleted');
    // grpc-go sees the deletion too (its RPCs fail: "resource … has been removed"); C-core keeps routing.
    const go = peers.find((peer) => peer.kind === 'grpc-go');
    await go?.waitFor((p) => p.rpcsSince(movedAt).some((rpc) => !rpc.ok && /has been removed/.test(rpc.details)), 20_000, 'grpc-go to see the cluster deleted');
    const returnedAt = Date.now();
    next.respond(CLUSTER_TYPE_URL, 'v2', [resources.cluster]);
    const lineage = await eventually(() => relay.control.groups().find((group) => group.group === 'grpc')?.lineage, 'the group lineage');
    expect(lineage).not.toBe('gw-test.boot-1.grpc');
    const cdsSeq = (): number | undefined => tracker.lineageState(lineage)?.typeHistory[CLUSTER_TYPE_URL]?.at(-1);
    const returned = await eventually(() => {
      const seq = cdsSeq();
      const cds = tracker.envoyState(NODE)?.types[CLUSTER_TYPE_URL];
      return seq !== undefined && cds?.lineage === lineage && cds.acked !== undefined && cds.acked >= seq && seq > 1 ? seq : undefined;
    }, 'the client to ACK the returned cluster');

    // Ground truth: the client holds the cluster again (ACKed) yet still cannot route to it.
    await sleep(1000);
    expect(await echoError()).toMatch(/Cluster resource web-cluster does not exist/);

    // The gateway's reading: EDS held back by reference, never programmed at the returned seq.
    const state = tracker.envoyState(NODE);
    expect(state?.types[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]?.namesChange?.reference).toBe(true);
    expect(state?.programmedThrough ?? 0).toBeLessThan(returned);

    // Convergence at a watermark on the current seqs says Stuck, on the Envoy's request.
    const lineageState = tracker.lineageState(lineage);
    if (lineageState === undefined) throw new Error('no lineage state');
    const types = Object.fromEntries(Object.entries(lineageState.typeHistory).map(([typeUrl, seqs]) => [typeUrl, seqs.at(-1) ?? 0]));
    const mark: LineageWatermark = { seq: lineageState.currentSeq, types, at: Date.now() };
    const object = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
    const convergence = await eventually(() => {
      const held = tracker.envoyState(NODE);
      if (held === undefined) return undefined;
      const result = computeConvergence({ object, generation: 2, watermark: { observable: true, lineages: { [lineage]: mark } }, envoys: [held], now: Date.now(), policy: { ttlMs: 60_000, ackTimeoutMs: ACK_TIMEOUT_MS } });
      return result.state === 'Stuck' ? result : undefined;
    }, 'a Stuck verdict');
    expect(convergence.blockers).toEqual([expect.objectContaining({ nodeId: NODE, reason: 'stuck', typeUrls: [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL], unrequested: [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL] })]);
    expect(buildCondition(convergence, {}, Date.now()).message).toMatch(/^0\/1 Envoys programmed at generation 2; grpc-deleted has not asked for the EDS names its accepted config references for \d+s$/);

    expect(go).toBeDefined();
    // C-core and grpc-go route again once the cluster is back (their own RPCs say so), and the gateway
    // counts them programmed at the returned seq: the hold is the client's state, not the deletion's.
    for (const peer of peers) {
      await peer.waitFor((p) => p.rpcsSince(returnedAt).some((rpc) => rpc.ok), 20_000, 'an RPC through the returned cluster');
      const reached = await eventually(() => {
        const held = tracker.envoyState(peer.nodeId);
        return held !== undefined && (held.programmedThrough ?? 0) >= returned ? held : undefined;
      }, `${peer.nodeId} programmed at the returned seq`);
      expect(reached.types[CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]?.namesChange).toBeUndefined();
      const verdict = computeConvergence({ object, generation: 2, watermark: { observable: true, lineages: { [lineage]: mark } }, envoys: [reached], now: Date.now(), policy: { ttlMs: 60_000, ackTimeoutMs: ACK_TIMEOUT_MS } });
      expect(verdict).toMatchObject({ state: 'Programmed', programmed: 1, total: 1 });
    }
  });
});
