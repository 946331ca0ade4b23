// Warm-up changes before a measured change (e2e bench and the Istio/Knative-style baselines alike).
//
// Why: a deployed gateway, control plane and function container are long-running, so the code they
// run per request is optimised by V8; a bench that measures the first change after startup measures
// mostly unoptimised code (interpreted or baseline-compiled). On 100 Envoys × 100 objects (10
// changed, the fleet-size path, single runs on this machine) the gateway's CPU per Envoy-change was
// 3.6-4.2 ms with no warm-up, 2.6 ms after one warm-up change, 1.95-2.0 ms after two, 1.8 ms after
// four and 1.7 ms after six (docs/bench/README.md, round 20). Every process of a run is warmed the
// same way (the gateway, the control plane, the functions, the simulated fleet), and the baselines
// warm theirs too, so comparisons stay like for like.
//
// A warm-up change is the measured change applied to other objects: the samples after the measured
// ones (round r patches samples changed × (r + 1) … changed × (r + 2) − 1), each round waited for
// until done, then the run settles. With too few objects fewer rounds run, and the result says how
// many did.
import { forEachIndexConcurrently } from '../../common/worker-pool';

/** Warm-up changes before each measured change unless told otherwise (see above for why this many). */
export const DEFAULT_WARMUP_CHANGES = 3;

export interface WarmupPlan {
  /** Warm-up changes asked for. */
  changes: number;
  /** Objects the measured change patches (samples 0 … measured − 1); each warm-up patches as many others. */
  measured: number;
  /** Objects there are (samples 0 … objects − 1). */
  objects: number;
}

export interface WarmupResult {
  /** Warm-up changes asked for. */
  asked: number;
  /** Warm-up changes run (fewer when there were not enough other objects). */
  changes: number;
  objectsPerChange: number;
  /** Per warm-up change: from its first patch until it was done (the caller's `done`), ms. */
  doneAfterMs: number[];
}

/** The samples warm-up round `round` (0-based) patches, or undefined when there are not enough objects left for it. */
export function warmupIndexes(plan: WarmupPlan, round: number): number[] | undefined {
  if (plan.measured <= 0) return undefined;
  const first = plan.measured * (round + 1);
  if (first + plan.measured > plan.objects) return undefined;
  return Array.from({ length: plan.measured }, (_, offset) => first + offset);
}

export interface WarmupSteps {
  /** Applies the measured change's patch to sample `index`. */
  patch(index: number): Promise<void>;
  /** Resolves once the change to these samples is done (True everywhere, or held by every Envoy). */
  done(indexes: readonly number[]): Promise<void>;
  /** Resolves once the run is quiet again (the functions' deliveries idle, say); absent: nothing to wait for. */
  settle?(): Promise<void>;
}

/** Runs the warm-up changes of `plan` one after another (patches of one change go out `concurrency` at a time). */
export async function warmUp(plan: WarmupPlan, steps: WarmupSteps, concurrency: number): Promise<WarmupResult> {
  const doneAfterMs: number[] = [];
  for (let round = 0; round < plan.changes; round++) {
    const indexes = warmupIndexes(plan, round);
    if (indexes === undefined) break;
    const startedAt = Date.now();
    await forEachIndexConcurrently(indexes.length, concurrency, (offset) => steps.patch(indexes[offset] as number));
    await steps.done(indexes);
    doneAfterMs.push(Date.now() - startedAt);
    await steps.settle?.();
  }
  return { asked: plan.changes, changes: doneAfterMs.length, objectsPerChange: plan.measured, doneAfterMs };
}
