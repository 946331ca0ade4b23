// Which fleet size a schedule runs at when a run cycles through several on its one system
// (TruthRunOptions.fleetSizes, `--fleet-sizes`): one block of `fleetSizeEvery` schedules per size.

export interface FleetSizeOptions {
  envoys: number;
  fleetSizes?: readonly number[];
  fleetSizeEvery?: number;
}

/** The fleet size of schedule `index`: `envoys` without sizes; blocks of `fleetSizeEvery` (default 10) cycling through the sizes. */
export function fleetSizeOf(options: FleetSizeOptions, index: number): number {
  const sizes = options.fleetSizes ?? [];
  if (sizes.length === 0) return options.envoys;
  const every = Math.max(1, options.fleetSizeEvery ?? 10);
  return sizes[Math.floor(index / every) % sizes.length] ?? options.envoys;
}
