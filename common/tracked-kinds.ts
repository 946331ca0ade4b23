// One entry of TRACKED_KINDS, the JSON list naming the Kubernetes kinds whose objects get our
// condition. Two processes read that list: the gateway (xds-gateway/tracking/tracked-kinds.ts: how to
// watch a kind and read "the controller has processed generation G" from it, `signal`) and the
// functions that write the condition (functions/kube/tracked-kinds.ts: where the condition goes,
// `namespaced`, `conditionType`, `placement`). An entry carries the addressing both need and the
// fields each side reads; this one schema validates all of them, and each side adds only what it
// alone requires (the gateway: a `signal`; the status writer: a CRD-shaped group and version).
//
// zod, no I/O: it sits beside common/core (which stays free of validation libraries by habit, not
// by lint rule) because both the gateway and the functions import it.
import { z } from 'zod';

/** A metav1.Condition type: CamelCase, optionally prefixed by a DNS domain and "/". */
export const conditionTypeSchema = z
  .string()
  .regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z][A-Za-z0-9_.-]{0,62}$/, 'a condition type is CamelCase, optionally prefixed by a DNS domain and "/"');

/**
 * Where our condition lives on an object of the kind: `conditions`, the top-level
 * `status.conditions` (what `kubectl wait --for=condition` reads); `parents`, entries of our own
 * under `status.parents[]` (Gateway API routes, which have no top-level conditions: see
 * STATUS_CONTROLLER_NAME). Gateway API kinds default to `parents` and a domain-prefixed condition
 * type; every other kind to `conditions` and CONDITION_TYPE (functions/kube/tracked-kinds.ts).
 */
export const ConditionPlacementSchema = z.enum(['conditions', 'parents']);
export type ConditionPlacement = z.infer<typeof ConditionPlacementSchema>;

/**
 * How the gateway reads "the controller has processed generation G" from a kind's status
 * (the observed-generation barrier: docs/GATEWAY.md, "Watermarks"):
 * - `condition`: `status.conditions[type=<conditionType>].observedGeneration` (Contour's HTTPProxy:
 *   the `Valid` condition, written after the snapshot, see infra/local/control-plane/status.ts);
 * - `parents`: Gateway API routes: `status.parents[].conditions[].observedGeneration`; the controller
 *   has processed G once every parent entry it owns (`controllerName`, if configured) reports >= G, we
 *   take the minimum over those entries (the least advanced parent);
 * - `none`: the kind gives no such signal: every generation is marked not observable (the condition
 *   says so instead of guessing).
 *
 * `condition` may also say which status of that condition means "processed, but rejected"
 * (`rejectedWhenStatus`; HTTPProxy: `Valid` `False`, with Contour's message). Such a generation gets
 * no barrier (its content was never applied, so Envoys reaching a later version prove nothing): it
 * is marked rejected and our condition says Invalid with the controller's message. Opt-in, because
 * for other conditions (`Ready=False`) False may only mean "not yet". `parents` (Gateway API) has no
 * such signal yet: a route with `Accepted=False` is still treated as processed.
 */
export const ProcessedSignalSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('condition'), conditionType: z.string().min(1).default('Valid'), rejectedWhenStatus: z.enum(['True', 'False', 'Unknown']).optional() }),
  z.object({
    type: z.literal('parents'),
    controllerName: z.string().min(1).optional(),
    /** Conditions of the controller's entries whose status False at the processed generation means "rejected" (HTTPRoute: Accepted, ResolvedRefs). */
    rejectedWhenFalse: z.array(z.string().min(1)).optional(),
  }),
  z.object({ type: z.literal('none'), reason: z.string().min(1).optional() }),
]);
export type ProcessedSignal = z.infer<typeof ProcessedSignalSchema>;

export const TrackedKindSchema = z.object({
  /** The API group; "" is the core group (the gateway can watch it; the status writer needs a CRD group). */
  group: z.string(),
  version: z.string().min(1),
  kind: z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,62}$/, 'a kind is CamelCase, 1-63 of [A-Za-z0-9] starting with a letter'),
  plural: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a plural is a lowercase DNS label'),
  /** Read by the status writer (the API path has a namespace segment or not). */
  namespaced: z.boolean().default(true),
  /** Our condition's type on this kind (functions/kube/tracked-kinds.ts `conditionTypeOf` has the default). */
  conditionType: conditionTypeSchema.optional(),
  /** Where our condition goes (functions/kube/tracked-kinds.ts `placementOf` has the default). */
  placement: ConditionPlacementSchema.optional(),
  /** Read by the gateway, which requires it (xds-gateway/tracking/tracked-kinds.ts). */
  signal: ProcessedSignalSchema.optional(),
});
export type TrackedKind = z.infer<typeof TrackedKindSchema>;

/** zod issues as one line, `<index>.<field>: <message>; …` (both sides report TRACKED_KINDS errors this way). */
export function describeTrackedKindIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
}
