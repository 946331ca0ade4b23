// The whole local system, gateway in barrier mode against the reference control plane: a sample
// patched to a Service that does not exist is written `Valid=False` by the controller at that
// generation, and our condition must say False/Invalid at that generation with the controller's
// message (not "N/N Envoys programmed", which would tell the user a rejected change is live). Patched
// back, the next generation converges to True as usual.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sampleService, startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { eventually, kubectl, patchSpec } from './helpers';

jest.setTimeout(180_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
}

describe('local system: a generation the controller rejects', () => {
  let system: LocalSystem;
  let dir: string;
  let home: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-rejected-'));
    home = join(dir, 'home');
    system = await startLocalSystem({ envoys: 4, grpcClients: 0, objects: 1, stateDir: dir, ackTimeoutMs: 5000, gatewayWatermarks: 'barrier' }, { logger });
  }, 60_000);

  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const conditions = async (): Promise<{ generation: number; valid?: Condition; ours?: Condition }> => {
    const got = await kubectl(system.endpoints.kubeconfigPath, home, ['get', 'httpproxy/sample-0', '-o', 'json']);
    const body = JSON.parse(got.stdout) as { metadata: { generation: number }; status?: { conditions?: Condition[] } };
    const find = (type: string): Condition | undefined => body.status?.conditions?.find((c) => c.type === type);
    const valid = find('Valid');
    const ours = find('EnvoyProgrammed');
    return { generation: body.metadata.generation, ...(valid === undefined ? {} : { valid }), ...(ours === undefined ? {} : { ours }) };
  };

  it('says False/Invalid at the rejected generation with the controller message, then True at the next valid one', async () => {
    const kubeconfig = system.endpoints.kubeconfigPath;
    expect(system.unavailable).toEqual([]);
    expect(await kubectl(kubeconfig, home, ['wait', '--for=condition=EnvoyProgrammed', 'httpproxy/sample-0', '--timeout=60s'])).toMatchObject({ code: 0 });

    expect(await kubectl(kubeconfig, home, ['patch', 'httpproxy/sample-0', '--type=merge', '-p', patchSpec('no-such-service', 'sample-0.local')])).toMatchObject({ code: 0 });
    // The controller's own verdict first: Valid=False at generation 2, naming the missing Service.
    const rejected = await eventually(async () => {
      const now = await conditions();
      return now.valid?.status === 'False' && now.valid.observedGeneration === 2 ? now.valid : undefined;
    }, 'Valid=False at generation 2');
    expect(rejected.message).toContain('Service "default/no-such-service" not found');
    const validSeenAt = Date.now();

    const ours = await eventually(async () => (await conditions()).ours?.observedGeneration === 2 ? (await conditions()).ours : undefined, 'EnvoyProgrammed at generation 2', 30_000);
    const reachedMs = Date.now() - validSeenAt;
    expect(ours).toMatchObject({ status: 'False', reason: 'Invalid', observedGeneration: 2 });
    expect(ours?.message).toBe(`the controller rejected generation 2: ${rejected.message}`);
    logger.info({ reachedMs }, 'Invalid condition written after the controller status');
    expect(reachedMs).toBeLessThan(5000);
    // Not overwritten by a True for the same generation while Envoys keep ACKing.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await conditions()).ours).toMatchObject({ status: 'False', reason: 'Invalid', observedGeneration: 2 });

    expect(await kubectl(kubeconfig, home, ['patch', 'httpproxy/sample-0', '--type=merge', '-p', patchSpec(sampleService(0), 'sample-0.local')])).toMatchObject({ code: 0 });
    expect(await kubectl(kubeconfig, home, ['wait', '--for=condition=EnvoyProgrammed', 'httpproxy/sample-0', '--timeout=60s'])).toMatchObject({ code: 0 });
    const after = await conditions();
    expect(after.generation).toBe(3);
    expect(after.ours).toMatchObject({ status: 'True', reason: 'Programmed', observedGeneration: 3 });
    expect(after.ours?.message).toBe('4/4 Envoys programmed at generation 3');
  });
});
