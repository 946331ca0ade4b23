// The recorder's event log against DynamoDB (dynalite): ACK events ride in the Envoy's STATE
// write and move to event-log items in groups. Whatever the faults (lost answers, failed log writes, a
// restart, a second gateway writing the same STATE), every event stays durable and findable per Envoy
// and version, no state is stored ahead of its ACK, and a replay changes nothing.
import {
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  RDS_TYPE_URL,
  applyAck,
  applyNack,
  applySent,
  applySubscribe,
  dedupeEvents,
  eventIdentity,
  newEnvoyState,
  type EnvoyEvent,
  type EnvoyState,
} from '../../../common/core';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import type { DocumentOperations } from '../../../common/store';
import { lineageStateFor } from '../../../xds-gateway/tracking/lineage-mirror';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { countingWrites, runRecorderWorkload, type CountingOperations } from '../../../bench/support/recorder-workload';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { testLogger } from './helpers';

const L1 = 'gw-a.boot1.edge';
const L2 = 'gw-b.boot1.edge';
const TTL = Math.ceil(Date.now() / 1000) + 86_400;

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

async function storeOn(wrap: (real: DocumentOperations) => DocumentOperations = (real) => real): Promise<{ store: DynamoEventStore; operations: CountingOperations }> {
  const tableName = await fixture.newTable();
  const operations = countingWrites(wrap(fixture.operations()));
  const store = new DynamoEventStore({ tableName, operations, logger: testLogger, clock: { now: () => Date.now() }, batch: { sleep: async () => {}, baseDelayMs: 1 } });
  return { store, operations };
}

function recorderOn(store: DynamoEventStore, extra: Partial<ConstructorParameters<typeof Recorder>[0]> = {}): Recorder {
  return new Recorder({ store, logger: testLogger, clock: { now: () => Date.now() }, flushIntervalMs: 60_000, retryBaseMs: 1, retryMaxMs: 5, ...extra });
}

async function listed(store: DynamoEventStore, nodeId: string): Promise<EnvoyEvent[]> {
  const events: EnvoyEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listEnvoyEvents(nodeId, cursor === undefined ? {} : { cursor });
    events.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return events;
}

async function stored(store: DynamoEventStore, nodeId: string): Promise<EnvoyState> {
  const read = await store.getEnvoyState(nodeId);
  if (read.status !== 'found') throw new Error(`no state for ${nodeId}: ${read.status}`);
  return read.value;
}

function ackEvent(nodeId: string, lineage: string, seq: number, typeUrl = CDS_TYPE_URL): EnvoyEvent {
  return { nodeId, outcome: 'ACK', lineage, seq, typeUrl, at: Date.now(), ttl: TTL };
}

/** A connected Envoy on `lineage` subscribed to CDS, with `acked` ACKed. */
function ackedState(nodeId: string, lineage: string, acked: number, typeUrl = CDS_TYPE_URL, base?: EnvoyState): EnvoyState {
  let state = base ?? applySubscribe(newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage, now: 1_000 }), { typeUrl, lineage, now: 1_000 });
  if (state.types[typeUrl] === undefined) state = applySubscribe(state, { typeUrl, lineage, now: 1_000 });
  return applyAck(state, { typeUrl, version: { lineage, seq: acked }, now: 1_000 + acked });
}

test('a fleet workload: every ACK durable and findable, no state ahead of the log, no single-event items, at most one STATE write per ACK', async () => {
  const { store, operations } = await storeOn();
  const result = await runRecorderWorkload({
    store, operations, logger: testLogger, envoys: 20, changedTypes: 3, changes: 6, mode: 'carried', ackDelayMs: [1, 30], random: Math.random, lineage: L1,
  });
  expect(result.acks).toBe(20 * 3 * 6);
  expect(result.missingEvents).toBe(0);
  expect(result.stateAheadOfLog).toBe(0);
  expect(result.duplicates).toBe(0);
  expect(result.writes.byKind['EnvoyEvent'] ?? 0).toBe(0);
  // 4 setup + 18 change events per Envoy: more than the STATE may carry, so each Envoy logged some.
  expect(result.writes.byKind['EnvoyEventLog'] ?? 0).toBeGreaterThanOrEqual(20);
  // A state that only records a response sent waits for its ACK: never more than one STATE write per ACK.
  expect(result.writes.byKind['EnvoyState'] ?? 0).toBeLessThanOrEqual(result.acks);
}, 60_000);

