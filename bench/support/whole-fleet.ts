// A bench's figures are of the fleet it asked for only if that whole fleet is served. The product's
// own counts cannot say so (their denominator is the Envoys the gateway serves), so this asks the
// fleet's ground truth, and names the gateway's stream refusals when it falls short.
import type { LocalSystem } from '../../infra/local/system';

/**
 * Waits until the fleet's own ground truth has all `envoys` configured (every one accepted each of
 * the four types), and throws with the gateway's stream refusals otherwise.
 */
export async function requireWholeFleet(system: Pick<LocalSystem<'inline' | 'child'>, 'fleet' | 'gateway'>, envoys: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let configured = await system.fleet.queries.configuredCount();
  while (configured < envoys && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    configured = await system.fleet.queries.configuredCount();
  }
  if (configured >= envoys) return;
  const metrics = system.gateway === undefined ? '' : await fetch(system.gateway.metricsUrl).then((r) => r.text(), () => '');
  const refused = metrics.split('\n').filter((line) => line.startsWith('xds_programmed_gateway_streams_refused_total{') && !line.endsWith(' 0'));
  throw new Error(`only ${configured} of ${envoys} simulated Envoys hold all four types after ${timeoutMs} ms; gateway refusals: ${refused.join(', ') || 'none'}`);
}
