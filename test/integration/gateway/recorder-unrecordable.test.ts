// Writes that can never succeed, against DynamoDB (dynalite): the recorder drops them with a log line
// and a metric instead of retrying them for ever, and never counts a state it cannot store. Before, one
// Envoy with an over-long node.cluster kept the lineage write failing: the gateway stayed not-ready,
// every state queued behind it waited, and every object stayed Pending. Here the other Envoy's state
// is written, its lineage's count covers exactly the states in the table, and the refused Envoy's
// stream admission is rejected with the reason (its stream ends; it never got config).
import { NODE_LIMITS, envoyStateStorageProblem, newEnvoyState, type EnvoyState } from '../../../common/core';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import type { DocumentOperations } from '../../../common/store';
import { Recorder, UnrecordableEnvoyError, type RecorderMetrics } from '../../../xds-gateway/tracking/recorder';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { testLogger } from './helpers';

const LINEAGE = 'gw-unrec.boot1.edge';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

function stateOf(nodeId: string, overrides: Partial<EnvoyState> = {}): EnvoyState {
  return { ...newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now: Date.now() }), ...overrides };
}

interface Counted {
  dropped: string[];
  failed: string[];
}

function countingMetrics(): { metrics: RecorderMetrics; counted: Counted } {
  const counted: Counted = { dropped: [], failed: [] };
  return {
    counted,
    metrics: {
      eventsWritten: () => {},
      writeLatency: () => {},
      writeFailed: (operation) => counted.failed.push(operation),
      writeDropped: (operation) => counted.dropped.push(operation),
    },
  };
}

async function setUp(wrap: (real: DocumentOperations) => DocumentOperations = (real) => real) {
  const tableName = await fixture.newTable();
  const store = new DynamoEventStore({ tableName, operations: wrap(fixture.operations()), logger: testLogger, clock: { now: () => Date.now() } });
  const { metrics, counted } = countingMetrics();
  const refused: Array<{ nodeId: string; reason: string }> = [];
  const recorder = new Recorder({
    store,
    logger: testLogger,
    clock: { now: () => Date.now() },
    flushIntervalMs: 60_000,
    retryBaseMs: 1,
    retryMaxMs: 5,
    pendingStateHoldMs: 0,
    metrics,
    onUnrecordable: (nodeId, reason) => refused.push({ nodeId, reason }),
  });
  return { store, recorder, counted, refused, tableName };
}