test('lost answers (applied, then an error) and failed log writes: retried, nothing lost, nothing twice', async () => {
  let calls = 0;
  let failLogWrites = true;
  const { store, operations } = await storeOn((real) => ({
    ...real,
    // Every third STATE write is applied and then reported as failed (a lost response).
    put: async (input) => {
      const output = await real.put(input);
      if (++calls % 3 === 0) throw Object.assign(new Error('socket hang up after the write'), { name: 'InternalServerError' });
      return output;
    },
    // Event-log items fail until the test lets them through.
    batchWrite: async (input) => {
      if (failLogWrites) throw Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable' });
      return real.batchWrite(input);
    },
  }));
  const recorder = recorderOn(store, { eventLog: { maxCarriedEvents: 3, maxCarriedChars: 10_000 } });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state: EnvoyState | undefined;
  const events: EnvoyEvent[] = [];
  for (let seq = 1; seq <= 12; seq++) {
    state = ackedState('n1', L1, seq, CDS_TYPE_URL, state);
    const event = ackEvent('n1', L1, seq);
    events.push(event);
    recorder.enqueueEvent(event);
    recorder.enqueueEnvoyState(state);
    for (let attempt = 0; attempt < 5 && recorder.stats().queuedEvents > 0; attempt++) await recorder.flushNow();
    // Never ahead of the log: the stored acked version always has its ACK among the listed events.
    const current = await stored(store, 'n1');
    const acked = current.types[CDS_TYPE_URL]?.acked;
    expect((await listed(store, 'n1')).some((e) => e.seq === acked)).toBe(true);
  }
  // Log writes failed throughout: the STATE carries everything rather than lose or hold anything.
  expect((await stored(store, 'n1')).unlogged?.length).toBe(12);
  failLogWrites = false;
  operations.reset();
  state = ackedState('n1', L1, 13, CDS_TYPE_URL, state);
  events.push(ackEvent('n1', L1, 13));
  recorder.enqueueEvent(events[events.length - 1] as EnvoyEvent);
  recorder.enqueueEnvoyState(state);
  await recorder.close();
  expect((await stored(store, 'n1')).unlogged ?? []).toEqual([]);
  expect(operations.counts().byKind['EnvoyEventLog']).toBeGreaterThanOrEqual(1);
  const all = await listed(store, 'n1');
  expect(dedupeEvents(all).map(eventIdentity)).toEqual(dedupeEvents(events).map(eventIdentity));
  expect(all).toHaveLength(13);
  expect(recorder.stats()).toMatchObject({ queuedEvents: 0, eventsWritten: 13, dropped: 0 });
});

