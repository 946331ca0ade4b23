// Readers judge "stuck" at the stored state's lastSeenAt, not at their own clock (core
// `stuckTypesAsStored`, docs/CONVERGENCE.md "Expiry and stuck Envoys"): a stored state lags the
// gateway by the pipeline, and judging at the reader's `now` turned that lag into false Stuck writes.
// So the gateway itself must vouch for a really stuck Envoy: when it reports the STUCK event it also
// refreshes lastSeenAt, so the stored state proves the wait. The idle-Envoy heartbeat (60 s by default)
// is set far beyond the test here, so only the stuck check can move lastSeenAt.
import { CDS_TYPE_URL, encodeVersion, stuckTypesAsStored, type GatewayVersion } from '../../../common/core';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { InMemoryEventStore } from '../../unit/core/in-memory-store';
import { testLogger } from '../gateway-relay/helpers';

const LINEAGE = 'gw-a.boot1.edge';
const GROUP = 'edge';
const NODE = 'envoy-hangs';
const T0 = 1_700_000_000_000;
const ACK_TIMEOUT_MS = 10_000;

describe('tracker: a stuck Envoy is vouched for when reported', () => {
  let now = T0;
  const clock = { now: (): number => now };
  let tracker: EnvoyTracker;
  let recorder: Recorder;

  beforeAll(() => {
    recorder = new Recorder({ store: new InMemoryEventStore(), logger: testLogger, clock, flushIntervalMs: 5 });
    tracker = new EnvoyTracker({
      recorder, logger: testLogger, clock, ackTimeoutMs: ACK_TIMEOUT_MS,
      envoyHeartbeatMs: 3_600_000, lineageHeartbeatMs: 3_600_000, stuckCheckIntervalMs: 3_600_000, forgetDisconnectedMs: 3_600_000,
    });
  });

  afterAll(async () => {
    tracker.stop();
    await recorder.close(1000);
  });

  const version = (seq: number): GatewayVersion => ({ lineage: LINEAGE, seq });

  test('lastSeenAt moves to the moment the STUCK is reported, and not before the timeout', () => {
    const streamId = 'stream-1';
    tracker.streamOpened({ streamId, node: { nodeId: NODE, cluster: 'c', metadata: {} }, group: GROUP, lineage: LINEAGE, protocol: 'sotw', service: 'ads', at: now });
    tracker.requestClassified({ streamId, nodeId: NODE, typeUrl: CDS_TYPE_URL, lineage: LINEAGE, classification: { kind: 'initial', versionInfo: '' }, resourceNames: [], at: now });
    tracker.upstreamApplied({ group: GROUP, lineage: LINEAGE, typeUrl: CDS_TYPE_URL, seq: 1, changed: true, upstreamVersion: 'u1', upstreamEpoch: 1, resources: [], at: now });
    tracker.responseSent({ streamId, nodeId: NODE, typeUrl: CDS_TYPE_URL, version: version(1), nonce: 'n1', resourceCount: 1, at: now });
    const sentAt = now;

    // Before the timeout: nothing to report, the state is left alone.
    now = sentAt + ACK_TIMEOUT_MS - 1;
    tracker.checkStuck(now);
    const early = tracker.envoyState(NODE);
    if (early === undefined) throw new Error('the tracker forgot the Envoy');
    expect(early.lastSeenAt).toBe(sentAt);
    expect(stuckTypesAsStored(early, now + 60_000, ACK_TIMEOUT_MS)).toEqual([]);

    // Past the timeout, the Envoy never answered: STUCK reported and the state vouched for now.
    now = sentAt + ACK_TIMEOUT_MS + 500;
    tracker.checkStuck(now);
    const reported = tracker.envoyState(NODE);
    if (reported === undefined) throw new Error('the tracker forgot the Envoy');
    expect(reported.lastSeenAt).toBe(now);
    expect(reported.types[CDS_TYPE_URL]?.pending?.seq).toBe(1);
    // A reader far behind (its clock well past) sees the proof in the state itself.
    expect(stuckTypesAsStored(reported, now + 60_000, ACK_TIMEOUT_MS)).toEqual([CDS_TYPE_URL]);

    // The ACK arrives late: no longer stuck, whatever the reader's clock.
    now += 100;
    tracker.requestClassified({ streamId, nodeId: NODE, typeUrl: CDS_TYPE_URL, lineage: LINEAGE, classification: { kind: 'ack', nonce: 'n1', version: encodeVersion(version(1)) }, resourceNames: [], at: now });
    const answered = tracker.envoyState(NODE);
    if (answered === undefined) throw new Error('the tracker forgot the Envoy');
    expect(stuckTypesAsStored(answered, now + 60_000, ACK_TIMEOUT_MS)).toEqual([]);
  });
});
