// The DynamoDB adapter of the core's EventStore port, against real dynalite.
import {
  LDS_TYPE_URL,
  CDS_TYPE_URL,
  MAX_MESSAGE_BYTES,
  utf8Length,
  type EnvoyEvent,
  type EnvoyState,
  type LineageState,
  type ObjectRef,
} from '../../../common/core';
import { ITEM_KIND, SCHEMA_VERSION, envoyStateKey } from '../../../common/store';
import { DynamoEventStore, eventKeyOf } from '../../../common/store/dynamo-store';
import { InvalidStoreInputError } from '../../../common/store/errors';
import { iteratePages } from '../../../common/store/listing';
import type { DocumentOperations } from '../../../common/store';
import { InvalidPageTokenError } from '../../../common/store/page-token';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { ThrottlingHttpHandler, withUnprocessedItems } from '../../support/store-faults';
import { captureLogs, type CapturedLog } from '../../support/store-logger';

const LINEAGE = 'gw-1.boot-a.default';
const OTHER_LINEAGE = 'gw-2.boot-b.default';
const NOW = 1_780_000_000_000;

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

interface Harness {
  store: DynamoEventStore;
  tableName: string;
  logs: CapturedLog;
  raw: DocumentOperations;
}

interface HarnessOptions {
  /** Wraps the real document operations (fault injection). */
  wrap?: (real: DocumentOperations) => DocumentOperations;
  /** Fault injection at the HTTP layer, below the SDK's retries. */
  handler?: ThrottlingHttpHandler;
  /** BatchWriteItem calls per chunk before events are handed back. */
  batchAttempts?: number;
  expiredStateRetentionMs?: number;
}

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const tableName = await fixture.newTable();
  const raw = fixture.operations(options.handler === undefined ? {} : { requestHandler: options.handler });
  const logs = captureLogs();
  const store = new DynamoEventStore({
    tableName,
    operations: options.wrap === undefined ? raw : options.wrap(raw),
    logger: logs.logger,
    clock: { now: () => NOW },
    ...(options.expiredStateRetentionMs === undefined ? {} : { expiredStateRetentionMs: options.expiredStateRetentionMs }),
    batch: { sleep: async () => {}, baseDelayMs: 1, ...(options.batchAttempts === undefined ? {} : { maxAttempts: options.batchAttempts }) },
  });
  return { store, tableName, logs, raw };
}

function ackEvent(seq: number, nodeId = 'envoy-1', typeUrl = LDS_TYPE_URL): EnvoyEvent {
  return { nodeId, outcome: 'ACK', lineage: LINEAGE, seq, typeUrl, at: NOW + seq, ttl: Math.ceil(NOW / 1000) + 86_400 };
}

function envoyState(overrides: Partial<EnvoyState> = {}): EnvoyState {
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
    programmedThrough: 5,
    rev: 0,
    ...overrides,
  };
}

const route: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };

