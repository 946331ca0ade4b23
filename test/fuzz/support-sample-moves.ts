// What the gateway fuzz suites and the node-id system test share (gateway-hostile-nodes.test.ts,
// gateway-odd-clients.test.ts, object-key-node-ids.test.ts): a truth system with its samples True
// (startSampleSystem), and the spec change made between runs (SampleMoves): move sample-(n % 2) to its
// other Service, and wait for our condition to be True at the new generation, whatever the fuzz left behind.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { ADS_SERVICE, createDiscoveryClient } from '../../common/xds';
import { applySamples, HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, sampleCanaryService, sampleName, sampleService } from '../../infra/local/system/samples';
import { ConditionObserver } from '../truth/observer';
import { CONDITION_TYPE, startTruthSystem, type TruthSystem } from '../truth/system';

/** A truth system with `objects` samples all True, an observer of their condition and an ADS client to the gateway. */
export interface SampleSystem {
  system: TruthSystem;
  observer: ConditionObserver;
  moves: SampleMoves;
  ads: grpc.Client;
  close(): Promise<void>;
}

export async function startSampleSystem(opts: { objects: number; envoys: number; logger: Logger }): Promise<SampleSystem> {
  const system = await startTruthSystem(opts);
  const observer = new ConditionObserver(system.kube.url, CONDITION_TYPE);
  observer.start();
  const ads = createDiscoveryClient(ADS_SERVICE, system.gatewayAddress);
  const close = async (): Promise<void> => {
    ads.close();
    await observer.stop();
    await system.close();
  };
  try {
    await applySamples(system.kube.url, opts.objects);
    const indexes = Array.from({ length: opts.objects }, (_, index) => index);
    await observer.waitFor(() => indexes.every((index) => observer.current(sampleName(index))?.condition.status === 'True'), 30_000, 'every sample True');
  } catch (error) {
    await close();
    throw error;
  }
  return { system, observer, moves: new SampleMoves(system, observer), ads, close };
}

export class SampleMoves {
  private moves = 0;

  constructor(
    private readonly system: TruthSystem,
    private readonly observer: ConditionObserver,
  ) {}

  /** The next move, True at its generation within TTL + 20 s (a client the fuzz left behind counts until it expires). */
  async changeGoesTrue(): Promise<void> {
    const index = this.moves % 2;
    const toCanary = Math.floor(this.moves / 2) % 2 === 0;
    this.moves++;
    const patch = { spec: { routes: [{ conditions: [{ prefix: '/' }], services: [{ name: toCanary ? sampleCanaryService(index) : sampleService(index), port: SAMPLE_SERVICE_PORT }] }] } };
    const response = await fetch(`${this.system.kube.url}${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${sampleName(index)}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify(patch),
    });
    if (!response.ok) throw new Error(`patch: HTTP ${response.status}`);
    const generation = ((await response.json()) as { metadata: { generation: number } }).metadata.generation;
    const name = sampleName(index);
    try {
      await this.observer.waitFor(
        () => {
          const current = this.observer.current(name);
          return current?.condition.status === 'True' && current.condition.observedGeneration === generation;
        },
        this.system.timings.envoyTtlMs + 20_000,
        `${name} True at generation ${generation}`,
      );
    } catch (error) {
      // Say what the object says: which Envoy it still waits for.
      throw new Error(`${String(error)}; its condition: ${JSON.stringify(this.observer.current(name)?.condition)}`);
    }
  }
}
