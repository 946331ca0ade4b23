// The recorder's version log against DynamoDB (dynalite): with --event-log-mode chunks, the answers of
// Envoys with no state write go into per-version chunks of their lineage. Every answer is found again
// from its Envoy's node id, a change wave costs a few chunk items however many Envoys answer, failed
// writes lose nothing and duplicate nothing, NACKs keep their message on the Envoy's own log, and a
// STATE write never gets ahead of the chunk holding its Envoy's answers.
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, newEnvoyState, type EnvoyEvent } from '../../../common/core';
import type { DocumentOperations } from '../../../common/store';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import { DynamoVersionLog } from '../../../common/store/version-log';
import { recentVersionLogAnswers } from '../../../functions/query/version-log-answers';
import { Recorder } from '../../../xds-gateway/tracking/recorder';
import { countingWrites, type CountingOperations } from '../../../bench/support/recorder-workload';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { testLogger } from './helpers';

const L1 = 'gw-a.boot1.edge';
const TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL];
const RETENTION_MS = 86_400_000;

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

interface Setup {
  store: DynamoEventStore;
  log: DynamoVersionLog;
  operations: CountingOperations;
  recorder: Recorder;
}

async function setup(wrap: (real: DocumentOperations) => DocumentOperations = (real) => real, limits?: { maxEntries: number; maxAgeMs: number }): Promise<Setup> {
  const tableName = await fixture.newTable();
  const operations = countingWrites(wrap(fixture.operations()));
  const batch = { sleep: async () => {}, baseDelayMs: 1, maxAttempts: 2 };
  const store = new DynamoEventStore({ tableName, operations, logger: testLogger, clock: { now: () => Date.now() }, batch });
  const log = new DynamoVersionLog({ tableName, operations, logger: testLogger, batch });
  const recorder = new Recorder({
    store,
    logger: testLogger,
    clock: { now: () => Date.now() },
    flushIntervalMs: 20,
    retryBaseMs: 1,
    retryMaxMs: 5,
    carryEventsInStoredState: false,
    versionLog: { log, retentionMs: RETENTION_MS, ...(limits === undefined ? {} : { limits }) },
  });
  return { store, log, operations, recorder };
}

function answer(nodeId: string, typeUrl: string, seq: number, at: number, outcome: EnvoyEvent['outcome'] = 'ACK'): EnvoyEvent {
  return { nodeId, outcome, lineage: L1, seq, typeUrl, at, ttl: Math.ceil((at + RETENTION_MS) / 1000), ...(outcome === 'NACK' ? { message: `rejected ${typeUrl} at ${seq}` } : {}) };
}

/** One change wave: every node answers every type at `seq`, spread over `spreadMs`. */
function wave(nodes: readonly string[], seq: number, base: number, spreadMs: number): EnvoyEvent[] {
  return nodes.flatMap((nodeId, index) => TYPES.map((typeUrl, t) => answer(nodeId, typeUrl, seq, base + Math.floor((index * spreadMs) / nodes.length) + t)));
}

function throttling(): Error {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $retryable: { throttling: true } });
}

/** Operations that record, in order, each stored chunk batch ('chunk') and each STATE put; the first `refusals.left` chunk batches are throttled. */
function orderRecording(order: string[], refusals = { left: 0 }): (real: DocumentOperations) => DocumentOperations {
  return (real) => ({
    ...real,
    batchWrite: async (input) => {
      const chunks = Object.values(input.RequestItems ?? {}).flat().filter((request) => request.PutRequest?.Item?.['kind'] === 'VersionLogChunk').length;
      if (chunks > 0 && refusals.left > 0) {
        refusals.left--;
        throw throttling();
      }
      if (chunks > 0) order.push('chunk');
      return real.batchWrite(input);
    },
    put: async (input) => {
      if (input.Item?.['kind'] === 'EnvoyState') order.push(`state:${String(input.Item['nodeId'])}`);
      return real.put(input);
    },
  });
}

async function answersOf(log: DynamoVersionLog, nodeId: string): Promise<EnvoyEvent[]> {
  return recentVersionLogAnswers(log, nodeId, TYPES, 100);
}