describe('events', () => {
  test('a batch of 60 events is written and read back in pages, in sort-key order', async () => {
    const { store } = await harness();
    const events = Array.from({ length: 60 }, (_, i) => ackEvent(i + 1));
    const result = await store.putEvents(events);
    expect(result).toEqual({ written: 60, failed: [] });

    const pages: number[] = [];
    let cursor: string | undefined;
    const seen: EnvoyEvent[] = [];
    do {
      const page = await store.listEnvoyEvents('envoy-1', cursor === undefined ? { limit: 7 } : { limit: 7, cursor });
      pages.push(page.items.length);
      expect(page.corrupt).toEqual([]);
      seen.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages.length).toBeGreaterThanOrEqual(9);
    expect(pages.every((size) => size <= 7)).toBe(true);
    expect(seen.map((event) => event.seq)).toEqual(events.map((event) => event.seq));
    expect(seen[0]).toEqual(events[0]);

    // The async iterator walks the same pages.
    const iterated: number[] = [];
    for await (const event of iteratePages((c) => store.listEnvoyEvents('envoy-1', c === undefined ? { limit: 25 } : { limit: 25, cursor: c }))) {
      iterated.push(event.seq);
    }
    expect(iterated).toEqual(events.map((event) => event.seq));

    const descending = await store.listEnvoyEvents('envoy-1', { limit: 3, descending: true });
    expect(descending.items.map((event) => event.seq)).toEqual([60, 59, 58]);
  });

  test('replaying events writes the same items: the count is unchanged', async () => {
    const { store, tableName, raw } = await harness();
    const events = Array.from({ length: 30 }, (_, i) => ackEvent(i + 1));
    await store.putEvents(events);
    const replay = await store.putEvents([...events].reverse());
    expect(replay.written).toBe(30);
    const stored = await raw.query({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': 'ENVOY#envoy-1' },
      Select: 'COUNT',
    });
    expect(stored.Count).toBe(30);
    const item = await raw.get({ TableName: tableName, Key: eventKeyOf(events[4] as EnvoyEvent) });
    expect(item.Item).toMatchObject({ kind: ITEM_KIND.envoyEvent, schemaVersion: SCHEMA_VERSION, seq: 5 });
  });

  test('a huge NACK message is truncated (UTF-8 safe) before it is written', async () => {
    const { store } = await harness();
    const message = 'é'.repeat(200_000); // 400 KB of UTF-8: alone it would exceed the item limit
    const nack: EnvoyEvent = { ...ackEvent(3), outcome: 'NACK', message };
    expect(await store.putEvents([nack])).toEqual({ written: 1, failed: [] });
    const page = await store.listEnvoyEvents('envoy-1');
    const stored = page.items[0]?.message ?? '';
    expect(utf8Length(stored)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(stored).toMatch(/^é+\.\.\.\[truncated, 400000 bytes\]$/);
  });

  test('an invalid event is refused with a reason and logged; the others are written', async () => {
    const { store, logs } = await harness();
    const bad = { ...ackEvent(2), outcome: 'NACK' as const }; // a NACK without the Envoy message
    const result = await store.putEvents([ackEvent(1), bad, ackEvent(3)]);
    expect(result.written).toBe(2);
    expect(result.failed).toHaveLength(1);
    expect(result.failed[0]).toMatchObject({ event: bad, retryable: false });
    expect(result.failed[0]?.error).toMatch(/message/);
    expect(logs.lines().some((line) => line.msg === 'refusing to write event' && line.nodeId === 'envoy-1')).toBe(true);
    expect((await store.listEnvoyEvents('envoy-1')).items.map((event) => event.seq)).toEqual([1, 3]);
  });

  test('an empty batch writes nothing and makes no call', async () => {
    let calls = 0;
    const { store } = await harness({
      wrap: (real) => ({ ...real, batchWrite: (input) => { calls++; return real.batchWrite(input); } }),
    });
    expect(await store.putEvents([])).toEqual({ written: 0, failed: [] });
    expect(calls).toBe(0);
  });

  test('absent optional fields (undefined) are not written as attributes', async () => {
    const { store, tableName, raw } = await harness();
    const event: EnvoyEvent = { ...ackEvent(1), message: undefined, sentAt: undefined };
    expect(await store.putEvents([event])).toEqual({ written: 1, failed: [] });
    const item = await raw.get({ TableName: tableName, Key: eventKeyOf(event) });
    expect(item.Item).toBeDefined();
    expect(Object.keys(item.Item ?? {})).not.toContain('message');
    expect(Object.keys(item.Item ?? {})).not.toContain('sentAt');
    expect((await store.listEnvoyEvents('envoy-1')).items).toEqual([ackEvent(1)]);
  });

  test('UnprocessedItems are retried until every event lands', async () => {
    let fault: ReturnType<typeof withUnprocessedItems> | undefined;
    const { store } = await harness({
      wrap: (real) => {
        fault = withUnprocessedItems(real, 5);
        return fault.operations;
      },
    });
    const events = Array.from({ length: 60 }, (_, i) => ackEvent(i + 1));
    expect(await store.putEvents(events)).toEqual({ written: 60, failed: [] });
    expect(fault?.reportedUnprocessed()).toBeGreaterThan(0);
    const all = [];
    for await (const event of iteratePages((c) => store.listEnvoyEvents('envoy-1', c === undefined ? {} : { cursor: c }))) all.push(event);
    expect(all).toHaveLength(60);
  });

  test('events still unprocessed after the bounded retries come back as retryable failures', async () => {
    // Every call writes 4 of its items; 3 calls per chunk: 12 of 25 land, 13 come back.
    const { store, logs } = await harness({
      wrap: (real) => withUnprocessedItems(real, 1_000, (n) => Math.min(n, 4)).operations,
      batchAttempts: 3,
    });
    const events = Array.from({ length: 25 }, (_, i) => ackEvent(i + 1));
    const result = await store.putEvents(events);
    expect(result.written).toBe(12);
    expect(result.failed).toHaveLength(13);
    expect(result.failed.every((failure) => failure.retryable && /UnprocessedItems/.test(failure.error))).toBe(true);
    const stored = (await store.listEnvoyEvents('envoy-1')).items.map((event) => event.seq);
    expect(stored).toHaveLength(result.written);
    const failedSeqs = new Set(result.failed.map((failure) => failure.event.seq));
    expect(stored.some((seq) => failedSeqs.has(seq))).toBe(false);
    expect(logs.lines().some((line) => line.msg === 'events not written after retries; returned to caller')).toBe(true);
  });

  test('throttling (ProvisionedThroughputExceededException twice) is retried and the write lands once', async () => {
    const handler = new ThrottlingHttpHandler(2, 'BatchWriteItem');
    const { store } = await harness({ handler });
    expect(await store.putEvents([ackEvent(1)])).toEqual({ written: 1, failed: [] });
    expect(handler.throttled).toBe(2);
    expect(handler.forwarded.get('BatchWriteItem')).toBe(1);
    expect((await store.listEnvoyEvents('envoy-1')).items).toHaveLength(1);
  });
});

describe('Envoy state (conditional on rev)', () => {
  test('create, then newer rev accepted, older or replayed rev refused with the current value', async () => {
    const { store } = await harness();
    expect(await store.updateEnvoyState(envoyState({ rev: 0 }), undefined)).toEqual({ ok: true });
    // A second "create" loses: the state exists.
    const recreate = await store.updateEnvoyState(envoyState({ rev: 0, lastSeenAt: NOW + 1 }), undefined);
    expect(recreate).toMatchObject({ ok: false, reason: 'conflict', current: { status: 'found', value: { rev: 0, lastSeenAt: NOW } } });

    expect(await store.updateEnvoyState(envoyState({ rev: 1, lastSeenAt: NOW + 10 }), 0)).toEqual({ ok: true });
    expect(await store.updateEnvoyState(envoyState({ rev: 2, lastSeenAt: NOW + 20 }), 1)).toEqual({ ok: true });
    // Stale: based on rev 0 (an older read) or a replay of the rev-1 write.
    const stale = await store.updateEnvoyState(envoyState({ rev: 1, lastSeenAt: NOW + 99 }), 0);
    expect(stale).toMatchObject({ ok: false, reason: 'conflict', current: { status: 'found', value: { rev: 2, lastSeenAt: NOW + 20 } } });
    const read = await store.getEnvoyState('envoy-1');
    expect(read).toEqual({ status: 'found', value: envoyState({ rev: 2, lastSeenAt: NOW + 20 }) });
  });

  test('a throttled conditional write is retried by the SDK and applied once', async () => {
    const handler = new ThrottlingHttpHandler(2, 'PutItem');
    const { store } = await harness({ handler });
    expect(await store.updateEnvoyState(envoyState({ rev: 0 }), undefined)).toEqual({ ok: true });
    expect(handler.throttled).toBe(2);
    expect(handler.forwarded.get('PutItem')).toBe(1);
    expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'found', value: envoyState({ rev: 0 }) });
  });

  test('a rev that does not increase is a caller error, not a write', async () => {
    const { store } = await harness();
    await expect(store.updateEnvoyState(envoyState({ rev: 3 }), 3)).rejects.toThrow(InvalidStoreInputError);
    await expect(store.updateEnvoyState(envoyState({ nodeId: '' }), undefined)).rejects.toThrow(InvalidStoreInputError);
    expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'missing' });
  });

  test('the acked version never goes backwards: a writer with an older read loses', async () => {
    const { store } = await harness();
    await store.updateEnvoyState(envoyState({ rev: 0 }), undefined);
    // Two writers read rev 0. B records the ACK of seq 7 first; A then tries to record seq 6.
    const ackedAt = (acked: number, rev: number): EnvoyState =>
      envoyState({ rev, programmedThrough: acked, types: { [LDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked } } });
    expect(await store.updateEnvoyState(ackedAt(7, 1), 0)).toEqual({ ok: true });
    const lost = await store.updateEnvoyState(ackedAt(6, 1), 0);
    expect(lost.ok).toBe(false);
    const stored = await store.getEnvoyState('envoy-1');
    expect(stored.status === 'found' && stored.value.types[LDS_TYPE_URL]?.acked).toBe(7);
  });

  test('an EXPIRED state gets a TTL (when configured); a live state written later drops it', async () => {
    const { store, tableName, raw } = await harness({ expiredStateRetentionMs: 7 * 86_400_000 });
    await store.updateEnvoyState(envoyState({ status: 'EXPIRED', rev: 0 }), undefined);
    const expired = await raw.get({ TableName: tableName, Key: envoyStateKey('envoy-1') });
    expect(expired.Item?.ttl).toBe(Math.ceil((NOW + 7 * 86_400_000) / 1000));
    await store.updateEnvoyState(envoyState({ status: 'CONNECTED', rev: 1 }), 0);
    const live = await raw.get({ TableName: tableName, Key: envoyStateKey('envoy-1') });
    expect(live.Item).toBeDefined();
    expect(live.Item?.ttl).toBeUndefined();
    expect(await store.getEnvoyState('envoy-1')).toEqual({ status: 'found', value: envoyState({ rev: 1 }) });
  });

  test('NACK messages inside the state are truncated', async () => {
    const { store } = await harness();
    const state = envoyState({
      types: { [CDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, nack: { seq: 4, message: 'x'.repeat(50_000), at: NOW } } },
    });
    expect(await store.updateEnvoyState(state, undefined)).toEqual({ ok: true });
    const stored = await store.getEnvoyState('envoy-1');
    const message = stored.status === 'found' ? stored.value.types[CDS_TYPE_URL]?.nack?.message ?? '' : '';
    expect(utf8Length(message)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(message).toContain('truncated, 50000 bytes');
  });

  test('listEnvoyStates pages through the fleet (and only states), filtered by group', async () => {
    const { store } = await harness();
    for (let i = 0; i < 12; i++) {
      const nodeId = `envoy-${i}`;
      await store.updateEnvoyState(envoyState({ nodeId, group: i % 3 === 0 ? 'canary' : 'edge' }), undefined);
      await store.putEvents([ackEvent(1, nodeId), ackEvent(2, nodeId)]);
    }
    const all: string[] = [];
    for await (const state of iteratePages((c) => store.listEnvoyStates(c === undefined ? { limit: 5 } : { limit: 5, cursor: c }))) all.push(state.nodeId);
    expect(all.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `envoy-${i}`).sort());
    const canary: string[] = [];
    for await (const state of iteratePages((c) => store.listEnvoyStates(c === undefined ? { group: 'canary', limit: 4 } : { group: 'canary', limit: 4, cursor: c }))) canary.push(state.nodeId);
    expect(canary.sort()).toEqual(['envoy-0', 'envoy-3', 'envoy-6', 'envoy-9']);
  });
});

