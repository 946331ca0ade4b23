// The soak's faults (bench/soak.ts), each on its own period, one at a time: gateway restarts (SIGTERM:
// it flushes and exits, then a new process on the same ports), gateway crashes (SIGKILL: no flush, the
// recorder's queue is lost), and DynamoDB throttling windows (the local front's fault seam answers a
// fraction of requests 400 ProvisionedThroughputExceededException, so the SDK's own retries run).
// Each fault is kept as a window [startedAt, endedAt], so the convergence budget of a change can
// grow by the faults it lived through.
import type { FaultSeam } from '../../infra/local/dynamo';
import type { GatewayComponent } from '../../infra/local/system/gateway';

export type SoakFaultKind = 'gateway-restart' | 'gateway-kill' | 'dynamo-throttle';

export interface FaultWindow {
  kind: SoakFaultKind;
  startedAt: number;
  /** Absent while the fault is on. */
  endedAt?: number;
  /** A fault that could not be applied (e.g. the new gateway did not become ready), and why. */
  error?: string;
}

export interface SoakFaultOptions {
  gatewayRestartEveryMs: number;
  gatewayKillEveryMs: number;
  throttleEveryMs: number;
  throttleMs: number;
  /** Fraction of requests throttled during a window. */
  throttleRate: number;
}

export interface SoakFaults {
  readonly windows: readonly FaultWindow[];
  /** Stops scheduling, ends a throttle window at once, waits for a gateway restart in flight. */
  stop(): Promise<void>;
}

/** Total time within [from, to] during which some fault was on (overlaps counted once per fault). */
export function faultTimeWithin(windows: readonly FaultWindow[], from: number, to: number): number {
  let total = 0;
  for (const window of windows) {
    const end = window.endedAt ?? to;
    total += Math.max(0, Math.min(end, to) - Math.max(window.startedAt, from));
  }
  return total;
}

export function startSoakFaults(gateway: GatewayComponent, faults: FaultSeam, options: SoakFaultOptions): SoakFaults {
  const windows: FaultWindow[] = [];
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;
  // Gateway faults are serialized: a kill never lands on a process still starting.
  let gatewayChain: Promise<void> = Promise.resolve();
  const restart = (kind: 'gateway-restart' | 'gateway-kill'): void => {
    gatewayChain = gatewayChain.then(async () => {
      if (stopped || gateway.restart === undefined) return;
      const window: FaultWindow = { kind, startedAt: Date.now() };
      windows.push(window);
      try {
        await gateway.restart(kind === 'gateway-kill' ? 'SIGKILL' : 'SIGTERM');
      } catch (error) {
        window.error = error instanceof Error ? error.message : String(error);
        // The old process is gone and the new one did not come up: one more start, so the rest of
        // the soak does not run without a gateway (the error stays on the window).
        await gateway.restart('SIGTERM').catch((again: unknown) => {
          window.error = `${window.error}; again: ${again instanceof Error ? again.message : String(again)}`;
        });
      } finally {
        window.endedAt = Date.now();
      }
    });
  };
  let throttle: { window: FaultWindow; timer: NodeJS.Timeout } | undefined;
  const endThrottle = (): void => {
    if (throttle === undefined) return;
    clearTimeout(throttle.timer);
    faults.clear();
    throttle.window.endedAt = Date.now();
    throttle = undefined;
  };
  const startThrottle = (): void => {
    if (stopped || throttle !== undefined) return;
    const window: FaultWindow = { kind: 'dynamo-throttle', startedAt: Date.now() };
    windows.push(window);
    faults.set({ throttleRate: options.throttleRate, seed: windows.length });
    throttle = { window, timer: setTimeout(endThrottle, options.throttleMs) };
  };
  if (options.gatewayRestartEveryMs > 0) timers.push(setInterval(() => restart('gateway-restart'), options.gatewayRestartEveryMs));
  if (options.gatewayKillEveryMs > 0) timers.push(setInterval(() => restart('gateway-kill'), options.gatewayKillEveryMs));
  if (options.throttleEveryMs > 0 && options.throttleMs > 0) timers.push(setInterval(startThrottle, options.throttleEveryMs));
  return {
    windows,
    async stop() {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      endThrottle();
      await gatewayChain;
    },
  };
}
