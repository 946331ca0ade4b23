// The set of servable resource types: the built-ins the server was started with plus one per
// established CRD.
import { PROJECT_TYPES, resourceKey, type ResourceType } from './resources';

export class ResourceRegistry {
  private readonly byKey = new Map<string, ResourceType>();

  constructor(builtIns: readonly ResourceType[] = PROJECT_TYPES) {
    for (const type of builtIns) this.byKey.set(resourceKey(type.group, type.plural), type);
  }

  register(type: ResourceType): void {
    this.byKey.set(resourceKey(type.group, type.plural), type);
  }

  unregister(group: string, plural: string): void {
    this.byKey.delete(resourceKey(group, plural));
  }

  /** The type served at /apis/<group>/<version>/<plural>, if that version is served. */
  lookup(group: string, version: string, plural: string): ResourceType | undefined {
    const type = this.byKey.get(resourceKey(group, plural));
    return type && type.versions.includes(version) ? type : undefined;
  }

  byResourceKey(key: string): ResourceType | undefined {
    return this.byKey.get(key);
  }

  all(): ResourceType[] {
    return [...this.byKey.values()];
  }

  /** Group -> versions served (preferred first), for discovery. */
  groups(): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const type of this.byKey.values()) {
      const versions = groups.get(type.group) ?? [];
      for (const version of type.versions) if (!versions.includes(version)) versions.push(version);
      groups.set(type.group, versions);
    }
    return groups;
  }

  typesIn(group: string, version: string): ResourceType[] {
    return this.all().filter((type) => type.group === group && type.versions.includes(version));
  }
}