test('a restarted gateway (no memory) and a second gateway writing the same STATE keep every carried event', async () => {
  const { store } = await storeOn();
  // First life of gateway A: two ACKs carried in the STATE.
  const first = recorderOn(store);
  first.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state = ackedState('n2', L1, 1);
  first.enqueueEvent(ackEvent('n2', L1, 1));
  state = ackedState('n2', L1, 2, CDS_TYPE_URL, state);
  first.enqueueEvent(ackEvent('n2', L1, 2));
  first.enqueueEnvoyState(state);
  await first.close();
  expect((await stored(store, 'n2')).unlogged?.map((e) => e.q)).toEqual([1, 2]);

  // Its next life (same lineage here, to keep the test small) knows nothing: its write conflicts,
  // re-reads the stored STATE and carries the stored events along with its own.
  const second = recorderOn(store);
  second.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  second.enqueueEvent(ackEvent('n2', L1, 3));
  second.enqueueEnvoyState(ackedState('n2', L1, 3, CDS_TYPE_URL, state));
  // Gateway B serves the Envoy's EDS stream (per-type streams on two instances): same STATE item.
  const other = recorderOn(store);
  other.enqueueLineageState(lineageStateFor(L2, 'edge', Date.now()));
  other.enqueueEvent(ackEvent('n2', L2, 7, EDS_TYPE_URL));
  other.enqueueEnvoyState(ackedState('n2', L2, 7, EDS_TYPE_URL));
  await Promise.all([second.close(), other.close()]);
  // One more from each, so each writes over the other's carried events at least once.
  second.enqueueEvent(ackEvent('n2', L1, 4));
  other.enqueueEvent(ackEvent('n2', L2, 8, EDS_TYPE_URL));
  await Promise.all([second.close(), other.close()]);

  const seqs = (await listed(store, 'n2')).map((e) => `${e.lineage === L1 ? 'A' : 'B'}${e.seq}`);
  expect(seqs).toEqual(['A1', 'A2', 'A3', 'A4', 'B7', 'B8']);
});

test('a state that only records a response sent waits for its ACK (one write for both); SIGTERM writes it at once', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 60_000 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state = ackedState('n3', L1, 1, RDS_TYPE_URL);
  recorder.enqueueEvent(ackEvent('n3', L1, 1, RDS_TYPE_URL));
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  const rev = (await stored(store, 'n3')).rev;

  // Sent: held (nothing convergence can count changed).
  state = applySent(state, { typeUrl: RDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: 5_000 });
  recorder.enqueueEnvoyState(state);
  operations.reset();
  await recorder.flushNow();
  expect(operations.counts().items).toBe(0);
  expect((await stored(store, 'n3')).rev).toBe(rev);
  // ACKed: one write records the state and the event.
  state = applyAck(state, { typeUrl: RDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: 5_010 });
  recorder.enqueueEvent(ackEvent('n3', L1, 2, RDS_TYPE_URL));
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect(operations.counts()).toMatchObject({ items: 1, byKind: { EnvoyState: 1 } });
  expect((await stored(store, 'n3')).unlogged?.map((e) => e.q)).toEqual([1, 2]);

  // Sent again, then SIGTERM: close writes the held state (pending is recorded, nothing waits).
  recorder.enqueueEnvoyState(applySent(state, { typeUrl: RDS_TYPE_URL, version: { lineage: L1, seq: 3 }, now: 6_000 }));
  await recorder.flushNow();
  expect((await stored(store, 'n3')).types[RDS_TYPE_URL]?.pending).toBeUndefined();
  await recorder.close();
  expect((await stored(store, 'n3')).types[RDS_TYPE_URL]?.pending).toEqual({ seq: 3, sentAt: 6_000 });
});

test('an ACK while the Envoy still has other responses out waits for their ACKs: one write for the change', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 60_000 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state = ackedState('n5', L1, 1, CDS_TYPE_URL);
  state = ackedState('n5', L1, 1, EDS_TYPE_URL, state);
  state = ackedState('n5', L1, 1, RDS_TYPE_URL, state);
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  const rev = (await stored(store, 'n5')).rev;

  // A change reaches the Envoy: three responses out at once (as ADS pushes them); CDS and EDS are ACKed first.
  const sentAt = Date.now();
  for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL, RDS_TYPE_URL]) state = applySent(state, { typeUrl, version: { lineage: L1, seq: 2 }, now: sentAt });
  recorder.enqueueEnvoyState(state);
  for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL]) {
    state = applyAck(state, { typeUrl, version: { lineage: L1, seq: 2 }, now: sentAt + 1 });
    recorder.enqueueEvent(ackEvent('n5', L1, 2, typeUrl));
    recorder.enqueueEnvoyState(state);
  }
  operations.reset();
  await recorder.flushNow();
  expect(operations.counts().items).toBe(0);
  expect((await stored(store, 'n5')).rev).toBe(rev);

  // The last answer: one write records the state and all three ACKs.
  state = applyAck(state, { typeUrl: RDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: sentAt + 2 });
  recorder.enqueueEvent(ackEvent('n5', L1, 2, RDS_TYPE_URL));
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect(operations.counts()).toMatchObject({ items: 1, byKind: { EnvoyState: 1 } });
  const written = await stored(store, 'n5');
  expect(written.unlogged?.filter((e) => e.q === 2)).toHaveLength(3);
  expect(Object.values(written.types).map((type) => type.acked)).toEqual([2, 2, 2]);
  await recorder.close();
});

