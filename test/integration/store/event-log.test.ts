// The event log in DynamoDB (dynalite) (docs/GATEWAY.md, "The event log"): event-log items (many events of one Envoy on one
// lineage), events carried by the Envoy's STATE (`unlogged`), and the single-event items written
// before it, all read back by listEnvoyEvents.
import {
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  dedupeEvents,
  toCarriedEvent,
  type CarriedEvent,
  type EnvoyEvent,
  type EnvoyState,
} from '../../../common/core';
import { ITEM_KIND, SCHEMA_VERSION, eventLogKeyOf } from '../../../common/store';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import { iteratePages } from '../../../common/store/listing';
import type { DocumentOperations } from '../../../common/store';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs, type CapturedLog } from '../../support/store-logger';

const LINEAGE = 'gw-1.boot-a.default';
const OTHER_LINEAGE = 'gw-2.boot-b.default';
const NOW = 1_780_000_000_000;
const TTL = Math.ceil(NOW / 1000) + 86_400;

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

async function harness(expiredStateRetentionMs?: number): Promise<{ store: DynamoEventStore; raw: DocumentOperations; tableName: string; logs: CapturedLog }> {
  const tableName = await fixture.newTable();
  const raw = fixture.operations();
  const logs = captureLogs();
  const store = new DynamoEventStore({
    tableName,
    operations: raw,
    logger: logs.logger,
    clock: { now: () => NOW },
    batch: { sleep: async () => {}, baseDelayMs: 1 },
    ...(expiredStateRetentionMs === undefined ? {} : { expiredStateRetentionMs }),
  });
  return { store, raw, tableName, logs };
}

function event(seq: number, typeUrl = LDS_TYPE_URL, lineage = LINEAGE, outcome: EnvoyEvent['outcome'] = 'ACK', nodeId = 'envoy-1'): EnvoyEvent {
  return { nodeId, outcome, lineage, seq, typeUrl, at: NOW + seq, ttl: TTL, ...(outcome === 'NACK' ? { message: `bad ${seq}` } : {}) };
}

const carried = (e: EnvoyEvent): CarriedEvent => toCarriedEvent(e);

function state(unlogged: CarriedEvent[] | undefined, overrides: Partial<EnvoyState> = {}): EnvoyState {
  return {
    nodeId: 'envoy-1',
    cluster: 'edge',
    group: 'edge',
    metadata: {},
    lineage: LINEAGE,
    status: 'CONNECTED',
    connectedAt: NOW,
    lastSeenAt: NOW,
    types: { [LDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked: 5 } },
    rev: 0,
    ...(unlogged === undefined ? {} : { unlogged }),
    ...overrides,
  };
}

async function allEvents(store: DynamoEventStore, nodeId: string, options: { lineage?: string; descending?: boolean; limit?: number } = {}): Promise<EnvoyEvent[]> {
  const events: EnvoyEvent[] = [];
  for await (const e of iteratePages((cursor) => store.listEnvoyEvents(nodeId, { ...options, ...(cursor === undefined ? {} : { cursor }) }))) events.push(e);
  return events;
}

async function countItems(raw: DocumentOperations, tableName: string): Promise<number> {
  const output = await raw.scan({ TableName: tableName, ConsistentRead: true });
  return output.Items?.length ?? 0;
}

const label = (e: EnvoyEvent): string => `${e.lineage === LINEAGE ? 'L1' : 'L2'}:${e.seq}:${e.typeUrl === LDS_TYPE_URL ? 'LDS' : e.typeUrl === CDS_TYPE_URL ? 'CDS' : 'EDS'}:${e.outcome}`;

test('old single-event items, event-log items and the events a STATE carries are all listed, once each', async () => {
  const { store } = await harness();
  // Before the upgrade: one item per event.
  expect(await store.putEvents([event(1), event(2, CDS_TYPE_URL)])).toEqual({ written: 2, failed: [] });
  // After: a log item per lineage, and the newest events in the STATE.
  const logged = [event(3), event(4, CDS_TYPE_URL, LINEAGE, 'NACK'), event(1, EDS_TYPE_URL, OTHER_LINEAGE)];
  const result = await store.putEventLogs([
    { nodeId: 'envoy-1', lineage: LINEAGE, events: logged.slice(0, 2).map(carried) },
    { nodeId: 'envoy-1', lineage: OTHER_LINEAGE, events: logged.slice(2).map(carried) },
  ]);
  expect(result).toEqual({ written: 2, failed: [] });
  // A crash between a log write and the STATE write that drops its events leaves event 3 in both.
  expect(await store.updateEnvoyState(state([carried(event(3)), carried(event(5)), carried(event(6, CDS_TYPE_URL, LINEAGE, 'STUCK'))]), undefined)).toEqual({ ok: true });

  const expected = ['L1:1:LDS:ACK', 'L1:2:CDS:ACK', 'L1:3:LDS:ACK', 'L1:4:CDS:NACK', 'L1:5:LDS:ACK', 'L1:6:CDS:STUCK', 'L2:1:EDS:ACK'];
  expect((await allEvents(store, 'envoy-1')).map(label)).toEqual(expected);
  expect((await allEvents(store, 'envoy-1', { descending: true })).map(label)).toEqual([...expected].reverse());
  expect((await allEvents(store, 'envoy-1', { lineage: OTHER_LINEAGE })).map(label)).toEqual(['L2:1:EDS:ACK']);
  // Small pages: every event is still found (dedupe across pages by identity, as readers that count do).
  const paged = await allEvents(store, 'envoy-1', { limit: 1 });
  expect(dedupeEvents(paged).map(label)).toEqual(expected);
  expect(paged.find((e) => e.outcome === 'NACK')?.message).toBe('bad 4');
  // Every event is findable per Envoy and version, with its own fields.
  expect(paged.find((e) => e.seq === 6)).toEqual(event(6, CDS_TYPE_URL, LINEAGE, 'STUCK'));
  // The newest events come first when descending: the first page of a descending listing holds the STATE's.
  const firstDescending = await store.listEnvoyEvents('envoy-1', { descending: true, limit: 1 });
  expect(firstDescending.items.map(label)).toEqual(expect.arrayContaining(['L1:6:CDS:STUCK', 'L1:5:LDS:ACK']) as unknown);
});

