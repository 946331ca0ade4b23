// Watermarks from provenance (DESIGN §3.3, source 1): the control plane stamps Listener, Cluster,
// RouteConfiguration and VirtualHost metadata with the `group/kind/namespace/name@generation` they
// come from (common/xds/provenance.ts). From each upstreamApplied we keep, per lineage, which sources
// each cached resource carries, and record W(X, G) at the first seq where the whole cache reflects
// G: X@G appears and no cached resource still carries X at an older generation. "First appearance"
// alone would be too early: one generation's config arrives as several responses (CDS, LDS, RDS on
// separate streams), and an Envoy that ACKed the first of them does not yet run G.
import type { Logger } from 'pino';
import { currentTypeVersions, formatObjectRef, parseSourceRef, type Clock, type LineageState, type ObjectRef } from '../../common/core';
import { CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../common/core';
import { readProvenance, unpackAny } from '../../common/xds';
import type { UpstreamAppliedEvent } from '../relay/observer';
import type { Recorder } from './recorder';

/** Types whose resources can carry a stamp (EDS and SDS messages have no metadata field). */
const STAMPED_TYPES = new Set<string>([LDS_TYPE_URL, CDS_TYPE_URL, RDS_TYPE_URL]);

export interface ProvenanceWatermarksOptions {
  recorder: Recorder;
  logger: Logger;
  clock: Clock;
  /** The lineage mirror after the event was applied (EnvoyTracker.lineageState). */
  lineageState: (lineage: string) => LineageState | undefined;
}

interface LineageCache {
  /** typeUrl → resource name → the sources its metadata names. */
  byType: Map<string, Map<string, string[]>>;
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

  constructor(private readonly options: ProvenanceWatermarksOptions) {}

  upstreamApplied(e: UpstreamAppliedEvent): void {
    if (!STAMPED_TYPES.has(e.typeUrl)) return;
    const cache = this.cacheOf(e.lineage);
    const previous = cache.byType.get(e.typeUrl);
    if (!e.changed && previous !== undefined) return;
    const resources = new Map<string, string[]>();
    for (const resource of e.resources) {
      try {
        resources.set(resource.name, resourceSources(e.typeUrl, unpackAny({ type_url: e.typeUrl, value: resource.value })));
      } catch (error) {
        // One undecodable resource must not stop the others (the relay forwards bytes untouched).
        this.options.logger.warn({ group: e.group, typeUrl: e.typeUrl, resource: resource.name.slice(0, 200), err: String(error) }, 'cannot decode resource for provenance');
      }
    }
    cache.byType.set(e.typeUrl, resources);
    this.recordSettled(e.lineage, cache);
  }

  /** Highest generation recorded for `ref` on `lineage` (tests, diagnostics). */
  recordedGeneration(lineage: string, ref: ObjectRef): number | undefined {
    return this.lineages.get(lineage)?.recorded.get(formatObjectRef(ref));
  }

  private cacheOf(lineage: string): LineageCache {
    let cache = this.lineages.get(lineage);
    if (cache === undefined) {
      cache = { byType: new Map(), recorded: new Map() };
      this.lineages.set(lineage, cache);
    }
    return cache;
  }

  private recordSettled(lineage: string, cache: LineageCache): void {
    // object → the generations the whole cache carries for it.
    const generations = new Map<string, { ref: ObjectRef; generations: Set<number> }>();
    for (const resources of cache.byType.values()) {
      for (const sources of resources.values()) {
        for (const text of sources) {
          const parsed = parseSourceRef(text);
          if (!parsed.ok) continue;
          const key = formatObjectRef(parsed.value.object);
          const entry = generations.get(key) ?? { ref: parsed.value.object, generations: new Set<number>() };
          entry.generations.add(parsed.value.generation);
          generations.set(key, entry);
        }
      }
    }
    const state = this.options.lineageState(lineage);
    if (state === undefined) return;
    const now = this.options.clock.now();
    for (const [key, { ref, generations: seen }] of generations) {
      if (seen.size !== 1) continue; // still mixed: some resource carries an older generation
      const generation = [...seen][0] as number;
      if ((cache.recorded.get(key) ?? 0) >= generation) continue;
      cache.recorded.set(key, generation);
      this.options.recorder.enqueueWatermark(ref, generation, lineage, { seq: state.currentSeq, types: currentTypeVersions(state), at: now });
    }
  }
}