test('an ACK is not held for a response out longer than the hold, nor when a stream admission waits for the state', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 200 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  const base = (nodeId: string): EnvoyState => ackedState(nodeId, L1, 1, EDS_TYPE_URL, ackedState(nodeId, L1, 1, CDS_TYPE_URL));
  recorder.enqueueEnvoyState(base('n6'));
  recorder.enqueueEnvoyState(base('n7'));
  await recorder.flushNow();
  operations.reset();

  // n6: its EDS response went out 10 s ago (a slow or stuck Envoy): the CDS ACK is written at once.
  let slow = applySent(base('n6'), { typeUrl: EDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: Date.now() - 10_000 });
  slow = applyAck(applySent(slow, { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: Date.now() }), { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: Date.now() });
  recorder.enqueueEvent(ackEvent('n6', L1, 2, CDS_TYPE_URL));
  recorder.enqueueEnvoyState(slow);
  // n7: a response just went out, but a new stream of this Envoy waits for its state to be stored.
  const admitted = applySent(base('n7'), { typeUrl: EDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: Date.now() });
  recorder.enqueueEvent(ackEvent('n7', L1, 1, EDS_TYPE_URL));
  recorder.enqueueEnvoyState(admitted);
  const admission = recorder.whenStateWritten('n7');
  await recorder.flushNow();
  await admission;
  expect(operations.counts().byKind['EnvoyState']).toBe(2);
  expect((await stored(store, 'n6')).types[CDS_TYPE_URL]?.acked).toBe(2);
  expect((await stored(store, 'n7')).types[EDS_TYPE_URL]?.pending?.seq).toBe(2);
  await recorder.close();
});

test('a state that reaches a recorded watermark is written at once, answers due or not', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 60_000 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  const base = (nodeId: string): EnvoyState => ({ ...ackedState(nodeId, L1, 1, EDS_TYPE_URL, ackedState(nodeId, L1, 1, CDS_TYPE_URL)), programmedThrough: 1 });
  recorder.enqueueEnvoyState(base('n8'));
  recorder.enqueueEnvoyState(base('n9'));
  await recorder.flushNow();
  operations.reset();
  const ref = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
  recorder.enqueueWatermark(ref, 2, L1, { seq: 3, types: { [CDS_TYPE_URL]: 3 }, at: Date.now() });

  // Both ACK CDS@3 while their EDS@4 is still out; n8 reaches the watermark (3), n9 only reaches 2.
  const afterAck = (nodeId: string, through: number): EnvoyState => {
    let state = applySent(base(nodeId), { typeUrl: EDS_TYPE_URL, version: { lineage: L1, seq: 4 }, now: Date.now() });
    state = applySent(state, { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 3 }, now: Date.now() });
    state = applyAck(state, { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 3 }, now: Date.now() });
    recorder.enqueueEvent(ackEvent(nodeId, L1, 3, CDS_TYPE_URL));
    return { ...state, programmedThrough: through };
  };
  recorder.enqueueEnvoyState(afterAck('n8', 3));
  recorder.enqueueEnvoyState(afterAck('n9', 2));
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyState']).toBe(1);
  expect((await stored(store, 'n8')).programmedThrough).toBe(3);
  expect((await stored(store, 'n9')).programmedThrough).toBe(1);
  await recorder.close();
});

