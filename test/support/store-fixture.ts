// A dynalite + table + clients fixture for the store tests: one server per test file, one table
// per test (fresh state, no cross-test coupling), everything closed in afterAll.
import { randomUUID } from 'node:crypto';

import { createStoreClients, type StoreClients, type StoreClientSeams } from '../../common/store/client';
import { ensureTable } from '../../common/store/table';
import { startDynalite, type RunningDynalite } from './store-dynalite';

export interface StoreFixture {
  endpoint: string;
  /** Clients (optionally with an HTTP fault seam) on the shared server; destroyed in `close`. */
  clients(seams?: StoreClientSeams, maxAttempts?: number): StoreClients;
  /** A fresh ACTIVE table with a unique name. */
  newTable(): Promise<string>;
  close(): Promise<void>;
}

export async function startStoreFixture(): Promise<StoreFixture> {
  const dynalite: RunningDynalite = await startDynalite();
  const created: StoreClients[] = [];
  const clients = (seams: StoreClientSeams = {}, maxAttempts = 5): StoreClients => {
    const built = createStoreClients(
      {
        region: 'us-east-1',
        endpoint: dynalite.endpoint,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        maxAttempts,
      },
      seams,
    );
    created.push(built);
    return built;
  };
  const admin = clients();
  return {
    endpoint: dynalite.endpoint,
    clients,
    async newTable() {
      const name = `store-test-${randomUUID().slice(0, 8)}`;
      await ensureTable(admin.client, name);
      return name;
    },
    async close() {
      for (const built of created) built.client.destroy();
      await dynalite.close();
    },
  };
}
