// Measuring a fleet: connect N simulated Envoys, wait until every one has ACKed every subscribed
// type, apply a change, wait until every one has ACKed it. Shared by the 1,000-Envoy test and
// bench/fleet.ts. Memory figures are differences of process.memoryUsage() around the fleet's
// creation and connection; whatever else lives in the process (e.g. an in-process control plane's
// per-stream state) is included, so benches run the control plane in another process.
import type { Fleet } from './fleet';
import type { SimEnvoy } from './simEnvoy';

export interface MemorySample {
  rssBytes: number;
  heapUsedBytes: number;
}

/** Samples memory, after a full GC when the process runs with --expose-gc. */
export function sampleMemory(): MemorySample {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const usage = process.memoryUsage();
  return { rssBytes: usage.rss, heapUsedBytes: usage.heapUsed };
}

/** Per type: the version each Envoy last ACKed (undefined = nothing yet). */
export type FleetVersions = Map<string, Array<string | undefined>>;

export function fleetVersions(envoys: readonly SimEnvoy[], typeUrls: readonly string[]): FleetVersions {
  return new Map(typeUrls.map((typeUrl) => [typeUrl, envoys.map((envoy) => envoy.acceptedVersion(typeUrl))]));
}

/** True when every Envoy has ACKed something for every type. */
export function allHaveAccepted(envoys: readonly SimEnvoy[], typeUrls: readonly string[]): boolean {
  return envoys.every((envoy) => typeUrls.every((typeUrl) => envoy.acceptedVersion(typeUrl) !== undefined));
}

/**
 * True when, for each type, every Envoy ACKed one and the same version and it differs from the
 * `baseline` (what they held before the change).
 */
export function allMovedPast(envoys: readonly SimEnvoy[], baseline: FleetVersions, typeUrls: readonly string[]): boolean {
  for (const typeUrl of typeUrls) {
    const before = baseline.get(typeUrl) ?? [];
    const first = envoys[0]?.acceptedVersion(typeUrl);
    for (const [index, envoy] of envoys.entries()) {
      const now = envoy.acceptedVersion(typeUrl);
      if (now === undefined || now === before[index] || now !== first) return false;
    }
  }
  return true;
}

export interface FleetMeasurement {
  envoys: number;
  /** Creating the Envoys and their streams until every type is ACKed by every Envoy. */
  connectMs: number;
  /** From applying the change until every Envoy ACKed it for every watched type. */
  changeMs: number;
  memoryBefore: MemorySample;
  memoryConnected: MemorySample;
  rssPerEnvoyBytes: number;
  heapPerEnvoyBytes: number;
}

export interface MeasureOptions {
  fleet: Fleet;
  /** Adds the Envoys to the fleet (not connected). */
  create: () => SimEnvoy[];
  /** Types every Envoy must ACK initially. */
  typeUrls: readonly string[];
  /**
   * Types whose content the change modifies; every Envoy must ACK a new version of each. Only these:
   * with Delta xDS a type whose system version moved but whose resources did not is never resent.
   */
  changedTypeUrls: readonly string[];
  /** Applies the change on the control plane side. */
  change: () => Promise<void>;
  timeoutMs: number;
  now?: () => number;
}

export async function measureFleet(options: MeasureOptions): Promise<FleetMeasurement> {
  const now = options.now ?? (() => performance.now());
  const memoryBefore = sampleMemory();
  const connectStart = now();
  const envoys = options.create();
  for (const envoy of envoys) envoy.connect();
  await options.fleet.waitFor(() => allHaveAccepted(envoys, options.typeUrls), { timeoutMs: options.timeoutMs, pollMs: 25 }, () =>
    `${envoys.length} envoys to ACK their first config (${envoys.filter((e) => options.typeUrls.every((t) => e.acceptedVersion(t) !== undefined)).length} did)`,
  );
  const connectMs = now() - connectStart;
  const memoryConnected = sampleMemory();
  const baseline = fleetVersions(envoys, options.changedTypeUrls);
  const changeStart = now();
  await options.change();
  await options.fleet.waitFor(() => allMovedPast(envoys, baseline, options.changedTypeUrls), { timeoutMs: options.timeoutMs, pollMs: 25 }, () =>
    `${envoys.length} envoys to ACK the change`,
  );
  const changeMs = now() - changeStart;
  const count = Math.max(1, envoys.length);
  return {
    envoys: envoys.length,
    connectMs,
    changeMs,
    memoryBefore,
    memoryConnected,
    rssPerEnvoyBytes: (memoryConnected.rssBytes - memoryBefore.rssBytes) / count,
    heapPerEnvoyBytes: (memoryConnected.heapUsedBytes - memoryBefore.heapUsedBytes) / count,
  };
}

export function formatMeasurement(m: FleetMeasurement): string {
  const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
  return [
    `envoys                 ${m.envoys}`,
    `connect + first ACKs   ${m.connectMs.toFixed(0)} ms`,
    `all ACK a change       ${m.changeMs.toFixed(0)} ms`,
    `RSS per envoy          ${kib(m.rssPerEnvoyBytes)} (RSS ${(m.memoryConnected.rssBytes / 2 ** 20).toFixed(0)} MiB)`,
    `heap per envoy         ${kib(m.heapPerEnvoyBytes)}`,
  ].join('\n');
}