test('an urgent state (reaching a watermark) keeps carrying its events past the usual bound: no event-log write ahead of it', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 60_000 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  // Seven ACKs carried in the stored state (the bound is 8).
  let state: EnvoyState = { ...ackedState('n10', L1, 1), programmedThrough: 1 };
  for (let seq = 1; seq <= 7; seq++) {
    state = { ...ackedState('n10', L1, seq, CDS_TYPE_URL, state), programmedThrough: seq };
    recorder.enqueueEvent(ackEvent('n10', L1, seq));
  }
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect((await stored(store, 'n10')).unlogged).toHaveLength(7);
  const ref = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };
  recorder.enqueueWatermark(ref, 3, L1, { seq: 10, types: { [CDS_TYPE_URL]: 10 }, at: Date.now() });
  await recorder.flushNow();
  operations.reset();

  // Three more ACKs, the last reaching the watermark: ten carried, one STATE write, no log item.
  for (let seq = 8; seq <= 10; seq++) {
    state = { ...ackedState('n10', L1, seq, CDS_TYPE_URL, state), programmedThrough: seq };
    recorder.enqueueEvent(ackEvent('n10', L1, seq));
  }
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect(operations.counts().byKind).toEqual({ EnvoyState: 1 });
  expect((await stored(store, 'n10')).unlogged).toHaveLength(10);

  // The next ordinary write moves them to an event-log item first, as always.
  state = { ...applyAck(applySent(state, { typeUrl: EDS_TYPE_URL, version: { lineage: L1, seq: 11 }, now: Date.now() }), { typeUrl: EDS_TYPE_URL, version: { lineage: L1, seq: 11 }, now: Date.now() }), programmedThrough: 10 };
  recorder.enqueueEvent(ackEvent('n10', L1, 11, EDS_TYPE_URL));
  recorder.enqueueEnvoyState(state);
  operations.reset();
  await recorder.flushNow();
  expect(operations.counts().byKind).toMatchObject({ EnvoyState: 1, EnvoyEventLog: 1 });
  expect((await listed(store, 'n10')).map((event) => event.seq).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  await recorder.close();
});

test('a NACK is never held for the Envoy\'s other answers: it is a verdict of its own', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { pendingStateHoldMs: 60_000 });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state = ackedState('n11', L1, 1, EDS_TYPE_URL, ackedState('n11', L1, 1, CDS_TYPE_URL));
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  operations.reset();
  const sentAt = Date.now();
  for (const typeUrl of [CDS_TYPE_URL, EDS_TYPE_URL]) state = applySent(state, { typeUrl, version: { lineage: L1, seq: 2 }, now: sentAt });
  state = applyNack(state, { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 2 }, message: 'bad cluster', now: sentAt + 1 });
  recorder.enqueueEvent({ nodeId: 'n11', outcome: 'NACK', lineage: L1, seq: 2, typeUrl: CDS_TYPE_URL, at: sentAt + 1, message: 'bad cluster', ttl: TTL });
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyState']).toBe(1);
  expect((await stored(store, 'n11')).types[CDS_TYPE_URL]?.nack?.message).toBe('bad cluster');
  await recorder.close();
});

test('eventLogMode items (the format before the event log) still writes one item per event before the state', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store, { eventLogMode: 'items' });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  recorder.enqueueEvent(ackEvent('n4', L1, 1));
  recorder.enqueueEvent(ackEvent('n4', L1, 1, EDS_TYPE_URL));
  recorder.enqueueEnvoyState(ackedState('n4', L1, 1));
  await recorder.close();
  expect(operations.counts().byKind).toMatchObject({ EnvoyEvent: 2, EnvoyState: 1 });
  expect((await stored(store, 'n4')).unlogged).toBeUndefined();
  expect((await listed(store, 'n4')).map((e) => e.typeUrl)).toEqual([CDS_TYPE_URL, EDS_TYPE_URL]);
});

