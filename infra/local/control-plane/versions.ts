// Version schemes. Each replica has its own; versions from two replicas are never comparable.
//  - 'contour': like Contour, a fresh UUID per rebuild shared by LDS/RDS/CDS/SDS (bumped whenever the
//    route inputs change, even if the bytes of a type did not), and for EDS a per-replica UUID prefix
//    plus a counter bumped when endpoint content changes (Contour's EndpointsTranslator).
//  - 'counter': one counter per type, bumped only when that type's content changed.
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  RESOURCE_TYPE_URLS,
  type ResourceTypeUrl,
} from '../../../common/xds/type-urls';

export type VersionSchemeName = 'contour' | 'counter';

export interface VersionInputs {
  /** Types whose content (bytes) differs from the previous snapshot. */
  changedTypes: ReadonlySet<ResourceTypeUrl>;
  /** Whether anything other than Endpoints changed in the inputs (Contour rebuilds its DAG then). */
  routeInputsChanged: boolean;
  /** Versions of the previous snapshot, undefined on the first rebuild. */
  previous: Readonly<Record<ResourceTypeUrl, string>> | undefined;
}

export interface VersionScheme {
  next(inputs: VersionInputs): Record<ResourceTypeUrl, string>;
}

export function createVersionScheme(name: VersionSchemeName, newUuid: () => string): VersionScheme {
  return name === 'contour' ? new ContourVersions(newUuid) : new CounterVersions();
}

class ContourVersions implements VersionScheme {
  private readonly endpointPrefix: string;
  private endpointCounter = 0;

  constructor(private readonly newUuid: () => string) {
    this.endpointPrefix = newUuid();
  }

  next({ changedTypes, routeInputsChanged, previous }: VersionInputs): Record<ResourceTypeUrl, string> {
    const nonEdsChanged = routeInputsChanged || [...changedTypes].some((t) => t !== CLUSTER_LOAD_ASSIGNMENT_TYPE_URL);
    const dagVersion = previous === undefined || nonEdsChanged ? this.newUuid() : undefined;
    if (previous === undefined || changedTypes.has(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)) this.endpointCounter += 1;
    const versions = {} as Record<ResourceTypeUrl, string>;
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      if (typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL) {
        versions[typeUrl] = `${this.endpointPrefix}-${this.endpointCounter}`;
      } else {
        versions[typeUrl] = dagVersion ?? previous?.[typeUrl] ?? this.newUuid();
      }
    }
    return versions;
  }
}

class CounterVersions implements VersionScheme {
  private readonly counters = new Map<ResourceTypeUrl, number>();

  next({ changedTypes, previous }: VersionInputs): Record<ResourceTypeUrl, string> {
    const versions = {} as Record<ResourceTypeUrl, string>;
    for (const typeUrl of RESOURCE_TYPE_URLS) {
      const current = this.counters.get(typeUrl) ?? 0;
      const next = previous === undefined || changedTypes.has(typeUrl) ? current + 1 : current;
      this.counters.set(typeUrl, next);
      versions[typeUrl] = String(next);
    }
    return versions;
  }
}
