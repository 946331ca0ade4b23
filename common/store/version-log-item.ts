// The version log's item (`VLOG#<lineage> / <typeUrl>#<seq>#<chunk>`, table-layout.ts): a chunk's
// header as plain attributes and its entries as one binary attribute `e` (common/core/version-log.ts
// encodes them, ~3 B an entry). Reading validates the attributes with zod, the key against them, and
// the bytes with the core's decoder; any failure is an error value with the item's key.
import { z } from 'zod';

import {
  chunkFromStored,
  encodeChunkEntries,
  versionChunkHeaderShape,
  versionLogMemberShape,
  type CorruptItem,
  type VersionChunk,
  type VersionLogMember,
} from '../core';
import type { KeyedItem } from './batch-write';
import { describeZodIssues } from './errors';
import { ATTR, ITEM_KIND, SCHEMA_VERSION, versionLogChunkKey, versionLogMemberKey } from './table-layout';

/** The attribute holding the encoded entries (DynamoDB binary, B). */
export const CHUNK_ENTRIES_ATTRIBUTE = 'e';

export const VersionLogChunkItemSchema = z.object({
  pk: z.string().min(1),
  sk: z.string().min(1),
  schemaVersion: z.literal(SCHEMA_VERSION),
  kind: z.literal(ITEM_KIND.versionLogChunk),
  ...versionChunkHeaderShape,
  // The document client gives B attributes back as Uint8Array.
  [CHUNK_ENTRIES_ATTRIBUTE]: z.instanceof(Uint8Array),
});
export type VersionLogChunkItem = z.infer<typeof VersionLogChunkItemSchema>;

/** The item storing `chunk`, or why it cannot be stored (its entries do not encode). */
export function toVersionLogChunkItem(chunk: VersionChunk): { ok: true; item: VersionLogChunkItem & KeyedItem } | { ok: false; error: string } {
  const bytes = encodeChunkEntries(chunk.baseAt, chunk.entries);
  if (!bytes.ok) return { ok: false, error: `chunk ${chunk.chunk} of ${chunk.typeUrl} at seq ${chunk.seq}: ${bytes.error}` };
  const { entries: _entries, ...header } = chunk;
  const item = {
    ...versionLogChunkKey(chunk.lineage, chunk.typeUrl, chunk.seq, chunk.chunk),
    kind: ITEM_KIND.versionLogChunk,
    schemaVersion: SCHEMA_VERSION,
    ...header,
    [CHUNK_ENTRIES_ATTRIBUTE]: bytes.value,
  };
  const checked = VersionLogChunkItemSchema.safeParse(item);
  if (!checked.success) return { ok: false, error: `chunk ${chunk.chunk} of ${chunk.typeUrl} at seq ${chunk.seq}: ${describeZodIssues(checked.error.issues)}` };
  return { ok: true, item: checked.data };
}

/** How a read of `raw` fails: its key (when it has one) and where it is, in every error. */
function failureOf(raw: Record<string, unknown>, what: string): (error: string) => { ok: false; corrupt: CorruptItem } {
  const pk = raw[ATTR.pk];
  const sk = raw[ATTR.sk];
  const key = typeof pk === 'string' && typeof sk === 'string' ? { pk, sk } : undefined;
  const where = key === undefined ? `${what} without string pk/sk` : `item ${key.pk} / ${key.sk}`;
  return (error) => ({ ok: false as const, corrupt: key === undefined ? { error: `${where}: ${error}` } : { key, error: `${where}: ${error}` } });
}

/** The chunk an item as read from the table stores, or a CorruptItem saying where and why. */
export function versionLogChunkFromItem(raw: Record<string, unknown>): { ok: true; chunk: VersionChunk } | { ok: false; corrupt: CorruptItem } {
  const fail = failureOf(raw, 'version-log item');
  const parsed = VersionLogChunkItemSchema.safeParse(raw);
  if (!parsed.success) return fail(describeZodIssues(parsed.error.issues));
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, [CHUNK_ENTRIES_ATTRIBUTE]: bytes, ...header } = parsed.data;
  const expected = versionLogChunkKey(header.lineage, header.typeUrl, header.seq, header.chunk);
  if (expected.pk !== parsed.data.pk || expected.sk !== parsed.data.sk) return fail(`key does not match content (expected ${expected.pk} / ${expected.sk})`);
  const chunk = chunkFromStored(header, bytes);
  if (!chunk.ok) return fail(`entries (${bytes.length} bytes): ${chunk.error}`);
  return { ok: true, chunk: chunk.value };
}

// ---------------------------------------------------------------------------------------------
// Memberships (`ENVOY#<nodeId> / VMEMBER#<lineage>#<member>`): plain attributes.

export const VersionLogMemberItemSchema = z.object({
  pk: z.string().min(1),
  sk: z.string().min(1),
  schemaVersion: z.literal(SCHEMA_VERSION),
  kind: z.literal(ITEM_KIND.versionLogMember),
  ...versionLogMemberShape,
});
export type VersionLogMemberItem = z.infer<typeof VersionLogMemberItemSchema>;

/** The item storing `member`, or why it cannot be stored. */
export function toVersionLogMemberItem(member: VersionLogMember): { ok: true; item: VersionLogMemberItem & KeyedItem } | { ok: false; error: string } {
  const checked = VersionLogMemberItemSchema.safeParse({ ...versionLogMemberKey(member.nodeId, member.lineage, member.member), kind: ITEM_KIND.versionLogMember, schemaVersion: SCHEMA_VERSION, ...member });
  if (!checked.success) return { ok: false, error: `member ${String(member.member)} of ${member.lineage}: ${describeZodIssues(checked.error.issues)}` };
  return { ok: true, item: checked.data };
}

/** The membership an item as read from the table stores, or a CorruptItem saying where and why. */
export function versionLogMemberFromItem(raw: Record<string, unknown>): { ok: true; member: VersionLogMember } | { ok: false; corrupt: CorruptItem } {
  const fail = failureOf(raw, 'version-log membership');
  const parsed = VersionLogMemberItemSchema.safeParse(raw);
  if (!parsed.success) return fail(describeZodIssues(parsed.error.issues));
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...member } = parsed.data;
  const expected = versionLogMemberKey(member.nodeId, member.lineage, member.member);
  if (expected.pk !== parsed.data.pk || expected.sk !== parsed.data.sk) return fail(`key does not match content (expected ${expected.pk} / ${expected.sk})`);
  return { ok: true, member };
}
