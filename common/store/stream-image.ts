// Items as they arrive in DynamoDB stream records (Lambda `Records[].dynamodb.NewImage/OldImage`),
// validated with the same parseItem as table reads, so handlers treat a corrupt image like a
// corrupt item: report it with its key and skip it, never fail the batch for it.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as StreamAttributeValue } from 'aws-lambda';

import { parseItem, type ParsedItem } from '../core';

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
