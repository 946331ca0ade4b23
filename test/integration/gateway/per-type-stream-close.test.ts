// A per-type stream closing is not an unsubscription (truth checker seed 4019, docs/RELIABILITY.md
// "Findings"). A per-type SotW Envoy (one stream per type, as with Contour's bootstrap) NACKed a CDS
// update; when it disconnected, its streams closed one after the other, and the tracker marked every
// type whose stream closed first as unsubscribed. An unsubscribed type's NACK does not count and its
// ACK leaves programmedThrough, so for the Envoy's remaining TTL its member counted as programmed on
// LDS/RDS alone and the condition turned True at a generation its CDS had rejected (invariant 1).
// Envoy keeps running what it accepted when a stream ends, so the type must keep counting.
// The real tracker, driven with the relay's events in the order a disconnect produces them.
import { CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, encodeVersion, evaluateFromAggregates, memberFromEnvoyState, recount, emptyShard, type GatewayVersion } from '../../../common/core';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { testLogger } from '../gateway-relay/helpers';

const LINEAGE = 'gw-a.boot1.edge';
const GROUP = 'edge';
const NODE = 'envoy-per-type';
const TYPES = [CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL] as const;
const T0 = 1_700_000_000_000;

describe('tracker: a per-type stream closing keeps its type counting', () => {
  let now = T0;
  const clock = { now: (): number => now };
  let tracker: EnvoyTracker;
  let recorder: Recorder;

  beforeAll(() => {
    recorder = new Recorder({ store: new InMemoryEventStore(), logger: testLogger, clock, flushIntervalMs: 5 });
    // Timers far slower than the test: nothing but the events below changes the state.
    tracker = new EnvoyTracker({ recorder, logger: testLogger, clock, envoyHeartbeatMs: 3_600_000, lineageHeartbeatMs: 3_600_000, stuckCheckIntervalMs: 3_600_000, forgetDisconnectedMs: 3_600_000 });
  });

  afterAll(async () => {
    tracker.stop();
    await recorder.close(1000);
  });

  const streamOf = (typeUrl: string): string => `stream-${typeUrl.split('.').pop() ?? typeUrl}`;
  const version = (seq: number): GatewayVersion => ({ lineage: LINEAGE, seq });

  function upstream(typeUrl: string, seq: number): void {
    tracker.upstreamApplied({ group: GROUP, lineage: LINEAGE, typeUrl, seq, changed: true, upstreamVersion: `u${seq}`, upstreamEpoch: 1, resources: [], at: now });
  }

  function send(typeUrl: string, seq: number): void {
    tracker.responseSent({ streamId: streamOf(typeUrl), nodeId: NODE, typeUrl, version: version(seq), nonce: `n${seq}`, resourceCount: 1, at: now });
  }

  function answer(typeUrl: string, seq: number, nackMessage?: string): void {
    const encoded = encodeVersion(version(seq));
    const classification =
      nackMessage === undefined
        ? { kind: 'ack' as const, nonce: `n${seq}`, version: encoded }
        : { kind: 'nack' as const, nonce: `n${seq}`, version: encoded, message: nackMessage, lastAcceptedVersionInfo: '' };
    tracker.requestClassified({ streamId: streamOf(typeUrl), nodeId: NODE, typeUrl, lineage: LINEAGE, classification, resourceNames: [], at: now });
  }

  test('a NACKed CDS whose stream closed first still blocks; its ACK stays in the member', () => {
    // One stream per type, each subscribes and ACKs the first content (CDS 1, LDS 2, RDS 3).
    TYPES.forEach((typeUrl, index) => {
      const streamId = streamOf(typeUrl);
      tracker.streamOpened({ streamId, node: { nodeId: NODE, cluster: 'c', metadata: {} }, group: GROUP, lineage: LINEAGE, protocol: 'sotw', service: typeUrl, at: now });
      tracker.requestClassified({ streamId, nodeId: NODE, typeUrl, lineage: LINEAGE, classification: { kind: 'initial', versionInfo: '' }, resourceNames: [], at: now });
      upstream(typeUrl, index + 1);
      send(typeUrl, index + 1);
      answer(typeUrl, index + 1);
    });
    // A spec change: CDS at seq 4 (the watermark), which the Envoy rejects.
    now += 100;
    upstream(CDS_TYPE_URL, 4);
    send(CDS_TYPE_URL, 4);
    answer(CDS_TYPE_URL, 4, 'cluster app-1-canary rejected');
    const before = tracker.envoyState(NODE);
    expect(before?.types[CDS_TYPE_URL]).toMatchObject({ subscribed: true, acked: 1, nack: { seq: 4 } });

    // The Envoy disconnects: its CDS stream closes first, LDS and RDS are still open for a moment.
    now += 100;
    tracker.streamClosed({ streamId: streamOf(CDS_TYPE_URL), nodeId: NODE, at: now, reason: 'cancelled' });
    const state = tracker.envoyState(NODE);
    if (state === undefined) throw new Error('the tracker forgot the Envoy');
    expect(state.status).toBe('CONNECTED');
    expect(state.types[CDS_TYPE_URL]).toMatchObject({ subscribed: true, acked: 1, nack: { seq: 4, message: 'cluster app-1-canary rejected' } });
    expect(state.types[CDS_TYPE_URL]?.pending).toBeUndefined();

    // What convergence makes of it: the member still names the NACK and CDS's ACK, and CDS@4 is Rejected.
    const member = memberFromEnvoyState(state);
    expect(member.b?.n?.map((nack) => nack.u)).toEqual([CDS_TYPE_URL]);
    expect(member.a).toMatchObject({ CDS: 1 });
    const members = { [NODE]: member };
    const result = evaluateFromAggregates({
      object: { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-1' },
      generation: 44,
      watermark: { observable: true, lineages: { [LINEAGE]: { seq: 4, types: { [CDS_TYPE_URL]: 4 }, at: now } } },
      aggregates: [{ lineage: LINEAGE, envoysRecorded: 1, shards: [{ ...emptyShard(LINEAGE, 0), members, ...recount(members) }] }],
      now,
      policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 },
    });
    expect(result.state).toBe('Rejected');
    expect(result.blockers.map((blocker) => `${blocker.nodeId}:${blocker.reason}`)).toEqual([`${NODE}:nacked`]);

    // The last streams close: a plain disconnect, CDS still counted as before.
    now += 10;
    tracker.streamClosed({ streamId: streamOf(LDS_TYPE_URL), nodeId: NODE, at: now, reason: 'cancelled' });
    tracker.streamClosed({ streamId: streamOf(RDS_TYPE_URL), nodeId: NODE, at: now, reason: 'cancelled' });
    const disconnected = tracker.envoyState(NODE);
    expect(disconnected?.status).toBe('DISCONNECTED');
    expect(Object.values(disconnected?.types ?? {}).map((type) => type.subscribed)).toEqual([true, true, true]);
    expect(memberFromEnvoyState(disconnected as NonNullable<typeof disconnected>).b?.n?.map((nack) => nack.u)).toEqual([CDS_TYPE_URL]);
  });
});
