// The soak's load (bench/soak.ts): endpoint churn and spec changes of the tracked objects.
//   - EDS churn: every tick the next sample's two Services (app-<i>, app-<i>-canary; whichever its
//     route uses is served) scale to the next size in 1..4 addresses, as a scaling Knative or HPA
//     fleet's pods come and go. Endpoints are not tracked objects: no generation moves, but every
//     Envoy gets and ACKs a new EDS response, so the gateway records a state per Envoy per tick.
//   - Spec changes: every tick the next sample's route moves between its service and its canary
//     (infra/local/system/samples.ts), a new generation to converge on.
import type { ControlPlaneComponent } from '../../infra/local/system/control-plane';
import { SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, sampleCanaryService, sampleName, sampleService } from '../../infra/local/system/samples';
import { HTTPPROXIES_PATH } from './changes';

/** Endpoint sets the churn cycles through: the Service's original address plus 0–3 more. */
const SCALE_STEPS = [1, 2, 3, 4, 3, 2];

export interface EdsChurn {
  /** Endpoint changes applied so far. */
  readonly changes: number;
  stop(): void;
}

export function startEdsChurn(controlPlane: ControlPlaneComponent, objects: number, intervalMs: number): EdsChurn {
  let changes = 0;
  let tick = 0;
  const timer = setInterval(() => {
    const index = tick % objects;
    const size = SCALE_STEPS[Math.floor(tick / objects) % SCALE_STEPS.length] ?? 1;
    tick++;
    for (const service of [sampleService(index), sampleCanaryService(index)]) {
      const current = controlPlane.serviceEndpoints(SAMPLE_NAMESPACE, service);
      if (current === undefined) continue;
      // The first address is the echo backend the Service had at start; the others are loopback
      // addresses nothing listens on (the simulated Envoys send no traffic).
      const first = current.ips[0] ?? '127.0.0.1';
      const ips = [first, ...Array.from({ length: size - 1 }, (_, extra) => `127.0.${index % 250}.${extra + 2}`)];
      controlPlane.setServiceEndpoints({ service, namespace: SAMPLE_NAMESPACE, ips, port: current.port });
      changes++;
    }
  }, intervalMs);
  return {
    get changes() {
      return changes;
    },
    stop: () => clearInterval(timer),
  };
}

export interface SpecChange {
  name: string;
  /** The generation the change produced (the API server's answer). */
  generation: number;
  /** Date.now() just before the PATCH was sent. */
  at: number;
}

/** Moves sample-<index>'s route to its canary (`toCanary`) or back to its service; returns the new generation. */
export async function patchRoute(kubeUrl: string, index: number, toCanary: boolean): Promise<number> {
  const service = toCanary ? sampleCanaryService(index) : sampleService(index);
  const response = await fetch(`${kubeUrl}${HTTPPROXIES_PATH}/${sampleName(index)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    // A merge patch replaces a list whole: the route sends everything to the one service.
    body: JSON.stringify({ spec: { routes: [{ conditions: [{ prefix: '/' }], services: [{ name: service, port: SAMPLE_SERVICE_PORT }] }] } }),
  });
  if (!response.ok) throw new Error(`patching ${sampleName(index)} failed: HTTP ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { metadata?: { generation?: unknown } };
  const generation = body.metadata?.generation;
  if (typeof generation !== 'number') throw new Error(`patching ${sampleName(index)}: no generation in the answer`);
  return generation;
}

export interface SpecChanges {
  readonly changes: readonly SpecChange[];
  /** Patches that failed (the API server said no, or could not be reached); the soak goes on. */
  readonly failures: readonly string[];
  /** Stops the ticks and waits for a patch in flight. */
  stop(): Promise<void>;
}

/** Every `intervalMs`, the next `perTick` samples (round robin) move their route. */
export function startSpecChanges(kubeUrl: string, objects: number, intervalMs: number, perTick: number): SpecChanges {
  const changes: SpecChange[] = [];
  const failures: string[] = [];
  const onCanary = new Array<boolean>(objects).fill(false);
  let next = 0;
  let inFlight: Promise<void> = Promise.resolve();
  const tick = async (): Promise<void> => {
    for (let n = 0; n < Math.min(perTick, objects); n++) {
      const index = next % objects;
      next++;
      const toCanary = !onCanary[index];
      const at = Date.now();
      try {
        const generation = await patchRoute(kubeUrl, index, toCanary);
        onCanary[index] = toCanary;
        changes.push({ name: sampleName(index), generation, at });
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
  };
  const timer = setInterval(() => {
    inFlight = inFlight.then(tick);
  }, intervalMs);
  return {
    changes,
    failures,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}
