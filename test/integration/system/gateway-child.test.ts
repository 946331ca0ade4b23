// The local system with the xDS gateway in its own process (gatewayProcess: 'child', what the e2e
// bench runs, as the gateway is deployed): Envoys connect through it, it records into the local
// DynamoDB (a spec change becomes True, and the fleet's ground truth has every Envoy at or past the
// watermark the child wrote before that), and closing the system ends the child.
import pino from 'pino';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { conditionOf as conditionIn, fleetAtWatermark, isAlive, eventually, patchToCanaryUntilTrue } from './helpers';

const ENVOYS = 10;
jest.setTimeout(120_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('local system with the gateway in a child process', () => {
  let system: LocalSystem;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1, ackTimeoutMs: 5000, gatewayProcess: 'child' }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
  });

  it('relays and records from its own process; the condition follows the fleet', async () => {
    expect(system.unavailable).toEqual([]);
    const pid = system.gateway?.pid;
    expect(pid).toBeDefined();
    expect(pid).not.toBe(process.pid);
    expect(system.gateway?.gateway).toBeUndefined();
    expect(isAlive(pid as number)).toBe(true);
    await eventually(async () => (await system.fleet.queries.configuredCount()) === ENVOYS, 'every Envoy ACKed all four types through the child');
    await eventually(async () => (await conditionIn(system.kube.url, system.options.conditionType, 'sample-0'))?.status === 'True' || undefined, 'sample-0 True at generation 1');

    const { since, trueSeenAt } = await patchToCanaryUntilTrue(system.kube.url, system.options.conditionType, 0, 2);

    // The child wrote the watermark; by the fleet's ground truth every Envoy was at or past it before True.
    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    try {
      const atWatermark = await fleetAtWatermark(table.store, system.fleet.queries, { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' }, 2, since);
      expect(atWatermark.lineages).toHaveLength(1);
      expect(atWatermark.envoysWith).toBe(ENVOYS);
      expect(atWatermark.lastAck).toBeLessThanOrEqual(trueSeenAt);
    } finally {
      table.close();
    }

    await system.close();
    expect(isAlive(pid as number)).toBe(false);
  });
});
