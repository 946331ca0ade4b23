// Parses the write operations the front captures (validation at the edge: a body that does not parse
// is forwarded untouched and dynalite answers it with its own ValidationException).
import { z } from 'zod';
import { attributeMapSchema, type AttributeMap } from './wire';

export const CAPTURED_WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'] as const;
export type CapturedWrite = (typeof CAPTURED_WRITES)[number];

export function isCapturedWrite(operation: string): operation is CapturedWrite {
  return (CAPTURED_WRITES as readonly string[]).includes(operation);
}

/** One item a write touches: the table and either the full item (Put) or its key (Update/Delete). */
export interface WriteTarget {
  tableName: string;
  /** Attributes that contain the key (a PutItem's item or a Key). */
  keySource: AttributeMap;
}

const tableName = z.string().min(1);

const putItemSchema = z.object({ TableName: tableName, Item: attributeMapSchema });
const keyedSchema = z.object({ TableName: tableName, Key: attributeMapSchema });
const batchWriteSchema = z.object({
  RequestItems: z.record(
    z.string().min(1),
    z.array(
      z.object({
        PutRequest: z.object({ Item: attributeMapSchema }).optional(),
        DeleteRequest: z.object({ Key: attributeMapSchema }).optional(),
      }),
    ),
  ),
});

/** The items a write operation touches, or undefined when the body is not a well-formed request. */
export function writeTargets(operation: CapturedWrite, body: unknown): WriteTarget[] | undefined {
  switch (operation) {
    case 'PutItem': {
      const parsed = putItemSchema.safeParse(body);
      return parsed.success ? [{ tableName: parsed.data.TableName, keySource: parsed.data.Item }] : undefined;
    }
    case 'UpdateItem':
    case 'DeleteItem': {
      const parsed = keyedSchema.safeParse(body);
      return parsed.success ? [{ tableName: parsed.data.TableName, keySource: parsed.data.Key }] : undefined;
    }
    case 'BatchWriteItem': {
      const parsed = batchWriteSchema.safeParse(body);
      if (!parsed.success) return undefined;
      const targets: WriteTarget[] = [];
      for (const [table, requests] of Object.entries(parsed.data.RequestItems)) {
        for (const request of requests) {
          const source = request.PutRequest?.Item ?? request.DeleteRequest?.Key;
          if (!source) return undefined;
          targets.push({ tableName: table, keySource: source });
        }
      }
      return targets;
    }
  }
}

/** Table names a request names (for fault hooks and schema cache invalidation). */
export function tableNamesOf(body: unknown): string[] {
  if (body === null || typeof body !== 'object') return [];
  const record = body as Record<string, unknown>;
  if (typeof record['TableName'] === 'string') return [record['TableName']];
  const requestItems = record['RequestItems'];
  if (requestItems !== null && typeof requestItems === 'object') return Object.keys(requestItems);
  return [];
}

export interface SplitBatchWrite {
  /** The request with only the entries to apply. */
  processed: Record<string, unknown>;
  /** The entries to report back as UnprocessedItems, per table (as the client sent them). */
  unprocessed: Record<string, unknown[]>;
  processedCount: number;
}

/**
 * Splits a BatchWriteItem body for the "unprocessed items" fault: entries for which `leaveOut`
 * says so are not applied and are returned in UnprocessedItems, as DynamoDB does under throttling.
 */
export function splitBatchWrite(body: unknown, leaveOut: () => boolean): SplitBatchWrite | undefined {
  if (!batchWriteSchema.safeParse(body).success) return undefined;
  const raw = body as { RequestItems: Record<string, unknown[]> };
  const kept: Record<string, unknown[]> = {};
  const unprocessed: Record<string, unknown[]> = {};
  let processedCount = 0;
  for (const [table, entries] of Object.entries(raw.RequestItems)) {
    for (const entry of entries) {
      const target = leaveOut() ? unprocessed : kept;
      (target[table] ??= []).push(entry);
      if (target === kept) processedCount++;
    }
  }
  return { processed: { ...raw, RequestItems: kept }, unprocessed, processedCount };
}
