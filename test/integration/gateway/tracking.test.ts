// ACK/NACK/stuck tracking end to end: simulated Envoys → gateway (relay + tracker + recorder) →
// local DynamoDB, upstream the reference control plane. Asserts what lands in the table.
import { newEnvoyState, RDS_TYPE_URL, stuckTypesAsStored, type EnvoyEvent, type EnvoyState, type EventStore, type LineageState } from '../../../common/core';
import { openTable, type DynamoEventStore, type TableAccess } from '../../../common/store';
import { lineageStateFor } from '../../../xds-gateway/tracking/lineage-mirror';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import {
  ALL_TYPES,
  adsSpec,
  envoyEvents,
  envoyState,
  eventually,
  httpGet,
  lastOf,
  lineageState,
  newFleet,
  startDynamoAndControlPlane,
  startTestGateway,
  testLogger,
} from './helpers';

let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let gateway: Gateway;
const fleets: Fleet[] = [];

beforeAll(async () => {
  ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
  gateway = await startTestGateway({
    upstream: `127.0.0.1:${controlPlane.port}`,
    table: 'gw-tracking',
    'dynamodb-endpoint': dynamo.endpoint,
    'ack-timeout-ms': '1500',
    'dynamodb-max-attempts': '2',
    'lineage-heartbeat-ms': '300',
    'envoy-heartbeat-ms': '1000',
    watermarks: 'provenance',
  });
});

