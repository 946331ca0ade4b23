// The convergence function's decision for one object generation, stored on its
// `OBJECT#<ref> / GEN#<g>` item under the attribute `decision` (docs/CONVERGENCE.md). This is the
// hand-off to the status function: convergence writes it, status turns it into the Kubernetes
// condition with `conditionForDecision` (core buildCondition + the true count of omitted blockers).
//
// The blocker list is capped so the item stays far below DynamoDB's 400 KB item limit whatever the
// fleet size; `blockersOmitted` keeps the real count so the condition can still say "and N more".
import { z } from 'zod';
import { buildCondition, type BuildConditionOptions, type ConditionDraft } from './conditions';
import type { Blocker, Convergence, ConvergenceState } from './convergence';
import type { ObjectRef } from './identity';
import { MAX_BLAMED, MAX_BLAMED_NAME_LENGTH } from './nack-blame';

/** Item attribute holding the decision. */
export const DECISION_ATTRIBUTE = 'decision';

/** Blockers stored per decision (the condition names at most a few; the rest are counted). */
export const MAX_DECISION_BLOCKERS = 20;

/** Longest NACK message kept in a stored blocker, in characters (the condition quotes ≤ 1 KiB). */
export const MAX_DECISION_MESSAGE_LENGTH = 1024;

const CONVERGENCE_STATES = ['Programmed', 'Pending', 'Rejected', 'Blocked', 'Stuck', 'NoEnvoys', 'GenerationNotObservable', 'Invalid'] as const satisfies readonly ConvergenceState[];

const count = z.number().int().nonnegative();
const epochMs = z.number().int().nonnegative();

const blockingNacks = z.array(
  z.object({
    typeUrl: z.string(),
    seq: count,
    message: z.string().max(MAX_DECISION_MESSAGE_LENGTH),
    at: epochMs,
    objects: z.array(z.string()).max(MAX_BLAMED).optional(),
    resources: z.array(z.string().max(MAX_BLAMED_NAME_LENGTH)).max(MAX_BLAMED).optional(),
  }),
);

export const DecisionBlockerSchema = z.discriminatedUnion('reason', [
  z.object({ nodeId: z.string(), reason: z.literal('nacked'), nacks: blockingNacks }),
  z.object({ nodeId: z.string(), reason: z.literal('blocked'), nacks: blockingNacks }),
  z.object({ nodeId: z.string(), reason: z.literal('stuck'), typeUrls: z.array(z.string()), since: epochMs }),
  z.object({ nodeId: z.string(), reason: z.literal('noWatermark'), lineages: z.array(z.string()) }),
  z.object({ nodeId: z.string(), reason: z.literal('pending'), typeUrls: z.array(z.string()) }),
]);

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

