// The snapshot cache: one immutable snapshot per replica (every Envoy gets the same config, as with
// Contour), and per-type watches. This is the only interface between the rebuild pipeline and the xDS
// streams. Watch callbacks run synchronously inside setSnapshot, in registration order.
import { createHash } from 'node:crypto';
import type { AnyResource } from '../../../common/xds/types';
import { RESOURCE_TYPE_URLS, type ResourceTypeUrl } from '../../../common/xds/type-urls';

export interface SnapshotResource {
  name: string;
  resource: AnyResource;
  /** Content hash: the per-resource version used by Delta xDS. */
  version: string;
}

export interface TypeSnapshot {
  typeUrl: ResourceTypeUrl;
  /** The SotW `version_info` / Delta `system_version_info` of this type. */
  version: string;
  resources: ReadonlyMap<string, SnapshotResource>;
}

export type Snapshot = Readonly<Record<ResourceTypeUrl, TypeSnapshot>>;

export type TypeWatcher = (snapshot: TypeSnapshot) => void;

export interface SnapshotCache {
  /** Replaces the snapshot; notifies watchers of each type whose version changed. */
  setSnapshot(snapshot: Snapshot): void;
  getSnapshot(): Snapshot | undefined;
  /** Watches one type for version changes; returns the cancel function. */
  watch(typeUrl: ResourceTypeUrl, watcher: TypeWatcher): () => void;
}

export function resourceContentVersion(resource: AnyResource): string {
  return createHash('sha256').update(resource.type_url).update(resource.value).digest('hex').slice(0, 16);
}

export function typeSnapshot(typeUrl: ResourceTypeUrl, version: string, resources: Array<{ name: string; resource: AnyResource }>): TypeSnapshot {
  const byName = new Map<string, SnapshotResource>();
  for (const { name, resource } of resources) {
    byName.set(name, { name, resource, version: resourceContentVersion(resource) });
  }
  return { typeUrl, version, resources: byName };
}

/** True when both hold the same names with the same bytes (ignoring the type version). */
export function sameContent(a: TypeSnapshot | undefined, b: TypeSnapshot): boolean {
  if (!a || a.resources.size !== b.resources.size) return false;
  for (const [name, resource] of b.resources) {
    if (a.resources.get(name)?.version !== resource.version) return false;
  }
  return true;
}

export class InMemorySnapshotCache implements SnapshotCache {
  private current: Snapshot | undefined;
  private readonly watchers = new Map<ResourceTypeUrl, Set<TypeWatcher>>();

  setSnapshot(snapshot: Snapshot): void {
    const previous = this.current;
    this.current = snapshot;
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      if (previous?.[typeUrl].version === snapshot[typeUrl].version) continue;
      for (const watcher of [...(this.watchers.get(typeUrl) ?? [])]) watcher(snapshot[typeUrl]);
    }
  }

  getSnapshot(): Snapshot | undefined {
    return this.current;
  }

  watch(typeUrl: ResourceTypeUrl, watcher: TypeWatcher): () => void {
    const set = this.watchers.get(typeUrl) ?? new Set<TypeWatcher>();
    set.add(watcher);
    this.watchers.set(typeUrl, set);
    return () => set.delete(watcher);
  }
}
