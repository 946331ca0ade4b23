// The convergence function's decision for one object generation as it is stored on the generation's
// record (object-generation.ts): the hand-off to the status function (docs/CONVERGENCE.md). The
// blocker list is capped so the item stays far below DynamoDB's 400 KB item limit whatever the fleet
// size; `blockersOmitted` keeps the real count. The rules over it are in decision.ts.
import { z } from 'zod';
import { blockerSchema } from './blocker';
import { CONVERGENCE_STATES } from './convergence-state';

/** Blockers stored per decision (the condition names at most a few; the rest are counted). */
export const MAX_DECISION_BLOCKERS = 20;

/** Longest NACK message kept in a stored blocker, in characters (the condition quotes ≤ 1 KiB). */
export const MAX_DECISION_MESSAGE_LENGTH = 1024;

const count = z.number().int().nonnegative();
const epochMs = z.number().int().nonnegative();

/** The stored blockers: the one blocker schema (blocker.ts), messages capped to what is stored. */
export const DecisionBlockerSchema = blockerSchema(MAX_DECISION_MESSAGE_LENGTH);

export const DecisionSchema = z.object({
  state: z.enum(CONVERGENCE_STATES),
  /** Live Envoys programmed at this generation. */
  programmed: count,
  /** Live Envoys (the denominator). */
  total: count,
  /** The first MAX_DECISION_BLOCKERS blockers, most severe first (core computeConvergence order). */
  blockers: z.array(DecisionBlockerSchema).max(MAX_DECISION_BLOCKERS),
  /** Blockers beyond the stored ones. */
  blockersOmitted: count,
  notObservableReason: z.string().optional(),
  /** Invalid: the controller's message, as the gateway stored it (capped there). */
  controllerMessage: z.string().max(MAX_DECISION_MESSAGE_LENGTH).optional(),
  /** When it was decided (epoch ms): the "now" for stuck durations in the condition message. */
  decidedAt: epochMs,
  /**
   * Monotonic freshness of the aggregate snapshot the decision was computed from (sum of the shard
   * versions read). A write is conditional on the stored evaluatedRev being <= this one, so a slow
   * evaluation from older aggregates never overwrites a newer decision.
   */
  evaluatedRev: count,
  /**
   * The same freshness per lineage read. The write condition compares these (`isStaleDecision`):
   * a lineage that left the live set between two evaluations would make the total drop and refuse
   * every later decision (docs/CONVERGENCE.md, "Decision freshness"). Absent on older items.
   */
  evaluatedRevs: z.record(z.string(), count).optional(),
  /**
   * Version of the lineage registry the snapshot's set of live lineages came from (it only grows). A
   * decision from an older registry read is stale: a lineage missing from its snapshot may be one it
   * did not know yet, not one that died.
   */
  registryVersion: count.optional(),
  /** Set when a newer generation of the object exists: this one is no longer decided (or written). */
  supersededBy: z.number().int().positive().optional(),
});
export type Decision = z.infer<typeof DecisionSchema>;
export type DecisionBlocker = z.infer<typeof DecisionBlockerSchema>;

