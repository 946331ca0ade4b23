// Store invariants under faults and concurrency, against real dynalite:
// - nothing lost: whatever pattern of UnprocessedItems DynamoDB returns, every item either lands or
//   comes back to the caller, never both, never neither (brief invariant 5);
// - no lost updates: concurrent read-modify-write loops over compare-and-set on rev add up exactly.
import fc from 'fast-check';

import { LDS_TYPE_URL, type EnvoyState } from '../../../common/core';
import { batchPut, UnwrittenItemsError, type KeyedItem } from '../../../common/store/batch-write';
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import { iteratePages } from '../../../common/store/listing';
import type { DocumentOperations } from '../../../common/store';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs } from '../../support/store-logger';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

/** Each BatchWriteItem call writes only `schedule[call]` of its requests (then all, once exhausted). */
function scheduledFaults(real: DocumentOperations, schedule: readonly number[]): DocumentOperations {
  let call = 0;
  return {
    ...real,
    async batchWrite(input) {
      const limit = schedule[call++];
      if (limit === undefined) return real.batchWrite(input);
      const [table, requests] = Object.entries(input.RequestItems ?? {})[0] ?? ['', []];
      const keep = Math.min(limit, requests.length);
      if (keep > 0) await real.batchWrite({ RequestItems: { [table]: requests.slice(0, keep) } });
      return { $metadata: {}, UnprocessedItems: keep < requests.length ? { [table]: requests.slice(keep) } : {} };
    },
  };
}

test('nothing lost: under any UnprocessedItems pattern, stored + returned = input, disjoint', async () => {
  const ops = fixture.operations();
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 80 }),
      fc.array(fc.integer({ min: 0, max: 25 }), { maxLength: 30 }),
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 4 }),
      async (count, schedule, maxAttempts, concurrency) => {
        const tableName = await fixture.newTable();
        const items: KeyedItem[] = Array.from({ length: count }, (_, i) => ({ pk: 'P', sk: `S#${String(i).padStart(3, '0')}`, i }));
        let returned: KeyedItem[] = [];
        try {
          await batchPut(scheduledFaults(ops, schedule), items, { tableName, maxAttempts, concurrency, sleep: async () => {} });
        } catch (error) {
          if (!(error instanceof UnwrittenItemsError)) throw error;
          returned = error.unwritten;
        }
        const stored: string[] = [];
        let start: Record<string, unknown> | undefined;
        do {
          const page = await ops.query({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': 'P' },
            ExclusiveStartKey: start,
          });
          stored.push(...(page.Items ?? []).map((item) => String(item.sk)));
          start = page.LastEvaluatedKey;
        } while (start !== undefined);
        const returnedKeys = returned.map((item) => item.sk);
        expect(new Set(returnedKeys).size).toBe(returnedKeys.length);
        expect(returnedKeys.filter((sk) => stored.includes(sk))).toEqual([]);
        expect([...stored, ...returnedKeys].sort()).toEqual(items.map((item) => item.sk).sort());
      },
    ),
    { numRuns: 25 },
  );
});

test('no lost updates: concurrent compare-and-set writers add up exactly', async () => {
  const tableName = await fixture.newTable();
  const store = new DynamoEventStore({
    tableName,
    operations: fixture.operations(),
    logger: captureLogs().logger,
    clock: { now: () => 0 },
  });
  const initial: EnvoyState = {
    nodeId: 'envoy-1',
    cluster: 'edge',
    group: 'edge',
    metadata: {},
    lineage: 'a.b.c',
    status: 'CONNECTED',
    connectedAt: 0,
    lastSeenAt: 0,
    types: { [LDS_TYPE_URL]: { lineage: 'a.b.c', subscribed: true } },
    rev: 0,
  };
  expect(await store.updateEnvoyState(initial, undefined)).toEqual({ ok: true });

  const writers = 4;
  const incrementsEach = 10;
  let conflicts = 0;
  // Each increment: read, bump lastSeenAt by one, write iff rev unchanged; on conflict start over
  // from the value the conflict returned (the port's contract).
  async function writer(firstRead: Awaited<ReturnType<typeof store.getEnvoyState>>): Promise<void> {
    let read = firstRead;
    for (let done = 0; done < incrementsEach; ) {
      if (read.status !== 'found') throw new Error(`unexpected read ${read.status}`);
      const current = read.value;
      const next = { ...current, lastSeenAt: current.lastSeenAt + 1, rev: current.rev + 1 };
      const result = await store.updateEnvoyState(next, current.rev);
      if (result.ok) {
        done++;
        read = { status: 'found', value: next };
      } else {
        conflicts++;
        read = result.current;
      }
    }
  }
  // Every writer reads before any writes, so their first writes all race on rev 0.
  const firstReads = await Promise.all(Array.from({ length: writers }, () => store.getEnvoyState('envoy-1')));
  await Promise.all(firstReads.map((read) => writer(read)));
  const final = await store.getEnvoyState('envoy-1');
  expect(final).toMatchObject({ status: 'found', value: { lastSeenAt: writers * incrementsEach, rev: writers * incrementsEach } });
  // Of the first round on rev 0, exactly one write can win; the others must have been refused.
  expect(conflicts).toBeGreaterThanOrEqual(writers - 1);
});

test('the listing iterator returns every item exactly once across pages of any size', async () => {
  const tableName = await fixture.newTable();
  const store = new DynamoEventStore({
    tableName,
    operations: fixture.operations(),
    logger: captureLogs().logger,
    clock: { now: () => 0 },
  });
  const events = Array.from({ length: 37 }, (_, i) => ({
    nodeId: 'n', outcome: 'ACK' as const, lineage: 'a.b.c', seq: i, typeUrl: LDS_TYPE_URL, at: i, ttl: 1,
  }));
  await store.putEvents(events);
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.boolean(), async (limit, descending) => {
      const seqs: number[] = [];
      for await (const event of iteratePages((cursor) =>
        store.listEnvoyEvents('n', cursor === undefined ? { limit, descending } : { limit, descending, cursor }),
      )) {
        seqs.push(event.seq);
      }
      const expected = events.map((event) => event.seq);
      expect(seqs).toEqual(descending ? [...expected].reverse() : expected);
    }),
    { numRuns: 15 },
  );
});