function capMessage(message: string): string {
  return message.length <= MAX_DECISION_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_DECISION_MESSAGE_LENGTH - 1)}…`;
}

function storedBlocker(blocker: Blocker): DecisionBlocker {
  if (blocker.reason !== 'nacked' && blocker.reason !== 'blocked') return blocker;
  return { ...blocker, nacks: blocker.nacks.map((nack) => ({ ...nack, message: capMessage(nack.message) })) };
}

/** The decision to store for a convergence result (blockers capped, messages bounded). */
/** Where a decision's aggregates came from: per-lineage shard versions and the registry version. */
export interface DecisionFreshness {
  revs: Readonly<Record<string, number>>;
  registryVersion: number;
}

export function decisionFromConvergence(convergence: Convergence, decidedAt: number, evaluatedRev: number, freshness?: DecisionFreshness): Decision {
  const stored = convergence.blockers.slice(0, MAX_DECISION_BLOCKERS).map(storedBlocker);
  return {
    state: convergence.state,
    programmed: convergence.programmed,
    total: convergence.total,
    blockers: stored,
    blockersOmitted: convergence.blockers.length - stored.length,
    ...(convergence.notObservableReason === undefined ? {} : { notObservableReason: convergence.notObservableReason }),
    ...(convergence.controllerMessage === undefined ? {} : { controllerMessage: capMessage(convergence.controllerMessage) }),
    decidedAt,
    evaluatedRev,
    ...(freshness === undefined ? {} : { evaluatedRevs: { ...freshness.revs }, registryVersion: freshness.registryVersion }),
  };
}

/**
 * Whether writing `ours` over `stored` is refused. The store's conditional write is this rule.
 *  - A stored Programmed decision is final (docs/CONVERGENCE.md, "Resolution"): only a supersession
 *    replaces it, whatever snapshot the other evaluation read.
 *  - Stale: `ours` comes from an older snapshot, so it could replace a newer decision with an older
 *    view: its registry read is older, or some lineage both read is behind in ours. Lineages only the
 *    stored one read are then ignored (with a registry read at least as new, they left the live set:
 *    ours is the later look); lineages only ours read are newer information.
 *  - A stored decision without per-lineage revs (written before they existed) never blocks one that
 *    has them; two such decisions compare their totals.
 */
export function isStaleDecision(stored: Decision | undefined, ours: Decision): boolean {
  if (stored === undefined) return false;
  if (stored.state === 'Programmed' && stored.supersededBy === undefined && ours.supersededBy === undefined) return true;
  if (ours.evaluatedRevs === undefined || stored.evaluatedRevs === undefined) {
    return ours.evaluatedRevs === undefined && stored.evaluatedRev > ours.evaluatedRev;
  }
  if (stored.registryVersion !== undefined && (ours.registryVersion ?? 0) < stored.registryVersion) return true;
  for (const [lineage, rev] of Object.entries(ours.evaluatedRevs)) {
    const storedRev = stored.evaluatedRevs[lineage];
    if (storedRev !== undefined && storedRev > rev) return true;
  }
  return false;
}

/** Per-lineage maximum of two freshness maps (a decision that must win over the one it read). */
export function maxEvaluatedRevs(a: Readonly<Record<string, number>> | undefined, b: Readonly<Record<string, number>> | undefined): Record<string, number> | undefined {
  if (a === undefined && b === undefined) return undefined;
  const merged: Record<string, number> = { ...(a ?? {}) };
  for (const [lineage, rev] of Object.entries(b ?? {})) merged[lineage] = Math.max(merged[lineage] ?? 0, rev);
  return merged;
}

/** The core convergence result a stored decision describes (blockers: the stored ones only). */
export function convergenceFromDecision(object: ObjectRef, generation: number, decision: Decision): Convergence {
  return {
    object,
    generation,
    state: decision.state,
    programmed: decision.programmed,
    total: decision.total,
    blockers: decision.blockers,
    ...(decision.notObservableReason === undefined ? {} : { notObservableReason: decision.notObservableReason }),
    ...(decision.controllerMessage === undefined ? {} : { controllerMessage: decision.controllerMessage }),
  };
}

/**
 * The condition for a stored decision: core buildCondition, with "and N more" counting the blockers
 * that were not stored as well. Stuck durations are measured at `decidedAt`.
 */
export function conditionForDecision(object: ObjectRef, generation: number, decision: Decision, options: BuildConditionOptions = {}): ConditionDraft {
  const convergence = convergenceFromDecision(object, generation, decision);
  const maxListed = Math.max(1, options.maxListed ?? 5);
  const draft = buildCondition(convergence, options, decision.decidedAt);
  if (draft.status !== 'False' || decision.blockersOmitted === 0) return draft;
  const listed = Math.min(maxListed, decision.blockers.length);
  const builderSaidMore = decision.blockers.length > listed;
  const base = builderSaidMore ? draft.message.replace(/; and \d+ more$/, '') : draft.message;
  const more = decision.blockers.length - listed + decision.blockersOmitted;
  return { ...draft, message: `${base}; and ${more} more` };
}

/** Same content apart from when it was decided: writing it again would change nothing a reader uses. */
export function sameDecision(a: Decision | undefined, b: Decision): boolean {
  if (a === undefined) return false;
  const { decidedAt: _a, evaluatedRev: _ar, evaluatedRevs: _ars, registryVersion: _arv, ...restA } = a;
  const { decidedAt: _b, evaluatedRev: _br, evaluatedRevs: _brs, registryVersion: _brv, ...restB } = b;
  return canonicalJson(restA) === canonicalJson(restB);
}

/** JSON with object keys sorted, so values read back from DynamoDB (any key order) compare equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
