// Writes to object generation items (`OBJECT#<ref>` / `GEN#<generation>`): the watermark per
// lineage (first write wins), and fields that create the item when missing. No transactions: each
// write is one conditional PutItem or UpdateItem, safe to replay.
import {
  LineageWatermarkSchema,
  ObjectRefSchema,
  isValidLineage,
  type ItemKey,
  type LineageWatermark,
  type ObjectRef,
} from '../core';
import { ITEM_KIND, SCHEMA_VERSION, objectGenerationKey } from './table-layout';
import { toObjectGenerationItem } from './items';
import { describeZodIssues, InvalidStoreInputError, isConditionalCheckFailed } from './errors';
import { ExpressionBuilder } from './expression';
import type { StoreLogger } from './logger';
import type { DocumentOperations } from './operations';
import { PARTITION_KEY } from './table';

export interface StoreContext {
  tableName: string;
  operations: DocumentOperations;
  logger: StoreLogger;
}

export function checkObjectRef(ref: ObjectRef): void {
  const parsedRef = ObjectRefSchema.safeParse(ref);
  if (!parsedRef.success) throw new InvalidStoreInputError(`invalid object ref: ${describeZodIssues(parsedRef.error.issues)}`);
}

export function checkObjectGeneration(ref: ObjectRef, generation: number): void {
  checkObjectRef(ref);
  if (!Number.isSafeInteger(generation) || generation < 1) {
    throw new InvalidStoreInputError(`invalid generation ${String(generation)}`);
  }
}

/** Only the four reference fields, whatever else the caller's object carries. */
function plainRef(ref: ObjectRef): ObjectRef {
  return { group: ref.group, kind: ref.kind, namespace: ref.namespace, name: ref.name };
}

/**
 * Records W(X, G) for one lineage. First write wins: the watermark is the *first* version that
 * reflects G, so a replayed or late write must not replace it ('alreadySet').
 */
export async function writeWatermark(
  context: StoreContext,
  ref: ObjectRef,
  generation: number,
  lineage: string,
  watermark: LineageWatermark,
): Promise<'written' | 'alreadySet'> {
  checkObjectGeneration(ref, generation);
  if (!isValidLineage(lineage)) throw new InvalidStoreInputError(`invalid lineage ${JSON.stringify(lineage)}`);
  const parsedWatermark = LineageWatermarkSchema.safeParse(watermark);
  if (!parsedWatermark.success) {
    throw new InvalidStoreInputError(`invalid watermark: ${describeZodIssues(parsedWatermark.error.issues)}`);
  }
  const value = parsedWatermark.data;
  const key = objectGenerationKey(ref, generation);
  // Two steps because a nested SET (watermarks.<lineage>) fails when the map does not exist yet,
  // and SET cannot create the map and a key in it in one expression (overlapping paths).
  // Bounded loop: only a concurrent delete of the item can send us round again.
  for (let round = 0; round < 3; round++) {
    try {
      await context.operations.put({
        TableName: context.tableName,
        Item: toObjectGenerationItem({ object: plainRef(ref), generation, watermarks: { [lineage]: value }, firstSeenAt: value.at }),
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PARTITION_KEY },
      });
      return 'written';
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    const expression = new ExpressionBuilder();
    const watermarksName = expression.name('watermarks');
    const lineagePath = expression.path('watermarks', lineage);
    try {
      await context.operations.update({
        TableName: context.tableName,
        Key: key,
        UpdateExpression: `SET ${lineagePath} = ${expression.value(value)}`,
        ConditionExpression: `attribute_exists(${expression.name(PARTITION_KEY)}) AND attribute_type(${watermarksName}, ${expression.value('M')}) AND attribute_not_exists(${lineagePath})`,
        ExpressionAttributeNames: expression.names,
        ExpressionAttributeValues: expression.values,
      });
      return 'written';
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
    }
    // The condition failed: the lineage is already set (the usual case: a replay), or the item
    // vanished, or its watermarks attribute is not a map (corrupt). Read to tell which.
    const current = await context.operations.get({ TableName: context.tableName, Key: key, ConsistentRead: true });
    if (current.Item === undefined) continue;
    const watermarks: unknown = current.Item.watermarks;
    if (typeof watermarks === 'object' && watermarks !== null && !Array.isArray(watermarks)) {
      if (lineage in watermarks) return 'alreadySet';
      continue; // removed in between: try again
    }
    if (await repairWatermarks(context, key, lineage, value)) return 'written';
  }
  throw new Error(`watermark for ${key.pk} / ${key.sk} on ${lineage} not written: the item kept changing`);
}

/** The item exists but `watermarks` is not a map (corrupt): replace it with a map holding this lineage. */
async function repairWatermarks(context: StoreContext, key: ItemKey, lineage: string, value: LineageWatermark): Promise<boolean> {
  const expression = new ExpressionBuilder();
  const watermarksName = expression.name('watermarks');
  try {
    await context.operations.update({
      TableName: context.tableName,
      Key: key,
      UpdateExpression: `SET ${watermarksName} = ${expression.value({ [lineage]: value })}`,
      ConditionExpression: `attribute_exists(${expression.name(PARTITION_KEY)}) AND (attribute_not_exists(${watermarksName}) OR NOT attribute_type(${watermarksName}, ${expression.value('M')}))`,
      ExpressionAttributeNames: expression.names,
      ExpressionAttributeValues: expression.values,
    });
    context.logger.warn({ table: context.tableName, key, lineage }, 'replaced a corrupt watermarks attribute');
    return true;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return false;
  }
}

/**
 * One UpdateItem that sets `fields(expression)` and creates the item's required fields where they
 * are missing (if_not_exists), so it works whether or not the generation item exists yet.
 */
export async function setGenerationFields(
  context: StoreContext,
  ref: ObjectRef,
  generation: number,
  at: number,
  fields: (expression: ExpressionBuilder) => string[],
): Promise<void> {
  checkObjectGeneration(ref, generation);
  if (!Number.isSafeInteger(at) || at < 0) throw new InvalidStoreInputError(`invalid time ${String(at)}`);
  const expression = new ExpressionBuilder();
  const ifMissing = (attribute: string, value: unknown): string => {
    const name = expression.name(attribute);
    return `${name} = if_not_exists(${name}, ${expression.value(value)})`;
  };
  const sets = [
    ifMissing('kind', ITEM_KIND.objectGeneration),
    ifMissing('schemaVersion', SCHEMA_VERSION),
    ifMissing('object', plainRef(ref)),
    ifMissing('generation', generation),
    ifMissing('watermarks', {}),
    ifMissing('firstSeenAt', at),
    ...fields(expression),
  ];
  await context.operations.update({
    TableName: context.tableName,
    Key: objectGenerationKey(ref, generation),
    UpdateExpression: `SET ${sets.join(', ')}`,
    ExpressionAttributeNames: expression.names,
    ExpressionAttributeValues: expression.values,
  });
}
