// While backpressure pauses the relay, the Envoys' answers wait unread (docs/GATEWAY.md,
// "Backpressure"): the tracker reports no STUCK meanwhile and credits the unread time to their waits,
// in the states it writes then and when reading resumes (EnvoyTracker.readingPaused/readingResumed).
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL, stuckTypesAsStored, type EnvoyEvent, type EnvoyState, type LineageState } from '../../../common/core';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../../../xds-gateway/tracking/recorder';

const LINEAGE = 'gw-0.boot-1.edge';
const ACK_TIMEOUT = 1_000;
const HEARTBEAT = 500;

class CollectingRecorder {
  readonly states: EnvoyState[] = [];
  readonly events: EnvoyEvent[] = [];
  enqueueEnvoyState(state: EnvoyState): void {
    this.states.push(state);
  }
  enqueueEvent(event: EnvoyEvent): void {
    this.events.push(event);
  }
  enqueueLineageState(_state: LineageState): void {}
  forgetEnvoy(): boolean {
    return true;
  }
}

function setup() {
  const clock = { at: 10_000, now(): number { return this.at; } };
  const recorder = new CollectingRecorder();
  const tracker = new EnvoyTracker({
    recorder: recorder as unknown as Recorder,
    logger: pino({ level: 'silent' }),
    clock,
    ackTimeoutMs: ACK_TIMEOUT,
    stuckCheckIntervalMs: 3_600_000,
    lineageHeartbeatMs: 3_600_000,
    envoyHeartbeatMs: HEARTBEAT,
  });
  tracker.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 1, changed: true, upstreamVersion: 'u1', upstreamEpoch: 1, resources: [], at: clock.at });
  tracker.streamOpened({ streamId: 's-1', node: { nodeId: 'e-1', cluster: 'edge', metadata: {}, locality: {} } as never, group: 'edge', lineage: LINEAGE, protocol: 'sotw', service: 'ads', at: clock.at });
  tracker.requestClassified({ streamId: 's-1', nodeId: 'e-1', typeUrl: CDS_TYPE_URL, lineage: LINEAGE, classification: { kind: 'initial', versionInfo: '' }, resourceNames: [], at: clock.at });
  tracker.responseSent({ streamId: 's-1', nodeId: 'e-1', typeUrl: CDS_TYPE_URL, version: { lineage: LINEAGE, seq: 1 }, nonce: '1', resourceCount: 0, at: clock.at });
  return { tracker, recorder, clock, sentAt: clock.at };
}

afterEach(() => jest.useRealTimers());

it('reports no STUCK while answers are unread, and credits the unread time to the wait', () => {
  const { tracker, recorder, clock, sentAt } = setup();
  clock.at += 200;
  tracker.readingPaused();
  // Five ACK timeouts pass unread.
  clock.at += 5 * ACK_TIMEOUT;
  tracker.checkStuck();
  expect(recorder.events.filter((event) => event.outcome === 'STUCK')).toEqual([]);
  // A heartbeat written meanwhile vouches for the Envoy now, with the unread time credited: readers
  // (judging at the stored lastSeenAt) do not find it stuck either.
  tracker.heartbeatEnvoys();
  const heartbeat = recorder.states.at(-1) as EnvoyState;
  expect(heartbeat.lastSeenAt).toBe(clock.at);
  expect(stuckTypesAsStored(heartbeat, clock.at, ACK_TIMEOUT)).toEqual([]);
  // Reading resumes 1 s later: that second is credited too, once.
  clock.at += 1_000;
  tracker.readingResumed();
  const resumed = tracker.envoyState('e-1') as EnvoyState;
  expect(resumed.types[CDS_TYPE_URL]?.pending?.sentAt).toBe(sentAt + 6_000);
  expect(recorder.states.at(-1)).toBe(resumed);
  // The Envoy had 200 ms before the pause; a STUCK comes once it has had the whole timeout.
  clock.at += ACK_TIMEOUT - 200 - 1;
  tracker.checkStuck();
  expect(recorder.events.filter((event) => event.outcome === 'STUCK')).toEqual([]);
  clock.at += 1;
  tracker.checkStuck();
  expect(recorder.events.filter((event) => event.outcome === 'STUCK').map((event) => event.typeUrl)).toEqual([CDS_TYPE_URL]);
});

