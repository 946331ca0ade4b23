// Items as they arrive in DynamoDB stream records (Lambda `Records[].dynamodb.NewImage/OldImage`):
// decoded here, and nowhere else, from DynamoDB's attribute-value encoding, then validated with the
// same parseItem as table reads, so handlers treat a corrupt image like a corrupt item: report it
// with its key and skip it, never fail the batch for it.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as StreamAttributeValue, StreamRecord } from 'aws-lambda';

import { parseItem, type ParsedItem } from './items';

/** undefined when the record has no such image (INSERT has no OldImage, REMOVE no NewImage). */
export function parseStreamImage(image: Record<string, StreamAttributeValue> | undefined): ParsedItem | undefined {
  if (image === undefined) return undefined;
  let plain: Record<string, unknown>;
  try {
    // The Lambda event's wire shape is DynamoDB's AttributeValue JSON; the only difference in the
    // TypeScript types is B (base64 string vs bytes), an attribute type this table never uses.
    plain = unmarshall(image as unknown as Record<string, AttributeValue>, { wrapNumbers: false });
  } catch (error) {
    const pk = image.pk?.S;
    const sk = image.sk?.S;
    const reason = error instanceof Error ? error.message : String(error);
    return pk !== undefined && sk !== undefined
      ? { ok: false, key: { pk, sk }, error: `stream image ${pk} / ${sk} could not be unmarshalled: ${reason}` }
      : { ok: false, error: `stream image could not be unmarshalled: ${reason}` };
  }
  return parseItem(plain);
}

/** A stream record's images as plain items, not yet validated (the caller parses them with parseItem). */
export type PlainStreamImages = { newImage: Record<string, unknown> | undefined; oldImage: Record<string, unknown> | undefined };

function plainImage(value: Record<string, StreamAttributeValue> | undefined): Record<string, unknown> | undefined {
  // aws-lambda's AttributeValue and the SDK's are the same wire shape, typed separately.
  return value === undefined ? undefined : unmarshall(value as Record<string, AttributeValue>);
}

/**
 * Both images of a record, or why they cannot be read (a damaged record: the caller skips it, never
 * throws). The status function compares raw attributes of the two (`ttl` newly set) before parsing.
 */
export function streamRecordImages(record: Pick<StreamRecord, 'NewImage' | 'OldImage'> | undefined): PlainStreamImages | { error: string } {
  try {
    const isMap = (value: unknown): boolean => value === undefined || (typeof value === 'object' && value !== null && !Array.isArray(value));
    if (!isMap(record?.NewImage) || !isMap(record?.OldImage)) return { error: 'an image is not an attribute map' };
    return { newImage: plainImage(record?.NewImage), oldImage: plainImage(record?.OldImage) };
  } catch (error) {
    return { error: `image could not be unmarshalled: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** An item encoded as a stream record carries it (what DynamoDB Streams delivers): for benchmarks and local delivery. */
export function streamImageOf(item: Record<string, unknown>): Record<string, StreamAttributeValue> {
  return marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true }) as unknown as Record<string, StreamAttributeValue>;
}
