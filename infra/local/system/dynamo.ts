// Local DynamoDB (dynalite behind the capturing front, so every write reaches the table's stream)
// and the project's table. Readiness: ensureTable returned, i.e. the table is ACTIVE.
import type { Logger } from 'pino';
import { createStoreClients, ensureTable } from '../../../common/store';
import { startLocalDynamo, type DynaliteProcess, type LocalDynamo } from '../dynamo';
import type { Component } from './component';

export interface DynamoComponent extends Component {
  local: LocalDynamo;
  tableName: string;
  /** Environment every function handler reads (common/store's createEventStoreFromEnv). */
  storeEnv: Record<string, string>;
}

export async function startDynamoComponent(opts: { port: number; tableName: string; logger: Logger; dynaliteProcess?: DynaliteProcess }): Promise<DynamoComponent> {
  // TTL on: the gateway's events carry `ttl`, and the status function ends deleted objects with it.
  const local = await startLocalDynamo({
    port: opts.port,
    logger: opts.logger.child({ component: 'dynamo' }),
    ttl: { sweepIntervalMs: 5000 },
    // Default child: this component runs inside the whole-system process (docs/LOCAL-DYNAMO.md).
    dynaliteProcess: opts.dynaliteProcess ?? 'child',
  });
  const clients = createStoreClients({ region: local.region, endpoint: local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    await ensureTable(clients.client, opts.tableName);
  } catch (error) {
    await local.close();
    throw error;
  } finally {
    clients.client.destroy();
  }
  return {
    name: 'dynamo',
    local,
    tableName: opts.tableName,
    storeEnv: { TABLE_NAME: opts.tableName, AWS_REGION: local.region, DYNAMODB_ENDPOINT: local.endpoint },
    close: () => local.close(),
  };
}
