// The truth checker's fleet is a mix of the ways real Envoys talk xDS (brief §1 "Many tables"): ADS
// or one stream per type (Contour's bootstrap), State of the World or Delta. Pure: which mode Envoy
// number i gets is a function of the mix, i and the run's seed, so `--seed` replays the same fleet.
import type { XdsProtocol, XdsTransport } from '../../infra/local/envoys';
import { mulberry32 } from './schedule';

export const ENVOY_MODES = ['ads-sotw', 'ads-delta', 'per-type-sotw', 'per-type-delta'] as const;
export type EnvoyMode = (typeof ENVOY_MODES)[number];

export type FleetMix = ReadonlyArray<{ mode: EnvoyMode; weight: number }>;

/** Most Envoys ADS SotW (Envoy's and Contour's common case), every other mode present. */
export const DEFAULT_FLEET_MIX_TEXT = 'ads-sotw=3,ads-delta=1,per-type-sotw=1,per-type-delta=1';

/** `mode=weight,...` (weights ≥ 0, at least one positive), or one mode name alone (the whole fleet). */
export function parseFleetMix(text: string): FleetMix {
  const entries = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (entries.length === 0) throw new Error('fleet mix is empty');
  const mix: Array<{ mode: EnvoyMode; weight: number }> = [];
  for (const entry of entries) {
    const [name = '', weightText] = entry.split('=');
    const mode = ENVOY_MODES.find((m) => m === name.trim());
    if (!mode) throw new Error(`fleet mix: unknown mode "${name}" (expected one of ${ENVOY_MODES.join(', ')})`);
    const weight = weightText === undefined ? 1 : Number(weightText);
    if (!Number.isFinite(weight) || weight < 0) throw new Error(`fleet mix: weight of ${mode} must be a number ≥ 0, got "${weightText ?? ''}"`);
    if (mix.some((m) => m.mode === mode)) throw new Error(`fleet mix: ${mode} given twice`);
    mix.push({ mode, weight });
  }
  if (!mix.some((m) => m.weight > 0)) throw new Error('fleet mix: every weight is 0');
  return mix;
}

export const DEFAULT_FLEET_MIX: FleetMix = parseFleetMix(DEFAULT_FLEET_MIX_TEXT);

/**
 * The mode of Envoy number `index`. The first Envoys take each mode of positive weight once, in the
 * mix's order, so even a 5-Envoy fleet has every mode; later ones are seeded weighted picks.
 */
export function modeForEnvoy(mix: FleetMix, index: number, seed: number): EnvoyMode {
  const present = mix.filter((m) => m.weight > 0);
  const first = present[index];
  if (first) return first.mode;
  const total = present.reduce((sum, m) => sum + m.weight, 0);
  let pick = mulberry32((seed * 7919 + index) >>> 0)() * total;
  for (const m of present) {
    pick -= m.weight;
    if (pick < 0) return m.mode;
  }
  return present[present.length - 1]?.mode ?? 'ads-sotw';
}

export function transportOf(mode: EnvoyMode): XdsTransport {
  return mode.startsWith('ads') ? 'ads' : 'per-type';
}

export function protocolOf(mode: EnvoyMode): XdsProtocol {
  return mode.endsWith('delta') ? 'delta' : 'sotw';
}

/** How many Envoys of each mode, for a report line. */
export function describeMix(modes: Iterable<EnvoyMode>): string {
  const counts = new Map<EnvoyMode, number>();
  for (const mode of modes) counts.set(mode, (counts.get(mode) ?? 0) + 1);
  return ENVOY_MODES.filter((m) => counts.has(m)).map((m) => `${m} ${counts.get(m) ?? 0}`).join(', ');
}
