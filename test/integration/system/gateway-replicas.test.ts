// The local system with two gateway processes (`gatewayReplicas: 2`, as the 10,000-Envoy bench row runs
// it): the simulated Envoys are split between them, each gateway has lineages of its own instance id,
// and a spec change is True only once the Envoys behind both hold it, decided from both lineages'
// PROGRESS items (the fleet-size path), each counting its own half of the fleet.
import pino from 'pino';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { conditionOf as conditionIn, fleetAtWatermark, patchToCanaryUntilTrue, settledAtFirstGeneration } from './helpers';

const ENVOYS = 6;
const REF = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' };
jest.setTimeout(150_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('local system with two gateway processes', () => {
  let system: LocalSystem;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1, ackTimeoutMs: 5000, gatewayProcess: 'child', gatewayReplicas: 2, progressPath: true }, { logger });
  }, 90_000);

  afterAll(async () => {
    await system?.close();
  });

  it('splits the fleet between the gateways and goes True only when both halves hold the change', async () => {
    expect(system.unavailable).toEqual([]);
    expect(system.gateways).toHaveLength(2);
    expect(new Set(system.gateways.map((gateway) => gateway.pid)).size).toBe(2);
    expect(system.gateway).toBe(system.gateways[0]);
    await settledAtFirstGeneration(system, ENVOYS);

    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    try {
      const { since, trueSeenAt } = await patchToCanaryUntilTrue(system.kube.url, system.options.conditionType, 0, 2);
      // Both gateways' lineages carry the watermark, and by the fleet's own ground truth every Envoy
      // had it before the True was seen.
      const atWatermark = await fleetAtWatermark(table.store, system.fleet.queries, REF, 2, since);
      expect(atWatermark.lineages).toHaveLength(2);
      expect(atWatermark.lineages.some((lineage) => lineage.startsWith('gw-local-2.'))).toBe(true);
      expect(atWatermark.lineages.some((lineage) => lineage.startsWith('gw-local.'))).toBe(true);
      expect(atWatermark.envoysWith).toBe(ENVOYS);
      expect(atWatermark.lastAck).toBeLessThanOrEqual(trueSeenAt);
      // Each lineage's PROGRESS item counts the half of the fleet behind its gateway.
      const members = await Promise.all(
        atWatermark.lineages.map(async (lineage) => {
          const progress = await table.progress.getProgress(lineage);
          return progress.status === 'found' ? progress.value.members : undefined;
        }),
      );
      expect(members).toEqual([ENVOYS / 2, ENVOYS / 2]);
      const condition = await conditionIn(system.kube.url, system.options.conditionType, 'sample-0');
      expect(condition?.message).toContain(`${ENVOYS}/${ENVOYS}`);
    } finally {
      table.close();
    }
  });
});
