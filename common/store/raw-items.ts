// Items as they are stored, for benchmarks of the local DynamoDB front (bench/dynamo.ts: the write
// path without the store's validation, so what is measured is the front and dynalite) and for tests
// that plant or edit items the adapters would not write (RawItems, table-ports.ts).
import { ExpressionBuilder } from './expression';
import type { DocumentOperations } from './operations';
import { PARTITION_KEY } from './table';
import type { RawItems } from './table-ports';

export function dynamoRawItems(operations: DocumentOperations, tableName: string): RawItems {
  return {
    async batchWriteItems(items) {
      const output = await operations.batchWrite({ RequestItems: { [tableName]: items.map((Item) => ({ PutRequest: { Item } })) } });
      const unprocessed = output.UnprocessedItems?.[tableName]?.length ?? 0;
      if (unprocessed > 0) throw new Error(`${unprocessed} items left unprocessed by BatchWriteItem`);
    },
    async putItem(item) {
      await operations.put({ TableName: tableName, Item: item });
    },
    async getItem(key, options = {}) {
      return (await operations.get({ TableName: tableName, Key: key, ...(options.consistent === true ? { ConsistentRead: true } : {}) })).Item;
    },
    async setAttributes(key, attributes) {
      const expression = new ExpressionBuilder();
      const sets = Object.entries(attributes).map(([name, value]) => `${expression.name(name)} = ${expression.value(value)}`);
      await operations.update({
        TableName: tableName,
        Key: key,
        UpdateExpression: `SET ${sets.join(', ')}`,
        ExpressionAttributeNames: expression.names,
        ExpressionAttributeValues: expression.values,
      });
    },
    async removeAttributes(key, names) {
      const expression = new ExpressionBuilder();
      await operations.update({
        TableName: tableName,
        Key: key,
        UpdateExpression: `REMOVE ${names.map((name) => expression.name(name)).join(', ')}`,
        ExpressionAttributeNames: expression.names,
      });
    },
    async queryPartition(pk) {
      const items: Record<string, unknown>[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const expression = new ExpressionBuilder();
        const page = await operations.query({
          TableName: tableName,
          KeyConditionExpression: `${expression.name(PARTITION_KEY)} = ${expression.value(pk)}`,
          ExpressionAttributeNames: expression.names,
          ExpressionAttributeValues: expression.values,
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        });
        items.push(...(page.Items ?? []));
        startKey = page.LastEvaluatedKey;
      } while (startKey !== undefined);
      return items;
    },
  };
}
