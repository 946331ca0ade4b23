// The local system with the API server and the reference control plane in a child process of their
// own (controlPlane 'reference-child', the e2e bench's layout): they serve from another process, the
// gateway relays that control plane's config, a spec change becomes True with every Envoy at or past
// the watermark by the fleet's own ground truth, and closing the system ends the child.
import pino from 'pino';
import { openTableFromEnv } from '../../../common/store';
import { startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { eventually, fleetAtWatermark, isAlive, patchToCanaryUntilTrue, settledAtFirstGeneration } from './helpers';

const ENVOYS = 3;
const REF = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'sample-0' };
jest.setTimeout(120_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('local system with the API server and the control plane in their own process', () => {
  let system: LocalSystem<'inline', 'reference-child'>;

  beforeAll(async () => {
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: 0, objects: 1, controlPlaneReplicas: 1, ackTimeoutMs: 5000, controlPlane: 'reference-child' }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
  });

  it('serves from the child, goes True after the fleet holds the change, and ends the child on close', async () => {
    expect(system.unavailable).toEqual([]);
    const pid = system.controlPlane.pid;
    expect(pid !== undefined && pid !== process.pid && isAlive(pid)).toBe(true);
    // The API server answers from there (the kubeconfig every client uses names it).
    expect((await fetch(`${system.kube.url}/apis/projectcontour.io/v1`)).status).toBe(200);
    await settledAtFirstGeneration(system, ENVOYS);

    const table = openTableFromEnv(system.dynamo.storeEnv, logger);
    try {
      const { since, trueSeenAt } = await patchToCanaryUntilTrue(system.kube.url, system.options.conditionType, 0, 2);
      const atWatermark = await fleetAtWatermark(table.store, system.fleet.queries, REF, 2, since);
      expect(atWatermark.envoysWith).toBe(ENVOYS);
      expect(atWatermark.lastAck).toBeLessThanOrEqual(trueSeenAt);
    } finally {
      table.close();
    }

    await system.close();
    await eventually(() => !isAlive(pid ?? 0) || undefined, 'the cluster child exited');
  });
});
