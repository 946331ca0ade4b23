// Images around a single-item write, taken from the write's own reply instead of two reads.
//
// The front needs each written item's image before and after the write to build its stream record.
// For BatchWriteItem it reads both (images.ts). A single-item write can carry most of that itself:
// the front forwards it with `ReturnValues` set so that dynalite's reply holds one image, and it knows
// the other one without asking:
//   PutItem     ALL_OLD → the old image; the new image is the Item itself (a put replaces the whole
//               item), provided its numbers are already in the form dynalite stores (below);
//   DeleteItem  ALL_OLD → the old image; there is no new image;
//   UpdateItem  ALL_NEW → the new image; the old image is read before the write (one read, not two).
// Before this, each write cost three dynalite requests (read, write, read); the front and dynalite
// were most of the local system's CPU at 1,000 Envoys (docs/bench/README.md). The reply the
// client gets is what it asked for: Attributes are removed unless its own ReturnValues wanted them.
// Writes whose ReturnValues we cannot serve this way (UPDATED_OLD, UPDATED_NEW, or ALL_OLD on an
// update) keep the read-write-read path.
import { crc32, type AttributeMap, type WireResponse } from './wire';

export interface SingleWritePlan {
  /** The request body to forward (the client's, with ReturnValues set). */
  body: Buffer;
  /** Which image dynalite's reply carries in `Attributes`. */
  returns: 'ALL_OLD' | 'ALL_NEW';
  /** Whether the client's own ReturnValues asked for those Attributes. */
  clientWantsAttributes: boolean;
  /**
   * The image after the write when it is known without reading: `{ image }` (PutItem: the Item;
   * DeleteItem: none). Undefined when it has to come from the reply (UpdateItem) or a read.
   */
  knownNewImage?: { image: AttributeMap | undefined };
}

/** How to capture a single-item write from its reply, or undefined to use the read-write-read path. */
export function planSingleWrite(operation: string, body: unknown): SingleWritePlan | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const request = body as Record<string, unknown>;
  const asked = request['ReturnValues'];
  if (asked !== undefined && typeof asked !== 'string') return undefined;
  const forward = (returns: SingleWritePlan['returns']): Buffer => Buffer.from(JSON.stringify({ ...request, ReturnValues: returns }));
  switch (operation) {
    case 'PutItem': {
      if (asked !== undefined && asked !== 'NONE' && asked !== 'ALL_OLD') return undefined;
      const item = request['Item'];
      if (!isAttributeMap(item)) return undefined;
      return {
        body: forward('ALL_OLD'),
        returns: 'ALL_OLD',
        clientWantsAttributes: asked === 'ALL_OLD',
        ...(hasOnlyStoredNumbers(item) ? { knownNewImage: { image: item } } : {}),
      };
    }
    case 'DeleteItem':
      if (asked !== undefined && asked !== 'NONE' && asked !== 'ALL_OLD') return undefined;
      return { body: forward('ALL_OLD'), returns: 'ALL_OLD', clientWantsAttributes: asked === 'ALL_OLD', knownNewImage: { image: undefined } };
    case 'UpdateItem':
      if (asked !== undefined && asked !== 'NONE' && asked !== 'ALL_NEW') return undefined;
      return { body: forward('ALL_NEW'), returns: 'ALL_NEW', clientWantsAttributes: asked === 'ALL_NEW' };
    default:
      return undefined;
  }
}

/**
 * The `Attributes` of a successful reply, and the reply as the client asked for it (without them when
 * it did not). Undefined when the reply body is not the JSON object DynamoDB sends.
 */
export function takeReturnedImage(
  plan: SingleWritePlan,
  response: WireResponse,
): { image: AttributeMap | undefined; reply: WireResponse } | undefined {
  let output: unknown;
  try {
    output = JSON.parse(response.body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return undefined;
  const { Attributes: attributes, ...rest } = output as Record<string, unknown>;
  if (attributes !== undefined && !isAttributeMap(attributes)) return undefined;
  const image = attributes as AttributeMap | undefined;
  if (plan.clientWantsAttributes || attributes === undefined) return { image, reply: response };
  const body = Buffer.from(JSON.stringify(rest));
  return {
    image,
    reply: { ...response, body, headers: { ...response.headers, 'content-length': String(body.length), 'x-amz-crc32': String(crc32(body)) } },
  };
}

// A shallow check rather than wire.ts's attributeMapSchema: what it checks is dynalite's own reply or
// a request body dynalite has just accepted, and it runs on every captured write.
function isAttributeMap(value: unknown): value is AttributeMap {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const attribute of Object.values(value as Record<string, unknown>)) {
    if (attribute === null || typeof attribute !== 'object' || Array.isArray(attribute)) return false;
  }
  return true;
}

// dynalite stores a number as big.js `toFixed()` of what was sent (validations/index.js, checkNum):
// no exponent, no leading zeros, no trailing fractional zeros. A number already in that form is
// stored as sent; any other (e.g. "1e3", "1.50") makes the front read the image after the write.
const STORED_NUMBER = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;

function isStoredNumber(text: unknown): boolean {
  return typeof text === 'string' && text !== '-0' && STORED_NUMBER.test(text);
}

/** True when every number in the item (N, NS, and inside L and M) is in dynalite's stored form. */
export function hasOnlyStoredNumbers(item: AttributeMap): boolean {
  for (const value of Object.values(item)) if (!valueHasOnlyStoredNumbers(value)) return false;
  return true;
}

function valueHasOnlyStoredNumbers(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const attribute = value as Record<string, unknown>;
  if ('N' in attribute) return isStoredNumber(attribute['N']);
  if ('NS' in attribute) return Array.isArray(attribute['NS']) && attribute['NS'].every(isStoredNumber);
  if ('L' in attribute) return Array.isArray(attribute['L']) && attribute['L'].every(valueHasOnlyStoredNumbers);
  if ('M' in attribute) {
    const map = attribute['M'];
    return map !== null && typeof map === 'object' && Object.values(map).every(valueHasOnlyStoredNumbers);
  }
  return true;
}
