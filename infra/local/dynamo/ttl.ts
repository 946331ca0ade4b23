// Local TTL: dynalite has none (UpdateTimeToLive is unknown to it). A sweeper periodically deletes
// items whose TTL attribute (epoch seconds, a Number) lies in the past. Deletes go through the
// front's capture path, so they stream as REMOVE records marked with the DynamoDB service principal,
// as AWS marks TTL deletions. Like AWS, it deletes some time after expiry, not at the second.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Front } from './front';
import { extractKey, KeySchemaCache } from './images';
import { attributeMapSchema, WireClient } from './wire';

export interface TtlSweeper {
  /** Runs one sweep now; resolves with the number of items deleted. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

const listTablesOutput = z.object({ TableNames: z.array(z.string()), LastEvaluatedTableName: z.string().optional() });
const scanOutput = z.object({
  Items: z.array(attributeMapSchema).optional(),
  LastEvaluatedKey: attributeMapSchema.optional(),
});

export function startTtlSweeper(opts: {
  front: Front;
  dynalite: { host: string; port: number };
  attributeName: string;
  sweepIntervalMs: number;
  tables?: string[];
  now: () => number;
  logger: Logger;
}): TtlSweeper {
  const wire = new WireClient(opts.dynalite.host, opts.dynalite.port);
  const schemas = new KeySchemaCache(wire);
  let running: Promise<number> | undefined;
  let stopped = false;

  async function tableNames(): Promise<string[]> {
    if (opts.tables) return opts.tables;
    const names: string[] = [];
    let start: string | undefined;
    do {
      const out = listTablesOutput.parse(await wire.call('ListTables', start ? { ExclusiveStartTableName: start } : {}));
      names.push(...out.TableNames);
      start = out.LastEvaluatedTableName;
    } while (start);
    return names;
  }

  async function sweepTable(tableName: string, nowSeconds: number): Promise<number> {
    const schema = await schemas.get(tableName);
    if (!schema) return 0;
    const expired = { ExpressionAttributeNames: { '#ttl': opts.attributeName }, ExpressionAttributeValues: { ':now': { N: String(nowSeconds) } } };
    let deleted = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = scanOutput.parse(
        await wire.call('Scan', { TableName: tableName, FilterExpression: '#ttl < :now', ConsistentRead: true, ...expired, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
      );
      for (const item of out.Items ?? []) {
        const key = extractKey(schema, item);
        if (!key) continue;
        // Conditional: an item whose TTL was pushed forward meanwhile must survive.
        const removed = await opts.front.deleteExpired(tableName, key, { TableName: tableName, Key: key, ConditionExpression: '#ttl < :now', ...expired });
        if (removed) deleted++;
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey && !stopped);
    return deleted;
  }

  async function sweep(): Promise<number> {
    const nowSeconds = Math.floor(opts.now() / 1000);
    let deleted = 0;
    for (const tableName of await tableNames()) {
      try {
        deleted += await sweepTable(tableName, nowSeconds);
      } catch (err) {
        opts.logger.warn({ err, tableName }, 'TTL sweep of a table failed; next sweep retries');
      }
    }
    return deleted;
  }

  function sweepOnce(): Promise<number> {
    running ??= sweep().finally(() => {
      running = undefined;
    });
    return running;
  }

  const timer = setInterval(() => {
    sweepOnce().catch((err: unknown) => opts.logger.warn({ err }, 'TTL sweep failed'));
  }, opts.sweepIntervalMs);
  timer.unref();

  return {
    sweep: sweepOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => 0);
      wire.close();
    },
  };
}
