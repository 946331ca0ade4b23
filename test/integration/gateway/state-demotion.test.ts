// --state-writes class-changes with --event-log-mode chunks on the real gateway (dynalite, the
// reference control plane, simulated ADS Envoys): change waves move every Envoy's progress without a
// STATE write (PROGRESS carries it) and without an event-log item per Envoy, while every ACK still
// lands in the version log, found again from the Envoy's node id; a NACK, its clearing and a
// disconnect are written at once, and the disconnect's state carries the progress the demoted states
// had.
import { RDS_TYPE_URL } from '../../../common/core';
import { recentVersionLogAnswers } from '../../../functions/query/version-log-answers';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { LocalDynamo } from '../../../infra/local/dynamo';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import type { Fleet } from '../../../infra/local/envoys';
import { ALL_TYPES, adsSpec, envoyEvents, envoyState, eventually, lastOf, newFleet, proxy, startDynamoAndControlPlane, startTestGateway } from './helpers';

let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let gateway: Gateway;
let fleet: Fleet;
const ENVOYS = 4;

beforeAll(async () => {
  ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
  gateway = await startTestGateway({
    upstream: `127.0.0.1:${controlPlane.port}`,
    table: 'gw-state-demotion',
    'dynamodb-endpoint': dynamo.endpoint,
    'ack-timeout-ms': '1500',
    'lineage-heartbeat-ms': '300',
    // No idle refresh inside the test: only class changes may write a state.
    'envoy-heartbeat-ms': '3600000',
    'state-refresh-ms': '3600000',
    watermarks: 'provenance',
    progress: 'true',
    'state-writes': 'class-changes',
    'event-log-mode': 'chunks',
  });
  fleet = newFleet(gateway.xdsPort);
});

