// A gateway lineage's record: counter, per-type version history, heartbeat, and the Envoys it has
// recorded (docs/CONVERGENCE.md, "The denominator"). The rules over it are in lineage.ts.
import { z } from 'zod';
import { epochMsSchema, lineageSchema, seqSchema, typeUrlSchema } from './record-fields';

const historySchema = z.array(seqSchema).refine(
  (seqs) => seqs.every((s, i) => i === 0 || (seqs[i - 1] as number) < s),
  { message: 'type history must be strictly ascending' },
);

export const lineageStateShape = {
  lineage: lineageSchema,
  instanceId: z.string().min(1).max(63),
  bootId: z.string().min(1).max(63),
  /** The node group this lineage serves (unsanitised key). */
  group: z.string().max(1024),
  /** The lineage counter's current value (the last seq taken). */
  currentSeq: seqSchema,
  /** Per type, the ascending seqs at which that type changed. */
  typeHistory: z.record(typeUrlSchema, historySchema),
  /** Histories are complete for seqs >= historyStart; older entries may have been trimmed. */
  historyStart: seqSchema,
  startedAt: epochMsSchema,
  heartbeatAt: epochMsSchema,
  /**
   * The Envoys this gateway has written (or is about to write) a state for on this lineage, counted
   * with their incarnations: the sum over node ids of the highest `incarnation` stamped (so the number
   * of distinct Envoys when none reconnected). Decreases only when a state it counted was refused by
   * the store for good (the recorder takes it back: docs/GATEWAY.md, "What an Envoy may send"). The
   * gateway writes this item *before* any state carrying a new incarnation, so every state on the lineage in the table is counted here.
   * Convergence compares it with the members of the lineage's aggregates (docs/CONVERGENCE.md, "The
   * denominator"). Absent: written by a gateway that does not count (treated as unknown).
   */
  envoysRecorded: z.number().int().nonnegative().optional(),
  /**
   * The distinct node ids `envoysRecorded` counts (written with it). Only for what a reader shows: a
   * count ahead of the aggregates by re-incarnations of Envoys already there (a reconnect, a names hold
   * that lowers programmedThrough) is not that many more Envoys. Absent: written by an older gateway.
   */
  envoyNodesRecorded: z.number().int().nonnegative().optional(),
  rev: z.number().int().nonnegative(),
};
export const LineageStateSchema = z.object(lineageStateShape);
export type LineageState = z.infer<typeof LineageStateSchema>;