test('an event without a state change (STUCK) rides in a re-write of our own state; one for an unknown Envoy goes to a log item', async () => {
  const { store, operations } = await storeOn();
  const recorder = recorderOn(store);
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  const state = applySent(ackedState('n5', L1, 1), { typeUrl: CDS_TYPE_URL, version: { lineage: L1, seq: 2 }, now: 2_000 });
  recorder.enqueueEvent(ackEvent('n5', L1, 1));
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  const rev = (await stored(store, 'n5')).rev;
  const stuck: EnvoyEvent = { nodeId: 'n5', outcome: 'STUCK', lineage: L1, seq: 2, typeUrl: CDS_TYPE_URL, at: 12_000, sentAt: 2_000, ttl: TTL };
  recorder.enqueueEvent(stuck);
  operations.reset();
  await recorder.flushNow();
  const after = await stored(store, 'n5');
  expect(after.rev).toBe(rev + 1);
  expect(after.types[CDS_TYPE_URL]?.pending).toEqual({ seq: 2, sentAt: 2_000 });
  expect(operations.counts()).toMatchObject({ items: 1, byKind: { EnvoyState: 1 } });
  expect((await listed(store, 'n5')).find((e) => e.outcome === 'STUCK')).toEqual(stuck);

  recorder.enqueueEvent(ackEvent('never-seen', L1, 4));
  await recorder.close();
  expect((await store.getEnvoyState('never-seen')).status).toBe('missing');
  expect((await listed(store, 'never-seen')).map((e) => e.seq)).toEqual([4]);
  expect(recorder.stats()).toMatchObject({ queuedEvents: 0, eventsWritten: 3 });
});

test('a forgotten Envoy: refused while its state is queued, then its rev is dropped; its next write keeps the events the stored state carries', async () => {
  const { store } = await storeOn();
  const recorder = recorderOn(store);
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', Date.now()));
  let state = ackedState('n8', L1, 1);
  recorder.enqueueEvent(ackEvent('n8', L1, 1));
  recorder.enqueueEnvoyState(state);
  expect(recorder.forgetEnvoy('n8')).toBe(false); // its state and event are queued
  await recorder.flushNow(true);
  const rev = recorder.storedEnvoyRev('n8');
  expect(rev).toBeDefined();
  expect((await stored(store, 'n8')).unlogged?.map((e) => e.q)).toEqual([1]);

  expect(recorder.forgetEnvoy('n8')).toBe(true);
  expect(recorder.storedEnvoyRev('n8')).toBeUndefined();
  // It comes back: the write conflicts (the recorder no longer knows the rev), re-reads the stored
  // state and carries its event along with the new one.
  state = ackedState('n8', L1, 2, CDS_TYPE_URL, state);
  recorder.enqueueEvent(ackEvent('n8', L1, 2));
  recorder.enqueueEnvoyState(state);
  await recorder.close();
  const after = await stored(store, 'n8');
  expect(after.rev).toBe((rev ?? 0) + 1);
  expect(after.types[CDS_TYPE_URL]?.acked).toBe(2);
  expect((await listed(store, 'n8')).map((e) => e.seq)).toEqual([1, 2]);
});

