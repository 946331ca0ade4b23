// A cancelled downstream stream always reaches the tracker, so a vanished Envoy is DISCONNECTED and
// no longer heartbeated (its TTL can run). This was the first suspect of the truth checker's recovery
// failure after a gateway SIGKILL (docs/RELIABILITY.md, "Findings"): an Envoy cancelled while the
// gateway could not answer it yet (upstream not connected, relay paused by backpressure, or the
// cancel racing the stream's first request) kept heartbeating forever. The real cause was elsewhere
// (decision freshness, test/integration/functions/vanish-after-gateway-restart.test.ts); these pin
// the gateway half: every such cancel is seen, with the real grpc-js server and client.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, createDiscoveryClient, openAdsSotw, RESOURCE_TYPE_URLS, type DiscoveryRequest, type SotwStream } from '../../../common/xds';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { Relay, RelayObserver } from '../../../xds-gateway/relay';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { eventually, RecordingObserver, startTestRelay, testLogger } from '../gateway-relay/helpers';

const clock = { now: (): number => Date.now() };
// Nothing listens there: the relay's upstream never connects, so no response ever goes out.
const UNREACHABLE_UPSTREAM = '127.0.0.1:1';
const HEARTBEAT_MS = 30_000;
/** An Envoy that stays connected throughout: heartbeats must refresh it. */
const CONTROL = 'envoy-control';

/** Every relay callback to the recording observer and to the real tracker, in order. */
function both(a: RelayObserver, b: RelayObserver): RelayObserver {
  return {
    streamOpened: (e) => (a.streamOpened(e), b.streamOpened(e)),
    requestClassified: (e) => (a.requestClassified(e), b.requestClassified(e)),
    responseSent: (e) => (a.responseSent(e), b.responseSent(e)),
    streamClosed: (e) => (a.streamClosed(e), b.streamClosed(e)),
    upstreamApplied: (e) => (a.upstreamApplied(e), b.upstreamApplied(e)),
    upstreamState: (e) => (a.upstreamState(e), b.upstreamState(e)),
  };
}

describe('a cancelled downstream stream is seen by the tracker', () => {
  let relay: Relay;
  let recording: RecordingObserver;
  let tracker: EnvoyTracker;
  let recorder: Recorder;
  let client: grpc.Client;
  let control: SotwStream;
  let tick = 0;

  beforeAll(async () => {
    recording = new RecordingObserver();
    recorder = new Recorder({ store: new InMemoryEventStore(), logger: testLogger, clock, flushIntervalMs: 5 });
    // Heartbeat timers slower than the test: it calls heartbeatEnvoys itself, with a clock of its choosing.
    tracker = new EnvoyTracker({ recorder, logger: testLogger, clock, envoyHeartbeatMs: HEARTBEAT_MS, lineageHeartbeatMs: HEARTBEAT_MS, forgetDisconnectedMs: 24 * 3600_000 });
    relay = await startTestRelay(UNREACHABLE_UPSTREAM, both(recording, tracker));
    client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
    control = open(CONTROL);
    await eventually(() => recording.requests(CONTROL).length === 4, 'the control Envoy connected');
  });

  afterAll(async () => {
    control.cancel();
    client.close();
    tracker.stop();
    await relay.control.close();
    await recorder.close(1000);
  });

  function open(nodeId: string): SotwStream {
    const call = openAdsSotw(client);
    // The client sees CANCELLED after its own cancel: expected, not a failure.
    call.on('error', () => undefined);
    for (const typeUrl of RESOURCE_TYPE_URLS.slice(0, 4)) {
      const request: DiscoveryRequest = { node: { id: nodeId, cluster: 'vanish' }, type_url: typeUrl, resource_names: [], version_info: '', response_nonce: '' };
      call.write(request);
    }
    return call;
  }

  function streamsOf(nodeId: string): { opened: number; closed: number } {
    return {
      opened: recording.of('streamOpened').filter((e) => e.node.nodeId === nodeId).length,
      closed: recording.of('streamClosed').filter((e) => e.nodeId === nodeId).length,
    };
  }

  /**
   * DISCONNECTED, and a heartbeat tick a minute later (past the heartbeat period, before the tracker
   * forgets disconnected Envoys) leaves lastSeenAt alone, so the TTL runs; the same tick does refresh
   * a connected Envoy (the control).
   */
  function expectGoneForGood(nodeId: string): void {
    const state = tracker.envoyState(nodeId);
    expect(state?.status).toBe('DISCONNECTED');
    const lastSeenAt = state?.lastSeenAt;
    // Each tick two heartbeat periods after the previous one (the control's lastSeenAt follows them).
    tick = Math.max(tick, Date.now()) + HEARTBEAT_MS * 2;
    tracker.heartbeatEnvoys(tick);
    expect(tracker.envoyState(nodeId)?.lastSeenAt).toBe(lastSeenAt);
    expect(tracker.envoyState(CONTROL)?.lastSeenAt).toBe(tick);
  }

  it('while the upstream is not connected (no response was ever sent)', async () => {
    const call = open('envoy-no-upstream');
    await eventually(() => recording.requests('envoy-no-upstream').length === 4, 'the four initial requests classified');
    expect(tracker.envoyState('envoy-no-upstream')?.status).toBe('CONNECTED');
    expect(recording.responses('envoy-no-upstream')).toHaveLength(0);
    call.cancel();
    await eventually(() => streamsOf('envoy-no-upstream').closed === 1, 'the stream closed');
    expectGoneForGood('envoy-no-upstream');
  });

  it('while the relay is paused by backpressure (no reads)', async () => {
    const call = open('envoy-paused');
    await eventually(() => recording.requests('envoy-paused').length === 4, 'the four initial requests classified');
    relay.control.setPaused(true);
    try {
      call.cancel();
      await eventually(() => streamsOf('envoy-paused').closed === 1, 'the stream closed although paused');
      expectGoneForGood('envoy-paused');
    } finally {
      relay.control.setPaused(false);
    }
  });

  // Cancelled 1–5 event-loop turns after the first writes. Not 0: a grpc-js (1.14) client call
  // cancelled in the same turn as its first write() on a ready channel can still send its HEADERS and
  // DATA but never the RST_STREAM (seen here: the server's HTTP/2 stream stays open, rstCode 0). To the
  // gateway that is an open, silent stream, rightly CONNECTED; real Envoys reset their streams.
  it('when the cancel races the stream setup (cancelled 1–5 event-loop turns after opening)', async () => {
    const nodeIds = Array.from({ length: 20 }, (_, index) => `envoy-race-${index}`);
    for (const [index, nodeId] of nodeIds.entries()) {
      const call = open(nodeId);
      for (let turn = 0; turn < 1 + (index % 5); turn++) await new Promise((resolve) => setImmediate(resolve));
      call.cancel();
    }
    // Every stream the relay saw open was closed again; it holds only the control Envoy's.
    await eventually(() => relay.openStreams() === 1 && nodeIds.every((id) => streamsOf(id).opened === streamsOf(id).closed), 'every opened stream closed', 5000).catch((error: unknown) => {
      throw new Error(`${String(error)}; open ${relay.openStreams()}; ${nodeIds.map((id) => `${id} ${JSON.stringify(streamsOf(id))} ${tracker.envoyState(id)?.status ?? '-'}`).join(', ')}`);
    });
    for (const nodeId of nodeIds) {
      if (streamsOf(nodeId).opened === 0) expect(tracker.envoyState(nodeId)).toBeUndefined(); // never identified: nothing to expire
      else expectGoneForGood(nodeId);
    }
  });
});
