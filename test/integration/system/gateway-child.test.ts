// The local system with the xDS gateway in its own process (gatewayProcess: 'child', what the e2e
// bench runs, as the gateway is deployed): Envoys connect through it, it records into the local
// DynamoDB (a spec change becomes True, and the fleet's ground truth has every Envoy at or past the
// watermark the child wrote before that), and closing the system ends the child.
import pino from 'pino';
import { patchToCanary } from '../../../bench/support/changes';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { conditionOf as conditionIn, isAlive, eventually } from './helpers';

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

    const since = Date.now();
    await patchToCanary(system.kube.url, 0);
    await eventually(async () => {
      const condition = await conditionIn(system.kube.url, system.options.conditionType, 'sample-0');
      return (condition?.status === 'True' && condition.observedGeneration === 2) || undefined;
    }, 'sample-0 True at generation 2');
    const trueSeenAt = Date.now();

    // The child wrote the watermark; by the fleet's ground truth every Envoy was at or past it before True.
    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    const { store } = table;
    try {
      const read = await store.getObjectGeneration({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' }, 2);
      expect(read.status).toBe('found');
      if (read.status !== 'found') return;
      const targets = Object.entries(read.value.watermarks).map(([lineage, watermark]) => ({ key: 'x', lineage, seqByType: watermark.types }));
      expect(targets).toHaveLength(1);
      const programmed = await system.fleet.queries.programmedAt(targets, since);
      expect(programmed.envoysWith['x']).toBe(ENVOYS);
      expect(programmed.lastAck['x']).toBeLessThanOrEqual(trueSeenAt);
    } finally {
      table.close();
    }

    await system.close();
    expect(isAlive(pid as number)).toBe(false);
  });
});
