// The PROGRESS item of one gateway lineage (`AGG#<lineage> / PROGRESS`, docs/ARCHITECTURE.md, "Design:
// work per change proportional to gateways, not Envoys"): what the lineage's live members add up to,
// written by the lineage's own gateway from its tracked states. Evaluation reads this one item instead
// of the lineage's aggregate shards and gives the same answer (lineage-progress.ts says how, and
// where it cannot). Its size is bounded whatever the fleet: every list below has a maximum, and
// members beyond what fits are counts, never entries.
//
// The members are split by the first rule of memberBlocker (aggregate.ts) that decides them:
// unresolved NACKs (`nacks`), types on another lineage (`split`), and the rest (the tally at the top
// level). A tally holds what memberBlocker needs of its members at a watermark: how many have no
// subscribed type (`none`), no programmedThrough (`unprogrammed`), programmedThrough by seq
// (`through`), and how many are stuck at each watermark the gateway knew (`stuck`).
import { z } from 'zod';
import { MemberSchema, NamesHoldReliefSchema } from './aggregate-shard';
import { NackBlameSchema } from './envoy-record';
import { epochMsSchema, lineageSchema, nodeIdSchema, seqSchema, typeUrlSchema } from './record-fields';
import { MAX_DECISION_BLOCKERS } from './stored-decision';

/**
 * Watermark seqs the `through` histogram is exact at (the design's "≤ ~10 rows": one row per part
 * between them, plus the part below the first).
 */
export const MAX_PROGRESS_ANCHORS = 9;
/** Members listed by summary: as many as a stored decision lists blockers (stored-decision.ts). */
export const MAX_PROGRESS_LISTED = MAX_DECISION_BLOCKERS;
/** Required types an item names (the four Envoy types and then some). */
export const MAX_PROGRESS_REQUIRED_TYPES = 16;
/** Distinct blames NACK members are counted by; members beyond them count as unblamed (Rejected: the safe side). */
export const MAX_PROGRESS_BLAME_GROUPS = 8;
/** Distinct lineage sets split members are counted by; the rest share one group under the union of their sets. */
export const MAX_PROGRESS_SPLIT_GROUPS = 8;
/** Lineages named by one split group; a merged group with more says so and blocks whatever (safe side). */
export const MAX_PROGRESS_SPLIT_LINEAGES = 32;

/**
 * Most relief groups an item carries: the members of groups beyond them are held for every object, as
 * without relief (lineage-progress.ts).
 */
export const MAX_PROGRESS_RELIEF_GROUPS = 16;

const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
/** `[seq, members]`: a histogram row, or a count at one anchor. */
const seqCount = z.tuple([seqSchema, positive]);

export const progressTallyShape = {
  /** Members with no subscribed type on this lineage: pending whatever the watermark (memberBlocker `none`). */
  none: count,
  /** Members with a subscribed type but no programmedThrough (the member's `t` is -1): behind every watermark. */
  unprogrammed: count,
  /**
   * programmedThrough over the other members, folded at the anchors: one row per part (below the first
   * anchor, between two, at or past the last), `[lowest programmedThrough in the part, members in it]`,
   * ascending. Σ count at seq ≥ W.seq is exact when W.seq is an anchor, and never more than the true
   * number of members programmed through W (a row's seq is at most any of its members').
   */
  through: z.array(seqCount).max(MAX_PROGRESS_ANCHORS + 1),
  /**
   * Per anchor with any: the members memberBlocker calls `stuck` at that watermark (whether a stuck
   * type is behind depends on the watermark's per-type versions, so it cannot be read off `through`).
   */
  stuck: z.array(seqCount).max(MAX_PROGRESS_ANCHORS),
};
export const ProgressTallySchema = z.object(progressTallyShape);
export type ProgressTally = z.infer<typeof ProgressTallySchema>;

/**
 * Members with unresolved NACKs, counted by blame (nackBlocker's `blocked` vs `nacked` depends on the
 * object being decided, so the count must be kept per blame). `o`: the objects their NACKs blame
 * together (NackBlame's bounds); absent: a NACK without blame, so held against every object.
 */
export const ProgressNackGroupSchema = z.object({ o: NackBlameSchema.shape.objects.optional(), n: positive });
export type ProgressNackGroup = z.infer<typeof ProgressNackGroupSchema>;

/**
 * Members whose types are on several lineages (the member's `b.split`), by that set: pending while
 * one of the other lineages may be live, otherwise judged by their own-lineage types like the rest.
 * `lineagesOmitted`: a merged group whose union did not fit; it blocks whatever (safe, not live).
 */
export const ProgressSplitGroupSchema = z.object({
  lineages: z.array(lineageSchema).min(1).max(MAX_PROGRESS_SPLIT_LINEAGES),
  lineagesOmitted: z.literal(true).optional(),
  ...progressTallyShape,
});
export type ProgressSplitGroup = z.infer<typeof ProgressSplitGroupSchema>;

/**
 * Members of the top-level tally counted `unprogrammed` whose names-hold relief (aggregate-shard.ts
 * NamesHoldRelief) reaches anchor `seq` with the same objects `o`: for an object not in `o` they are
 * programmed at that anchor; for one in `o` they are held as without relief, `stuck` of them stuck
 * there (they are not in the tally's own `stuck` at that anchor).
 */
export const ProgressReliefGroupSchema = z.object({ seq: seqSchema, o: NamesHoldReliefSchema.shape.o, n: positive, stuck: count });
export type ProgressReliefGroup = z.infer<typeof ProgressReliefGroupSchema>;

