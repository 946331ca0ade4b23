// What the Contour end-to-end tests share (through-gateway.test.ts, leader-stepdown.test.ts): simulated
// Envoys whose held content is tracked (held-content.ts), spec changes that encode the generation in
// the route prefix, and the judge of every True write by what every Envoy holds
// (test/truth/client-content.ts): the check of "programmed" by content, never by our own tracking.
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/xds';
import type { SimEnvoyOptions } from '../../../infra/local/envoys';
import type { LocalSystem } from '../../../infra/local/system';
import { HTTPPROXY_API_PATH, SAMPLE_NAMESPACE, sampleFqdn, sampleName, sampleService } from '../../../infra/local/system/samples';
import { checkClientContent } from '../../truth/client-content';
import type { ConditionObserver, ConditionWrite } from '../../truth/observer';
import { HeldConfig } from './held-content';

export const SOURCE_PREFIX = `projectcontour.io/HTTPProxy/${SAMPLE_NAMESPACE}/`;

export interface HeldEnvoyMode {
  id: string;
  cluster: string;
  transport: SimEnvoyOptions['transport'];
  protocol: SimEnvoyOptions['protocol'];
  ackDelayMs?: number;
}

interface ProxyJson {
  metadata: { generation: number; resourceVersion: string };
  status?: unknown;
}

/** Connects one simulated Envoy per mode to the system's gateway, each with its held content tracked. */
export function connectHeldEnvoys(system: LocalSystem<'inline', 'contour'>, modes: readonly HeldEnvoyMode[], objects: number): Map<string, HeldConfig> {
  const fqdns = new Map(Array.from({ length: objects }, (_, index) => [sampleName(index), sampleFqdn(index)]));
  const held = new Map<string, HeldConfig>();
  for (const mode of modes) {
    const config = new HeldConfig(mode.id, fqdns);
    held.set(mode.id, config);
    system.fleet.sim
      .add({
        node: { id: mode.id, cluster: mode.cluster, userAgentName: 'envoy' },
        transport: mode.transport,
        protocol: mode.protocol,
        subscriptions: [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL].map((typeUrl) => ({ typeUrl })),
        reconnectOnError: true,
        reconnectDelayMs: 200,
        ...(mode.ackDelayMs === undefined ? {} : { behaviour: { ackDelayMs: mode.ackDelayMs, nackRules: [], hang: false } }),
        onAccepted: config.accept,
      })
      .connect();
  }
  return held;
}

/** Spec changes on the samples, and every True write judged by what the Envoys hold. */
export class ContourJudge {
  constructor(
    private readonly system: LocalSystem<'inline', 'contour'>,
    readonly held: ReadonlyMap<string, HeldConfig>,
    private readonly objects: number,
    private readonly observer: () => ConditionObserver,
  ) {}

  private kube(path: string, init?: RequestInit): Promise<Response> {
    return fetch(`${this.system.endpoints.kubeUrl}${path}`, init);
  }

  proxyPath(name: string): string {
    return `${HTTPPROXY_API_PATH}/namespaces/${SAMPLE_NAMESPACE}/httpproxies/${name}`;
  }

  async getProxy<T extends ProxyJson = ProxyJson>(name: string): Promise<T> {
    return (await (await this.kube(this.proxyPath(name))).json()) as T;
  }

  /** Moves sample `index`'s route to prefix `/gen-<next generation>` (and optionally another service); returns that generation. */
  async changeRoute(index: number, service = sampleService(index)): Promise<number> {
    const name = sampleName(index);
    const generation = (await this.getProxy(name)).metadata.generation + 1;
    const response = await this.kube(this.proxyPath(name), {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { virtualhost: { fqdn: sampleFqdn(index) }, routes: [{ conditions: [{ prefix: `/gen-${generation}` }], services: [{ name: service, port: 8080 }] }] } }),
    });
    if (response.status !== 200) throw new Error(`PATCH ${name}: HTTP ${response.status}`);
    // Only the test changes specs, so the generation the prefix encodes is the one the server gives.
    const given = ((await response.json()) as ProxyJson).metadata.generation;
    if (given !== generation) throw new Error(`PATCH ${name}: generation ${given}, expected ${generation}`);
    return generation;
  }

  trueAt(name: string, generation: number): ConditionWrite | undefined {
    return this.observer().writes.find((w) => w.name === name && w.condition.status === 'True' && w.condition.observedGeneration === generation);
  }

  async waitTrue(name: string, generation: number, timeoutMs: number): Promise<ConditionWrite> {
    await this.observer()
      .waitFor(() => this.trueAt(name, generation) !== undefined, Math.max(timeoutMs, 0), `${name} True at generation ${generation}`)
      .catch(async (error: unknown) => {
        const proxy = await this.getProxy(name);
        throw new Error(`${String(error)}; status now ${JSON.stringify(proxy.status)}; envoys: ${[...this.held.values()].map((h) => `${h.nodeId} ${JSON.stringify(h.current(name))}`).join('; ')}`);
      });
    return this.trueAt(name, generation) as ConditionWrite;
  }

  /** When the last Envoy first held `generation` of `name` completely (the change programmed everywhere). */
  programmedEverywhereAt(name: string, generation: number, since: number): number | undefined {
    let last = 0;
    for (const envoy of this.held.values()) {
      const at = envoy.firstCompleteAt(name, generation, since);
      if (at === undefined) return undefined;
      last = Math.max(last, at);
    }
    return last;
  }

  /** Every True write so far judged by what the Envoys held: none may precede the content. */
  contentViolations(): { violations: string[]; checked: number } {
    const clients = [...this.held.values()].flatMap((envoy) => Array.from({ length: this.objects }, (_, index) => envoy.underCheck(sampleName(index), SOURCE_PREFIX)));
    const result = checkClientContent(this.observer().writes, { clients, sourcePrefix: SOURCE_PREFIX, expectedClusters: () => undefined, slackMs: 0 });
    return { violations: result.violations.map((v) => v.detail), checked: result.checked };
  }
}