describe('corrupt items', () => {
  test('a corrupt item is skipped with a logged reason while the rest of the listing returns', async () => {
    const { store, tableName, raw, logs } = await harness();
    await store.putEvents([ackEvent(1), ackEvent(3)]);
    // Put raw, between the two valid events in sort order: seq is a string, which the schema refuses.
    const corruptKey = { pk: 'ENVOY#envoy-1', sk: `EVENT#${LINEAGE}#0000000000000002#${LDS_TYPE_URL}#ACK` };
    await raw.put({ TableName: tableName, Item: { ...corruptKey, kind: ITEM_KIND.envoyEvent, schemaVersion: SCHEMA_VERSION, seq: 'two' } });
    const page = await store.listEnvoyEvents('envoy-1');
    expect(page.items.map((event) => event.seq)).toEqual([1, 3]);
    expect(page.corrupt).toHaveLength(1);
    expect(page.corrupt[0]?.key).toEqual(corruptKey);
    expect(page.corrupt[0]?.error).toMatch(/seq/);
    const logged = logs.lines().find((line) => line.msg === 'skipping invalid item');
    expect(logged).toMatchObject({ level: 40, key: corruptKey, expectedKind: 'EnvoyEvent' });
    expect(String(logged?.reason)).toMatch(/seq/);
  });

  test('an unknown kind or schema version is reported, and a corrupt state keeps its rev for replacement', async () => {
    const { store, tableName, raw } = await harness();
    await raw.put({ TableName: tableName, Item: { ...envoyStateKey('envoy-1'), kind: 'Mystery', schemaVersion: SCHEMA_VERSION, rev: 4 } });
    const read = await store.getEnvoyState('envoy-1');
    expect(read).toMatchObject({ status: 'corrupt', rev: 4 });
    expect(read.status === 'corrupt' && read.error).toMatch(/unknown kind/);
    // The writer can replace it with the usual conditional write.
    expect(await store.updateEnvoyState(envoyState({ rev: 5 }), 4)).toEqual({ ok: true });
    expect((await store.getEnvoyState('envoy-1')).status).toBe('found');

    await raw.put({ TableName: tableName, Item: { pk: 'ENVOY#envoy-2', sk: 'STATE', kind: ITEM_KIND.envoyState, schemaVersion: 99 } });
    const future = await store.getEnvoyState('envoy-2');
    expect(future.status === 'corrupt' && future.error).toMatch(/schemaVersion/);
  });
});

