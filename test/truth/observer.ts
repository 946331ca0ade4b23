// Every write of the tracked condition, seen through a Kubernetes watch on the HTTPProxies (the same
// view `kubectl wait` has), stamped with the time it arrived. The watch restarts from the last
// resourceVersion if the server ends it; a 410 Gone restarts it from a fresh list.
import { z } from 'zod';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE } from '../../infra/local/system/samples';

export interface ObservedCondition {
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
}

export interface ConditionWrite {
  /** `sample-<i>` */
  name: string;
  /** Milliseconds since the epoch when the watch delivered it. */
  at: number;
  /** metadata.generation at that moment. */
  generation: number;
  condition: ObservedCondition;
  /** The object's resourceVersion in the event that carried this condition (attributes the write). */
  resourceVersion?: string;
  /** The resourceVersion of the write or removal this one replaced (a repair replaces a competitor's). */
  replacedResourceVersion?: string;
}

/** Our condition disappeared from an object (only a competing writer does that; we never remove it). */
export interface ConditionRemoval {
  name: string;
  at: number;
  resourceVersion?: string;
}

const conditionSchema = z.object({
  type: z.string(),
  status: z.string(),
  reason: z.string().default(''),
  message: z.string().default(''),
  observedGeneration: z.number().int().default(0),
});

const watchEventSchema = z.object({
  type: z.string(),
  object: z.object({
    metadata: z.object({ name: z.string().optional(), resourceVersion: z.string().optional(), generation: z.number().int().optional() }).passthrough(),
    status: z.object({ conditions: z.array(conditionSchema).optional() }).passthrough().optional(),
  }).passthrough(),
});

export class ConditionObserver {
  readonly writes: ConditionWrite[] = [];
  /** Lines the watch delivered that were not a valid watch event (reported, not fatal). */
  readonly malformed: string[] = [];
  readonly removals: ConditionRemoval[] = [];
  /** Per object, the resourceVersion of the last removal not yet followed by a write. */
  private readonly removedAt = new Map<string, string | undefined>();
  private readonly latest = new Map<string, ConditionWrite>();
  private readonly abort = new AbortController();
  private resourceVersion: string | undefined;
  private running: Promise<void> | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly kubeUrl: string,
    private readonly conditionType: string,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** The latest condition seen for an object. */
  current(name: string): ConditionWrite | undefined {
    return this.latest.get(name);
  }

  /** Resolves once `predicate` holds (checked after each event), or rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!predicate()) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.listeners.add(check);
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  private async loop(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        await this.watchOnce();
      } catch (error) {
        if (this.abort.signal.aborted) return;
        // A transient failure of the local server: resume after a short pause.
        void error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  private async watchOnce(): Promise<void> {
    const params = new URLSearchParams({ watch: 'true', allowWatchBookmarks: 'true' });
    if (this.resourceVersion) params.set('resourceVersion', this.resourceVersion);
    const response = await fetch(`${this.kubeUrl}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies?${params.toString()}`, { signal: this.abort.signal });
    if (response.status === 410) {
      this.resourceVersion = undefined;
      return;
    }
    if (!response.ok || !response.body) throw new Error(`watch: HTTP ${response.status}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) this.onLine(line);
        newline = buffer.indexOf('\n');
      }
    }
  }

  private onLine(line: string): void {
    let parsed: z.infer<typeof watchEventSchema>;
    try {
      parsed = watchEventSchema.parse(JSON.parse(line));
    } catch {
      this.malformed.push(line.slice(0, 200));
      return;
    }
    const { metadata } = parsed.object;
    if (metadata.resourceVersion) this.resourceVersion = metadata.resourceVersion;
    if (parsed.type === 'ERROR') {
      this.resourceVersion = undefined;
      return;
    }
    if (parsed.type !== 'ADDED' && parsed.type !== 'MODIFIED') return;
    const name = metadata.name;
    const found = parsed.object.status?.conditions?.find((c) => c.type === this.conditionType);
    if (name && !found && this.latest.has(name)) {
      this.latest.delete(name);
      this.removals.push({ name, at: Date.now(), ...(metadata.resourceVersion ? { resourceVersion: metadata.resourceVersion } : {}) });
      this.removedAt.set(name, metadata.resourceVersion);
      for (const listener of [...this.listeners]) listener();
      return;
    }
    if (!name || !found) return;
    const condition: ObservedCondition = { status: found.status, reason: found.reason, message: found.message, observedGeneration: found.observedGeneration };
    const previous = this.latest.get(name);
    const same =
      previous &&
      previous.condition.status === condition.status &&
      previous.condition.reason === condition.reason &&
      previous.condition.message === condition.message &&
      previous.condition.observedGeneration === condition.observedGeneration;
    if (!same) {
      const replaced = previous ? previous.resourceVersion : this.removedAt.get(name);
      this.removedAt.delete(name);
      const write: ConditionWrite = {
        name,
        at: Date.now(),
        generation: metadata.generation ?? 0,
        condition,
        ...(metadata.resourceVersion ? { resourceVersion: metadata.resourceVersion } : {}),
        ...(replaced ? { replacedResourceVersion: replaced } : {}),
      };
      this.writes.push(write);
      this.latest.set(name, write);
    } else if (previous) {
      previous.generation = metadata.generation ?? previous.generation;
    }
    for (const listener of [...this.listeners]) listener();
  }
}
