// The local system with more Envoys than the gateway's per-address stream cap allows by default
// (256: every local Envoy connects from 127.0.0.1). The whole fleet must be served: by the fleet's
// own ground truth every Envoy holds all four types, the gateway refused no stream, and the condition
// counts every Envoy. With the cap left at its default, 256 are served, the rest are refused and
// retry for ever, and the condition says "256/256" of a fleet of 300.
import pino from 'pino';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { localStreamsPerPeer } from '../../../infra/local/system/gateway';
import { conditionOf, eventually } from './helpers';

const ENVOYS = 300;
jest.setTimeout(120_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('a local fleet larger than the default per-address stream cap', () => {
  let system: LocalSystem;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1 }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
  });

  it('sizes the cap from the fleet', () => {
    expect(localStreamsPerPeer(10)).toBe(256);
    expect(localStreamsPerPeer(ENVOYS)).toBeGreaterThanOrEqual(2 * ENVOYS);
  });

  it('serves every Envoy: all configured, none refused, all counted in the condition', async () => {
    expect(system.unavailable).toEqual([]);
    await eventually(async () => (await system.fleet.queries.configuredCount()) === ENVOYS || undefined, `all ${ENVOYS} Envoys hold all four types`);
    const condition = await eventually(async () => {
      const found = await conditionOf(system.kube.url, system.options.conditionType, 'sample-0');
      return found?.status === 'True' && found.message?.includes(`${ENVOYS}/${ENVOYS}`) === true ? found : undefined;
    }, `sample-0 True over ${ENVOYS} Envoys`);
    expect(condition.observedGeneration).toBe(1);
    const metrics = await (await fetch(system.gateway?.metricsUrl ?? '')).text();
    expect(metrics).toMatch(/^xds_programmed_gateway_streams_refused_total\{reason="peer_streams"\} 0$/m);
  });
});
