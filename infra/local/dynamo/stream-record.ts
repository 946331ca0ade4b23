// Builds DynamoDB Streams records (the shape Lambda receives in `DynamoDBStreamEvent.Records`) from
// the item image before and after a write.
import { randomUUID } from 'node:crypto';
import type { DynamoDBRecord } from 'aws-lambda';
import type { AttributeMap } from './wire';

export type ChangeKind = 'INSERT' | 'MODIFY' | 'REMOVE';

/** What the front observed for one item key around one write. */
export interface ItemChange {
  keys: AttributeMap;
  oldImage: AttributeMap | undefined;
  newImage: AttributeMap | undefined;
  /** Set for deletions made by the TTL sweeper, as AWS marks them. */
  byTtl?: boolean;
}

// DynamoDB Streams write no record when a write leaves the item exactly as it was ("If you perform a
// PutItem or UpdateItem operation that does not change any data in an item, DynamoDB Streams does not
// write a stream record for that operation" — DynamoDB developer guide, Change data capture).
export function classifyChange(oldImage: AttributeMap | undefined, newImage: AttributeMap | undefined): ChangeKind | undefined {
  if (!oldImage && newImage) return 'INSERT';
  if (oldImage && !newImage) return 'REMOVE';
  if (oldImage && newImage) return sameValue(oldImage, newImage, undefined) ? undefined : 'MODIFY';
  return undefined;
}

/**
 * JSON with object keys sorted and set members (SS/NS/BS) sorted: DynamoDB attribute order and set
 * order carry no meaning, so two images are equal iff their canonical forms are.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value, undefined));
}

function canonicalize(value: unknown, tag: string | undefined): unknown {
  if (Array.isArray(value)) {
    const items = value.map((v) => canonicalize(v, undefined));
    if (tag === 'SS' || tag === 'NS' || tag === 'BS') return [...(items as string[])].sort();
    return items;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) out[key] = canonicalize((value as Record<string, unknown>)[key], key);
    return out;
  }
  return value;
}

const SET_TAGS = new Set(['SS', 'NS', 'BS']);

/**
 * Equality of two attribute values with the meaning canonicalJson gives them (key order and set
 * member order ignored), without building the strings: it runs on every captured write (docs/bench/README.md).
 */
function sameValue(a: unknown, b: unknown, tag: string | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    if (tag !== undefined && SET_TAGS.has(tag)) {
      const left = a.map((v) => canonicalJson(v)).sort();
      const right = b.map((v) => canonicalJson(v)).sort();
      return left.every((v, i) => v === right[i]);
    }
    return a.every((v, i) => sameValue(v, b[i], undefined));
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((key) => left[key] !== undefined);
  if (keys.length !== Object.keys(right).filter((key) => right[key] !== undefined).length) return false;
  return keys.every((key) => Object.prototype.hasOwnProperty.call(right, key) && sameValue(left[key], right[key], key));
}

/** Sequence numbers are zero-padded decimals, so string order is numeric order (as on AWS). */
export function formatSequenceNumber(n: bigint): string {
  return n.toString().padStart(21, '0');
}

export interface RecordContext {
  region: string;
  streamArn: string;
  sequenceNumber: string;
  nowMs: number;
}

export function buildStreamRecord(kind: ChangeKind, change: ItemChange, ctx: RecordContext): DynamoDBRecord {
  const dynamodb: NonNullable<DynamoDBRecord['dynamodb']> = {
    ApproximateCreationDateTime: Math.floor(ctx.nowMs / 1000),
    Keys: change.keys,
    SequenceNumber: ctx.sequenceNumber,
    SizeBytes: 0,
    StreamViewType: 'NEW_AND_OLD_IMAGES',
  };
  if (change.newImage) dynamodb.NewImage = change.newImage;
  if (change.oldImage) dynamodb.OldImage = change.oldImage;
  // AWS counts the bytes of the keys and images in the record; the JSON length is a close stand-in.
  dynamodb.SizeBytes = Buffer.byteLength(JSON.stringify([change.keys, change.oldImage ?? null, change.newImage ?? null]));
  const record: DynamoDBRecord = {
    eventID: randomUUID().replace(/-/g, ''),
    eventName: kind,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: ctx.region,
    dynamodb,
    eventSourceARN: ctx.streamArn,
  };
  // TTL deletions carry the service principal (DynamoDB developer guide, "TTL and DynamoDB Streams").
  if (change.byTtl) record.userIdentity = { type: 'Service', principalId: 'dynamodb.amazonaws.com' };
  return record;
}
