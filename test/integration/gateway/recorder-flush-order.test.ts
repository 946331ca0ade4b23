// The recorder writes Envoy states oldest-queued first, at most maxStatesPerFlush per flush, and starts
// the next flush at once while more are ready (a flush of every queued state made a state
// queued just after it began wait for the whole flush, ~2.5 s at 1,000 Envoys, before its own turn).
import { CDS_TYPE_URL, applyAck, applySubscribe, newEnvoyState, type EnvoyState } from '../../../common/core';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import type { DocumentOperations } from '../../../common/store';
import { lineageStateFor } from '../../../xds-gateway/tracking/lineage-mirror';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { testLogger } from './helpers';

const LINEAGE = 'gw-a.boot1.edge';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

/** The node ids of Envoy STATE puts, in the order the store was asked to write them. */
function recordingStatePuts(real: DocumentOperations, order: string[]): DocumentOperations {
  return {
    ...real,
    put: (input) => {
      if (input.Item?.['kind'] === 'EnvoyState') order.push(String(input.Item['nodeId']));
      return real.put(input);
    },
  };
}

function ackedState(nodeId: string, acked: number): EnvoyState {
  const state = applySubscribe(newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: LINEAGE, now: 1_000 }), { typeUrl: CDS_TYPE_URL, lineage: LINEAGE, now: 1_000 });
  return applyAck(state, { typeUrl: CDS_TYPE_URL, version: { lineage: LINEAGE, seq: acked }, now: 1_000 + acked });
}

/**
 * A recorder on a fresh table that notes the order of its STATE writes, with a one-minute flush window
 * (anything written after an explicit flush came from the recorder's own follow-up flushes).
 */
async function orderedRecorder(options: { maxStatesPerFlush?: number; stateWriteConcurrency?: number } = {}): Promise<{ recorder: Recorder; store: DynamoEventStore; order: string[] }> {
  const order: string[] = [];
  const tableName = await fixture.newTable();
  const store = new DynamoEventStore({ tableName, operations: recordingStatePuts(fixture.operations(), order), logger: testLogger, clock: { now: () => Date.now() } });
  const recorder = new Recorder({
    store,
    logger: testLogger,
    clock: { now: () => Date.now() },
    flushIntervalMs: 60_000,
    ...(options.stateWriteConcurrency === undefined ? {} : { stateWriteConcurrency: options.stateWriteConcurrency }),
    ...(options.maxStatesPerFlush === undefined ? {} : { maxStatesPerFlush: options.maxStatesPerFlush }),
  });
  recorder.enqueueLineageState(lineageStateFor(LINEAGE, 'edge', Date.now()));
  return { recorder, store, order };
}

test('states go oldest-queued first, at most maxStatesPerFlush per flush; a replaced state keeps its place; the rest follow at once', async () => {
  const { recorder, store, order } = await orderedRecorder({ stateWriteConcurrency: 1, maxStatesPerFlush: 10 });
  try {
    const ids = Array.from({ length: 25 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    for (const id of ids) recorder.enqueueEnvoyState(ackedState(id, 1));
    recorder.enqueueEnvoyState(ackedState('n03', 2)); // replaces n03's queued state in place

    await recorder.flushNow();
    expect(order).toEqual(ids.slice(0, 10));
    await recorder.whenIdle();
    expect(order).toEqual(ids);
    const n03 = await store.getEnvoyState('n03');
    expect(n03.status === 'found' && n03.value.types[CDS_TYPE_URL]?.acked).toBe(2);
  } finally {
    await recorder.close();
  }
});

test('a state that reaches a recorded watermark goes ahead of older queued states', async () => {
  const { recorder, order } = await orderedRecorder({ stateWriteConcurrency: 1, maxStatesPerFlush: 5 });
  try {
    const ids = Array.from({ length: 12 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    for (const id of ids) recorder.enqueueEnvoyState({ ...ackedState(id, 1), programmedThrough: 1 });
    await recorder.flushNow();
    await recorder.whenIdle();
    order.length = 0;

    // Every Envoy has news (ACK of seq 2, short of the watermark at 3); n10 then reaches the watermark.
    recorder.enqueueWatermark({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' }, 2, LINEAGE, { seq: 3, types: { [CDS_TYPE_URL]: 3 }, at: Date.now() });
    for (const id of ids) recorder.enqueueEnvoyState({ ...ackedState(id, 2), programmedThrough: 2 });
    recorder.enqueueEnvoyState({ ...ackedState('n10', 3), programmedThrough: 3 });
    await recorder.flushNow();
    expect(order).toEqual(['n10', 'n00', 'n01', 'n02', 'n03']);
    await recorder.whenIdle();
    expect([...order].sort()).toEqual(ids);
  } finally {
    await recorder.close();
  }
});

test('a state that reaches a watermark, or a NACK, is flushed without waiting for the flush window', async () => {
  // The one-minute flush window: only the urgent schedule can empty the queue within the test's time.
  const { recorder, store } = await orderedRecorder();
  try {
    recorder.enqueueEnvoyState({ ...ackedState('w1', 1), programmedThrough: 1 });
    await recorder.flushNow();
    recorder.enqueueWatermark({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' }, 2, LINEAGE, { seq: 2, types: { [CDS_TYPE_URL]: 2 }, at: Date.now() });
    await recorder.flushNow();

    recorder.enqueueEnvoyState({ ...ackedState('w1', 2), programmedThrough: 2 });
    await recorder.whenIdle();
    const read = await store.getEnvoyState('w1');
    expect(read.status === 'found' && read.value.programmedThrough).toBe(2);

    recorder.enqueueEvent({ nodeId: 'w1', outcome: 'NACK', lineage: LINEAGE, seq: 3, typeUrl: CDS_TYPE_URL, at: Date.now(), message: 'bad', ttl: Math.ceil(Date.now() / 1000) + 3600 });
    await recorder.whenIdle();
    expect(recorder.stats().queuedEvents).toBe(0);
  } finally {
    await recorder.close();
  }
});
