// The local system with its simulated Envoys in a child process (fleetProcess: 'child', what the e2e
// bench runs): the fleet connects to the gateway and ACKs, seen only through FleetQueries; a spec
// change becomes True, and the fleet's own ground truth (computed in the child) says every Envoy
// accepted it before that; closing the system ends the child.
import pino from 'pino';
import { canaryCluster } from '../../../bench/support/changes';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { isAlive, eventually, patchToCanaryUntilTrue, settledAtFirstGeneration } from './helpers';

const ENVOYS = 20;
jest.setTimeout(120_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('local system with the fleet in a child process', () => {
  let system: LocalSystem<'child'>;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1, ackTimeoutMs: 5000, fleetProcess: 'child' }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
  });

  it('connects through the gateway, and lastAcks (from the child) precede the condition turning True', async () => {
    expect(system.unavailable).toEqual([]);
    expect(system.fleet.process).toBe('child');
    expect('sim' in system.fleet).toBe(false);
    // @ts-expect-error: the type says so too: in child mode the Envoys are not in this process.
    expect(system.fleet.sim).toBeUndefined();
    expect(isAlive(system.fleet.pid)).toBe(true);
    await eventually(async () => (await system.fleet.queries.connectedCount()) === ENVOYS, 'every Envoy connected');
    await settledAtFirstGeneration(system, ENVOYS);

    const { since, trueSeenAt } = await patchToCanaryUntilTrue(system.kube.url, system.options.conditionType, 0, 2);

    const { lastAck, envoysWith, acks } = await system.fleet.queries.lastAcks([canaryCluster(0)], since);
    // Invariant 1 seen from outside: True at generation 2 only once every Envoy runs the new cluster.
    expect(envoysWith[canaryCluster(0)]).toBe(ENVOYS);
    const last = lastAck[canaryCluster(0)];
    expect(last).toBeGreaterThanOrEqual(since);
    expect(last).toBeLessThanOrEqual(trueSeenAt);
    expect(acks).toBeGreaterThanOrEqual(ENVOYS * 2);
    expect(await system.fleet.queries.ackCount(since)).toBeGreaterThanOrEqual(acks);

    const pid = system.fleet.pid;
    await system.close();
    expect(isAlive(pid)).toBe(false);
  });
});
