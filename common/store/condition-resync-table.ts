// The table side of resync's condition pass (functions/lib/resync-conditions.ts): a paged, filtered
// Scan of the OBJECT generation items that have a written condition and are not marked deleted, and
// the one cursor item saying where the last run stopped.
import type { ItemRead } from '../core';
import type { DocumentOperations } from './operations';
import { ConditionResyncCursorItemSchema, ScanKeySchema, toConditionResyncCursorItem, type ConditionResyncCursor } from './items';
import { describeZodIssues } from './errors';
import { ATTR, CONDITION_RESYNC_CURSOR_KEY, ITEM_KIND } from './table-layout';
import type { ConditionResyncTable } from './table-ports';

export function dynamoConditionResyncTable(operations: DocumentOperations, tableName: string): ConditionResyncTable {
  return {
    async readCursor(): Promise<ItemRead<ConditionResyncCursor>> {
      const read = await operations.get({ TableName: tableName, Key: CONDITION_RESYNC_CURSOR_KEY, ConsistentRead: true });
      if (read.Item === undefined) return { status: 'missing' };
      const parsed = ConditionResyncCursorItemSchema.safeParse(read.Item);
      if (!parsed.success) return { status: 'corrupt', error: describeZodIssues(parsed.error.issues) };
      return { status: 'found', value: { startKey: parsed.data.startKey, updatedAt: parsed.data.updatedAt } };
    },
    async saveCursor(startKey, now) {
      await operations.put({ TableName: tableName, Item: toConditionResyncCursorItem(startKey, now) });
    },
    async scanConditionedGenerations({ startKey, limit }) {
      const page = await operations.scan({
        TableName: tableName,
        Limit: limit,
        ConsistentRead: true,
        // Only generations we have written a condition for and that are not marked deleted.
        FilterExpression: '#kind = :kind AND attribute_exists(#lastCondition) AND attribute_not_exists(#ttl)',
        ExpressionAttributeNames: { '#kind': ATTR.kind, '#lastCondition': 'lastCondition', '#ttl': ATTR.ttl },
        ExpressionAttributeValues: { ':kind': ITEM_KIND.objectGeneration },
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      });
      const lastKey = page.LastEvaluatedKey === undefined ? undefined : ScanKeySchema.parse(page.LastEvaluatedKey);
      return { items: page.Items ?? [], scannedCount: page.ScannedCount ?? 0, ...(lastKey === undefined ? {} : { lastKey }) };
    },
  };
}
