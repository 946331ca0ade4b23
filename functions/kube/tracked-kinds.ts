// Which Kubernetes kinds we write a condition on, and how to address them (the API path needs the
// version and the plural, which an OBJECT item's `group/kind/namespace/name` does not carry).
// Configured as JSON in TRACKED_KINDS, e.g.
//   [{"group":"projectcontour.io","version":"v1","kind":"HTTPProxy","plural":"httpproxies"}]
import { z } from 'zod';

import { GATEWAY_API_CONDITION_TYPE, GATEWAY_API_GROUP, type ObjectRef } from '../../common/core';
import { describeTrackedKindIssues, TrackedKindSchema, type ConditionPlacement, type TrackedKind } from '../../common/tracked-kinds';


/**
 * The status writer's entries: the shared schema with the two fields it addresses a CRD by held to
 * the CRD's rules (its name is `<plural>.<group>`, so the core group "" cannot be written to; the
 * API path needs a Kubernetes version name).
 */
const StatusWriterKindSchema = TrackedKindSchema.extend({
  group: z.string().min(1).max(253).regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'custom resource groups are DNS subdomains'),
  version: z.string().regex(/^v[0-9]+((alpha|beta)[0-9]+)?$/, 'versions look like v1, v1beta1, v1alpha2'),
});

export function placementOf(kind: Pick<TrackedKind, 'group' | 'placement'>): ConditionPlacement {
  return kind.placement ?? (kind.group === GATEWAY_API_GROUP ? 'parents' : 'conditions');
}

/** The kind's condition type; undefined: CONDITION_TYPE applies. */
export function conditionTypeOf(kind: Pick<TrackedKind, 'group' | 'conditionType'>): string | undefined {
  return kind.conditionType ?? (kind.group === GATEWAY_API_GROUP ? GATEWAY_API_CONDITION_TYPE : undefined);
}

export const TrackedKindsSchema = z.array(StatusWriterKindSchema).min(1, 'TRACKED_KINDS must name at least one kind');

/** What a function that cannot run without tracked kinds (status) says when TRACKED_KINDS is unset. */
export const TRACKED_KINDS_NOT_SET = 'TRACKED_KINDS is not set (a JSON list of {group, version, kind, plural, namespaced})';

/** Parses TRACKED_KINDS; throws an Error naming the problem. */
export function parseTrackedKinds(json: string | undefined): TrackedKind[] {
  if (json === undefined || json.trim() === '') throw new Error(TRACKED_KINDS_NOT_SET);
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new Error(`TRACKED_KINDS is not JSON: ${(error as Error).message}`);
  }
  const parsed = TrackedKindsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`TRACKED_KINDS is invalid: ${describeTrackedKindIssues(parsed.error)}`);
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
