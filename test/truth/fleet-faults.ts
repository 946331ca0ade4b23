// The fault steps every truth runner applies the same way, whatever the control plane: Envoy
// behaviour and lifecycle (delay, NACK of an object's canary cluster, hang, disconnect, vanish, join)
// and DynamoDB and stream delivery faults. Each runner applies the rest itself (spec changes, leader
// faults, status storms, tamper, gateway kill): harness.ts (reference), contour-runner.ts (Contour).
import type { SimBehaviour, SimEnvoy } from '../../infra/local/envoys';
import { parseBehaviour } from '../../infra/local/envoys';
import type { StreamFaultSettings } from '../../infra/local/dynamo/stream-faults';
import { SAMPLE_NAMESPACE, sampleCanaryService } from '../../infra/local/system/samples';
import type { FaultStep } from './schedule';

export interface FleetFaultTarget {
  /** The step's Envoy among those not gone (index modulo their number). */
  envoyAt(index: number): SimEnvoy | undefined;
  /** What a healed Envoy goes back to. */
  baseline(envoy: SimEnvoy): SimBehaviour;
  /** Envoys that vanished (never chosen again), and those that vanished silently (streams still open). */
  gone: Set<string>;
  partitioned: SimEnvoy[];
  addEnvoy(): void;
  /** The type URL whose updates a `nack` step rejects (Cluster). */
  nackTypeUrl: string;
  dynamoFaults: { set(settings: Record<string, number>): void };
  setStreamFaults(change: StreamFaultSettings): void;
  /** Clears DynamoDB and stream faults (`dynamoHeal`). */
  clearFaults(): void;
}

const seedOf = (rate: number): number => Math.floor(rate * 1e6);

/**
 * Applies `step` if it is one of the shared ones: whether it injected something; `'notShared'` for the
 * steps each runner applies itself.
 */
export function applyFleetFault(step: FaultStep, target: FleetFaultTarget): boolean | 'notShared' {
  switch (step.kind) {
    case 'ackDelay':
      target.envoyAt(step.envoy)?.setBehaviour(parseBehaviour({ ackDelayMs: step.ms }));
      return true;
    case 'nack': {
      // Cluster names start `<ns>/<service>/` with both control planes: every CDS update carrying the
      // object's canary cluster is rejected on that Envoy.
      const envoy = target.envoyAt(step.envoy);
      envoy?.setBehaviour(parseBehaviour({ nackRules: [{ typeUrl: target.nackTypeUrl, resourceName: `^${SAMPLE_NAMESPACE}/${sampleCanaryService(step.object)}/`, message: `truth-checker: cluster ${sampleCanaryService(step.object)} rejected` }] }));
      return envoy !== undefined;
    }
    case 'hang':
      target.envoyAt(step.envoy)?.setBehaviour(parseBehaviour({ hang: true }));
      return true;
    case 'heal': {
      const envoy = target.envoyAt(step.envoy);
      if (envoy !== undefined) envoy.setBehaviour(target.baseline(envoy));
      return false;
    }
    case 'disconnect':
      target.envoyAt(step.envoy)?.disconnect();
      return true;
    case 'reconnect': {
      const envoy = target.envoyAt(step.envoy);
      if (envoy?.status === 'disconnected') envoy.connect();
      return false;
    }
    case 'vanish': {
      const envoy = target.envoyAt(step.envoy);
      if (!envoy) return false;
      envoy.vanish(step.silent ? 'silent' : 'cancel');
      target.gone.add(envoy.id);
      if (step.silent) target.partitioned.push(envoy);
      return true;
    }
    case 'join':
      target.addEnvoy();
      return true;
    case 'dynamoThrottle':
      target.dynamoFaults.set({ throttleRate: step.rate, seed: seedOf(step.rate) });
      return true;
    case 'dynamoErrors':
      target.dynamoFaults.set(step.afterWrite ? { errorAfterWriteRate: step.rate, seed: seedOf(step.rate) } : { errorRate: step.rate, seed: seedOf(step.rate) });
      return true;
    case 'dynamoLatency':
      target.dynamoFaults.set({ latencyMs: step.ms });
      return true;
    case 'dynamoHeal':
      target.clearFaults();
      return false;
    case 'streamDuplicate':
      target.setStreamFaults({ duplicateRate: step.rate, seed: seedOf(step.rate) });
      return true;
    case 'streamReorder':
      target.setStreamFaults({ reorderRate: step.rate, seed: seedOf(step.rate) });
      return true;
    default:
      return 'notShared';
  }
}
