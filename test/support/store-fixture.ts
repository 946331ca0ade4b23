// A dynalite + table + connections fixture for the store tests: one server per test file, one table
// per test (fresh state, no cross-test coupling), everything closed in afterAll.
import { randomUUID } from 'node:crypto';

import { connectStore, openTable, type DocumentOperations, type StoreConnection, type StoreClientSeams, type StoreLogger, type TableAccess } from '../../common/store';
import { startDynalite, type RunningDynalite } from './store-dynalite';

export interface StoreFixture {
  endpoint: string;
  /**
   * The store's document operations on a connection of their own (optionally with an HTTP fault seam)
   * to the shared server, for tests that build an adapter on them or wrap them; closed in `close`.
   */
  operations(seams?: StoreClientSeams, maxAttempts?: number): DocumentOperations;
  /** The table's ports on the shared server (the table need not exist yet); closed in `close`. */
  openTable(tableName: string, logger: StoreLogger): TableAccess;
  /** A fresh ACTIVE table with a unique name. */
  newTable(): Promise<string>;
  close(): Promise<void>;
}

export async function startStoreFixture(): Promise<StoreFixture> {
  const dynalite: RunningDynalite = await startDynalite();
  const clientConfig = (maxAttempts: number) => ({
    region: 'us-east-1',
    endpoint: dynalite.endpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts,
  });
  const opened: { close(): void }[] = [];
  const connect = (seams: StoreClientSeams = {}, maxAttempts = 5): StoreConnection => {
    const connection = connectStore(clientConfig(maxAttempts), seams);
    opened.push(connection);
    return connection;
  };
  const admin = connect();
  return {
    endpoint: dynalite.endpoint,
    operations: (seams, maxAttempts) => connect(seams, maxAttempts).operations,
    openTable(tableName, logger) {
      const table = openTable({ tableName, client: clientConfig(5), logger });
      opened.push(table);
      return table;
    },
    async newTable() {
      const name = `store-test-${randomUUID().slice(0, 8)}`;
      await admin.ensureTable(name);
      return name;
    },
    async close() {
      for (const connection of opened) connection.close();
      await dynalite.close();
    },
  };
}
