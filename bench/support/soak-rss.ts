// Resident memory of every process of the soak (bench/soak.ts) over time: the system's own process
// (control plane, functions, DynamoDB front, API server, and the soak's own bookkeeping), the gateway
// child, the fleet child and the dynalite child (bench/support/proc.ts), and per process a least-squares
// slope over the second half of the run, after warm-up: a leak shows as a slope that stays positive
// however long the run, where warm-up growth (caches filling, JIT) flattens.
import { CHILD_PROCESSES, processRssMiB, type ChildProcessName } from './proc';
import { round } from './stats';

export type SoakProcessName = 'system' | ChildProcessName;
export const SOAK_PROCESSES: readonly SoakProcessName[] = ['system', ...CHILD_PROCESSES];

export interface RssSample {
  /** ms since the soak started. */
  atMs: number;
  /** MiB per process (absent: not running or not readable at that moment). */
  rssMiB: Partial<Record<SoakProcessName, number>>;
  /** The gateway child's bootId at the sample: a restart starts a new process, whose memory starts over. */
  gatewayBootId?: string;
}

export interface ProcessRssSummary {
  samples: number;
  firstMiB: number;
  lastMiB: number;
  maxMiB: number;
  /** Least-squares slope (MiB per hour) over the samples of the second half of the run; NaN with fewer than 3. */
  slopeMiBPerHour: number;
  /** The gateway only: the process lifetime (bootId) the slope was taken over, and its span in the second half. */
  slopeOver?: { bootId: string; fromMs: number; toMs: number };
}

/** Least-squares slope of y over x (units of y per unit of x); NaN with fewer than 3 points or no spread in x. */
export function leastSquaresSlope(points: ReadonlyArray<{ x: number; y: number }>): number {
  if (points.length < 3) return Number.NaN;
  const meanX = points.reduce((sum, p) => sum + p.x, 0) / points.length;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / points.length;
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.x - meanX) * (p.y - meanY);
    variance += (p.x - meanX) ** 2;
  }
  return variance === 0 ? Number.NaN : covariance / variance;
}

const MS_PER_HOUR = 3_600_000;

/** One sample of every process now (pids as they are now: the gateway's changes with each restart). */
export function sampleRss(atMs: number, pids: Partial<Record<ChildProcessName, number>>, gatewayBootId: string | undefined): RssSample {
  const rssMiB: RssSample['rssMiB'] = { system: process.memoryUsage().rss / 1048576 };
  for (const name of CHILD_PROCESSES) {
    const pid = pids[name];
    const value = pid === undefined ? undefined : processRssMiB(pid);
    if (value !== undefined) rssMiB[name] = value;
  }
  return { atMs, rssMiB, ...(gatewayBootId === undefined ? {} : { gatewayBootId }) };
}

/**
 * Per process: first/last/max, and the slope over the samples at or after `secondHalfFromMs`. For the
 * gateway, whose restarts start its memory over, the slope is over the longest single process lifetime
 * within the second half (a slope across a restart would measure the restart, not a leak).
 */
export function summarizeRss(samples: readonly RssSample[], secondHalfFromMs: number): Partial<Record<SoakProcessName, ProcessRssSummary>> {
  const result: Partial<Record<SoakProcessName, ProcessRssSummary>> = {};
  for (const name of SOAK_PROCESSES) {
    const series = samples.flatMap((sample) => {
      const value = sample.rssMiB[name];
      return value === undefined ? [] : [{ atMs: sample.atMs, miB: value, bootId: sample.gatewayBootId }];
    });
    const first = series[0];
    const last = series.at(-1);
    if (first === undefined || last === undefined) continue;
    let late = series.filter((point) => point.atMs >= secondHalfFromMs);
    let slopeOver: ProcessRssSummary['slopeOver'];
    if (name === 'gateway') {
      const byBoot = new Map<string, typeof late>();
      for (const point of late) byBoot.set(point.bootId ?? '', [...(byBoot.get(point.bootId ?? '') ?? []), point]);
      const longest = [...byBoot.entries()].sort(([, a], [, b]) => spanOf(b) - spanOf(a))[0];
      late = longest?.[1] ?? [];
      if (longest !== undefined && late.length > 0) slopeOver = { bootId: longest[0], fromMs: late[0]?.atMs ?? 0, toMs: late.at(-1)?.atMs ?? 0 };
    }
    result[name] = {
      samples: series.length,
      firstMiB: round(first.miB, 1),
      lastMiB: round(last.miB, 1),
      maxMiB: round(Math.max(...series.map((point) => point.miB)), 1),
      slopeMiBPerHour: round(leastSquaresSlope(late.map((point) => ({ x: point.atMs / MS_PER_HOUR, y: point.miB }))), 1),
      ...(slopeOver === undefined ? {} : { slopeOver }),
    };
  }
  return result;
}

function spanOf(points: ReadonlyArray<{ atMs: number }>): number {
  return (points.at(-1)?.atMs ?? 0) - (points[0]?.atMs ?? 0);
}
