import { InMemoryEventStore } from './in-memory-store';
import { describeEventStoreContract } from './event-store-contract';

describeEventStoreContract('in-memory reference', async () => {
  const store = new InMemoryEventStore();
  return { store, putCorrupt: async (raw) => store.putRaw(raw) };
});
