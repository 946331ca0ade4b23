// The whole local system with one simulated Envoy in four rejecting sample-0's cluster (what
// `npm start -- --nack-rate 0.25` does). The rejection is sample-0's: only sample-0 may say Rejected.
// The other samples are caught in the same rejected CDS responses (SotW carries every cluster), so
// they are not programmed on that Envoy either, and must say so with their own reason, naming
// sample-0 and its resource (docs/CONVERGENCE.md, "NACK attribution"). A valid change to another
// sample is not "Rejected" either. Deleting the culprit lets the Envoy ACK, and everything converges.
// Run with provenance watermarks (owners from the control plane's stamps) and with the barrier
// (owners from the objects' specs, as with unmodified Contour).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sampleCanaryService, startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { eventually, kubectl, patchSpec } from './helpers';

jest.setTimeout(240_000);
const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
}

describe.each(['provenance', 'barrier'] as const)('local system, NACK attribution (%s watermarks)', (gatewayWatermarks) => {
  let system: LocalSystem;
  let dir: string;
  let home: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-attribution-'));
    home = join(dir, 'home');
    system = await startLocalSystem({ envoys: 4, grpcClients: 0, objects: 3, nackRate: 0.25, stateDir: dir, ackTimeoutMs: 5000, gatewayWatermarks }, { logger });
  }, 90_000);

  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const ours = async (name: string): Promise<{ generation: number; condition?: Condition } | undefined> => {
    const got = await kubectl(system.endpoints.kubeconfigPath, home, ['get', `httpproxy/${name}`, '-o', 'json']);
    if (got.code !== 0) return undefined;
    const body = JSON.parse(got.stdout) as { metadata: { generation: number }; status?: { conditions?: Condition[] } };
    const condition = body.status?.conditions?.find((c) => c.type === 'EnvoyProgrammed');
    return { generation: body.metadata.generation, ...(condition === undefined ? {} : { condition }) };
  };
  // The other Envoys program everything in a moment; the message follows them (refreshed while not True).
  const settledAt = (name: string, reason: string, generation: number) =>
    eventually(async () => {
      const now = await ours(name);
      const condition = now?.condition;
      return condition?.observedGeneration === generation && condition.reason === reason && condition.message.startsWith(`3/4 Envoys programmed at generation ${generation}; `) ? condition : undefined;
    }, `${name} ${reason} at generation ${generation} with the other Envoys programmed`, 60_000).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; condition now ${JSON.stringify((await ours(name))?.condition)}`);
    });

  it('says Rejected only on the object whose resource was rejected, BlockedByOtherObject on the others', async () => {
    expect(system.unavailable).toEqual([]);
    const rejected = await settledAt('sample-0', 'Rejected', 1);
    expect(rejected.status).toBe('False');
    expect(rejected.message).toContain('rejected CDS: simulated rejection: cluster failed validation (resource default/app-0/8080)');

    for (const name of ['sample-1', 'sample-2']) {
      const blocked = await settledAt(name, 'BlockedByOtherObject', 1);
      expect(blocked.status).toBe('False');
      expect(blocked.message).toContain('rejected CDS of HTTPProxy default/sample-0 (resource default/app-0/8080), not of this object: simulated rejection');
    }

    // A valid change to sample-2 is caught in the same rejected responses: blocked, never Rejected.
    const kubeconfig = system.endpoints.kubeconfigPath;
    expect(await kubectl(kubeconfig, home, ['patch', 'httpproxy/sample-2', '--type=merge', '-p', patchSpec(sampleCanaryService(2), 'sample-2.local')])).toMatchObject({ code: 0 });
    const changed = await settledAt('sample-2', 'BlockedByOtherObject', 2);
    expect(changed.message).toContain('rejected CDS of HTTPProxy default/sample-0 (resource default/app-0/8080), not of this object');
    expect((await ours('sample-0'))?.condition).toMatchObject({ reason: 'Rejected', observedGeneration: 1 });

    // Without the culprit the Envoy accepts the clusters again: everything left converges.
    expect(await kubectl(kubeconfig, home, ['delete', 'httpproxy/sample-0'])).toMatchObject({ code: 0 });
    expect(await kubectl(kubeconfig, home, ['wait', '--for=condition=EnvoyProgrammed', 'httpproxy/sample-1', 'httpproxy/sample-2', '--timeout=60s'])).toMatchObject({ code: 0 });
    expect((await ours('sample-2'))?.condition).toMatchObject({ status: 'True', observedGeneration: 2, message: '4/4 Envoys programmed at generation 2' });
  });
});