test('the tracker forgets a long-disconnected Envoy only once the recorder has written its last state, and the recorder forgets it too', async () => {
  const { store } = await storeOn();
  const recorder = recorderOn(store);
  const hour = 3_600_000;
  const tracker = new EnvoyTracker({ recorder, logger: testLogger, clock: { now: () => Date.now() }, envoyHeartbeatMs: hour, lineageHeartbeatMs: hour, stuckCheckIntervalMs: hour, forgetDisconnectedMs: 60_000 });
  try {
    const t0 = Date.now();
    const opened = { node: { nodeId: 'n9', cluster: 'edge', metadata: {} }, group: 'edge', lineage: L1, protocol: 'sotw' as const, service: 'ads' as const };
    tracker.streamOpened({ ...opened, streamId: 's1', at: t0 });
    await recorder.flushNow(true);
    expect(recorder.storedEnvoyRev('n9')).toBe(0); // the first write of an item is rev 0
    tracker.streamClosed({ streamId: 's1', nodeId: 'n9', at: t0 + 1, reason: 'test' });
    // Past the forget time, but its DISCONNECTED state is still queued: both keep it.
    tracker.heartbeatEnvoys(t0 + 120_000);
    expect(tracker.envoyState('n9')?.status).toBe('DISCONNECTED');
    await recorder.flushNow(true);
    expect(recorder.storedEnvoyRev('n9')).toBe(1);
    tracker.heartbeatEnvoys(t0 + 120_000);
    expect(tracker.envoyState('n9')).toBeUndefined();
    expect(recorder.storedEnvoyRev('n9')).toBeUndefined();
    // It reconnects: a fresh tracked state, written over the stored one at the next rev.
    tracker.streamOpened({ ...opened, streamId: 's2', at: t0 + 130_000 });
    await recorder.flushNow(true);
    const back = await stored(store, 'n9');
    expect(back).toMatchObject({ status: 'CONNECTED', rev: 2 });
  } finally {
    tracker.stop();
    await recorder.close();
  }
});

test('demoted states (carryEventsInStoredState off): ACKs of a node with no state queued gather into one event-log item; a full item, a NACK and close() do not wait', async () => {
  const { store, operations } = await storeOn();
  let now = Date.now();
  const recorder = recorderOn(store, { clock: { now: () => now }, carryEventsInStoredState: false, orphanEventHoldMs: 1_000, eventLog: { maxCarriedEvents: 4, maxCarriedChars: 10_000 } });
  recorder.enqueueLineageState(lineageStateFor(L1, 'edge', now));
  recorder.enqueueEnvoyState(ackedState('n9', L1, 1));
  await recorder.flushNow();
  const rev = (await stored(store, 'n9')).rev;
  operations.reset();
  const at = (seq: number, typeUrl = CDS_TYPE_URL): EnvoyEvent => ({ ...ackEvent('n9', L1, seq, typeUrl), at: now });
  // One change wave's answers, type by type over several flushes: nothing written yet…
  recorder.enqueueEvent(at(2, CDS_TYPE_URL));
  await recorder.flushNow();
  now += 300;
  recorder.enqueueEvent(at(2, EDS_TYPE_URL));
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyEventLog'] ?? 0).toBe(0);
  // …until the first of them has waited the hold: then one item with both.
  now += 700;
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyEventLog']).toBe(1);
  expect((await listed(store, 'n9')).filter((e) => e.seq === 2).map((e) => e.typeUrl).sort()).toEqual([CDS_TYPE_URL, EDS_TYPE_URL].sort());
  // A full item's worth goes at once.
  operations.reset();
  for (const seq of [3, 4, 5, 6]) recorder.enqueueEvent(at(seq));
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyEventLog']).toBe(1);
  // A NACK goes at once.
  operations.reset();
  recorder.enqueueEvent({ ...at(7), outcome: 'NACK', message: 'bad cluster' });
  await recorder.flushNow();
  expect(operations.counts().byKind['EnvoyEventLog']).toBe(1);
  // close() writes what is waiting.
  operations.reset();
  recorder.enqueueEvent(at(8));
  await recorder.close();
  expect(operations.counts().byKind['EnvoyEventLog']).toBe(1);
  expect((await listed(store, 'n9')).map((e) => e.seq).sort((a, b) => a - b)).toEqual([2, 2, 3, 4, 5, 6, 7, 8]);
  // And never a STATE write for them.
  expect((await stored(store, 'n9')).rev).toBe(rev);
  expect(operations.counts().byKind['EnvoyState'] ?? 0).toBe(0);
});