describe('object generations', () => {
  const watermark = { seq: 12, types: { [LDS_TYPE_URL]: 11, [CDS_TYPE_URL]: 12 }, at: NOW };

  test('the first watermark per lineage wins; other lineages add theirs', async () => {
    const { store } = await harness();
    expect(await store.putWatermark(route, 3, LINEAGE, watermark)).toBe('written');
    expect(await store.putWatermark(route, 3, LINEAGE, { ...watermark, seq: 40, at: NOW + 5 })).toBe('alreadySet');
    expect(await store.putWatermark(route, 3, OTHER_LINEAGE, { ...watermark, seq: 2, at: NOW + 7 })).toBe('written');
    const read = await store.getObjectGeneration(route, 3);
    expect(read).toEqual({
      status: 'found',
      value: {
        object: route,
        generation: 3,
        watermarks: { [LINEAGE]: watermark, [OTHER_LINEAGE]: { ...watermark, seq: 2, at: NOW + 7 } },
        firstSeenAt: NOW,
      },
    });
  });

  test('concurrent first watermarks for one lineage: exactly one is written', async () => {
    const { store } = await harness();
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.putWatermark(route, 9, LINEAGE, { ...watermark, seq: 100 + i })),
    );
    expect(outcomes.filter((outcome) => outcome === 'written')).toHaveLength(1);
  });

  test('not-observable and conditions create the item if missing and keep the first programmedAt', async () => {
    const { store } = await harness();
    await store.markNotObservable(route, 4, 'kind HTTPProxy has no status observedGeneration', NOW);
    expect(await store.putWatermark(route, 4, LINEAGE, watermark)).toBe('written');
    const condition = {
      type: 'EnvoyProgrammed',
      status: 'True' as const,
      observedGeneration: 4,
      lastTransitionTime: '2026-05-28T00:00:00Z',
      reason: 'Programmed',
      message: '3/3 Envoys',
    };
    await store.recordCondition(route, 4, condition, NOW + 100);
    await store.recordCondition(route, 4, { ...condition, message: 'again' }, NOW + 900);
    const read = await store.getObjectGeneration(route, 4);
    expect(read).toEqual({
      status: 'found',
      value: {
        object: route,
        generation: 4,
        watermarks: { [LINEAGE]: watermark },
        notObservable: 'kind HTTPProxy has no status observedGeneration',
        firstSeenAt: NOW,
        programmedAt: NOW + 100,
        lastCondition: { ...condition, message: 'again' },
      },
    });
    // recordCondition alone creates a valid item too (firstSeenAt from the injected clock).
    await store.recordCondition(route, 5, { ...condition, observedGeneration: 5 });
    const created = await store.getObjectGeneration(route, 5);
    expect(created).toMatchObject({ status: 'found', value: { generation: 5, firstSeenAt: NOW, watermarks: {} } });
  });

  test('generations list in numeric order, paged', async () => {
    const { store } = await harness();
    for (const generation of [1, 2, 10, 11, 100]) await store.putWatermark(route, generation, LINEAGE, watermark);
    const generations: number[] = [];
    for await (const record of iteratePages((c) => store.listObjectGenerations(route, c === undefined ? { limit: 2 } : { limit: 2, cursor: c }))) {
      generations.push(record.generation);
    }
    expect(generations).toEqual([1, 2, 10, 11, 100]);
    const latest = await store.listObjectGenerations(route, { limit: 1, descending: true });
    expect(latest.items.map((record) => record.generation)).toEqual([100]);
  });

  test('a corrupt watermarks attribute is repaired by the next watermark write', async () => {
    const { store, tableName, raw, logs } = await harness();
    await store.markNotObservable(route, 6, 'why', NOW);
    await raw.update({
      TableName: tableName,
      Key: { pk: 'OBJECT#projectcontour.io/HTTPProxy/default/web', sk: 'GEN#0000000000000006' },
      UpdateExpression: 'SET watermarks = :bad',
      ExpressionAttributeValues: { ':bad': 'not a map' },
    });
    expect((await store.getObjectGeneration(route, 6)).status).toBe('corrupt');
    expect(await store.putWatermark(route, 6, LINEAGE, watermark)).toBe('written');
    expect(await store.getObjectGeneration(route, 6)).toMatchObject({ status: 'found', value: { watermarks: { [LINEAGE]: watermark } } });
    expect(logs.lines().some((line) => line.msg === 'replaced a corrupt watermarks attribute')).toBe(true);
  });

  test('bad refs, generations, node ids and lineages are refused before any I/O', async () => {
    const { store } = await harness();
    await expect(store.putWatermark({ ...route, name: 'Bad Name' }, 1, LINEAGE, watermark)).rejects.toThrow(InvalidStoreInputError);
    await expect(store.putWatermark(route, 0, LINEAGE, watermark)).rejects.toThrow(InvalidStoreInputError);
    await expect(store.putWatermark(route, 1, 'not-a-lineage', watermark)).rejects.toThrow(InvalidStoreInputError);
    await expect(store.getObjectGeneration({ ...route, kind: '' }, 1)).rejects.toThrow(InvalidStoreInputError);
    await expect(store.listObjectGenerations({ ...route, namespace: 'UPPER' })).rejects.toThrow(InvalidStoreInputError);
    await expect(store.getEnvoyState('x'.repeat(2000))).rejects.toThrow(InvalidStoreInputError);
    await expect(store.listEnvoyEvents('')).rejects.toThrow(InvalidStoreInputError);
    await expect(store.getLineageState('nope')).rejects.toThrow(InvalidStoreInputError);
  });
});

