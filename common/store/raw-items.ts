// Plain items written as given, for benchmarks of the local DynamoDB front (bench/dynamo.ts): the
// write path without the store's validation, so what is measured is the front and dynalite.
import type { DocumentOperations } from './operations';
import type { RawItemWriter } from './table-ports';

export function dynamoRawItemWriter(operations: DocumentOperations, tableName: string): RawItemWriter {
  return {
    async batchWriteItems(items) {
      const output = await operations.batchWrite({ RequestItems: { [tableName]: items.map((Item) => ({ PutRequest: { Item } })) } });
      const unprocessed = output.UnprocessedItems?.[tableName]?.length ?? 0;
      if (unprocessed > 0) throw new Error(`${unprocessed} items left unprocessed by BatchWriteItem`);
    },
    async putItem(item) {
      await operations.put({ TableName: tableName, Item: item });
    },
  };
}
