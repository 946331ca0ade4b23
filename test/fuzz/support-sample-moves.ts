// The spec change both gateway fuzz suites make between runs (gateway-hostile-nodes.test.ts,
// gateway-odd-clients.test.ts): move sample-(n % 2) to its other Service, and wait for our condition
// to be True at the new generation, whatever the fuzz left behind.
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, SAMPLE_SERVICE_PORT, sampleCanaryService, sampleName, sampleService } from '../../infra/local/system/samples';
import type { ConditionObserver } from '../truth/observer';
import type { TruthSystem } from '../truth/system';

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
