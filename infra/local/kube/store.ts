// Objects in memory, the global resourceVersion counter and the watch event history.
// Kubernetes rules kept here: resourceVersion is one cluster-wide, strictly increasing counter
// (etcd's revision), every write gets a new one, and a watch can resume from any resourceVersion
// still inside the history window; older ones get 410 Gone ("too old resource version"), which
// tells clients to relist.
import { deepCopy, isJsonObject, type JsonObject } from './json';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  resourceVersion: number;
  resourceKey: string;
  type: WatchEventType;
  /** The object after the change (for DELETED: the last state, with the deletion's resourceVersion). */
  object: JsonObject;
  /** The object before the change (undefined for ADDED): lets a filtered watch see an object leave its selection. */
  previous: JsonObject | undefined;
}

export type EventListener = (event: StoredEvent) => void;

export interface StoreSnapshot {
  resourceVersion: number;
  objects: Record<string, JsonObject[]>;
}

export function objectKeyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function namespaceOf(object: JsonObject): string | undefined {
  const metadata = object['metadata'];
  const namespace = isJsonObject(metadata) ? metadata['namespace'] : undefined;
  return typeof namespace === 'string' && namespace !== '' ? namespace : undefined;
}

export function nameOf(object: JsonObject): string {
  const metadata = object['metadata'];
  const name = isJsonObject(metadata) ? metadata['name'] : undefined;
  return typeof name === 'string' ? name : '';
}

export class ObjectStore {
  private resourceVersion: number;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  private readonly history: StoredEvent[] = [];
  /** Events at or below this resourceVersion are no longer in the history. */
  private compactedThrough: number;
  private readonly listeners = new Set<EventListener>();

  constructor(
    private readonly historyLimit: number,
    initialResourceVersion = 1,
    /** A failing listener (a watch, the state writer) must not fail the write that fed it. */
    private readonly onListenerError: (error: unknown, event: StoredEvent) => void = () => undefined,
  ) {
    this.resourceVersion = initialResourceVersion;
    this.compactedThrough = initialResourceVersion;
  }

  currentResourceVersion(): number {
    return this.resourceVersion;
  }

  oldestResumableResourceVersion(): number {
    return this.compactedThrough;
  }

  nextResourceVersion(): number {
    this.resourceVersion += 1;
    return this.resourceVersion;
  }

  get(resourceKey: string, objectKey: string): JsonObject | undefined {
    const object = this.objects.get(resourceKey)?.get(objectKey);
    return object ? deepCopy(object) : undefined;
  }

  /** Objects of one resource, sorted by namespace/name like etcd keys; `namespace` narrows. */
  list(resourceKey: string, namespace?: string): { key: string; object: JsonObject }[] {
    const bucket = this.objects.get(resourceKey);
    if (!bucket) return [];
    const entries = [...bucket.entries()]
      .filter(([key]) => namespace === undefined || key.startsWith(`${namespace}/`))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return entries.map(([key, object]) => ({ key, object: deepCopy(object) }));
  }

  /** Stores `object` (whose metadata.resourceVersion the caller set from nextResourceVersion). */
  put(resourceKey: string, type: 'ADDED' | 'MODIFIED', object: JsonObject): void {
    const key = objectKeyOf(namespaceOf(object), nameOf(object));
    let bucket = this.objects.get(resourceKey);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(resourceKey, bucket);
    }
    const previous = bucket.get(key);
    const stored = deepCopy(object);
    bucket.set(key, stored);
    this.record({ resourceVersion: this.resourceVersion, resourceKey, type, object: stored, previous });
  }

  remove(resourceKey: string, object: JsonObject): void {
    const key = objectKeyOf(namespaceOf(object), nameOf(object));
    const bucket = this.objects.get(resourceKey);
    const previous = bucket?.get(key);
    bucket?.delete(key);
    this.record({ resourceVersion: this.resourceVersion, resourceKey, type: 'DELETED', object: deepCopy(object), previous });
  }

  /** Loads an object without an event (restoring persisted state). */
  restore(resourceKey: string, object: JsonObject): void {
    let bucket = this.objects.get(resourceKey);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(resourceKey, bucket);
    }
    bucket.set(objectKeyOf(namespaceOf(object), nameOf(object)), deepCopy(object));
  }

  /** Events after `resourceVersion`, or 'expired' when some of them left the history window. */
  eventsSince(resourceVersion: number): StoredEvent[] | 'expired' {
    if (resourceVersion < this.compactedThrough) return 'expired';
    return this.history.filter((event) => event.resourceVersion > resourceVersion);
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(): StoreSnapshot {
    const objects: Record<string, JsonObject[]> = {};
    for (const [resourceKey, bucket] of this.objects) {
      if (bucket.size > 0) objects[resourceKey] = [...bucket.values()].map((object) => deepCopy(object));
    }
    return { resourceVersion: this.resourceVersion, objects };
  }

  private record(event: StoredEvent): void {
    this.history.push(event);
    while (this.history.length > this.historyLimit) {
      const dropped = this.history.shift();
      if (dropped) this.compactedThrough = dropped.resourceVersion;
    }
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }
}
