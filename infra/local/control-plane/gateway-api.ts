// Gateway API HTTPRoute (gateway.networking.k8s.io/v1) as the reference control plane reads it, and
// the route status it writes. The subset: `spec.parentRefs` (every parent counts as attached: there
// are no Gateway/GatewayClass objects here), the first of `spec.hostnames` as the virtual host,
// `rules[].matches[].path` (PathPrefix, Exact: both served as a prefix) and `rules[].backendRefs`
// (Services: Endpoints of that name, port required). Metadata is validated like an HTTPProxy's
// (model.ts); spec problems keep the object and become conditions, as for HTTPProxy.
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { objectMetadataSchema } from './object-metadata';

export const HTTPROUTE_GROUP = 'gateway.networking.k8s.io';
export const HTTPROUTE_VERSION = 'v1';
export const HTTPROUTE_KIND = 'HTTPRoute';
export const HTTPROUTE_PLURAL = 'httproutes';
export const HTTPROUTE_API_VERSION = `${HTTPROUTE_GROUP}/${HTTPROUTE_VERSION}`;
export const HTTPROUTE_CRD_NAME = `${HTTPROUTE_PLURAL}.${HTTPROUTE_GROUP}`;

/** `controllerName` of the status.parents entries this control plane writes (one per parentRef). */
export const REFERENCE_CONTROLLER_NAME = 'xds-programmed.dev/reference-control-plane';

/** Gateway API's cap on `status.parents` entries (RouteStatus maxItems); every controller shares it. */
export const MAX_ROUTE_PARENT_STATUSES = 32;

/** The tracked-kind entry the status function (TRACKED_KINDS) needs for HTTPRoutes. */
export const HTTPROUTE_TRACKED_KIND = {
  group: HTTPROUTE_GROUP,
  version: HTTPROUTE_VERSION,
  kind: HTTPROUTE_KIND,
  plural: HTTPROUTE_PLURAL,
  namespaced: true,
} as const;


/** An HTTPRoute as the control plane sees it: metadata validated, spec still unknown. */
export const httpRouteObjectSchema = z.object({
  metadata: objectMetadataSchema,
  spec: z.unknown(),
  status: z.unknown().optional(),
});
export type HTTPRouteObject = z.infer<typeof httpRouteObjectSchema>;

const kubeName = z.string().min(1).max(253);

export const httpRouteBackendRefSchema = z.object({
  group: z.string().optional(),
  kind: z.string().optional(),
  name: kubeName,
  namespace: kubeName.optional(),
  port: z.number().int().min(1).max(65535, 'port must be 1-65535'),
  weight: z.number().int().min(0).max(1_000_000).optional(),
});
export type HTTPRouteBackendRef = z.infer<typeof httpRouteBackendRefSchema>;

const unsupported = (what: string) => z.undefined({ error: `${what} is not supported by this control plane` }).optional();

export const httpRouteMatchSchema = z.object({
  path: z
    .object({
      type: z.enum(['PathPrefix', 'Exact', 'RegularExpression']).optional(),
      value: z.string().optional(),
    })
    .optional(),
  headers: unsupported('matches[].headers'),
  queryParams: unsupported('matches[].queryParams'),
  method: unsupported('matches[].method'),
});

export const httpRouteRuleSchema = z.object({
  matches: z.array(httpRouteMatchSchema).optional(),
  backendRefs: z.array(httpRouteBackendRefSchema.passthrough()).optional(),
  filters: z.array(z.unknown()).max(0, 'filters are not supported by this control plane').optional(),
});
export type HTTPRouteRule = z.infer<typeof httpRouteRuleSchema>;

export const httpRouteSpecSchema = z.object({
  // Reported back verbatim in status.parents[].parentRef, so kept as read.
  parentRefs: z.array(z.record(z.string(), z.unknown())).optional(),
  hostnames: z.array(z.string()).optional(),
  rules: z.array(httpRouteRuleSchema).optional(),
});
export type HTTPRouteSpec = z.infer<typeof httpRouteSpecSchema>;