test('writing the same log batch again rewrites the same item (idempotent), a different grouping is another item', async () => {
  const { store, raw, tableName } = await harness();
  const batch = { nodeId: 'envoy-1', lineage: LINEAGE, events: [event(1), event(2)].map(carried) };
  await store.putEventLogs([batch]);
  await store.putEventLogs([batch, { ...batch, events: [...batch.events].reverse() }]);
  expect(await countItems(raw, tableName)).toBe(1);
  const item = await raw.get({ TableName: tableName, Key: eventLogKeyOf('envoy-1', LINEAGE, batch.events) });
  expect(item.Item).toMatchObject({ kind: ITEM_KIND.envoyEventLog, schemaVersion: SCHEMA_VERSION, nodeId: 'envoy-1', lineage: LINEAGE, ttl: TTL });
  // A regrouped replay (e.g. after a restart) is a second item with the same events: listed once.
  await store.putEventLogs([{ ...batch, events: [event(2), event(3)].map(carried) }]);
  expect(await countItems(raw, tableName)).toBe(2);
  expect((await allEvents(store, 'envoy-1')).map((e) => e.seq)).toEqual([1, 2, 3]);
});

test('invalid batches are refused without writing; a corrupt log item is skipped with a warning', async () => {
  const { store, raw, tableName, logs } = await harness();
  const result = await store.putEventLogs([
    { nodeId: 'envoy-1', lineage: LINEAGE, events: [] },
    { nodeId: 'envoy-1', lineage: LINEAGE, events: [carried(event(1, LDS_TYPE_URL, OTHER_LINEAGE))] },
    { nodeId: 'envoy-1', lineage: LINEAGE, events: [carried(event(2))] },
  ]);
  expect(result.written).toBe(1);
  expect(result.failed.map((f) => f.retryable)).toEqual([false, false]);
  expect(result.failed[1]?.error).toMatch(/lineage/);
  const key = eventLogKeyOf('envoy-1', LINEAGE, [carried(event(7))]);
  await raw.put({ TableName: tableName, Item: { ...key, kind: ITEM_KIND.envoyEventLog, schemaVersion: SCHEMA_VERSION, nodeId: 'envoy-1', lineage: LINEAGE, events: [{ o: 'ACK' }], ttl: TTL } });
  const page = await store.listEnvoyEvents('envoy-1');
  expect(page.items.map((e) => e.seq)).toEqual([2]);
  expect(page.corrupt).toEqual([expect.objectContaining({ key }) as unknown]);
  expect(logs.lines().some((entry) => entry['msg'] === 'skipping invalid item' && entry['expectedKind'] === 'EnvoyEvent')).toBe(true);
});

test('a STATE carries events: read back as written, no attribute when empty, kept at least as long as its events', async () => {
  const retentionMs = 60_000;
  const { store, raw, tableName } = await harness(retentionMs);
  const withEvents = state([carried(event(5))]);
  expect(await store.updateEnvoyState(withEvents, undefined)).toEqual({ ok: true });
  expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'found', value: withEvents });
  expect(await store.updateEnvoyState(state([], { rev: 1 }), 0)).toEqual({ ok: true });
  const stored = await raw.get({ TableName: tableName, Key: { pk: 'ENVOY#envoy-1', sk: 'STATE' } });
  expect(stored.Item).not.toHaveProperty('unlogged');
  // EXPIRED: the state's own TTL would be lastSeenAt + 60 s, but the event it carries is kept a day.
  expect(await store.updateEnvoyState(state([carried(event(6))], { rev: 2, status: 'EXPIRED' }), 1)).toEqual({ ok: true });
  const expired = await raw.get({ TableName: tableName, Key: { pk: 'ENVOY#envoy-1', sk: 'STATE' } });
  expect(expired.Item?.['ttl']).toBe(TTL);
  expect(await store.updateEnvoyState(state(undefined, { rev: 3, status: 'EXPIRED' }), 2)).toEqual({ ok: true });
  const plain = await raw.get({ TableName: tableName, Key: { pk: 'ENVOY#envoy-1', sk: 'STATE' } });
  expect(plain.Item?.['ttl']).toBe(Math.ceil((NOW + retentionMs) / 1000));
});