describe('Recorder: writes that can never succeed', () => {
  it('drops an Envoy state that fails the item schema before counting it; the other Envoy is written and counted', async () => {
    const { store, recorder, counted, refused } = await setUp();
    // node.cluster past the stored bound (the edge refuses it first; this is the recorder's own guard).
    recorder.enqueueEnvoyState(stateOf('bad', { cluster: 'c'.repeat(1103), group: 'c'.repeat(1103) }));
    recorder.enqueueEnvoyState(stateOf('good'));
    const bad = recorder.whenStateWritten('bad');
    const good = recorder.whenStateWritten('good');
    await recorder.flushNow();
    await expect(bad).rejects.toBeInstanceOf(UnrecordableEnvoyError);
    await expect(bad).rejects.toThrow(/cluster/);
    await good;
    expect((await store.getEnvoyState('good')).status).toBe('found');
    expect((await store.getEnvoyState('bad')).status).toBe('missing');
    // The count covers exactly the one state in the table: convergence is not left waiting for "bad".
    expect(recorder.envoysRecorded(LINEAGE)).toBe(1);
    const lineage = await store.getLineageState(LINEAGE);
    expect(lineage.status === 'found' ? lineage.value.envoysRecorded : undefined).toBe(1);
    expect(refused.map((r) => r.nodeId)).toEqual(['bad']);
    expect(counted.dropped).toEqual(['envoyState']);
    expect(recorder.stats().consecutiveFailures).toBe(0);
    expect(recorder.isEmpty()).toBe(true);
    await recorder.close(1000);
  });

  it('drops a state DynamoDB itself refuses (ValidationException) and does not retry it', async () => {
    let stateWrites = 0;
    // The item is valid by our schema but DynamoDB refuses it (as it does an item over 400 KB):
    // the store's PutItem is rewritten to one with an empty-string key, which DynamoDB rejects.
    const { recorder, counted, refused, store } = await setUp((real) => ({
      ...real,
      put: (input) => {
        const item = input.Item as Record<string, unknown> | undefined;
        if (item?.['nodeId'] === 'refused-by-dynamodb') {
          stateWrites++;
          return real.put({ ...input, Item: { ...item, pk: '' } });
        }
        return real.put(input);
      },
    }));
    recorder.enqueueEnvoyState(stateOf('refused-by-dynamodb'));
    recorder.enqueueEnvoyState(stateOf('fine'));
    const waiting = recorder.whenStateWritten('refused-by-dynamodb');
    await recorder.flushNow();
    await expect(waiting).rejects.toBeInstanceOf(UnrecordableEnvoyError);
    await recorder.flushNow();
    expect(stateWrites).toBe(1);
    expect(refused.map((r) => r.nodeId)).toEqual(['refused-by-dynamodb']);
    expect(refused[0]?.reason).toMatch(/ValidationException/);
    expect(counted.dropped).toEqual(['envoyState']);
    expect(counted.failed).toEqual([]);
    expect((await store.getEnvoyState('fine')).status).toBe('found');
    expect(recorder.stats().consecutiveFailures).toBe(0);
    // It was counted before DynamoDB refused it: the count is taken back and stored again, so it
    // covers exactly the one state in the table (convergence is not left waiting for the other).
    expect(recorder.envoysRecorded(LINEAGE)).toBe(1);
    const lineage = await store.getLineageState(LINEAGE);
    expect(lineage.status === 'found' ? lineage.value.envoysRecorded : undefined).toBe(1);
    // A later Envoy is counted on top of the corrected count, and written.
    recorder.enqueueEnvoyState(stateOf('later'));
    await recorder.flushNow();
    expect((await store.getEnvoyState('later')).status).toBe('found');
    const after = await store.getLineageState(LINEAGE);
    expect(after.status === 'found' ? after.value.envoysRecorded : undefined).toBe(2);
    await recorder.close(1000);
  });

  it('a lineage item the store refuses is dropped once, and its Envoys are refused instead of waiting for ever', async () => {
    let lineageWrites = 0;
    const { recorder, counted, refused } = await setUp((real) => ({
      ...real,
      put: (input) => {
        const item = input.Item as Record<string, unknown> | undefined;
        if (typeof item?.['pk'] === 'string' && item['pk'].startsWith('LINEAGE#')) {
          lineageWrites++;
          return real.put({ ...input, Item: { ...item, pk: '' } });
        }
        return real.put(input);
      },
    }));
    recorder.enqueueEnvoyState(stateOf('n1'));
    const waiting = recorder.whenStateWritten('n1');
    await recorder.flushNow();
    await expect(waiting).rejects.toThrow(/cannot be recorded/);
    recorder.enqueueEnvoyState(stateOf('n2'));
    await recorder.flushNow();
    expect(lineageWrites).toBe(1);
    expect(refused.map((r) => r.nodeId)).toEqual(['n1', 'n2']);
    expect(counted.dropped).toEqual(['lineageState', 'envoyState', 'envoyState']);
    expect(recorder.stats().consecutiveFailures).toBe(0);
    expect(recorder.isEmpty()).toBe(true);
    await recorder.close(1000);
  });

  it('a node at every bound the edge accepts is stored (the edge never passes what the table refuses)', async () => {
    const { store, recorder, refused } = await setUp();
    // Two-byte characters: the bounds are UTF-8 bytes, and the table's key limit is in bytes too.
    const id = 'é'.repeat(NODE_LIMITS.idBytes / 2);
    const cluster = 'ç'.repeat(NODE_LIMITS.clusterBytes / 2);
    const metadata = { blob: 'm'.repeat(NODE_LIMITS.metadataJsonBytes - 20) };
    const state = { ...newEnvoyState({ identity: { nodeId: id, cluster, metadata }, group: cluster, lineage: LINEAGE, now: Date.now() }) };
    expect(envoyStateStorageProblem(state)).toBeUndefined();
    recorder.enqueueEnvoyState(state);
    await recorder.flushNow();
    const read = await store.getEnvoyState(id);
    expect(read.status === 'found' ? read.value.cluster : undefined).toBe(cluster);
    expect(refused).toEqual([]);
    await recorder.close(1000);
  });

  it('a transient failure is still retried (only permanent ones are dropped)', async () => {
    let failNext = 1;
    const { recorder, counted, refused, store } = await setUp((real) => ({
      ...real,
      put: (input) => {
        const item = input.Item as Record<string, unknown> | undefined;
        if (item?.['nodeId'] === 'flaky' && failNext-- > 0) return Promise.reject(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' }));
        return real.put(input);
      },
    }));
    recorder.enqueueEnvoyState(stateOf('flaky'));
    await recorder.flushNow();
    expect(counted.failed).toEqual(['envoyState']);
    await recorder.flushNow();
    expect((await store.getEnvoyState('flaky')).status).toBe('found');
    expect(refused).toEqual([]);
    expect(counted.dropped).toEqual([]);
    await recorder.close(1000);
  });
});
