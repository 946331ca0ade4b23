// The store port's contract suite (written against the core's in-memory reference store) run against
// the real adapter on dynalite: the adapter must behave exactly like the reference.
import { DynamoEventStore } from '../../../common/store/dynamo-store';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs } from '../../support/store-logger';
import { describeEventStoreContract } from '../../unit/core/event-store-contract';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

describeEventStoreContract('DynamoEventStore on dynalite', async () => {
  const tableName = await fixture.newTable();
  const operations = fixture.operations();
  const store = new DynamoEventStore({
    tableName,
    operations,
    logger: captureLogs().logger,
    clock: { now: () => 0 },
  });
  return {
    store,
    putCorrupt: async (raw: Record<string, unknown>) => {
      await operations.put({ TableName: tableName, Item: raw });
    },
  };
});
