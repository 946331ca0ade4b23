// Per-process CPU and memory of the local system's child processes (the gateway, the fleet, dynalite),
// read from /proc (Linux). undefined elsewhere or when the process is gone.
import { readFileSync } from 'node:fs';

import { round } from './stats';

/** USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK). */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used so far. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks; the comm field may hold spaces, so split after ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks / CLOCK_TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

/** Resident set size of a process in MiB. */
export function processRssMiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The local system's processes besides this one (which hosts the functions and the DynamoDB front,
 * and the API server and control plane unless `cluster` runs them).
 */
export type ChildProcessName = 'gateway' | 'fleet' | 'dynalite' | 'cluster';
export const CHILD_PROCESSES: readonly ChildProcessName[] = ['gateway', 'fleet', 'dynalite', 'cluster'];
/** Per kind, its process, or its processes (several gateway replicas): their CPU is summed. */
export type ChildPids = Partial<Record<ChildProcessName, number | readonly number[]>>;

/** `read` of every pid, summed; undefined when one cannot be read (a process gone). */
function summed(pids: number | readonly number[], read: (pid: number) => number | undefined): number | undefined {
  let sum = 0;
  for (const pid of typeof pids === 'number' ? [pids] : pids) {
    const value = read(pid);
    if (value === undefined) return undefined;
    sum += value;
  }
  return sum;
}

/** The summed CPU seconds of `pids`. */
export function processesCpuSeconds(pids: number | readonly number[]): number | undefined {
  return summed(pids, processCpuSeconds);
}

/** The summed RSS of `pids` in MiB. */
export function processesRssMiB(pids: readonly number[]): number | undefined {
  return summed(pids, processRssMiB);
}

/** Per process, % of one core (the system's own process and whichever children were measured). */
export interface ProcessCpuPercent {
  system: number;
  gateway?: number;
  fleet?: number;
  dynalite?: number;
  cluster?: number;
}

export type CpuReading = { at: number; system: number } & Partial<Record<ChildProcessName, number>>;

/** CPU seconds used so far by this process (`system`) and by the given children (those still readable). */
export function cpuSecondsNow(pids: ChildPids): CpuReading {
  const own = process.cpuUsage();
  const reading: CpuReading = { at: performance.now(), system: (own.user + own.system) / 1e6 };
  for (const name of CHILD_PROCESSES) {
    const pid = pids[name];
    const seconds = pid === undefined ? undefined : processesCpuSeconds(pid);
    if (seconds !== undefined) reading[name] = seconds;
  }
  return reading;
}

/** % of one core each process used between two cpuSecondsNow readings. */
export function cpuPercentBetween(before: CpuReading, after: CpuReading): ProcessCpuPercent {
  const wallSeconds = Math.max(0.001, (after.at - before.at) / 1000);
  const percent = (from: number, to: number): number => round(((to - from) / wallSeconds) * 100, 0);
  const result: ProcessCpuPercent = { system: percent(before.system, after.system) };
  for (const name of CHILD_PROCESSES) {
    const from = before[name];
    const to = after[name];
    if (from !== undefined && to !== undefined) result[name] = percent(from, to);
  }
  return result;
}
