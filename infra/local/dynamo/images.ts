// Key schemas and item images read from dynalite by the front (always ConsistentRead: the image must
// be the item as the write left it, not a possibly older copy).
import { z } from 'zod';
import { canonicalJson } from './stream-record';
import { attributeMapSchema, type AttributeMap, type WireClient } from './wire';

export interface KeySchema {
  partitionKey: string;
  sortKey: string | undefined;
}

const describeTableOutput = z.object({
  Table: z.object({
    KeySchema: z.array(z.object({ AttributeName: z.string(), KeyType: z.enum(['HASH', 'RANGE']) })),
  }),
});

const batchGetOutput = z.object({
  Responses: z.record(z.string(), z.array(attributeMapSchema)).optional(),
  UnprocessedKeys: z
    .record(z.string(), z.object({ Keys: z.array(attributeMapSchema) }).passthrough())
    .optional(),
});

/** Caches each table's key schema; CreateTable/DeleteTable through the front invalidate it. */
export class KeySchemaCache {
  private readonly schemas = new Map<string, Promise<KeySchema | undefined>>();

  constructor(private readonly wire: WireClient) {}

  /** The table's key schema, or undefined when the table does not exist (the write will fail anyway). */
  get(tableName: string): Promise<KeySchema | undefined> {
    let schema = this.schemas.get(tableName);
    if (!schema) {
      schema = this.describe(tableName);
      this.schemas.set(tableName, schema);
      // A missing table or a failed look-up is not cached: the next request asks again.
      const forget = (): void => {
        if (this.schemas.get(tableName) === schema) this.schemas.delete(tableName);
      };
      schema.then((s) => (s ? undefined : forget()), forget);
    }
    return schema;
  }

  invalidate(tableName: string): void {
    this.schemas.delete(tableName);
  }

  private async describe(tableName: string): Promise<KeySchema | undefined> {
    let output: unknown;
    try {
      output = await this.wire.call('DescribeTable', { TableName: tableName });
    } catch {
      return undefined;
    }
    const parsed = describeTableOutput.parse(output);
    const hash = parsed.Table.KeySchema.find((k) => k.KeyType === 'HASH');
    if (!hash) throw new Error(`table ${tableName} has no HASH key`);
    return {
      partitionKey: hash.AttributeName,
      sortKey: parsed.Table.KeySchema.find((k) => k.KeyType === 'RANGE')?.AttributeName,
    };
  }
}

/** The key attributes of an item (or of a Key), or undefined when one is missing. */
export function extractKey(schema: KeySchema, source: AttributeMap): AttributeMap | undefined {
  const key: AttributeMap = {};
  for (const name of [schema.partitionKey, schema.sortKey]) {
    if (name === undefined) continue;
    const value = source[name];
    if (value === undefined) return undefined;
    key[name] = value;
  }
  return key;
}

export function keyId(tableName: string, key: AttributeMap): string {
  return `${tableName}\u0000${canonicalJson(key)}`;
}

export interface ItemRef {
  tableName: string;
  key: AttributeMap;
  id: string;
}

// BatchGetItem takes at most 100 keys per call.
const BATCH_GET_MAX_KEYS = 100;

/** Reads the current images of the given items (undefined = no such item), keyed by `ItemRef.id`. */
export async function readImages(
  wire: WireClient,
  schemas: KeySchemaCache,
  items: ItemRef[],
): Promise<Map<string, AttributeMap | undefined>> {
  const images = new Map<string, AttributeMap | undefined>();
  for (const item of items) images.set(item.id, undefined);
  for (let i = 0; i < items.length; i += BATCH_GET_MAX_KEYS) {
    let pending: Record<string, { Keys: AttributeMap[]; ConsistentRead: true }> = {};
    for (const item of items.slice(i, i + BATCH_GET_MAX_KEYS)) {
      const entry = (pending[item.tableName] ??= { Keys: [], ConsistentRead: true });
      entry.Keys.push(item.key);
    }
    while (Object.keys(pending).length > 0) {
      const output = batchGetOutput.parse(await wire.call('BatchGetItem', { RequestItems: pending }));
      for (const [tableName, found] of Object.entries(output.Responses ?? {})) {
        const schema = await schemas.get(tableName);
        if (!schema) continue;
        for (const image of found) {
          const key = extractKey(schema, image);
          if (key) images.set(keyId(tableName, key), image);
        }
      }
      const next: typeof pending = {};
      for (const [tableName, unprocessed] of Object.entries(output.UnprocessedKeys ?? {})) {
        if (unprocessed.Keys.length > 0) next[tableName] = { Keys: unprocessed.Keys, ConsistentRead: true };
      }
      pending = next;
    }
  }
  return images;
}
