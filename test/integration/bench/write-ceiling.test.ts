// The write-ceiling measurement on a small scale against a real local DynamoDB (front + dynalite):
// every state is written and captured once, the result adds up; never how fast.
import pino from 'pino';

import { openTable } from '../../../common/store';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { measureWriteCeiling } from '../../../bench/write-ceiling';

describe('measureWriteCeiling (local front, writer in its own process)', () => {
  let local: LocalDynamo;
  beforeAll(async () => {
    local = await startLocalDynamo({ logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await local.close();
  });

  it('writes warm-up and timed states once each through the front and reports per-write CPU', async () => {
    const table = openTable({ tableName: 'ceiling-test', client: { region: local.region, endpoint: local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }, logger: pino({ level: 'silent' }) });
    const { store } = table;
    try {
      await table.ensureTable();
      const recordsBefore = local.stats.records;
      const result = await measureWriteCeiling({ endpoint: local.endpoint, tableName: 'ceiling-test', writes: 30, warmup: 10, concurrency: 8, frontInThisProcess: true });
      expect(result).toMatchObject({ writes: 30, concurrency: 8 });
      expect(result.writesPerSecond).toBeGreaterThan(0);
      expect(result.cpuMsPerWrite.writer).toBeGreaterThan(0);
      expect(result.cpuMsPerWrite.front).toBeGreaterThan(0);
      expect(result.cpuMsPerWrite.dynalite).toBeUndefined(); // dynalite runs inline here: no pid
      // 40 new items (10 warm-up + 30 timed), each captured as exactly one stream record.
      expect(local.stats.records - recordsBefore).toBe(40);
      let states = 0;
      let cursor: string | undefined;
      do {
        const page = await store.listEnvoyStates(cursor === undefined ? {} : { cursor });
        states += page.items.filter((state) => state.programmedThrough === 4 && state.unlogged?.length === 4).length;
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      expect(states).toBe(40);
    } finally {
      table.close();
    }
  }, 60_000);

  it('fails with the writer\'s reason when the table does not exist', async () => {
    await expect(measureWriteCeiling({ endpoint: local.endpoint, tableName: 'no-such-table', writes: 5, warmup: 0 })).rejects.toThrow(/the writer failed: .*(non-existent table|not found)/i);
  }, 60_000);
});
