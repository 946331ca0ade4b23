// Per-process CPU and memory of the local system's child processes (the gateway, the fleet, dynalite),
// read from /proc (Linux). undefined elsewhere or when the process is gone.
import { readFileSync } from 'node:fs';

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