function identity(event: Pick<EnvoyEvent, 'typeUrl' | 'seq' | 'outcome' | 'at'>): string {
  return `${event.typeUrl}#${event.seq}#${event.outcome}#${event.at}`;
}

test('a wave of 300 Envoys costs 4 chunk items (plus one membership per Envoy, once); every answer is found from its node id', async () => {
  const { log, operations, recorder } = await setup();
  const nodes = Array.from({ length: 300 }, (_, i) => `vlog-envoy-${i}`);
  const base = Date.now();
  const first = wave(nodes, 5, base, 200);
  for (const event of first) recorder.enqueueEvent(event);
  await recorder.whenIdle();
  expect(recorder.stats().queuedEvents).toBe(0);
  expect(recorder.stats().versionLog).toMatchObject({ chunksWritten: 4, answersWritten: 1200, membersWritten: 300, answersPending: 0 });
  expect(operations.counts().byKind).toEqual({ VersionLogMember: 300, VersionLogChunk: 4 });

  // The second wave: 4 chunk items, no membership.
  operations.reset();
  const second = wave(nodes, 6, base + 5_000, 200);
  for (const event of second) recorder.enqueueEvent(event);
  await recorder.whenIdle();
  expect(operations.counts().byKind).toEqual({ VersionLogChunk: 4 });

  for (const nodeId of [nodes[0], nodes[137], nodes[299]] as string[]) {
    const expected = [...first, ...second].filter((event) => event.nodeId === nodeId).map(identity).sort();
    expect((await answersOf(log, nodeId)).map(identity).sort()).toEqual(expected);
  }
  await recorder.close();
});

test('chunks are cut at 1,000 answers or the age limit, and close() writes the open ones at once', async () => {
  const { log, recorder } = await setup((real) => real, { maxEntries: 100, maxAgeMs: 3_600_000 });
  const nodes = Array.from({ length: 60 }, (_, i) => `cut-envoy-${i}`);
  // 60 answers per type: under the 100-entry cut, and the age limit is an hour away.
  for (const event of wave(nodes, 9, Date.now(), 50)) recorder.enqueueEvent(event);
  await recorder.flushNow();
  expect(recorder.stats().versionLog).toMatchObject({ chunksWritten: 0, answersPending: 240 });
  expect(recorder.stats().queuedEvents).toBe(240);
  // 50 more nodes on one type fill the CDS chunk past 100 entries: cut without waiting.
  for (let i = 0; i < 50; i++) recorder.enqueueEvent(answer(`cut-extra-${i}`, CDS_TYPE_URL, 9, Date.now()));
  await recorder.flushNow();
  expect(recorder.stats().versionLog).toMatchObject({ chunksWritten: 1, answersWritten: 100 });
  await recorder.close();
  expect(recorder.stats().versionLog).toMatchObject({ answersPending: 0, answersWritten: 290 });
  expect(recorder.stats().queuedEvents).toBe(0);
  expect((await answersOf(log, 'cut-envoy-7')).map((event) => event.typeUrl).sort()).toEqual([...TYPES].sort());
});

test.each([
  ['memberships', { VersionLogMember: 4, VersionLogChunk: 0 }],
  ['chunks', { VersionLogMember: 0, VersionLogChunk: 3 }],
])('throttled %s are retried: nothing lost, nothing twice, no chunk ahead of its memberships', async (_what, refused) => {
  // Refusals past the store's own retry (2 attempts per call), so the recorder must keep the
  // memberships or the chunks and write them with a later flush.
  const refusals: Record<string, number> = { ...refused };
  const stored: string[] = [];
  const { log, recorder } = await setup((real) => ({
    ...real,
    batchWrite: async (input) => {
      const kinds = new Set(Object.values(input.RequestItems ?? {}).flatMap((requests) => requests.map((request) => String(request.PutRequest?.Item?.['kind']))));
      for (const kind of kinds) {
        if ((refusals[kind] ?? 0) === 0) continue;
        refusals[kind] = (refusals[kind] ?? 0) - 1;
        throw throttling();
      }
      stored.push(...kinds);
      return real.batchWrite(input);
    },
  }), { maxEntries: 1000, maxAgeMs: 0 });
  const nodes = Array.from({ length: 40 }, (_, i) => `throttled-envoy-${i}`);
  const events = wave(nodes, 3, Date.now(), 100);
  for (const event of events) recorder.enqueueEvent(event);
  await recorder.whenIdle();
  expect(refusals).toEqual({ VersionLogMember: 0, VersionLogChunk: 0 });
  // No chunk is stored before the memberships it names: an answer is never in the log unfindable.
  expect(stored.indexOf('VersionLogChunk')).toBeGreaterThan(stored.lastIndexOf('VersionLogMember'));
  expect(recorder.stats().queuedEvents).toBe(0);
  expect(recorder.stats().failedAttempts).toBeGreaterThan(0);
  expect(recorder.stats().versionLog?.answersWritten).toBe(events.length);
  for (const nodeId of nodes) {
    const found = (await answersOf(log, nodeId)).map(identity).sort();
    expect(found).toEqual(events.filter((event) => event.nodeId === nodeId).map(identity).sort());
  }
  await recorder.close();
});

