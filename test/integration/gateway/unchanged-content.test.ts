// A SotW stream is sent nothing when the type's content moves but the resources its subscription
// names are the very ones it ACKed last (xds-gateway/relay/sotw-downstream.ts); the relay reports
// `contentUnchanged` instead and the tracker credits the Envoy at the new seq as an ACK would
// (core applyUnchangedContent). Never after a NACK, never for a subscription that gained a name.
//
// The real relay and tracker, a raw SotW client on a real gRPC stream, and upstream the fake xDS
// server, whose EDS content the test sets.
import * as grpc from '@grpc/grpc-js';
import { EDS_TYPE_URL, type TypeState } from '../../../common/core';
import { ADS_SERVICE, createDiscoveryClient, openAdsSotw, type DiscoveryRequest, type DiscoveryResponse } from '../../../common/xds';
import { grpcClusterLoadAssignment } from '../../../infra/local/envoys/grpcXdsResources';
import type { ContentUnchangedEvent, Relay, RelayObserver, RequestClassifiedEvent, ResponseSentEvent, StreamClosedEvent, StreamOpenedEvent, UpstreamAppliedEvent, UpstreamStateEvent } from '../../../xds-gateway/relay';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { FakeXdsServer, type FakeResource } from '../envoys/fakeXdsServer';
import { eventually, RecordingObserver, startTestRelay, testLogger } from '../gateway-relay/helpers';
import { StreamReader } from '../gateway-relay/stream-reader';