it('reading that never paused changes nothing', () => {
  const { tracker, recorder, clock } = setup();
  const before = tracker.envoyState('e-1');
  const written = recorder.states.length;
  tracker.readingResumed();
  expect(tracker.envoyState('e-1')).toBe(before);
  expect(recorder.states.length).toBe(written);
  clock.at += ACK_TIMEOUT;
  tracker.checkStuck();
  expect(recorder.events.filter((event) => event.outcome === 'STUCK')).toHaveLength(1);
});

it('credits a wait begun at the moment of the pause, or while paused, all its unread time', () => {
  // The pause comes from inside a tracker callback: the ACK's event fills the recorder's queue, and the
  // same callback then records the state, whose new waits (a names hold a route ACK opened, a response
  // sent at that instant) begin at the pause's own millisecond. (The DynamoDB outage test showed
  // "has not answered EDS for 14s" right after the table came back, while the relay was still paused.)
  const { tracker, recorder, clock } = setup();
  tracker.requestClassified({ streamId: 's-1', nodeId: 'e-1', typeUrl: CDS_TYPE_URL, lineage: LINEAGE, classification: { kind: 'ack', nonce: '1', version: 'xp1:gw-0.boot-1.edge:1' }, resourceNames: [], at: clock.at });
  clock.at += 100;
  tracker.readingPaused();
  tracker.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 2, changed: true, upstreamVersion: 'u2', upstreamEpoch: 1, resources: [], at: clock.at });
  tracker.responseSent({ streamId: 's-1', nodeId: 'e-1', typeUrl: CDS_TYPE_URL, version: { lineage: LINEAGE, seq: 2 }, nonce: '2', resourceCount: 0, at: clock.at });
  const pausedAt = clock.at;
  clock.at += 5 * ACK_TIMEOUT;
  tracker.heartbeatEnvoys();
  const heartbeat = recorder.states.at(-1) as EnvoyState;
  expect(heartbeat.lastSeenAt).toBe(clock.at);
  expect(stuckTypesAsStored(heartbeat, clock.at, ACK_TIMEOUT)).toEqual([]);
  expect(heartbeat.types[CDS_TYPE_URL]?.pending?.sentAt).toBe(clock.at);
  // Resumed later: the Envoy has its whole timeout from then.
  clock.at += 1_000;
  tracker.readingResumed();
  expect((tracker.envoyState('e-1') as EnvoyState).types[CDS_TYPE_URL]?.pending?.sentAt).toBe(clock.at);
  expect(clock.at - pausedAt).toBe(6 * ACK_TIMEOUT);
});

it('credits the unread time in the state a disconnect writes during the pause', () => {
  // The DynamoDB outage test: an Envoy that disconnected while the relay was paused was stored
  // DISCONNECTED, its lastSeenAt at the disconnect and its names hold uncredited, so it read
  // "has not answered EDS for 106s" once the table was back.
  const { tracker, recorder, clock } = setup();
  const edsVersion = 'xp1:gw-0.boot-1.edge:2';
  tracker.upstreamApplied({ group: 'edge', lineage: LINEAGE, typeUrl: EDS_TYPE_URL, seq: 2, changed: true, upstreamVersion: 'u2', upstreamEpoch: 1, resources: [], at: clock.at });
  const eds = (kind: 'initial' | 'ack', names: string[]) =>
    tracker.requestClassified({ streamId: 's-1', nodeId: 'e-1', typeUrl: EDS_TYPE_URL, lineage: LINEAGE, classification: kind === 'initial' ? { kind, versionInfo: '' } : { kind, nonce: 'e1', version: edsVersion }, resourceNames: names, at: clock.at });
  eds('initial', ['a']);
  tracker.responseSent({ streamId: 's-1', nodeId: 'e-1', typeUrl: EDS_TYPE_URL, version: { lineage: LINEAGE, seq: 2 }, nonce: 'e1', resourceCount: 1, at: clock.at });
  eds('ack', ['a']);
  clock.at += 100;
  // Names added (a names hold on EDS), and the relay pauses in the same instant.
  eds('ack', ['a', 'b']);
  tracker.readingPaused();
  expect(tracker.envoyState('e-1')?.types[EDS_TYPE_URL]?.namesChange).toBeDefined();
  clock.at += 5 * ACK_TIMEOUT;
  tracker.streamClosed({ streamId: 's-1', nodeId: 'e-1', reason: 'client closed the stream', at: clock.at });
  const disconnected = recorder.states.at(-1) as EnvoyState;
  expect(disconnected.status).toBe('DISCONNECTED');
  expect(disconnected.lastSeenAt).toBe(clock.at);
  expect(stuckTypesAsStored(disconnected, clock.at, ACK_TIMEOUT)).toEqual([]);
});
