// The status port. After each rebuild the leader writes, per HTTPProxy, Contour's `Valid` condition
// with `observedGeneration` (snapshot first, then status: Contour's order, which the gateway's
// observed-generation barrier relies on). Conditions of other types are kept untouched, as Contour
// does, so our EnvoyProgrammed condition and Contour's can live on one object.
// HTTPRoutes get the Gateway API equivalent at the same point (after the snapshot): one
// status.parents entry per parentRef with Accepted and ResolvedRefs at observedGeneration, every
// other controller's entry kept (gateway-api.ts mergeRouteParents).
import { z } from 'zod';
import { type RouteStatusUpdate, mergeRouteParents } from './gateway-api';

export interface ProxyStatusUpdate {
  namespace: string;
  name: string;
  generation: number;
  valid: boolean;
  reason: string;
  message: string;
}

export interface StatusWriter {
  /** Writes the Valid condition. Rejects on failure (the caller logs and retries on the next rebuild). */
  writeProxyStatus(update: ProxyStatusUpdate): Promise<void>;
  /**
   * Writes our status.parents entries of an HTTPRoute (same failure contract). Optional: a writer
   * without it leaves HTTPRoute status alone.
   */
  writeRouteStatus?(update: RouteStatusUpdate): Promise<void>;
}

/** metav1.Condition as stored; foreign conditions may carry more fields, which are kept as-is. */
export const conditionSchema = z
  .object({
    type: z.string(),
    status: z.string(),
    observedGeneration: z.number().optional(),
    lastTransitionTime: z.string().optional(),
    reason: z.string().optional(),
    message: z.string().optional(),
  })
  .passthrough();
export type Condition = z.infer<typeof conditionSchema>;

export const VALID_CONDITION_TYPE = 'Valid';

/**
 * Merges our Valid condition into `existing` (metav1.Condition rules: keyed by type; lastTransitionTime
 * changes only when status changes). Entries that do not parse as conditions are dropped (logged by the caller).
 */
export function mergeValidCondition(existing: unknown, update: ProxyStatusUpdate, now: Date): Condition[] {
  const current = Array.isArray(existing) ? existing.flatMap((c) => {
    const parsed = conditionSchema.safeParse(c);
    return parsed.success ? [parsed.data] : [];
  }) : [];
  const status = update.valid ? 'True' : 'False';
  const previous = current.find((c) => c.type === VALID_CONDITION_TYPE);
  const condition: Condition = {
    type: VALID_CONDITION_TYPE,
    status,
    observedGeneration: update.generation,
    lastTransitionTime: previous?.status === status && previous.lastTransitionTime ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    reason: update.reason,
    message: update.message,
  };
  const others = current.filter((c) => c.type !== VALID_CONDITION_TYPE);
  return [...others, condition];
}

/** Contour's top-level status fields, derived from Valid. */
export function contourStatusSummary(update: ProxyStatusUpdate): { currentStatus: string; description: string } {
  return { currentStatus: update.valid ? 'valid' : 'invalid', description: update.message };
}

export interface StoredProxyStatus {
  currentStatus: string;
  description: string;
  conditions: Condition[];
}

/** Status writer keeping statuses in memory (tests). Records every write in order. */
export class InMemoryStatusWriter implements StatusWriter {
  readonly statuses = new Map<string, StoredProxyStatus>();
  readonly writes: ProxyStatusUpdate[] = [];
  /** HTTPRoute status.parents per `namespace/name`, and every route write in order. */
  readonly routeParents = new Map<string, unknown[]>();
  readonly routeWrites: RouteStatusUpdate[] = [];

  constructor(private readonly now: () => Date = () => new Date()) {}

  async writeProxyStatus(update: ProxyStatusUpdate): Promise<void> {
    const key = `${update.namespace}/${update.name}`;
    const previous = this.statuses.get(key);
    this.statuses.set(key, {
      ...contourStatusSummary(update),
      conditions: mergeValidCondition(previous?.conditions, update, this.now()),
    });
    this.writes.push(update);
  }

  async writeRouteStatus(update: RouteStatusUpdate): Promise<void> {
    const key = `${update.namespace}/${update.name}`;
    this.routeParents.set(key, mergeRouteParents(this.routeParents.get(key) ?? [], update, this.now()).parents);
    this.routeWrites.push(update);
  }

  /** Adds a condition owned by someone else (to check it survives our writes). */
  setForeignCondition(namespace: string, name: string, condition: Condition): void {
    const key = `${namespace}/${name}`;
    const previous = this.statuses.get(key) ?? { currentStatus: '', description: '', conditions: [] };
    this.statuses.set(key, { ...previous, conditions: [...previous.conditions.filter((c) => c.type !== condition.type), condition] });
  }

  validCondition(namespace: string, name: string): Condition | undefined {
    return this.statuses.get(`${namespace}/${name}`)?.conditions.find((c) => c.type === VALID_CONDITION_TYPE);
  }
}
