// Watermarks W(X, G) (docs/ARCHITECTURE.md, "Core model") and whether an Envoy has reached one.
import type { EnvoyState } from './envoy-record';
import type { LineageWatermark, ObjectGeneration } from './object-generation';
import type { Lineage } from './version';

export type Watermark =
  | { observable: true; lineages: Readonly<Record<Lineage, LineageWatermark>> }
  | { observable: false; reason: string; rejectedByController?: true };

/**
 * A controller rejection wins over everything else on the item: the controller did not apply G, so
 * Envoys reaching any version (even one recorded for G by a later barrier) says nothing about G.
 */
export function watermarkOf(generation: ObjectGeneration): Watermark {
  if (generation.rejectedByController !== undefined) return { observable: false, reason: generation.rejectedByController, rejectedByController: true };
  if (generation.notObservable !== undefined) return { observable: false, reason: generation.notObservable };
  return { observable: true, lineages: generation.watermarks };
}

/** The version of `typeUrl` a lineage's watermark asks for: a type it does not list had no version yet, so any ACK will do. */
export function requiredVersion(mark: LineageWatermark, typeUrl: string): number {
  return mark.types[typeUrl] ?? 0;
}

/**
 * Whether a type's ACKed seq (undefined or -1: nothing ACKed) covers the version `required`. With
 * names added and not yet served (`namesChanged`), it covers nothing: the ACK says nothing about them.
 */
export function ackCovers(acked: number | undefined, required: number, namesChanged: boolean): boolean {
  return !namesChanged && acked !== undefined && acked >= required;
}

export interface WatermarkOptions {
  /** Types every Envoy must have subscribed (e.g. LDS and CDS), so a half-subscribed new Envoy is not counted. */
  requiredTypeUrls?: readonly string[];
}

export interface WatermarkProgress {
  reached: boolean;
  /** Subscribed (or required) types not yet ACKed at or past the watermark's version for them. */
  behindTypes: string[];
  /** Lineages serving this Envoy's types for which this generation has no watermark yet. */
  missingLineages: Lineage[];
}

/**
 * Per subscribed type: the watermark on the type's lineage must exist and the type's ACKed seq must be
 * at or past the watermark's version of that type (a type the watermark does not list had no version
 * yet at the watermark, so any ACK on the lineage will do). An Envoy with no subscribed type has
 * reached nothing. A lineage with no watermark entry has NOT been reached.
 */
export function watermarkProgress(envoy: EnvoyState, watermark: Watermark, options: WatermarkOptions = {}): WatermarkProgress {
  const behindTypes: string[] = [];
  const missing = new Set<Lineage>();
  if (!watermark.observable) return { reached: false, behindTypes, missingLineages: [] };
  let subscribedCount = 0;
  for (const [typeUrl, type] of Object.entries(envoy.types)) {
    if (!type.subscribed) continue;
    subscribedCount++;
    const mark = watermark.lineages[type.lineage];
    if (mark === undefined) {
      missing.add(type.lineage);
      continue;
    }
    if (!ackCovers(type.acked, requiredVersion(mark, typeUrl), type.namesChange !== undefined)) behindTypes.push(typeUrl);
  }
  for (const typeUrl of options.requiredTypeUrls ?? []) {
    if (envoy.types[typeUrl]?.subscribed !== true) behindTypes.push(typeUrl);
  }
  const reached = subscribedCount > 0 && behindTypes.length === 0 && missing.size === 0;
  return { reached, behindTypes: behindTypes.sort(), missingLineages: [...missing].sort() };
}

export function hasReachedWatermark(envoy: EnvoyState, watermark: Watermark, options: WatermarkOptions = {}): boolean {
  return watermarkProgress(envoy, watermark, options).reached;
}
