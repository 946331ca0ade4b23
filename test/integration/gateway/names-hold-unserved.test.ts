// A names hold must end once the Envoy is up to date for the names it asked for, even when one of them
// is not in the cache (docs/RELIABILITY.md, "an EDS names hold that outlives the recovery budget,
// against Contour": seed 8006, the two per-type Delta Envoys of the fleet). A request that adds names
// holds the type back until the ACK of a response sent after it (core applyNamesAdded). The Delta
// relay sent a response only when it had something to send, so a name the upstream cache lacks (an
// EDS name for a cluster that went away, or asked for before the control plane serves it) got no
// response, and the hold lasted until that name appeared: for ever, for a name never served.
//
// The real relay and tracker, a raw xDS client on a real gRPC stream, and upstream the fake xDS
// server, whose content the test sets. The relay decides whether to answer a request synchronously
// while handling it, so "no response" is read from the responses recorded by the time the tracker
// shows the request, not from waiting.
import * as grpc from '@grpc/grpc-js';
import { EDS_TYPE_URL, type TypeState } from '../../../common/core';
import {
  ADS_SERVICE,
  createDiscoveryClient,
  openAdsSotw,
  openPerTypeDelta,
  PER_TYPE_SERVICES,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../../common/xds';
import { grpcClusterLoadAssignment } from '../../../infra/local/envoys/grpcXdsResources';
import { NOOP_RELAY_OBSERVER, type Relay, type RelayObserver, type RequestClassifiedEvent, type ResponseSentEvent, type StreamClosedEvent, type StreamOpenedEvent, type UpstreamAppliedEvent, type UpstreamStateEvent } from '../../../xds-gateway/relay';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { FakeXdsServer, type FakeResource } from '../envoys/fakeXdsServer';
import { eventually, RecordingObserver, startTestRelay, testLogger } from '../gateway-relay/helpers';
import { StreamReader } from '../gateway-relay/stream-reader';

const GROUP = 'names-hold';

/** The relay's events go to the tracker and are recorded for the assertions. */
class Tee implements RelayObserver {
  constructor(private readonly observers: readonly RelayObserver[]) {}
  streamOpened(e: StreamOpenedEvent): void {
    for (const o of this.observers) o.streamOpened(e);
  }
  requestClassified(e: RequestClassifiedEvent): void {
    for (const o of this.observers) o.requestClassified(e);
  }
  responseSent(e: ResponseSentEvent): void {
    for (const o of this.observers) o.responseSent(e);
  }
  streamClosed(e: StreamClosedEvent): void {
    for (const o of this.observers) o.streamClosed(e);
  }
  upstreamApplied(e: UpstreamAppliedEvent): void {
    for (const o of this.observers) o.upstreamApplied(e);
  }
  upstreamState(e: UpstreamStateEvent): void {
    for (const o of this.observers) o.upstreamState(e);
  }
}

/** What the tracker held for a node's EDS right after a request, before the relay acted on it. */
interface AfterRequest {
  eds: TypeState | undefined;
  through: number | undefined;
  /** Responses sent to the node on EDS by then. */
  responses: number;
}

const endpointsOf = (name: string, host: string): FakeResource => ({ name, version: host, any: grpcClusterLoadAssignment(name, [{ host, port: 8080 }]) });

describe('a names hold for a name the cache lacks', () => {
  let upstream: FakeXdsServer;
  let tracker: EnvoyTracker;
  let recorder: Recorder;
  let recorded: RecordingObserver;
  const afterRequests: Array<{ nodeId: string; seen: AfterRequest }> = [];
  let relay: Relay;
  let eds: grpc.Client;
  let ads: grpc.Client;
  const readers: Array<StreamReader<unknown, unknown>> = [];
  let upstreamVersion = 0;
  const served = new Map<string, FakeResource>();

  /**
   * The upstream serves these endpoint assignments too, or in their new versions. Nothing is ever
   * removed: a removal takes a seq of its own later (make-before-break), which would move the seqs
   * under the assertions.
   */
  const serveEndpoints = (...resources: FakeResource[]): void => {
    for (const resource of resources) served.set(resource.name, resource);
    upstream.setResources(EDS_TYPE_URL, `v${++upstreamVersion}`, [...served.values()]);
  };

  beforeAll(async () => {
    upstream = new FakeXdsServer();
    const target = await upstream.start();
    serveEndpoints(endpointsOf('a', '10.0.0.1'), endpointsOf('b', '10.0.0.2'));
    // Timers far slower than the test: only the relay's events change the tracker's state.
    // The gateway's own recorder over the contract-tested in-memory store: what is asserted is the tracker's memory.
    recorder = new Recorder({ store: new InMemoryEventStore(), logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 5 });
    tracker = new EnvoyTracker({ recorder, logger: testLogger, clock: { now: () => Date.now() }, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
    recorded = new RecordingObserver();
    // Runs right after the tracker, before the relay decides whether to answer the request.
    const probe: RelayObserver = {
      ...NOOP_RELAY_OBSERVER,
      requestClassified: (e) => {
        if (e.typeUrl !== EDS_TYPE_URL) return;
        afterRequests.push({ nodeId: e.nodeId, seen: { eds: edsOf(e.nodeId), through: throughOf(e.nodeId), responses: responsesTo(e.nodeId) } });
      },
    };
    relay = await startTestRelay(target, new Tee([tracker, recorded, probe]));
    eds = createDiscoveryClient(PER_TYPE_SERVICES[EDS_TYPE_URL].service, `127.0.0.1:${relay.port}`);
    ads = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    eds.close();
    ads.close();
    await relay.control.close();
    tracker.stop();
    await recorder.close(1000);
    await upstream.stop();
  });

  afterEach(() => {
    // Each test's stream ends with it, so later content changes are not pushed to it.
    for (const reader of readers.splice(0)) reader.close();
  });

  const edsOf = (nodeId: string): TypeState | undefined => tracker.envoyState(nodeId)?.types[EDS_TYPE_URL];
  const throughOf = (nodeId: string): number | undefined => tracker.envoyState(nodeId)?.programmedThrough;
  const currentSeq = (): number | undefined => tracker.snapshot().lineages.find((l) => l.group === GROUP)?.currentSeq;
  const responsesTo = (nodeId: string): number => recorded.responses(nodeId, EDS_TYPE_URL).length;
  const namesOf = (response: DeltaDiscoveryResponse): string[] => (response.resources ?? []).map((r) => r.name ?? '?').sort();

  /** A per-type Delta EDS stream (the fleet's per-type-delta mode) that subscribed to `names` and ACKed the answer. */
  async function deltaEnvoy(nodeId: string, names: string[]): Promise<StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse>> {
    const stream = new StreamReader(openPerTypeDelta(eds, EDS_TYPE_URL));
    readers.push(stream as StreamReader<unknown, unknown>);
    stream.send({ node: { id: nodeId, cluster: GROUP }, type_url: EDS_TYPE_URL, resource_names_subscribe: names });
    const first = await stream.next();
    expect(namesOf(first)).toEqual(names.filter((name) => name === 'a' || name === 'b').sort());
    stream.send({ type_url: EDS_TYPE_URL, response_nonce: first.nonce ?? '' });
    await eventually(() => throughOf(nodeId) !== undefined && throughOf(nodeId) === currentSeq(), `${nodeId} programmed at the current seq`);
    return stream;
  }

  /**
   * Sends `request` and waits until the relay handled it (it answers, or not, synchronously while
   * handling it); returns what the tracker held right after the request.
   */
  async function handled(stream: StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse>, nodeId: string, request: DeltaDiscoveryRequest): Promise<AfterRequest> {
    const before = afterRequests.length;
    stream.send(request);
    const entry = await eventually(() => afterRequests.slice(before).find((r) => r.nodeId === nodeId), `${nodeId}'s request handled`);
    return entry.seen;
  }

  /** A Delta subscription change as Envoy sends it: no nonce, only the names it adds. */
  const subscribe = (stream: StreamReader<DeltaDiscoveryRequest, DeltaDiscoveryResponse>, nodeId: string, names: string[]): Promise<AfterRequest> =>
    handled(stream, nodeId, { type_url: EDS_TYPE_URL, resource_names_subscribe: names });

  test('Delta: a name the cache lacks is answered at the current version, and the hold ends with its ACK', async () => {
    const node = 'delta-absent';
    const stream = await deltaEnvoy(node, ['a']);
    const programmedAt = throughOf(node) as number;

    const seen = await subscribe(stream, node, ['gone']);
    // The request's own hold: no response was sent after it yet, the type counts at no version.
    expect(seen.eds?.namesChange).toMatchObject({ sent: false });
    expect(seen.through).toBeUndefined();

    // Before the fix the relay had nothing to send for `gone` and sent nothing (0 here), so the
    // hold waited for the name to appear.
    expect(responsesTo(node) - seen.responses).toBe(1);
    const answer = await stream.next();
    expect(answer.resources ?? []).toEqual([]);
    expect(answer.removed_resources ?? []).toEqual([]);
    expect(recorded.responses(node, EDS_TYPE_URL).at(-1)?.version.seq).toBe(currentSeq());
    stream.send({ type_url: EDS_TYPE_URL, response_nonce: answer.nonce ?? '' });
    await eventually(() => edsOf(node)?.namesChange === undefined && throughOf(node) === programmedAt, `${node}'s hold ended at seq ${programmedAt}`);

    // When the name appears it is sent, and until that is ACKed the Envoy is not past the change.
    serveEndpoints(endpointsOf('gone', '10.0.0.9'));
    const carried = await stream.next();
    expect(namesOf(carried)).toEqual(['gone']);
    const seqWithGone = currentSeq() as number;
    expect(seqWithGone).toBeGreaterThan(programmedAt);
    expect(throughOf(node)).toBeLessThan(seqWithGone);
    stream.send({ type_url: EDS_TYPE_URL, response_nonce: carried.nonce ?? '' });
    await eventually(() => throughOf(node) === seqWithGone, `${node} programmed with gone`);
  });

  test('Delta: a name added while a response is unanswered is answered after that response is ACKed', async () => {
    const node = 'delta-in-flight';
    const stream = await deltaEnvoy(node, ['a']);
    // A change of `a` is in flight to the Envoy when it asks for a name the cache lacks.
    serveEndpoints(endpointsOf('a', '10.0.0.3'));
    const inFlight = await stream.next();
    expect(namesOf(inFlight)).toEqual(['a']);
    const seen = await subscribe(stream, node, ['never-served']);
    expect(seen.eds?.namesChange).toMatchObject({ sent: false });
    // One response per stream and type is in flight at most: this one waits for the ACK.
    expect(responsesTo(node)).toBe(seen.responses);

    const acked = await handled(stream, node, { type_url: EDS_TYPE_URL, response_nonce: inFlight.nonce ?? '' });
    // That ACK is of a response sent before the request: it does not end the hold.
    expect(acked.eds).toMatchObject({ acked: currentSeq(), namesChange: { sent: false } });
    expect(acked.through).toBeUndefined();

    // Before the fix the relay, now free to send, still had nothing to send (0 here).
    expect(responsesTo(node) - acked.responses).toBe(1);
    const answer = await stream.next();
    expect(answer.resources ?? []).toEqual([]);
    stream.send({ type_url: EDS_TYPE_URL, response_nonce: answer.nonce ?? '' });
    await eventually(() => edsOf(node)?.namesChange === undefined && throughOf(node) === currentSeq(), `${node}'s hold ended`);
  });

  test('Delta: at a seq the stream NACKed nothing is sent, and the hold stays while the rejected resource is missing', async () => {
    const node = 'delta-rejected';
    const stream = await deltaEnvoy(node, ['a']);
    const programmedAt = throughOf(node) as number;
    // The Envoy asks for `b` (in the cache) and rejects it.
    const askedB = await subscribe(stream, node, ['b']);
    expect(responsesTo(node) - askedB.responses).toBe(1);
    const carriedB = await stream.next();
    expect(namesOf(carriedB)).toEqual(['b']);
    const nacked = await handled(stream, node, { type_url: EDS_TYPE_URL, response_nonce: carriedB.nonce ?? '', error_detail: { code: 3, message: 'endpoint b rejected' } });
    expect(nacked.eds?.nack).toBeDefined();
    expect(nacked.through).toBeUndefined();
    expect(responsesTo(node)).toBe(nacked.responses);

    // Now it asks for a name the cache lacks. Anything sent at this seq would be ACKed *at* the seq
    // whose `b` it lacks, so the relay sends nothing and the hold must stay: the content at this seq
    // has `b` for it.
    const seen = await subscribe(stream, node, ['gone-too']);
    expect(responsesTo(node)).toBe(seen.responses);
    expect(edsOf(node)?.namesChange).toMatchObject({ sent: false });
    expect(throughOf(node)).toBeUndefined();

    // The type's next change carries `b` again; its ACK ends both.
    serveEndpoints(endpointsOf('b', '10.0.0.4'));
    const resent = await stream.next();
    expect(namesOf(resent)).toContain('b');
    stream.send({ type_url: EDS_TYPE_URL, response_nonce: resent.nonce ?? '' });
    await eventually(() => throughOf(node) === currentSeq(), `${node} programmed after the next change`);
    expect(currentSeq()).toBeGreaterThan(programmedAt);
    expect(edsOf(node)?.namesChange).toBeUndefined();
  });

  test('SotW: a names change is always answered, so a name the cache lacks never left a hold behind', async () => {
    const node = 'sotw-absent';
    const stream = new StreamReader(openAdsSotw(ads));
    readers.push(stream as StreamReader<unknown, unknown>);
    const request = (names: string[], answered?: DiscoveryResponse): DiscoveryRequest => ({
      type_url: EDS_TYPE_URL,
      resource_names: names,
      version_info: answered?.version_info ?? '',
      response_nonce: answered?.nonce ?? '',
    });
    stream.send({ node: { id: node, cluster: GROUP }, ...request(['a']) });
    const first = await stream.next();
    stream.send(request(['a'], first));
    await eventually(() => throughOf(node) !== undefined && throughOf(node) === currentSeq(), `${node} programmed`);

    // Envoy's names change repeats its last ACK (already answered) with the new names.
    const before = afterRequests.length;
    stream.send(request(['a', 'never-there'], first));
    const { seen } = await eventually(() => afterRequests.slice(before).find((r) => r.nodeId === node), `${node}'s names change handled`);
    expect(seen.eds?.namesChange).toMatchObject({ sent: false });
    expect(responsesTo(node) - seen.responses).toBe(1);
    const answer = await stream.next();
    expect(answer.resources).toHaveLength(1);
    stream.send(request(['a', 'never-there'], answer));
    await eventually(() => edsOf(node)?.namesChange === undefined && throughOf(node) === currentSeq(), `${node}'s hold ended`);
  });
});