/** The parentRefs of a route's spec as given (entries that are not objects dropped); [] if unreadable. */
export function parentRefsOf(route: HTTPRouteObject): Record<string, unknown>[] {
  const refs = (route.spec as { parentRefs?: unknown } | null | undefined)?.parentRefs;
  if (!Array.isArray(refs)) return [];
  return refs.filter((ref): ref is Record<string, unknown> => ref !== null && typeof ref === 'object' && !Array.isArray(ref));
}

export interface RouteCondition {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** What a rebuild says about one HTTPRoute at one generation: the same verdict for every parent. */
export interface RouteStatusUpdate {
  namespace: string;
  name: string;
  generation: number;
  /** spec.parentRefs at `generation`, verbatim: one status entry each. */
  parentRefs: Record<string, unknown>[];
  accepted: RouteCondition;
  resolvedRefs: RouteCondition;
}

export const ACCEPTED_CONDITION_TYPE = 'Accepted';
export const RESOLVED_REFS_CONDITION_TYPE = 'ResolvedRefs';

/** A status.parents entry as we write it; entries of other controllers are kept as whatever they are. */
export interface RouteParentStatus {
  parentRef: Record<string, unknown>;
  controllerName: string;
  conditions: Array<Record<string, unknown>>;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function kubeTime(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The highest observedGeneration in our own entries of `parents` (undefined: none), so a writer can
 * refuse to move our status backwards.
 */
export function ourObservedGeneration(parents: readonly unknown[]): number | undefined {
  let highest: number | undefined;
  for (const entry of parents.map(asRecord)) {
    if (entry?.['controllerName'] !== REFERENCE_CONTROLLER_NAME || !Array.isArray(entry['conditions'])) continue;
    for (const condition of entry['conditions'].map(asRecord)) {
      const generation = condition?.['observedGeneration'];
      if (typeof generation === 'number' && (highest === undefined || generation > highest)) highest = generation;
    }
  }
  return highest;
}

/**
 * The new status.parents: every entry of another controller exactly as read and in its order (they
 * write concurrently: the caller's resourceVersion precondition keeps them current), then one entry
 * of ours per parentRef, within the 32 entries all controllers share. Per parentRef and condition
 * type, lastTransitionTime is kept from our previous entry while the status stays the same.
 * `truncated` counts parentRefs left without an entry for lack of room.
 */
export function mergeRouteParents(existing: readonly unknown[], update: RouteStatusUpdate, now: Date): { parents: unknown[]; truncated: number } {
  const others = existing.filter((entry) => asRecord(entry)?.['controllerName'] !== REFERENCE_CONTROLLER_NAME);
  const previous = existing.map(asRecord).filter((entry): entry is Record<string, unknown> => entry?.['controllerName'] === REFERENCE_CONTROLLER_NAME);
  const room = Math.max(0, MAX_ROUTE_PARENT_STATUSES - others.length);
  const ours: RouteParentStatus[] = update.parentRefs.slice(0, room).map((parentRef) => {
    const before = previous.find((entry) => isDeepStrictEqual(entry['parentRef'], parentRef));
    const beforeConditions = Array.isArray(before?.['conditions']) ? before['conditions'].map(asRecord) : [];
    const condition = (type: string, value: RouteCondition): Record<string, unknown> => {
      const old = beforeConditions.find((c) => c?.['type'] === type);
      const keep = old?.['status'] === value.status && typeof old['lastTransitionTime'] === 'string';
      return {
        type,
        status: value.status,
        observedGeneration: update.generation,
        lastTransitionTime: keep ? (old['lastTransitionTime'] as string) : kubeTime(now),
        reason: value.reason,
        message: value.message,
      };
    };
    return {
      parentRef,
      controllerName: REFERENCE_CONTROLLER_NAME,
      conditions: [condition(ACCEPTED_CONDITION_TYPE, update.accepted), condition(RESOLVED_REFS_CONDITION_TYPE, update.resolvedRefs)],
    };
  });
  return { parents: [...others, ...ours], truncated: update.parentRefs.length - ours.length };
}
