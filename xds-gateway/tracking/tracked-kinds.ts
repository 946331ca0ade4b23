// Which Kubernetes kinds the gateway tracks, and how it reads "the controller has processed
// generation G" from each (the observed-generation barrier: docs/GATEWAY.md, "Watermarks"). Validated with zod at the
// edge (a JSON config flag); the readers are pure and never throw on whatever a status holds.
import { z } from 'zod';
import { STATUS_CONTROLLER_NAME, type ObjectRef } from '../../common/core';
import { TrackedKindSchema, type ProcessedSignal } from '../../common/tracked-kinds';


/** The gateway's entries: the shared TRACKED_KINDS entry, with the signal it reads "processed" from required. */
const GatewayTrackedKindSchema = TrackedKindSchema.required({ signal: true });
export type TrackedKind = z.infer<typeof GatewayTrackedKindSchema>;
export const TrackedKindsSchema = z.array(GatewayTrackedKindSchema);

export const HTTPPROXY_KIND: TrackedKind = {
  group: 'projectcontour.io',
  version: 'v1',
  kind: 'HTTPProxy',
  plural: 'httpproxies',
  namespaced: true,
  signal: { type: 'condition', conditionType: 'Valid', rejectedWhenStatus: 'False' },
};

export const HTTPROUTE_KIND: TrackedKind = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  kind: 'HTTPRoute',
  plural: 'httproutes',
  namespaced: true,
  signal: { type: 'parents', rejectedWhenFalse: ['Accepted', 'ResolvedRefs'] },
};

export const DEFAULT_NOT_OBSERVABLE_REASON = 'the controller of this kind reports no observedGeneration, so the gateway cannot tell which config version reflects a generation';

/** The API path an informer lists and watches (all namespaces). */
export function kindPath(kind: TrackedKind): string {
  return kind.group === '' ? `/api/${kind.version}/${kind.plural}` : `/apis/${kind.group}/${kind.version}/${kind.plural}`;
}

export interface ObservedObject {
  ref: ObjectRef;
  /** metadata.generation */
  generation: number;
  /** The generation the controller reports as processed; undefined: no signal (yet). */
  processed: number | undefined;
  /** Set when the controller reports `processed` as rejected: its message (untrusted text). */
  rejected?: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** Reads an object from a watch event; undefined if it lacks a name or a generation. */
export function observeObject(kind: TrackedKind, object: unknown): ObservedObject | undefined {
  const metadata = record(record(object)?.['metadata']);
  const name = metadata?.['name'];
  const generation = positiveInt(metadata?.['generation']);
  if (typeof name !== 'string' || generation === undefined) return undefined;
  const namespace = typeof metadata?.['namespace'] === 'string' ? (metadata['namespace'] as string) : '';
  const ref = { group: kind.group, kind: kind.kind, namespace, name };
  const status = record(record(object)?.['status']);
  const processed = processedGeneration(kind.signal, status);
  const rejected = processed === undefined ? undefined : controllerRejection(kind.signal, status);
  return { ref, generation, processed, ...(rejected === undefined ? {} : { rejected }) };
}

/** Longest controller message kept (the condition quotes at most 1 KiB of it). */
export const MAX_REJECTION_MESSAGE_LENGTH = 1024;

/**
 * The controller's message when the processed generation was rejected (the signal's condition has the
 * rejecting status), else undefined. Empty messages still reject: the status is the verdict.
 */
export function controllerRejection(signal: ProcessedSignal, status: Record<string, unknown> | undefined): string | undefined {
  if (signal.type === 'parents') return parentsRejection(signal, status);
  if (signal.type !== 'condition' || signal.rejectedWhenStatus === undefined) return undefined;
  const conditions = status?.['conditions'];
  if (!Array.isArray(conditions)) return undefined;
  const condition = conditions.map(record).find((c) => c?.['type'] === signal.conditionType);
  if (condition?.['status'] !== signal.rejectedWhenStatus) return undefined;
  const message = typeof condition['message'] === 'string' && condition['message'] !== '' ? condition['message'] : `${signal.conditionType} is ${signal.rejectedWhenStatus}`;
  return message.slice(0, MAX_REJECTION_MESSAGE_LENGTH);
}

/** The controller's entries of a `parents` status (ours and, with a controllerName, other controllers' left out). */
function controllerParents(signal: Extract<ProcessedSignal, { type: 'parents' }>, status: Record<string, unknown> | undefined): Record<string, unknown>[] | undefined {
  const parents = status?.['parents'];
  if (!Array.isArray(parents)) return undefined;
  return parents
    .map(record)
    .filter((parent): parent is Record<string, unknown> => parent !== undefined)
    // Our own entries (the verdict we write, common/core STATUS_CONTROLLER_NAME) are not the
    // controller's: counting them would make our condition its own "processed" signal.
    .filter((parent) => parent['controllerName'] !== STATUS_CONTROLLER_NAME)
    .filter((parent) => signal.controllerName === undefined || parent['controllerName'] === signal.controllerName);
}

/**
 * A Gateway API route the controller rejected: one of its entries has a `rejectedWhenFalse`
 * condition False at the generation all its entries report (Contour: `Accepted=False` for a route no
 * listener allows, `ResolvedRefs=False` for a missing backend Service). "<type>: <message>" of the first.
 */
function parentsRejection(signal: Extract<ProcessedSignal, { type: 'parents' }>, status: Record<string, unknown> | undefined): string | undefined {
  const types = signal.rejectedWhenFalse ?? [];
  if (types.length === 0) return undefined;
  const processed = processedGeneration(signal, status);
  for (const parent of controllerParents(signal, status) ?? []) {
    const conditions = Array.isArray(parent['conditions']) ? parent['conditions'].map(record) : [];
    for (const condition of conditions) {
      if (condition === undefined || typeof condition['type'] !== 'string' || !types.includes(condition['type'])) continue;
      if (condition['status'] !== 'False' || positiveInt(condition['observedGeneration']) !== processed) continue;
      const message = typeof condition['message'] === 'string' && condition['message'] !== '' ? condition['message'] : `${condition['type']} is False`;
      return `${condition['type']}: ${message}`.slice(0, MAX_REJECTION_MESSAGE_LENGTH);
    }
  }
  return undefined;
}

export function processedGeneration(signal: ProcessedSignal, status: Record<string, unknown> | undefined): number | undefined {
  switch (signal.type) {
    case 'none':
      return undefined;
    case 'condition': {
      const conditions = status?.['conditions'];
      if (!Array.isArray(conditions)) return undefined;
      const condition = conditions.map(record).find((c) => c?.['type'] === signal.conditionType);
      return positiveInt(condition?.['observedGeneration']);
    }
    case 'parents': {
      const parents = controllerParents(signal, status);
      if (parents === undefined) return undefined;
      let least: number | undefined;
      for (const parent of parents) {
        const conditions = parent['conditions'];
        if (!Array.isArray(conditions)) return undefined;
        // A parent's conditions may lag each other; the parent has processed what all of them say.
        let parentProcessed: number | undefined;
        for (const condition of conditions.map(record)) {
          const generation = positiveInt(condition?.['observedGeneration']);
          if (generation === undefined) continue;
          parentProcessed = parentProcessed === undefined ? generation : Math.min(parentProcessed, generation);
        }
        if (parentProcessed === undefined) return undefined;
        least = least === undefined ? parentProcessed : Math.min(least, parentProcessed);
      }
      return least;
    }
  }
}