afterAll(async () => {
  for (const fleet of fleets) fleet.close();
  await gateway.close();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

function fleet(): Fleet {
  const created = newFleet(gateway.xdsPort);
  fleets.push(created);
  return created;
}

test('ACKs land in DynamoDB with the gateway versions and programmedThrough', async () => {
  const envoys = fleet();
  envoys.addMany(3, adsSpec({ node: (i) => ({ id: `ack-${i}`, cluster: 'edge' }) }), 0);
  envoys.connectAll();
  await envoys.waitFor(() => envoys.envoys().every((e) => ALL_TYPES.every((t) => e.acceptedVersion(t) !== undefined)), { timeoutMs: 30_000 }, () => 'all Envoys ACK every type');

  const lineage = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge');
  expect(lineage).toBeDefined();
  const mirror = lineage!;
  for (const envoy of envoys.envoys()) {
    const stored = await eventually(async () => {
      const state = await envoyState(gateway.store, envoy.id);
      return state !== undefined && ALL_TYPES.every((t) => state.types[t]?.acked === lastOf(mirror.typeHistory[t])) ? state : undefined;
    }, `state of ${envoy.id} with every type acked at the current version`);
    expect(stored.lineage).toBe(mirror.lineage);
    expect(stored.status).toBe('CONNECTED');
    expect(stored.programmedThrough).toBe(mirror.currentSeq);
    // The version the Envoy runs is exactly the gateway version the state records.
    for (const typeUrl of ALL_TYPES) expect(envoy.acceptedVersion(typeUrl)).toBe(`xp1:${mirror.lineage}:${stored.types[typeUrl]!.acked}`);
    const events = await envoyEvents(gateway.store, envoy.id);
    const acks = events.filter((e) => e.outcome === 'ACK');
    for (const typeUrl of ALL_TYPES) expect(acks.some((e) => e.typeUrl === typeUrl && e.seq === stored.types[typeUrl]!.acked && e.lineage === mirror.lineage)).toBe(true);
  }
  // The LINEAGE item carries the same history the states were computed from.
  const storedLineage = await eventually(async () => {
    const state = await lineageState(gateway.store, mirror.lineage);
    return state !== undefined && state.currentSeq === mirror.currentSeq ? state : undefined;
  }, 'lineage item up to date');
  expect(storedLineage.typeHistory).toEqual(mirror.typeHistory);
});

test.each([
  ['per-type SotW streams (Contour bootstrap)', 'per-type', 'sotw'],
  ['ADS Delta', 'ads', 'delta'],
  ['per-type Delta', 'per-type', 'delta'],
] as const)('%s: every type ACKed and recorded; a disconnect keeps ACKs and clears pending', async (_name, transport, protocol) => {
  const envoys = fleet();
  const prefix = `${transport}-${protocol}`;
  envoys.addMany(2, adsSpec({ transport, protocol, node: (i) => ({ id: `${prefix}-${i}`, cluster: 'edge' }) }), 0);
  envoys.connectAll();
  await envoys.waitFor(() => envoys.envoys().every((e) => ALL_TYPES.every((t) => e.acceptedVersion(t) !== undefined)), { timeoutMs: 30_000 }, () => `${prefix} Envoys ACK every type`);
  const mirror = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge')!;
  for (const envoy of envoys.envoys()) {
    const stored = await eventually(async () => {
      const state = await envoyState(gateway.store, envoy.id);
      return state !== undefined && ALL_TYPES.every((t) => state.types[t]?.acked === lastOf(mirror.typeHistory[t])) ? state : undefined;
    }, `${envoy.id} acked every type at the current version`);
    expect(stored.programmedThrough).toBe(mirror.currentSeq);
    const events = await envoyEvents(gateway.store, envoy.id);
    for (const typeUrl of ALL_TYPES) expect(events.some((e) => e.outcome === 'ACK' && e.typeUrl === typeUrl)).toBe(true);
  }
  // Disconnect: every stream closes; the stored state says DISCONNECTED, ACKs kept (Envoy keeps serving).
  const leaving = envoys.envoys()[0]!;
  leaving.disconnect();
  const gone = await eventually(async () => {
    const state = await envoyState(gateway.store, leaving.id);
    return state?.status === 'DISCONNECTED' ? state : undefined;
  }, `${leaving.id} disconnected`);
  for (const typeUrl of ALL_TYPES) {
    expect(gone.types[typeUrl]?.acked).toBeDefined();
    expect(gone.types[typeUrl]?.pending).toBeUndefined();
  }
});

test('a NACK carries the Envoy message and is never counted as an ACK', async () => {
  const envoys = fleet();
  const [nacker] = envoys.addMany(1, adsSpec({
    node: () => ({ id: 'nack-0', cluster: 'edge' }),
    behaviour: { ackDelayMs: 0, hang: false, nackRules: [{ typeUrl: RDS_TYPE_URL, resourceName: /ingress_http/, message: 'duplicate domain *.force-nack.*' }] },
  }), 0);
  envoys.connectAll();
  const events = await eventually(async () => {
    const list = await envoyEvents(gateway.store, 'nack-0');
    return list.some((e) => e.outcome === 'NACK') ? list : undefined;
  }, 'NACK event stored');
  const nack = events.find((e) => e.outcome === 'NACK') as EnvoyEvent;
  expect(nack.typeUrl).toBe(RDS_TYPE_URL);
  expect(nack.message).toContain('duplicate domain *.force-nack.*');
  // No ACK of the rejected RDS version, ever.
  expect(events.some((e) => e.outcome === 'ACK' && e.typeUrl === RDS_TYPE_URL && e.seq === nack.seq)).toBe(false);
  const state = await eventually(async () => {
    const s = await envoyState(gateway.store, 'nack-0');
    return s?.types[RDS_TYPE_URL]?.nack !== undefined ? s : undefined;
  }, 'state with the NACK');
  const rds = state.types[RDS_TYPE_URL]!;
  expect(rds.nack!.seq).toBe(nack.seq);
  expect(rds.acked === undefined || rds.acked < nack.seq).toBe(true);
  // With RDS never accepted, the Envoy is not programmed through the RDS version.
  expect(state.programmedThrough === undefined || state.programmedThrough < nack.seq).toBe(true);
  expect(nacker!.acceptedVersion(RDS_TYPE_URL)).toBeUndefined();
});

test('an Envoy that never answers is reported STUCK once per pending response', async () => {
  const envoys = fleet();
  envoys.addMany(1, adsSpec({ node: () => ({ id: 'hang-0', cluster: 'edge' }), behaviour: { ackDelayMs: 0, hang: true, nackRules: [] } }), 0);
  envoys.connectAll();
  const stuck = await eventually(async () => {
    const list = (await envoyEvents(gateway.store, 'hang-0')).filter((e) => e.outcome === 'STUCK');
    return list.length > 0 ? list : undefined;
  }, 'STUCK event stored', 20_000);
  for (const event of stuck) {
    expect(event.sentAt).toBeDefined();
    expect(event.at - event.sentAt!).toBeGreaterThanOrEqual(1500);
  }
  // Several stuck checks later, still one event per (type, pending seq).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const again = (await envoyEvents(gateway.store, 'hang-0')).filter((e) => e.outcome === 'STUCK');
  const keys = again.map((e) => `${e.typeUrl}#${e.seq}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect((await envoyEvents(gateway.store, 'hang-0')).some((e) => e.outcome === 'ACK')).toBe(false);
  // The stored state proves the wait on its own (readers judge stuck at its lastSeenAt, not their
  // clock): the gateway vouched for the Envoy at or after the timeout of the pending response.
  const state = await envoyState(gateway.store, 'hang-0');
  const first = stuck[0]!;
  expect(state).toBeDefined();
  expect(state!.lastSeenAt - first.sentAt!).toBeGreaterThanOrEqual(1500);
  expect(stuckTypesAsStored(state!, Date.now(), 1500)).toContain(first.typeUrl);
});

test('store throttling delays events, never loses them', async () => {
  // Phase 1: every write throttled. The SDK gives up after its attempts; the recorder re-queues.
  dynamo.faults.setHook((request) => (['BatchWriteItem', 'PutItem', 'UpdateItem'].includes(request.operation) ? 'throttle' : 'none'));
  const envoys = fleet();
  envoys.addMany(4, adsSpec({ node: (i) => ({ id: `thr-${i}`, cluster: 'edge' }) }), 0);
  envoys.connectAll();
  try {
    await eventually(() => gateway.recorder.stats().failedAttempts > 0, 'the recorder saw failed writes');
    // Stream admission (docs/GATEWAY.md): no Envoy gets config before its state is stored and
    // counted, so while nothing can be written these new Envoys hold nothing (held, not dropped).
    expect(envoys.envoys().some((e) => ALL_TYPES.some((t) => e.acceptedVersion(t) !== undefined))).toBe(false);
    expect(await envoyEvents(gateway.store, 'thr-0')).toEqual([]);
    // Phase 2: partial batches and lost responses (applied, then 500): writes must be idempotent.
    dynamo.faults.setHook(undefined);
    dynamo.faults.set({ unprocessedRate: 0.5, errorAfterWriteRate: 0.2, seed: 7, operations: ['BatchWriteItem', 'PutItem', 'UpdateItem'] });
    await envoys.waitFor(() => envoys.envoys().every((e) => ALL_TYPES.every((t) => e.acceptedVersion(t) !== undefined)), { timeoutMs: 30_000 }, () => 'all Envoys ACK');
    for (const envoy of envoys.envoys()) {
      await eventually(async () => {
        const events = await envoyEvents(gateway.store, envoy.id);
        const state = await envoyState(gateway.store, envoy.id);
        return ALL_TYPES.every((t) => events.some((e) => e.outcome === 'ACK' && e.typeUrl === t)) && ALL_TYPES.every((t) => state?.types[t]?.acked !== undefined);
      }, `every ACK of ${envoy.id} stored`);
      // Exactly one item per (version, type, outcome): replays overwrote, never duplicated.
      const events = await envoyEvents(gateway.store, envoy.id);
      const keys = events.map((e) => `${e.lineage}#${e.seq}#${e.typeUrl}#${e.outcome}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
  } finally {
    dynamo.faults.clear();
  }
  await gateway.recorder.whenIdle();
  expect(gateway.recorder.stats().dropped).toBe(0);
  expect(gateway.recorder.stats().queuedEvents).toBe(0);
});

test('above the high-water mark the gateway reports not ready, and recovers without losing events', async () => {
  const small = await startTestGateway({
    upstream: `127.0.0.1:${controlPlane.port}`,
    table: 'gw-tracking',
    'dynamodb-endpoint': dynamo.endpoint,
    'dynamodb-max-attempts': '1',
    'queue-high-water': '2',
    'instance-id': 'gw-small',
  });
  try {
    await eventually(async () => (await httpGet(small.opsPort, '/readyz')).status === 200, 'small gateway ready');
    dynamo.faults.setHook((request) => (request.operation === 'BatchWriteItem' ? 'throttle' : 'none'));
    const envoys = newFleet(small.xdsPort);
    fleets.push(envoys);
    envoys.addMany(2, adsSpec({ node: (i) => ({ id: `bp-${i}`, cluster: 'edge' }) }), 0);
    envoys.connectAll();
    const notReady = await eventually(async () => {
      const r = await httpGet(small.opsPort, '/readyz');
      return r.status === 503 ? r : undefined;
    }, 'not ready under backpressure');
    expect(notReady.body).toContain('backpressure');
    expect((await httpGet(small.opsPort, '/metrics')).body).toContain('xds_programmed_gateway_backpressure 1');
    dynamo.faults.setHook(undefined);
    await eventually(async () => (await httpGet(small.opsPort, '/readyz')).status === 200, 'ready again');
    for (const envoy of envoys.envoys()) {
      await eventually(async () => {
        const events = await envoyEvents(small.store, envoy.id);
        return ALL_TYPES.every((t) => events.some((e) => e.outcome === 'ACK' && e.typeUrl === t));
      }, `${envoy.id} events written after the pressure`);
    }
    expect(small.recorder.stats().dropped).toBe(0);
  } finally {
    dynamo.faults.clear();
    await small.close();
  }
});

test('the LINEAGE item is heartbeated', async () => {
  const lineage = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge')!.lineage;
  const first = await eventually(() => lineageState(gateway.store, lineage), 'lineage stored');
  const later = await eventually(async () => {
    const state = await lineageState(gateway.store, lineage);
    return state !== undefined && state.heartbeatAt > first.heartbeatAt ? state : undefined;
  }, 'a newer heartbeat');
  expect(later.rev).toBeGreaterThan(first.rev);
  expect(later.startedAt).toBe(first.startedAt);
});

test('an idle connected Envoy keeps being seen (lastSeenAt heartbeat), so expiry does not drop it', async () => {
  const first = await eventually(async () => {
    const state = await envoyState(gateway.store, 'ack-0');
    return state?.status === 'CONNECTED' ? state : undefined;
  }, 'ack-0 stored');
  const later = await eventually(async () => {
    const state = await envoyState(gateway.store, 'ack-0');
    return state !== undefined && state.lastSeenAt >= first.lastSeenAt + 1000 ? state : undefined;
  }, 'lastSeenAt refreshed without any request');
  expect(later.status).toBe('CONNECTED');
  expect(later.types).toEqual(first.types);
});

test('/healthz, /readyz and /metrics answer', async () => {
  expect((await httpGet(gateway.opsPort, '/healthz')).status).toBe(200);
  const ready = await eventually(async () => {
    const r = await httpGet(gateway.opsPort, '/readyz');
    return r.status === 200 ? r : undefined;
  }, 'ready');
  expect(ready.body).toContain('ready');
  const metrics = await httpGet(gateway.opsPort, '/metrics');
  expect(metrics.status).toBe(200);
  expect(metrics.body).toMatch(/xds_programmed_gateway_events_written_total\{outcome="ACK",type="LDS"\} [1-9]/);
  expect(metrics.body).toMatch(/xds_programmed_gateway_events_written_total\{outcome="NACK",type="RDS"\} [1-9]/);
  expect(metrics.body).toContain('xds_programmed_gateway_queue_depth{kind="events"}');
  expect(metrics.body).toContain('xds_programmed_gateway_dropped_total 0');
  expect(metrics.body).toContain('xds_programmed_gateway_store_write_seconds_bucket');
  expect(metrics.body).toMatch(/xds_programmed_gateway_upstream_ready\{group="edge",state="ready"\} 1/);
  expect((await httpGet(gateway.opsPort, '/nope')).status).toBe(404);
});

// --- The denominator (docs/CONVERGENCE.md): the LINEAGE item counts every Envoy state on the lineage,
// written *before* the states it counts.

test('envoysRecorded on the stored LINEAGE item equals the incarnations of the stored states of the lineage', async () => {
  const lineage = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge')!.lineage;
  await gateway.recorder.whenIdle();
  const { states, recorded } = await eventually(async () => {
    const listed: EnvoyState[] = [];
    for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
      const page = await gateway.store.listEnvoyStates(cursor === undefined ? {} : { cursor });
      listed.push(...page.items.filter((state) => state.lineage === lineage));
      cursor = page.nextCursor;
    }
    const item = await lineageState(gateway.store, lineage);
    const sum = listed.reduce((n, state) => n + (state.incarnation ?? 1), 0);
    return item?.envoysRecorded === sum ? { states: listed, recorded: item.envoysRecorded } : undefined;
  }, 'the count equal to the states stored');
  expect(states.length).toBeGreaterThan(5);
  expect(recorded).toBeGreaterThanOrEqual(states.length);
});

describe('recorder: write-ahead of envoysRecorded', () => {
  const LINEAGE = 'gw-count.boot1.edge';
  let store: DynamoEventStore;
  let table: TableAccess;
  const calls: string[] = [];
  let failLineageWrites = false;

  beforeAll(async () => {
    table = openTable({
      tableName: 'gw-denominator',
      client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 2 },
      logger: testLogger,
    });
    ({ store } = table);
    await table.ensureTable();
  });

  afterAll(() => table.close());

  /** The real store; its LINEAGE and state writes are logged in order, and LINEAGE writes can be failed. */
  function loggingStore(): EventStore {
    return Object.assign(Object.create(store) as EventStore, {
      putLineageState: async (state: LineageState, expectedRev: number | undefined) => {
        if (failLineageWrites) throw new Error('lineage write refused by the test');
        const result = await store.putLineageState(state, expectedRev);
        if (result.ok) calls.push(`lineage:${state.envoysRecorded ?? 'none'}`);
        return result;
      },
      updateEnvoyState: async (state: EnvoyState, expectedRev: number | undefined) => {
        const result = await store.updateEnvoyState(state, expectedRev);
        if (result.ok) calls.push(`state:${state.nodeId}:${state.incarnation ?? 'none'}`);
        return result;
      },
    });
  }

  test('a new Envoy state waits for the count; reconnects and regressions are new incarnations', async () => {
    const now = Date.now();
    const recorder = new Recorder({ store: loggingStore(), logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 10_000, retryBaseMs: 1, retryMaxMs: 5 });
    const fresh = (nodeId: string, connectedAt: number, programmedThrough?: number): EnvoyState => ({
      ...newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now: connectedAt }),
      ...(programmedThrough === undefined ? {} : { programmedThrough }),
    });
    recorder.enqueueLineageState(lineageStateFor(LINEAGE, 'edge', now));
    try {
      // The count cannot be stored: the state is held (never in the table ahead of its count).
      failLineageWrites = true;
      recorder.enqueueEnvoyState(fresh('count-a', now, 2));
      await recorder.flushNow();
      expect((await store.getEnvoyState('count-a')).status).toBe('missing');
      expect(recorder.envoysRecorded(LINEAGE)).toBe(0);
      expect(recorder.stats().queuedEnvoyStates).toBe(1);

      failLineageWrites = false;
      await recorder.flushNow();
      expect(calls).toEqual(['lineage:1', 'state:count-a:1']);

      // A second Envoy, and progress of the first (same connection): one more.
      recorder.enqueueEnvoyState(fresh('count-b', now));
      recorder.enqueueEnvoyState(fresh('count-a', now, 3));
      await recorder.flushNow();
      expect(calls[2]).toBe('lineage:2');
      expect(new Set(calls.slice(3))).toEqual(new Set(['state:count-b:1', 'state:count-a:1']));

      // The first Envoy reconnects (new connectedAt), then restarts under the same id (less programmed).
      recorder.enqueueEnvoyState(fresh('count-a', now + 1000, 3));
      await recorder.flushNow();
      recorder.enqueueEnvoyState(fresh('count-a', now + 1000));
      await recorder.flushNow();
      expect(calls.slice(5)).toEqual(['lineage:3', 'state:count-a:2', 'lineage:4', 'state:count-a:3']);

      const item = await store.getLineageState(LINEAGE);
      expect(item.status === 'found' ? item.value.envoysRecorded : undefined).toBe(4);
      // Four incarnations of two Envoys: the item says both (a reader's total counts Envoys).
      expect(item.status === 'found' ? item.value.envoyNodesRecorded : undefined).toBe(2);
      expect(recorder.envoysRecorded(LINEAGE)).toBe(4);

      // The expire function marks count-b EXPIRED behind our back; our next (live) state revives it:
      // a new incarnation, counted before it is written.
      const stored = await store.getEnvoyState('count-b');
      if (stored.status !== 'found') throw new Error('count-b not stored');
      expect((await store.updateEnvoyState({ ...stored.value, status: 'EXPIRED', rev: stored.value.rev + 1 }, stored.value.rev)).ok).toBe(true);
      recorder.enqueueEnvoyState({ ...fresh('count-b', now), lastSeenAt: now + 2000 });
      await recorder.flushNow(); // conflict: reads the EXPIRED state, holds ours for a new incarnation
      await recorder.flushNow();
      expect(calls.slice(9)).toEqual(['lineage:5', 'state:count-b:2']);
      const revived = await store.getEnvoyState('count-b');
      expect(revived.status === 'found' ? [revived.value.status, revived.value.incarnation] : undefined).toEqual(['CONNECTED', 2]);
    } finally {
      failLineageWrites = false;
      await recorder.close();
    }
  });
});
