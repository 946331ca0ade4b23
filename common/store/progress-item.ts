// The PROGRESS item (`AGG#<lineage> / PROGRESS`, table-layout.ts): a lineage's LineageProgress
// (common/core/lineage-progress-item.ts) flat beside its key, `kind` and `schemaVersion`, as the
// other items of items.ts are. Writing validates the progress with LineageProgressSchema, so an
// inconsistent summary (counts that do not add up) is refused before it reaches the table; reading
// applies the same schema and its consistency check, and the key against the content. parseItem
// (items.ts) reads the item with the same schema, so scans and stream readers that meet it parse it.
import { z } from 'zod';

import {
  LineageProgressSchema,
  lineageProgressShape,
  progressProblem,
  type CorruptItem,
  type LineageProgress,
} from '../core';
import type { KeyedItem } from './batch-write';
import { describeZodIssues } from './errors';
import { ATTR, ITEM_KIND, SCHEMA_VERSION, lineageProgressKey } from './table-layout';

export const LineageProgressItemSchema = z
  .object({
    pk: z.string().min(1),
    sk: z.string().min(1),
    schemaVersion: z.literal(SCHEMA_VERSION),
    kind: z.literal(ITEM_KIND.lineageProgress),
    ...lineageProgressShape,
  })
  // LineageProgressSchema's own refinement: a summary whose counts do not add up means nothing to evaluation.
  .superRefine((item, ctx) => {
    const problem = progressProblem(item);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
export type LineageProgressItem = z.infer<typeof LineageProgressItemSchema>;

/** The item storing `progress`, or why it cannot be stored (it fails LineageProgressSchema). */
export function toLineageProgressItem(progress: LineageProgress): { ok: true; item: LineageProgressItem & KeyedItem } | { ok: false; error: string } {
  const checked = LineageProgressSchema.safeParse(progress);
  if (!checked.success) return { ok: false, error: `progress of lineage ${JSON.stringify(progress.lineage)}: ${describeZodIssues(checked.error.issues)}` };
  // The parsed copy, not the argument: it holds exactly the schema's fields (no stray attributes stored).
  return { ok: true, item: { ...lineageProgressKey(checked.data.lineage), kind: ITEM_KIND.lineageProgress, schemaVersion: SCHEMA_VERSION, ...checked.data } };
}

/** The stored `v` of a raw item, if it is one (so the lineage's writer can replace a corrupt item: ItemRead's `rev`). */
export function rawProgressV(raw: Record<string, unknown>): number | undefined {
  const v = raw['v'];
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** The progress an item as read from the table stores, or a CorruptItem saying where and why. */
export function lineageProgressFromItem(raw: Record<string, unknown>): { ok: true; progress: LineageProgress } | { ok: false; corrupt: CorruptItem } {
  const pk = raw[ATTR.pk];
  const sk = raw[ATTR.sk];
  const key = typeof pk === 'string' && typeof sk === 'string' ? { pk, sk } : undefined;
  const where = key === undefined ? 'progress item without string pk/sk' : `item ${key.pk} / ${key.sk}`;
  const fail = (error: string) => ({ ok: false as const, corrupt: key === undefined ? { error: `${where}: ${error}` } : { key, error: `${where}: ${error}` } });
  const parsed = LineageProgressItemSchema.safeParse(raw);
  if (!parsed.success) return fail(describeZodIssues(parsed.error.issues));
  const { pk: _pk, sk: _sk, kind: _kind, schemaVersion: _v, ...progress } = parsed.data;
  const expected = lineageProgressKey(progress.lineage);
  if (expected.pk !== parsed.data.pk || expected.sk !== parsed.data.sk) return fail(`key does not match content (expected ${expected.pk} / ${expected.sk})`);
  return { ok: true, progress };
}
