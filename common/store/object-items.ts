// OBJECT partition operations beyond the typed ObjectStore: marking a gone object's items for
// expiry (ObjectCleanup) and reading generation items exactly as stored (ObjectItemReader).
import { ttlEpochSeconds, type ObjectRef } from '../core';
import { isConditionalCheckFailed } from './errors';
import type { DocumentOperations } from './operations';
import { ATTR, GENERATION_SK_PREFIX, objectGenerationKey, objectPartitionKey } from './table-layout';
import type { ObjectCleanup, ObjectItemReader } from './table-ports';

/**
 * Each item of the object gets `ttl` (now + retentionMs), conditional on having none yet: a
 * redelivered record, or the MODIFY record this update causes, finds nothing to do and produces no
 * further stream record (no loop).
 */
export function dynamoObjectCleanup(operations: DocumentOperations, tableName: string, retentionMs = 3_600_000): ObjectCleanup {
  return {
    async markDeleted(ref, now) {
      const pk = objectPartitionKey(ref);
      const ttl = ttlEpochSeconds(now, retentionMs);
      let marked = 0;
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await operations.query({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ProjectionExpression: 'pk, sk',
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        });
        for (const item of page.Items ?? []) {
          try {
            await operations.update({
              TableName: tableName,
              Key: { pk: item[ATTR.pk], sk: item[ATTR.sk] },
              UpdateExpression: 'SET #ttl = :ttl',
              ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#ttl)',
              ExpressionAttributeNames: { '#ttl': ATTR.ttl },
              ExpressionAttributeValues: { ':ttl': ttl },
            });
            marked++;
          } catch (error) {
            if (!isConditionalCheckFailed(error)) throw error;
          }
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey !== undefined);
      return marked;
    },
  };
}

export function dynamoObjectItemReader(operations: DocumentOperations, tableName: string): ObjectItemReader {
  return {
    async getObjectGenerationItem(ref: ObjectRef, generation: number) {
      const output = await operations.get({ TableName: tableName, Key: objectGenerationKey(ref, generation) });
      return output.Item;
    },
    async latestObjectGenerationItem(ref: ObjectRef) {
      const page = await operations.query({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :gen)',
        ExpressionAttributeValues: { ':pk': objectPartitionKey(ref), ':gen': GENERATION_SK_PREFIX },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      });
      return page.Items?.[0];
    },
  };
}
