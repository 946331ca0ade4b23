// Opaque page tokens ("cursors" in the core's ports). A token is base64url JSON of
// `{ l: <listing>, k: <LastEvaluatedKey> }`. Tokens come back from callers (e.g. through the query
// function's URL), so they are external input: decoding validates the shape, that the token was
// made by the same kind of listing, and the listing's own constraints on the key (e.g. same
// partition), and refuses anything else rather than silently listing the wrong items.
import { z } from 'zod';

/** A DynamoDB key as our listings see it: every key attribute of the table and index is a string. */
export type ListingKey = Record<string, string>;

/** A page token that could not be decoded or does not belong to the listing. */
export class InvalidPageTokenError extends Error {
  override readonly name = 'InvalidPageTokenError';
}

/** Longest token accepted: keys are at most a few KB (pk 2048 B, sk 1024 B). */
const MAX_TOKEN_LENGTH = 8192;

const tokenSchema = z.strictObject({
  l: z.string().min(1),
  k: z.record(z.string(), z.string().min(1)),
});

export interface ListingKeyRules {
  /** Names the listing; a token from another listing is refused. */
  listing: string;
  /** Exactly these attributes must be present in the key. */
  attributes: readonly string[];
  /** Further checks (e.g. the key is inside the listed partition/prefix); return a reason to refuse. */
  check?: (key: ListingKey) => string | undefined;
}

export function encodePageToken(listing: string, key: ListingKey): string {
  return Buffer.from(JSON.stringify({ l: listing, k: key }), 'utf8').toString('base64url');
}

export function decodePageToken(token: string, rules: ListingKeyRules): ListingKey {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) {
    throw new InvalidPageTokenError('page token is not a base64url string of acceptable length');
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidPageTokenError('page token is not JSON');
  }
  const parsed = tokenSchema.safeParse(json);
  if (!parsed.success) {
    throw new InvalidPageTokenError(`page token has the wrong shape: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  }
  if (parsed.data.l !== rules.listing) {
    throw new InvalidPageTokenError(`page token belongs to another listing (${parsed.data.l}, not ${rules.listing})`);
  }
  const key = parsed.data.k;
  const names = Object.keys(key).sort();
  const expected = [...rules.attributes].sort();
  if (names.length !== expected.length || names.some((name, i) => name !== expected[i])) {
    throw new InvalidPageTokenError(`page token key must have exactly ${expected.join(', ')}`);
  }
  const refusal = rules.check?.(key);
  if (refusal !== undefined) throw new InvalidPageTokenError(`page token refused: ${refusal}`);
  return key;
}

/** Encode the LastEvaluatedKey DynamoDB returned (undefined on the last page). */
export function nextPageToken(listing: string, lastEvaluatedKey: Record<string, unknown> | undefined): string | undefined {
  if (lastEvaluatedKey === undefined) return undefined;
  const key: ListingKey = {};
  for (const [name, value] of Object.entries(lastEvaluatedKey)) {
    // Every key attribute of this table and its index is a string (table.ts).
    if (typeof value !== 'string') throw new Error(`LastEvaluatedKey attribute ${name} is not a string`);
    key[name] = value;
  }
  return encodePageToken(listing, key);
}
