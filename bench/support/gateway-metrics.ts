// Reads the gateway's store-write histogram (xds_programmed_gateway_store_write_seconds, xds-gateway/ops/metrics.ts)
// from its Prometheus text, so the e2e bench can say how long a state write took during a change.

export interface StoreWriteTotals {
  count: number;
  sumSeconds: number;
}

/** The histogram's _count and _sum for one operation label; zeros when the series is absent. */
export function storeWriteTotals(metricsText: string, operation: string): StoreWriteTotals {
  const valueOf = (suffix: 'count' | 'sum'): number => {
    for (const line of metricsText.split('\n')) {
      if (!line.startsWith(`xds_programmed_gateway_store_write_seconds_${suffix}{`)) continue;
      const labelsEnd = line.indexOf('}');
      if (!line.slice(0, labelsEnd).includes(`operation="${operation}"`)) continue;
      const value = Number(line.slice(labelsEnd + 1).trim());
      return Number.isFinite(value) ? value : 0;
    }
    return 0;
  };
  return { count: valueOf('count'), sumSeconds: valueOf('sum') };
}

/** Mean latency (ms) of the writes between two readings; undefined when none happened. */
export function meanWriteLatencyMs(before: StoreWriteTotals, after: StoreWriteTotals): { writes: number; meanLatencyMs: number } | undefined {
  const writes = after.count - before.count;
  if (writes <= 0) return undefined;
  return { writes, meanLatencyMs: Math.round(((after.sumSeconds - before.sumSeconds) / writes) * 1000) };
}

/** A labelled counter's value per value of `label` (e.g. the PROGRESS writes by `why`); {} when absent. */
export function counterByLabel(metricsText: string, name: string, label: string): Record<string, number> {
  const values: Record<string, number> = {};
  const pattern = new RegExp(`^${name}\\{[^}]*${label}="([^"]*)"[^}]*\\} (\\S+)$`);
  for (const line of metricsText.split('\n')) {
    const match = pattern.exec(line);
    if (match === null) continue;
    const value = Number(match[2]);
    if (Number.isFinite(value)) values[match[1] as string] = (values[match[1] as string] ?? 0) + value;
  }
  return values;
}

/** `after − before` per key, keys with no change left out. */
export function counterDelta(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const moved = value - (before[key] ?? 0);
    if (moved !== 0) delta[key] = moved;
  }
  return delta;
}
