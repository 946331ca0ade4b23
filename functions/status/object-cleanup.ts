// When a tracked object is gone (the API server answers 404), its OBJECT items are of no further
// use. We do not delete them here: we set their `ttl` so DynamoDB's TTL removes them (no write
// capacity used, and a REMOVE record the status function ignores). The update is conditional on the
// item having no ttl yet, so a redelivered record, or the MODIFY record our own update causes, finds
// nothing to do and produces no further stream record (no loop).
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { objectPartitionKey, ttlEpochSeconds, type ObjectRef } from '../../common/core';

export interface ObjectCleanup {
  /** Marks every item of the object for expiry; returns how many were newly marked. */
  markDeleted(ref: ObjectRef, now: number): Promise<number>;
}

export function dynamoObjectCleanup(documentClient: DynamoDBDocumentClient, tableName: string, retentionMs = 3_600_000): ObjectCleanup {
  return {
    async markDeleted(ref, now) {
      const pk = objectPartitionKey(ref);
      const ttl = ttlEpochSeconds(now, retentionMs);
      let marked = 0;
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await documentClient.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
            ProjectionExpression: 'pk, sk',
            ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
          }),
        );
        for (const item of page.Items ?? []) {
          try {
            await documentClient.send(
              new UpdateCommand({
                TableName: tableName,
                Key: { pk: item['pk'], sk: item['sk'] },
                UpdateExpression: 'SET #ttl = :ttl',
                ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#ttl)',
                ExpressionAttributeNames: { '#ttl': 'ttl' },
                ExpressionAttributeValues: { ':ttl': ttl },
              }),
            );
            marked++;
          } catch (error) {
            if (!(error instanceof ConditionalCheckFailedException)) throw error;
          }
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey !== undefined);
      return marked;
    },
  };
}
