// Local DynamoDB (dynalite behind the capturing front, so every write reaches the table's stream)
// and the project's table. Readiness: ensureTable returned, i.e. the table is ACTIVE.
import type { Logger } from 'pino';
import { openTable } from '../../../common/store';
import { startLocalDynamo, type DynaliteProcess, type LocalDynamo } from '../dynamo';
import type { Component } from './component';

export interface DynamoComponent extends Component {
  local: LocalDynamo;
  tableName: string;
  /** Environment every function handler reads (common/store's openTableFromEnv). */
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
  // This is the local system's first AWS SDK client, and the stand-ins run on the developer's Node:
  // on Node < 22 the SDK would warn, once per process, that its releases after January 2027 need
  // Node 22, which says nothing about the version package-lock.json pins (README, "The two
  // commands"). So the SDK's own switch turns that off here, unless the user set it; the gateway
  // child gets it in gateway.ts. Deployed code never sets it (Lambda runs nodejs24.x).
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const table = openTable({ tableName: opts.tableName, logger: opts.logger, client: { region: local.region, endpoint: local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } });
  try {
    await table.ensureTable();
  } catch (error) {
    await local.close();
    throw error;
  } finally {
    table.close();
  }
  return {
    name: 'dynamo',
    local,
    tableName: opts.tableName,
    storeEnv: { TABLE_NAME: opts.tableName, AWS_REGION: local.region, DYNAMODB_ENDPOINT: local.endpoint },
    close: () => local.close(),
  };
}