describe('lineage state', () => {
  test('same compare-and-set contract as Envoy state', async () => {
    const { store } = await harness();
    const state: LineageState = {
      lineage: LINEAGE,
      instanceId: 'gw-1',
      bootId: 'boot-a',
      group: 'default',
      currentSeq: 3,
      typeHistory: { [LDS_TYPE_URL]: [1, 3] },
      historyStart: 0,
      startedAt: NOW,
      heartbeatAt: NOW,
      rev: 0,
    };
    expect(await store.putLineageState(state, undefined)).toEqual({ ok: true });
    expect(await store.putLineageState({ ...state, currentSeq: 4, rev: 1 }, 0)).toEqual({ ok: true });
    expect(await store.putLineageState({ ...state, currentSeq: 9, rev: 1 }, 0)).toMatchObject({ ok: false, current: { status: 'found', value: { currentSeq: 4 } } });
    expect(await store.getLineageState(LINEAGE)).toEqual({ status: 'found', value: { ...state, currentSeq: 4, rev: 1 } });
  });
});

describe('page tokens and scans', () => {
  test('bad or foreign page tokens are refused with a clear error', async () => {
    const { store } = await harness();
    await store.putEvents(Array.from({ length: 5 }, (_, i) => ackEvent(i + 1)));
    await store.putEvents(Array.from({ length: 5 }, (_, i) => ackEvent(i + 1, 'envoy-2')));
    const page = await store.listEnvoyEvents('envoy-1', { limit: 2 });
    expect(page.nextCursor).toBeDefined();
    const cursor = page.nextCursor as string;
    await expect(store.listEnvoyEvents('envoy-2', { cursor })).rejects.toThrow(InvalidPageTokenError);
    await expect(store.listEnvoyEvents('envoy-1', { cursor, descending: true })).rejects.toThrow(/another listing/);
    await expect(store.listEnvoyEvents('envoy-1', { cursor: 'not base64!' })).rejects.toThrow(InvalidPageTokenError);
    await expect(store.listEnvoyEvents('envoy-1', { cursor: Buffer.from('[1,2]').toString('base64url') })).rejects.toThrow(/wrong shape/);
    await expect(store.scanItems({ cursor })).rejects.toThrow(InvalidPageTokenError);
    await expect(store.listEnvoyEvents('envoy-1', { limit: 0 })).rejects.toThrow(InvalidStoreInputError);
    // The genuine token continues where the first page stopped.
    const rest = await store.listEnvoyEvents('envoy-1', { cursor });
    expect(rest.items.map((event) => event.seq)).toEqual([3, 4, 5]);
  });

  test('scanItems covers the table in parallel segments and filters by kind', async () => {
    const { store, tableName, raw } = await harness();
    await store.putEvents(Array.from({ length: 20 }, (_, i) => ackEvent(i + 1)));
    await store.updateEnvoyState(envoyState(), undefined);
    await store.putWatermark(route, 1, LINEAGE, { seq: 1, types: {}, at: NOW });
    await raw.put({ TableName: tableName, Item: { pk: 'JUNK', sk: 'JUNK', kind: 'Mystery', schemaVersion: SCHEMA_VERSION } });

    const kinds: string[] = [];
    let corrupt = 0;
    for (let segment = 0; segment < 3; segment++) {
      for await (const item of iteratePages(
        (c) => store.scanItems(c === undefined ? { segment, totalSegments: 3, limit: 4 } : { segment, totalSegments: 3, limit: 4, cursor: c }),
        (bad) => {
          corrupt += bad.length;
        },
      )) {
        kinds.push(item.kind);
      }
    }
    expect(kinds.filter((kind) => kind === ITEM_KIND.envoyEvent)).toHaveLength(20);
    expect(kinds.filter((kind) => kind === ITEM_KIND.envoyState)).toHaveLength(1);
    expect(kinds.filter((kind) => kind === ITEM_KIND.objectGeneration)).toHaveLength(1);
    expect(corrupt).toBe(1);

    const states: string[] = [];
    for await (const item of iteratePages((c) => store.scanItems(c === undefined ? { kind: 'EnvoyState' } : { kind: 'EnvoyState', cursor: c }))) states.push(item.pk);
    expect(states).toEqual(['ENVOY#envoy-1']);
    await expect(store.scanItems({ segment: 3, totalSegments: 3 })).rejects.toThrow(InvalidStoreInputError);
  });
});