afterAll(async () => {
  fleet.close();
  await gateway.close();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

function currentLineage(): { lineage: string; currentSeq: number; typeHistory: Record<string, number[]> } {
  const lineage = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge');
  if (lineage === undefined) throw new Error('no lineage for group edge');
  return lineage;
}

async function everyEnvoyAcksCurrent(ids: readonly string[]): Promise<void> {
  await eventually(() => {
    const mirror = currentLineage();
    return ids.every((id) => {
      const envoy = fleet.envoys().find((e) => e.id === id);
      return envoy !== undefined && ALL_TYPES.every((t) => envoy.acceptedVersion(t) === `xp1:${mirror.lineage}:${lastOf(mirror.typeHistory[t])}`);
    });
  }, 'every Envoy ACKs the current version of every type');
}

async function storedRev(nodeId: string): Promise<number> {
  const state = await envoyState(gateway.store, nodeId);
  if (state === undefined) throw new Error(`no state for ${nodeId}`);
  return state.rev;
}

test('change waves: no STATE write, every ACK in the version log, PROGRESS written; a NACK and a disconnect written at once', async () => {
  const ids = fleet.addMany(ENVOYS, adsSpec({ node: (i) => ({ id: `demoted-${i}`, cluster: 'edge' }) }), 0).map((e) => e.id);
  fleet.connectAll();
  await everyEnvoyAcksCurrent(ids);
  // The first state of each Envoy is written (stream admission waits for it).
  for (const id of ids) await eventually(async () => (await envoyState(gateway.store, id))?.status === 'CONNECTED', `${id} stored`);
  await gateway.recorder.whenIdle();
  const revs = new Map<string, number>();
  for (const id of ids) revs.set(id, await storedRev(id));
  const demotedBefore = gateway.stateDemotion?.stats().demoted ?? 0;
  // Each Envoy's version-log membership is written when it joins, not with a change wave's answers.
  expect(gateway.recorder.stats().versionLog?.membersWritten).toBe(ENVOYS);
  const progressV = () => gateway.progress?.published(currentLineage().lineage)?.v ?? 0;
  const vBefore = progressV();

  // Three change waves, each reaching every Envoy on every type it changes.
  const seqBefore = currentLineage().currentSeq;
  for (let wave = 1; wave <= 3; wave++) {
    const before = currentLineage().currentSeq;
    source.applyProxy(proxy(`wave-${wave}`, `wave-${wave}.example.com`, 'app'));
    await controlPlane.rebuildNow();
    // The rebuild reaches the gateway asynchronously: until it does, "every Envoy ACKs the current
    // version" holds of the version before the wave.
    await eventually(() => currentLineage().currentSeq > before, `wave ${wave} reaches the gateway`);
    await everyEnvoyAcksCurrent(ids);
  }
  const mirror = currentLineage();
  const wavesSeqs = new Set(Array.from({ length: mirror.currentSeq - seqBefore }, (_, i) => seqBefore + 1 + i));
  await eventually(() => {
    const item = gateway.progress?.published(mirror.lineage);
    return item !== undefined && item.members === ENVOYS && item.v > vBefore;
  }, 'PROGRESS written after the waves');
  await gateway.recorder.whenIdle();

  for (const id of ids) {
    // Not one STATE write in three waves…
    expect(await storedRev(id)).toBe(revs.get(id));
    // …and every ACK of the three waves is in the version log, found from the Envoy's node id, at the
    // versions the Envoy itself holds (acceptedVersions: the fleet's record, not the gateway's)…
    // (a type the waves did not change was ACKed before them, carried by the Envoy's first STATE).
    const chunkedAnswers = await recentVersionLogAnswers(gateway.versionLog, id, ALL_TYPES, 100);
    const own = await envoyEvents(gateway.store, id);
    const envoy = fleet.envoys().find((e) => e.id === id);
    for (const typeUrl of ALL_TYPES) {
      const held = envoy?.acceptedVersion(typeUrl);
      const heldSeq = Number(held?.split(':')[2]);
      const found = [...(wavesSeqs.has(heldSeq) ? chunkedAnswers : own)].some((e) => e.outcome === 'ACK' && e.typeUrl === typeUrl && `xp1:${e.lineage}:${e.seq}` === held);
      expect({ typeUrl, held, found }).toEqual({ typeUrl, held, found: true });
    }
    // …and no ACK of the waves in an event-log item of its own.
    expect(own.filter((e) => e.outcome === 'ACK' && wavesSeqs.has(e.seq))).toEqual([]);
  }
  const chunked = gateway.recorder.stats().versionLog;
  expect(chunked?.answersWritten).toBeGreaterThanOrEqual(3 * ENVOYS);
  expect(chunked?.membersWritten).toBe(ENVOYS);
  // A chunk holds every Envoy's answer to one type and seq: far fewer chunks than answers.
  expect(chunked?.chunksWritten).toBeLessThan(chunked?.answersWritten ?? 0);
  expect((gateway.stateDemotion?.stats().demoted ?? 0) - demotedBefore).toBeGreaterThanOrEqual(3 * ENVOYS);
  expect(progressV()).toBeGreaterThan(vBefore);
  // The same counts on /metrics.
  const scraped = await gateway.metrics.registry.metrics();
  const demoted = /xds_programmed_gateway_envoy_states_offered_total\{outcome="demoted"\} (\d+)/.exec(scraped);
  expect(Number(demoted?.[1])).toBe(gateway.stateDemotion?.stats().demoted);

  // A NACK is a class change: written at once, with its message.
  const [nacker] = fleet.addMany(1, adsSpec({
    node: () => ({ id: 'demoted-nacker', cluster: 'edge' }),
    behaviour: { ackDelayMs: 0, hang: false, nackRules: [{ typeUrl: RDS_TYPE_URL, resourceName: /ingress_http/, message: 'duplicate domain *.force-nack.*' }] },
  }), 0);
  if (nacker === undefined) throw new Error('no nacker');
  nacker.connect();
  await eventually(async () => {
    const state = await envoyState(gateway.store, nacker.id);
    return state?.types[RDS_TYPE_URL]?.nack === undefined ? undefined : state;
  }, 'the NACK stored');
  const nacked = await envoyState(gateway.store, nacker.id);
  expect(nacked?.types[RDS_TYPE_URL]?.nack?.message).toContain('force-nack');
  nacker.disconnect();

  // A disconnect is written at once and carries the progress the demoted states held.
  const leaving = fleet.envoys().find((e) => e.id === ids[0]);
  if (leaving === undefined) throw new Error('no Envoy to disconnect');
  leaving.disconnect();
  const gone = await eventually(async () => {
    const state = await envoyState(gateway.store, leaving.id);
    return state?.status === 'DISCONNECTED' ? state : undefined;
  }, `${leaving.id} DISCONNECTED stored`);
  const atDisconnect = currentLineage();
  expect(gone.programmedThrough).toBe(atDisconnect.currentSeq);
  for (const typeUrl of ALL_TYPES) expect(gone.types[typeUrl]?.acked).toBe(lastOf(atDisconnect.typeHistory[typeUrl]));
  expect(gone.rev).toBeGreaterThan(revs.get(leaving.id) ?? Number.MAX_SAFE_INTEGER);
}, 90_000);