const GROUP = 'unchanged-content';

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
  contentUnchanged(e: ContentUnchangedEvent): void {
    for (const o of this.observers) o.contentUnchanged(e);
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

const endpointsOf = (name: string, host: string): FakeResource => ({ name, version: host, any: grpcClusterLoadAssignment(name, [{ host, port: 8080 }]) });

describe('a SotW stream whose resources did not change is sent nothing, and is tracked at the new seq', () => {
  let upstream: FakeXdsServer;
  let tracker: EnvoyTracker;
  let recorder: Recorder;
  let recorded: RecordingObserver;
  let relay: Relay;
  let ads: grpc.Client;
  const readers: Array<StreamReader<DiscoveryRequest, DiscoveryResponse>> = [];
  let upstreamVersion = 0;
  const served = new Map<string, FakeResource>();

  /** The upstream serves these endpoint assignments too, or in their new versions; nothing is removed. */
  const serveEndpoints = (...resources: FakeResource[]): void => {
    for (const resource of resources) served.set(resource.name, resource);
    upstream.setResources(EDS_TYPE_URL, `v${++upstreamVersion}`, [...served.values()]);
  };

  beforeAll(async () => {
    upstream = new FakeXdsServer();
    const target = await upstream.start();
    serveEndpoints(endpointsOf('a', '10.0.0.1'), endpointsOf('b', '10.0.0.2'), endpointsOf('c', '10.0.0.3'));
    recorder = new Recorder({ store: new InMemoryEventStore(), logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 5 });
    tracker = new EnvoyTracker({ recorder, logger: testLogger, clock: { now: () => Date.now() }, stuckCheckIntervalMs: 3_600_000, lineageHeartbeatMs: 3_600_000, envoyHeartbeatMs: 3_600_000 });
    recorded = new RecordingObserver();
    relay = await startTestRelay(target, new Tee([tracker, recorded]));
    ads = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    ads.close();
    await relay.control.close();
    tracker.stop();
    await recorder.close(1000);
    await upstream.stop();
  });

  afterEach(() => {
    for (const reader of readers.splice(0)) reader.close();
  });

  const edsOf = (nodeId: string): TypeState | undefined => tracker.envoyState(nodeId)?.types[EDS_TYPE_URL];
  const throughOf = (nodeId: string): number | undefined => tracker.envoyState(nodeId)?.programmedThrough;
  const currentSeq = (): number | undefined => tracker.snapshot().lineages.find((l) => l.group === GROUP)?.currentSeq;
  const responsesTo = (nodeId: string): number => recorded.responses(nodeId, EDS_TYPE_URL).length;
  const unchangedFor = (nodeId: string): ContentUnchangedEvent[] => recorded.of('contentUnchanged').filter((e) => e.nodeId === nodeId && e.typeUrl === EDS_TYPE_URL);
  const namesOf = (response: DiscoveryResponse): string[] => (response.resources ?? []).map((resource) => grpcNameOf(resource.value)).sort();

  const request = (names: string[], answered?: DiscoveryResponse, errorDetail?: string): DiscoveryRequest => ({
    type_url: EDS_TYPE_URL,
    resource_names: names,
    version_info: answered?.version_info ?? '',
    response_nonce: answered?.nonce ?? '',
    ...(errorDetail === undefined ? {} : { error_detail: { code: 3, message: errorDetail } }),
  });

  /** A SotW EDS subscriber of `names` that ACKed its first response and is programmed. */
  async function subscriber(node: string, names: string[]): Promise<{ stream: StreamReader<DiscoveryRequest, DiscoveryResponse>; first: DiscoveryResponse }> {
    const stream = new StreamReader(openAdsSotw(ads));
    readers.push(stream);
    stream.send({ node: { id: node, cluster: GROUP }, ...request(names) });
    const first = await stream.next();
    expect(namesOf(first)).toEqual([...names].sort());
    stream.send(request(names, first));
    await eventually(() => throughOf(node) !== undefined && throughOf(node) === currentSeq(), `${node} programmed`);
    return { stream, first };
  }

  test('a change elsewhere sends nothing; the tracker holds the Envoy at the new seq; a change of its own is sent', async () => {
    const node = 'sotw-elsewhere';
    const { stream, first } = await subscriber(node, ['a']);
    const responses = responsesTo(node);
    const seqBefore = currentSeq() ?? -1;

    serveEndpoints(endpointsOf('b', '10.0.1.2'));
    await eventually(() => (currentSeq() ?? -1) > seqBefore, 'the relay took the change');
    const seq = currentSeq();
    await eventually(() => edsOf(node)?.acked === seq, `${node} credited at the change's seq`);
    expect(throughOf(node)).toBe(seq);
    expect(unchangedFor(node).map((e) => e.version.seq)).toEqual([seq]);
    expect(responsesTo(node)).toBe(responses);
    expect(await stream.silentFor(200)).toBe(true);

    // Its own resource changes: sent, ACKed at the new version.
    serveEndpoints(endpointsOf('a', '10.0.1.1'));
    const changed = await stream.next();
    expect(namesOf(changed)).toEqual(['a']);
    expect(changed.version_info).not.toBe(first.version_info);
    stream.send(request(['a'], changed));
    await eventually(() => throughOf(node) === currentSeq() && (currentSeq() ?? -1) > (seq ?? -1), `${node} programmed at its change`);
    expect(edsOf(node)?.pending).toBeUndefined();
  });

  test('a subscription that only dropped names is sent nothing; one that gained a name is answered', async () => {
    const node = 'sotw-dropped';
    const { stream, first } = await subscriber(node, ['a', 'b']);
    const responses = responsesTo(node);
    // Envoy drops a cluster: its request repeats the last ACK with fewer names.
    stream.send(request(['a'], first));
    expect(await stream.silentFor(200)).toBe(true);
    expect(responsesTo(node)).toBe(responses);
    expect(throughOf(node)).toBe(currentSeq());

    // Then a change to the dropped name is nothing to it either.
    const seqBefore = currentSeq() ?? -1;
    serveEndpoints(endpointsOf('b', '10.0.2.2'));
    await eventually(() => edsOf(node)?.acked === currentSeq() && (currentSeq() ?? -1) > seqBefore, `${node} credited at the change's seq`);
    expect(responsesTo(node)).toBe(responses);

    // A name gained is always answered (the names hold waits for it).
    stream.send(request(['a', 'c'], first));
    const answer = await stream.next();
    expect(namesOf(answer)).toEqual(['a', 'c']);
    stream.send(request(['a', 'c'], answer));
    await eventually(() => edsOf(node)?.namesChange === undefined && throughOf(node) === currentSeq(), `${node} programmed with the name it gained`);
  });

  test('after a NACK nothing is credited: the tracker keeps the NACK and the Envoy behind', async () => {
    const node = 'sotw-nacked';
    const { stream } = await subscriber(node, ['c']);
    serveEndpoints(endpointsOf('c', '10.0.3.3'));
    const rejected = await stream.next();
    stream.send(request(['c'], rejected, 'endpoints rejected'));
    await eventually(() => edsOf(node)?.nack !== undefined, `${node}'s NACK tracked`);
    const unchanged = unchangedFor(node).length;

    // A change elsewhere: the client does not hold what it rejected, so it is not credited.
    const seqBefore = currentSeq() ?? -1;
    serveEndpoints(endpointsOf('b', '10.0.3.2'));
    await eventually(() => (currentSeq() ?? -1) > seqBefore, 'the relay took the change');
    // The relay answers synchronously when the cache changes; the rejected content goes out again at
    // the new version (the cache moved), unanswered here.
    const resent = await stream.next();
    expect(namesOf(resent)).toEqual(['c']);
    expect(unchangedFor(node)).toHaveLength(unchanged);
    expect(edsOf(node)?.nack).toBeDefined();
    expect(throughOf(node) ?? -1).toBeLessThan(currentSeq() ?? -1);
  });
});

/** The cluster_name of a ClusterLoadAssignment's bytes (field 1). */
function grpcNameOf(value: Buffer | Uint8Array | undefined): string {
  if (value === undefined || value.length < 2 || value[0] !== 0x0a) return '?';
  const length = value[1] as number;
  return Buffer.from(value.subarray(2, 2 + length)).toString('utf8');
}
