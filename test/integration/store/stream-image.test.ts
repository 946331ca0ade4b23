// Stream images (the Lambda event shape) parse like table reads. Pure logic: marshalled with the
// SDK's own marshall, the same encoding DynamoDB Streams delivers.
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as StreamAttributeValue } from 'aws-lambda';

import { LDS_TYPE_URL } from '../../../common/core';
import { toEnvoyEventItem } from '../../../common/store';
import { parseStreamImage } from '../../../common/store/stream-image';

const event = { nodeId: 'e1', outcome: 'ACK' as const, lineage: 'a.b.c', seq: 3, typeUrl: LDS_TYPE_URL, at: 10, ttl: 99 };

function asStreamImage(item: Record<string, unknown>): Record<string, StreamAttributeValue> {
  return marshall(item, { removeUndefinedValues: true }) as unknown as Record<string, StreamAttributeValue>;
}

test('a valid image parses to the item', () => {
  const item = toEnvoyEventItem(event);
  expect(parseStreamImage(asStreamImage(item))).toEqual({ ok: true, item });
});

test('no image (INSERT has no OldImage) is undefined', () => {
  expect(parseStreamImage(undefined)).toBeUndefined();
});

test('a corrupt image is reported with its key, not thrown', () => {
  const item = { ...toEnvoyEventItem(event), seq: 'three' };
  const parsed = parseStreamImage(asStreamImage(item));
  expect(parsed).toMatchObject({ ok: false, key: { pk: item.pk, sk: item.sk } });
  expect(parsed?.ok === false && parsed.error).toMatch(/seq/);
});

test('an image that cannot be unmarshalled is reported with its key', () => {
  // An attribute with no type descriptor: unmarshall throws "No value defined".
  const image = { pk: { S: 'ENVOY#e1' }, sk: { S: 'STATE' }, rev: {} } as unknown as Record<string, StreamAttributeValue>;
  const parsed = parseStreamImage(image);
  expect(parsed).toMatchObject({ ok: false, key: { pk: 'ENVOY#e1', sk: 'STATE' } });
  expect(parsed?.ok === false && parsed.error).toMatch(/could not be unmarshalled/);
});