export const lineageProgressShape = {
  lineage: lineageSchema,
  /** Incremented on every write; writes are conditional on it (the gateway is the only writer). */
  v: count,
  /** When the gateway built it: a lineage whose PROGRESS is older than the TTL has no live member. */
  heartbeatAt: epochMsSchema,
  /** Live members (connected, or disconnected less than the TTL ago): the denominator, from the same snapshot as every count below. */
  members: count,
  /**
   * Σ of the members' incarnations (envoy-count.ts). Not read by evaluation: it moves when an Envoy
   * restarts under the same node id while `members` does not, so the publisher and the recount of
   * the truth checker can tell a rejoin from nothing.
   */
  incarnations: count,
  /** The watermark seqs the gateway knew as open (ascending): where `through` and `stuck` are exact. */
  anchors: z.array(seqSchema).max(MAX_PROGRESS_ANCHORS),
  ...progressTallyShape,
  nacks: z.array(ProgressNackGroupSchema).max(MAX_PROGRESS_BLAME_GROUPS),
  split: z.array(ProgressSplitGroupSchema).max(MAX_PROGRESS_SPLIT_GROUPS),
  /**
   * Members as the shards hold them (aggregate-shard.ts Member: NACK messages capped, blame kept),
   * the likeliest blockers first: the ones a decision names. Evaluation applies memberBlocker to them;
   * the rest are only counted.
   */
  listed: z.array(z.tuple([nodeIdSchema, MemberSchema])).max(MAX_PROGRESS_LISTED),
  /** Names-hold relief of members at the anchors, by anchor and objects (absent: none; ProgressReliefGroupSchema). */
  relief: z.array(ProgressReliefGroupSchema).max(MAX_PROGRESS_RELIEF_GROUPS).optional(),
  /**
   * The REQUIRED_TYPE_URLS the gateway judged its members with (sorted; absent: none). The counts
   * above say "programmed" of a member only if it subscribed to these, and evaluation cannot
   * re-judge the members it only counts, so it reads an item judged with fewer types than its own
   * list as unknown (lineage-progress.ts evaluateFromProgress).
   */
  required: z.array(typeUrlSchema).max(MAX_PROGRESS_REQUIRED_TYPES).optional(),
  /**
   * The ENVOY_TTL_MS the gateway judged liveness with: `members` leaves out a disconnected Envoy once
   * that long has passed, so an item judged with a shorter TTL than the reader's may have dropped an
   * Envoy the reader still counts (read as unknown, as for `required`). Absent: an item from before
   * the field, read as judged with no TTL at all.
   */
  ttlMs: positive.optional(),
};

/** Members a tally accounts for. */
export function tallyMembers(tally: ProgressTally): number {
  let members = tally.none + tally.unprogrammed;
  for (const [, n] of tally.through) members += n;
  return members;
}

function ascending(seqs: readonly number[]): boolean {
  return seqs.every((seq, i) => i === 0 || (seqs[i - 1] as number) < seq);
}

function tallyProblem(tally: ProgressTally, anchors: readonly number[]): string | undefined {
  if (!ascending(tally.through.map(([seq]) => seq))) return 'through rows are not ascending';
  if (tally.stuck.some(([seq]) => !anchors.includes(seq))) return 'a stuck count is not at an anchor';
  // Members with no subscribed type are pending, never stuck (memberBlocker decides them first).
  if (tally.stuck.some(([, n]) => n > tallyMembers(tally) - tally.none)) return 'more stuck members than members that can be stuck';
  return undefined;
}

/** What makes an item inconsistent (its counts must add up for the evaluation to mean anything), or undefined. */
export function progressProblem(item: z.infer<z.ZodObject<typeof lineageProgressShape>>): string | undefined {
  if (!ascending(item.anchors)) return 'anchors are not ascending';
  for (const tally of [item, ...item.split]) {
    const problem = tallyProblem(tally, item.anchors);
    if (problem !== undefined) return problem;
  }
  const relievedAt = new Map<number, number>();
  for (const group of item.relief ?? []) {
    if (!item.anchors.includes(group.seq)) return 'a relief group is not at an anchor';
    if (group.stuck > group.n) return 'a relief group has more stuck members than members';
    relievedAt.set(group.seq, (relievedAt.get(group.seq) ?? 0) + group.n);
  }
  for (const [seq, relieved] of relievedAt) {
    if (relieved > item.unprogrammed) return 'more relieved members than unprogrammed ones';
    const stuck = item.stuck.find(([at]) => at === seq)?.[1] ?? 0;
    if (stuck + relieved > tallyMembers(item) - item.none) return 'more stuck and relieved members than members that can be either';
  }
  let members = tallyMembers(item);
  for (const group of item.nacks) members += group.n;
  for (const group of item.split) members += tallyMembers(group);
  if (members !== item.members) return `members (${item.members}) is not the sum of the counts (${members})`;
  if (item.incarnations < item.members) return 'fewer incarnations than members';
  if (item.listed.length > item.members) return 'more members listed than counted';
  if (new Set(item.listed.map(([nodeId]) => nodeId)).size !== item.listed.length) return 'a member is listed twice';
  return undefined;
}

export const LineageProgressSchema = z.object(lineageProgressShape).superRefine((item, ctx) => {
  const problem = progressProblem(item);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});
export type LineageProgress = z.infer<typeof LineageProgressSchema>;
