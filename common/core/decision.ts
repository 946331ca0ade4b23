// The convergence function's decision for one object generation, stored on its
// object generation record (object-generation.ts; docs/CONVERGENCE.md). This is the
// hand-off to the status function: convergence writes it, status turns it into the Kubernetes
// condition with `conditionForDecision` (core buildCondition + the true count of omitted blockers).
//
// The blocker list is capped so the item stays far below DynamoDB's 400 KB item limit whatever the
// fleet size; `blockersOmitted` keeps the real count so the condition can still say "and N more".
import { isNackBlocker, type Blocker } from './blocker';
import { buildCondition, type BuildConditionOptions, type ConditionDraft } from './conditions';
import type { Convergence } from './convergence';
import type { ObjectRef } from './identity';
import { MAX_DECISION_BLOCKERS, MAX_DECISION_MESSAGE_LENGTH, type Decision, type DecisionBlocker } from './stored-decision';

function capMessage(message: string): string {
  return message.length <= MAX_DECISION_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_DECISION_MESSAGE_LENGTH - 1)}…`;
}

function storedBlocker(blocker: Blocker): DecisionBlocker {
  if (!isNackBlocker(blocker)) return blocker;
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
    blockersOmitted: convergence.blockers.length - stored.length + (convergence.blockersOmitted ?? 0),
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

/**
 * Settled: no evaluation decides this generation again. A newer generation superseded it, or it is
 * Programmed, which is final for its generation (docs/CONVERGENCE.md, "Resolution").
 */
export function isSettledDecision(decision: Decision | undefined): boolean {
  return decision !== undefined && (decision.supersededBy !== undefined || decision.state === 'Programmed');
}

/**
 * The same verdict: what the condition says apart from counts and blockers (its status and reason,
 * and the reason or controller message it quotes), and whether it was superseded.
 */
export function sameVerdict(a: Decision, b: Decision): boolean {
  return a.state === b.state && a.supersededBy === b.supersededBy && a.notObservableReason === b.notObservableReason && a.controllerMessage === b.controllerMessage;
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
