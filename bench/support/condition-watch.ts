// Follows one namespaced collection on the local Kubernetes API server with a real watch and keeps,
// per object, when a status condition of one type first said True for each generation and how many
// times that condition changed. The apiserver sends a MODIFIED event for every write that changed
// the stored object (a no-op write keeps its resourceVersion and sends nothing), so the count is
// "condition-changing writes", which is what the ≤ 2 writes per object per generation target means.
import { z } from 'zod';

const conditionSchema = z.object({
  type: z.string(),
  status: z.string(),
  observedGeneration: z.number().int().optional(),
  reason: z.string().optional(),
  lastTransitionTime: z.string().optional(),
});

const watchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.object({
    metadata: z.object({ name: z.string().optional(), generation: z.number().int().optional() }).passthrough(),
    status: z.object({ conditions: z.array(z.unknown()).optional() }).passthrough().optional(),
  }).passthrough(),
});

export interface ObjectProgress {
  generation: number;
  /** Our condition as last seen (JSON), to tell a changing write from another field's write. */
  lastCondition: string | undefined;
  /** generation → when (Date.now) the condition first said True with that observedGeneration. */
  trueAt: Map<number, number>;
  /** generation → condition-changing writes seen while the object was at that generation. */
  conditionWrites: Map<number, number>;
  /** Every condition change seen (bounded), to explain the write count. */
  history: Array<{ generation: number; status: string; reason: string | undefined; observedGeneration: number | undefined }>;
}

const HISTORY_LIMIT = 16;

export interface ConditionWatch {
  readonly objects: ReadonlyMap<string, ObjectProgress>;
  /** Events that failed validation (logged by the caller from here; the watch keeps going). */
  readonly malformed: number;
  /** True once every name is True at (at least) the generation given. */
  allTrueAt(names: readonly string[], generation: (name: string) => number): boolean;
  close(): void;
}

export interface ConditionWatchOptions {
  /** e.g. http://127.0.0.1:1234/apis/projectcontour.io/v1/namespaces/default/httpproxies */
  collectionUrl: string;
  conditionType: string;
  now?: () => number;
}

/** Applies one decoded event to the progress map (exported for unit tests). */
export function applyWatchEvent(objects: Map<string, ObjectProgress>, raw: unknown, conditionType: string, at: number): boolean {
  const parsed = watchEventSchema.safeParse(raw);
  if (!parsed.success) return false;
  const { type, object } = parsed.data;
  const name = object.metadata.name;
  if (type === 'BOOKMARK' || type === 'ERROR' || name === undefined) return true;
  if (type === 'DELETED') {
    objects.delete(name);
    return true;
  }
  const generation = object.metadata.generation ?? 0;
  const progress = objects.get(name) ?? { generation, lastCondition: undefined, trueAt: new Map<number, number>(), conditionWrites: new Map<number, number>(), history: [] };
  progress.generation = generation;
  objects.set(name, progress);
  const condition = (object.status?.conditions ?? [])
    .map((c) => conditionSchema.safeParse(c))
    .flatMap((c) => (c.success && c.data.type === conditionType ? [c.data] : []))[0];
  const serialized = condition === undefined ? undefined : JSON.stringify(condition);
  if (serialized !== progress.lastCondition) {
    // The first sight of an object (ADDED at watch start) is state, not a write we saw happen.
    if (type === 'MODIFIED') progress.conditionWrites.set(generation, (progress.conditionWrites.get(generation) ?? 0) + 1);
    if (condition !== undefined && progress.history.length < HISTORY_LIMIT) {
      progress.history.push({ generation, status: condition.status, reason: condition.reason, observedGeneration: condition.observedGeneration });
    }
    progress.lastCondition = serialized;
  }
  if (condition?.status === 'True' && condition.observedGeneration !== undefined && !progress.trueAt.has(condition.observedGeneration)) {
    progress.trueAt.set(condition.observedGeneration, at);
  }
  return true;
}

export function startConditionWatch(options: ConditionWatchOptions): ConditionWatch {
  const now = options.now ?? Date.now;
  const objects = new Map<string, ObjectProgress>();
  const abort = new AbortController();
  let malformed = 0;
  const consume = async (): Promise<void> => {
    const response = await fetch(`${options.collectionUrl}?watch=true`, { signal: abort.signal });
    if (!response.ok || response.body === null) throw new Error(`watch failed: HTTP ${response.status}`);
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (line === '') continue;
        let decoded: unknown;
        try {
          decoded = JSON.parse(line);
        } catch {
          malformed++;
          continue;
        }
        if (!applyWatchEvent(objects, decoded, options.conditionType, now())) malformed++;
      }
    }
  };
  const done = consume().catch((error: unknown) => {
    if (!abort.signal.aborted) throw error;
  });
  // Surface a broken watch instead of silently waiting for a True that never comes.
  let failure: unknown;
  done.catch((error: unknown) => {
    failure = error;
  });
  return {
    objects,
    get malformed() {
      return malformed;
    },
    allTrueAt(names, generation) {
      if (failure !== undefined) throw failure instanceof Error ? failure : new Error(String(failure));
      return names.every((name) => {
        const progress = objects.get(name);
        const wanted = generation(name);
        return progress !== undefined && [...progress.trueAt.keys()].some((g) => g >= wanted);
      });
    },
    close() {
      abort.abort();
    },
  };
}
