// Watermarks from provenance (docs/GATEWAY.md, "Watermarks": provenance): the control plane stamps Listener, Cluster,
// RouteConfiguration and VirtualHost metadata with the `group/kind/namespace/name@generation` they
// come from (common/xds/provenance.ts). From each upstreamApplied we keep, per lineage, which sources
// each cached resource carries, and record W(X, G) at the first seq where the whole cache reflects
// G: X@G appears and no cached resource still carries X at an older generation. "First appearance"
// alone would be too early: one generation's config arrives as several responses (CDS, LDS, RDS on
// separate streams), and an Envoy that ACKed the first of them does not yet run G.
import type { Logger } from 'pino';
import { currentWatermark, formatObjectRef, objectKeysOfSources, parseSourceRef, type Clock, type LineageState, type ObjectRef } from '../../common/core';
import { CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { readProvenance, unpackAny } from '../../common/xds';
import type { UpstreamAppliedEvent } from '../relay/observer';
import type { UpstreamContent } from '../relay/relay-group';
import type { ObjectRecords } from './recorder';

/** Types whose resources can carry a stamp (EDS and SDS messages have no metadata field). */
const STAMPED_TYPES = new Set<string>([LDS_TYPE_URL, CDS_TYPE_URL, RDS_TYPE_URL]);

export interface ProvenanceWatermarksOptions {
  recorder: ObjectRecords;
  logger: Logger;
  clock: Clock;
  /** The lineage mirror after the event was applied (EnvoyTracker.lineageState). */
  lineageState: (lineage: string) => LineageState | undefined;
}

interface LineageCache {
  /** typeUrl → resource name → the sources its metadata names. */
  byType: Map<string, Map<string, string[]>>;
  /** typeUrl → the cached names carried over from the lineage this one replaced (UpstreamAppliedEvent.inherited). */
  inherited: Map<string, ReadonlySet<string>>;
  /** object ref → highest generation whose watermark this lineage recorded. */
  recorded: Map<string, number>;
}

/** Sources stamped on a decoded resource: its own metadata, plus each VirtualHost's for a RouteConfiguration. */
export function resourceSources(typeUrl: string, resource: Record<string, unknown>): string[] {
  const sources = readProvenance(resource['metadata']);
  if (typeUrl === RDS_TYPE_URL && Array.isArray(resource['virtual_hosts'])) {
    for (const host of resource['virtual_hosts'] as unknown[]) {
      if (host !== null && typeof host === 'object') sources.push(...readProvenance((host as Record<string, unknown>)['metadata']));
    }
  }
  return sources;
}

export class ProvenanceWatermarks {
  private readonly lineages = new Map<string, LineageCache>();
  /**
   * Sources per resource bytes: the guard decodes a response before it is cached, upstreamApplied
   * after; the relay hands both the same Buffer, so each resource is decoded once.
   */
  private readonly decoded = new WeakMap<Buffer, string[]>();

  constructor(private readonly options: ProvenanceWatermarksOptions) {}

  upstreamApplied(e: UpstreamAppliedEvent): void {
    if (!STAMPED_TYPES.has(e.typeUrl)) return;
    const cache = this.cacheOf(e.lineage);
    const previous = cache.byType.get(e.typeUrl);
    if (!e.changed && previous !== undefined) return;
    const resources = new Map<string, string[]>();
    for (const resource of e.resources) {
      const sources = this.sourcesOf(e.group, e.typeUrl, resource);
      if (sources !== undefined) resources.set(resource.name, sources);
    }
    cache.byType.set(e.typeUrl, resources);
    if (e.inherited === undefined || e.inherited.length === 0) cache.inherited.delete(e.typeUrl);
    else cache.inherited.set(e.typeUrl, new Set(e.inherited));
    this.recordSettled(e.lineage, cache);
  }

  /**
   * The relay's monotonicity guard (relay-group.ts): why this not-yet-cached response would take
   * back a watermark already recorded on its lineage, or undefined. W(X, G) promises that every seq
   * from it on reflects X at G or later, so the response is refused when
   *  - a resource names X at a generation below the highest one recorded for X here (a replica that
   *    is behind: the leader changed, or a reconnect through a Service reached another replica), or
   *  - it is the first response on a replacement stream (reconnect, re-open) and drops X from a type
   *    whose cached resources name it: that stream may have reached a replica that does not have X
   *    yet. On a stream that has already answered, a drop is the same replica moving forward (X
   *    deleted or no longer contributing to the type), which is fine.
   *  - it is the first response on a replacement stream for a type without stamps (EDS, SDS, any
   *    other) and changes that type: nothing says whether it is older or newer, and every watermark
   *    of the lineage carries the type's version (an Envoy ACKing an older EDS would pass them).
   * A refused response is never given a seq on this lineage; the relay starts a new one.
   */
  regressionOf(content: UpstreamContent): string | undefined {
    const cache = this.lineages.get(content.lineage);
    if (cache === undefined || cache.recorded.size === 0) return undefined;
    if (!STAMPED_TYPES.has(content.typeUrl)) {
      return content.firstOnReplacementStream && content.changesContent() ? `unstamped ${content.typeUrl} changed on the first response of a new upstream stream` : undefined;
    }
    const incoming = new Map<string, number>(); // object key → lowest generation the response names
    for (const resource of content.resources) {
      for (const text of this.sourcesOf(content.group, content.typeUrl, resource) ?? []) {
        const parsed = parseSourceRef(text);
        if (!parsed.ok) continue;
        const key = formatObjectRef(parsed.value.object);
        incoming.set(key, Math.min(incoming.get(key) ?? Number.POSITIVE_INFINITY, parsed.value.generation));
      }
    }
    for (const [key, lowest] of incoming) {
      const recorded = cache.recorded.get(key);
      if (recorded !== undefined && lowest < recorded) return `${key} at generation ${lowest} after the watermark of generation ${recorded}`;
    }
    if (!content.firstOnReplacementStream) return undefined;
    for (const sources of cache.byType.get(content.typeUrl)?.values() ?? []) {
      for (const text of sources) {
        const parsed = parseSourceRef(text);
        if (!parsed.ok) continue;
        const key = formatObjectRef(parsed.value.object);
        if (cache.recorded.has(key) && !incoming.has(key)) return `${key} missing from the first response of a new upstream stream`;
      }
    }
    return undefined;
  }

  /** The relay left `lineage` for a new one: nothing more arrives on it, so drop its cache. */
  forgetLineage(lineage: string): void {
    this.lineages.delete(lineage);
  }

  /**
   * The objects a served resource's stamp names (formatObjectRef keys), for NACK attribution; undefined
   * when the resource is not cached here or carries no stamp.
   */
  ownersOf(lineage: string, typeUrl: string, resourceName: string): string[] | undefined {
    const sources = this.lineages.get(lineage)?.byType.get(typeUrl)?.get(resourceName);
    if (sources === undefined || sources.length === 0) return undefined;
    const owners = objectKeysOfSources(sources);
    return owners.size === 0 ? undefined : [...owners].sort();
  }

  /** Highest generation recorded for `ref` on `lineage` (tests, diagnostics). */
  recordedGeneration(lineage: string, ref: ObjectRef): number | undefined {
    return this.lineages.get(lineage)?.recorded.get(formatObjectRef(ref));
  }

  /** The sources a resource names, decoded once per Buffer; undefined when it cannot be decoded. */
  private sourcesOf(group: string, typeUrl: string, resource: { name: string; value: Buffer }): string[] | undefined {
    const known = this.decoded.get(resource.value);
    if (known !== undefined) return known;
    try {
      const sources = resourceSources(typeUrl, unpackAny({ type_url: typeUrl, value: resource.value }));
      this.decoded.set(resource.value, sources);
      return sources;
    } catch (error) {
      // One undecodable resource must not stop the others (the relay forwards bytes untouched).
      this.options.logger.warn({ group, typeUrl, resource: resource.name.slice(0, 200), err: String(error) }, 'cannot decode resource for provenance');
      return undefined;
    }
  }

  private cacheOf(lineage: string): LineageCache {
    let cache = this.lineages.get(lineage);
    if (cache === undefined) {
      cache = { byType: new Map(), inherited: new Map(), recorded: new Map() };
      this.lineages.set(lineage, cache);
    }
    return cache;
  }

  private recordSettled(lineage: string, cache: LineageCache): void {
    // object → the generations the whole cache carries for it, and those this lineage's own upstream
    // sent. A resource carried over from the replaced lineage (inherited) still holds back an object's
    // newer generation while it is served, but is no appearance: alone it would record a watermark the
    // new upstream never earned (and might never: a replica behind that lacks the object).
    const generations = new Map<string, { ref: ObjectRef; generations: Set<number>; own: Set<number> }>();
    for (const [typeUrl, resources] of cache.byType) {
      const inherited = cache.inherited.get(typeUrl);
      for (const [name, sources] of resources) {
        const carried = inherited?.has(name) === true;
        for (const text of sources) {
          const parsed = parseSourceRef(text);
          if (!parsed.ok) continue;
          const key = formatObjectRef(parsed.value.object);
          const entry = generations.get(key) ?? { ref: parsed.value.object, generations: new Set<number>(), own: new Set<number>() };
          entry.generations.add(parsed.value.generation);
          if (!carried) entry.own.add(parsed.value.generation);
          generations.set(key, entry);
        }
      }
    }
    const state = this.options.lineageState(lineage);
    if (state === undefined) return;
    const now = this.options.clock.now();
    for (const [key, { ref, generations: seen, own }] of generations) {
      if (seen.size !== 1) continue; // still mixed: some resource carries an older generation
      const generation = [...seen][0] as number;
      if (!own.has(generation)) continue; // only carried-over resources name it here
      if ((cache.recorded.get(key) ?? 0) >= generation) continue;
      cache.recorded.set(key, generation);
      this.options.recorder.enqueueWatermark(ref, generation, lineage, currentWatermark(state, now));
    }
  }
}