test("a NACK keeps its message on the Envoy's own log; the answers around it go to chunks", async () => {
  const { store, log, recorder } = await setup();
  const at = Date.now();
  recorder.enqueueEvent(answer('nacker', CDS_TYPE_URL, 4, at));
  recorder.enqueueEvent(answer('nacker', RDS_TYPE_URL, 4, at + 1, 'NACK'));
  recorder.enqueueEvent(answer('nacker', RDS_TYPE_URL, 4, at + 2, 'STUCK'));
  await recorder.close();
  const own = (await store.listEnvoyEvents('nacker')).items;
  expect(own.map((event) => [event.outcome, event.typeUrl, event.message])).toEqual([['NACK', RDS_TYPE_URL, `rejected ${RDS_TYPE_URL} at 4`]]);
  expect((await answersOf(log, 'nacker')).map((event) => [event.outcome, event.typeUrl]).sort()).toEqual([
    ['ACK', CDS_TYPE_URL],
    ['STUCK', RDS_TYPE_URL],
  ]);
});

test("a STATE write of an Envoy goes after the chunk holding its answers, not before", async () => {
  const order: string[] = [];
  const { log, recorder } = await setup(orderRecording(order), { maxEntries: 1000, maxAgeMs: 3_600_000 });
  const at = Date.now();
  // Answers of two Envoys open in an hour-long chunk would wait; the state of one of them cuts it.
  for (const nodeId of ['ordered-a', 'ordered-b']) recorder.enqueueEvent(answer(nodeId, CDS_TYPE_URL, 2, at));
  await recorder.flushNow();
  expect(order).toEqual([]);
  const state = newEnvoyState({ identity: { nodeId: 'ordered-a', cluster: 'edge', metadata: {} }, group: 'edge', lineage: L1, now: at + 5 });
  recorder.enqueueEnvoyState(state);
  await recorder.flushNow();
  expect(order.slice(0, 2)).toEqual(['chunk', 'state:ordered-a']);
  expect((await answersOf(log, 'ordered-a')).map((event) => event.typeUrl)).toEqual([CDS_TYPE_URL]);
  await recorder.close();
});

test('a STATE waits while the chunk holding its answers cannot be stored (throttled past the retries)', async () => {
  const order: string[] = [];
  const chunkRefusals = { left: 4 };
  const { log, recorder } = await setup(orderRecording(order, chunkRefusals), { maxEntries: 1000, maxAgeMs: 3_600_000 });
  const at = Date.now();
  recorder.enqueueEvent(answer('waiting-a', CDS_TYPE_URL, 2, at));
  await recorder.flushNow();
  recorder.enqueueEnvoyState(newEnvoyState({ identity: { nodeId: 'waiting-a', cluster: 'edge', metadata: {} }, group: 'edge', lineage: L1, now: at + 5 }));
  await recorder.flushNow();
  // The chunk was refused (twice per flush: the store's own retry): the state waited with it.
  expect(order).toEqual([]);
  await recorder.whenIdle();
  expect(chunkRefusals.left).toBe(0);
  expect(order).toEqual(['chunk', 'state:waiting-a']);
  expect((await answersOf(log, 'waiting-a')).map((event) => event.typeUrl)).toEqual([CDS_TYPE_URL]);
  await recorder.close();
});
