// Which Kubernetes kinds we write a condition on, and how to address them (the API path needs the
// version and the plural, which an OBJECT item's `group/kind/namespace/name` does not carry).
// Configured as JSON in TRACKED_KINDS, e.g.
//   [{"group":"projectcontour.io","version":"v1","kind":"HTTPProxy","plural":"httpproxies"}]
import { z } from 'zod';

import { GATEWAY_API_CONDITION_TYPE, GATEWAY_API_GROUP, type ObjectRef } from '../../common/core';
import { conditionTypeSchema } from './condition-settings';

/**
 * Where our condition lives on an object of the kind: `conditions`, the top-level
 * `status.conditions` (what `kubectl wait --for=condition` reads); `parents`, entries of our own
 * under `status.parents[]` (Gateway API routes, which have no top-level conditions: see
 * STATUS_CONTROLLER_NAME). Gateway API kinds default to `parents` and a domain-prefixed condition
 * type; every other kind to `conditions` and CONDITION_TYPE.
 */
export const ConditionPlacementSchema = z.enum(['conditions', 'parents']);
export type ConditionPlacement = z.infer<typeof ConditionPlacementSchema>;

export const TrackedKindSchema = z.object({
  group: z.string().min(1).max(253).regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'custom resource groups are DNS subdomains'),
  version: z.string().regex(/^v[0-9]+((alpha|beta)[0-9]+)?$/, 'versions look like v1, v1beta1, v1alpha2'),
  kind: z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,62}$/),
  plural: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/),
  namespaced: z.boolean().default(true),
  /** Our condition's type on this kind (default: `conditionTypeOf`). */
  conditionType: conditionTypeSchema.optional(),
  /** Where it goes (default: `placementOf`). */
  placement: ConditionPlacementSchema.optional(),
});
export type TrackedKind = z.infer<typeof TrackedKindSchema>;

export function placementOf(kind: Pick<TrackedKind, 'group' | 'placement'>): ConditionPlacement {
  return kind.placement ?? (kind.group === GATEWAY_API_GROUP ? 'parents' : 'conditions');
}

/** The kind's condition type; undefined: CONDITION_TYPE applies. */
export function conditionTypeOf(kind: Pick<TrackedKind, 'group' | 'conditionType'>): string | undefined {
  return kind.conditionType ?? (kind.group === GATEWAY_API_GROUP ? GATEWAY_API_CONDITION_TYPE : undefined);
}

export const TrackedKindsSchema = z.array(TrackedKindSchema).min(1, 'TRACKED_KINDS must name at least one kind');

/** Parses TRACKED_KINDS; throws an Error naming the problem. */
export function parseTrackedKinds(json: string | undefined): TrackedKind[] {
  if (json === undefined || json.trim() === '') throw new Error('TRACKED_KINDS is not set (a JSON list of {group, version, kind, plural, namespaced})');
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new Error(`TRACKED_KINDS is not JSON: ${(error as Error).message}`);
  }
  const parsed = TrackedKindsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`TRACKED_KINDS is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export function trackedKindKey(group: string, kind: string): string {
  return `${group}/${kind}`;
}

export class TrackedKinds {
  private readonly byKey = new Map<string, TrackedKind>();

  constructor(readonly kinds: readonly TrackedKind[]) {
    for (const kind of kinds) this.byKey.set(trackedKindKey(kind.group, kind.kind), kind);
  }

  find(ref: Pick<ObjectRef, 'group' | 'kind'>): TrackedKind | undefined {
    return this.byKey.get(trackedKindKey(ref.group, ref.kind));
  }

  /** Our condition's type on `ref`'s kind: the kind's own, else `fallback` (CONDITION_TYPE). */
  conditionTypeFor(ref: Pick<ObjectRef, 'group' | 'kind'>, fallback: string): string {
    const kind = this.find(ref);
    return (kind === undefined ? undefined : conditionTypeOf(kind)) ?? fallback;
  }

  /** `<plural>.<group>`: the CRD's name (Kubernetes requires that form). */
  static crdName(kind: TrackedKind): string {
    return `${kind.plural}.${kind.group}`;
  }
}
