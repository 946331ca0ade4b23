// The whole local system in one process (startLocalSystem, what `npm start` runs): a spec change
// applied with the real kubectl; `kubectl wait --for=condition=EnvoyProgrammed` returns only once
// every Envoy runs the change (checked against the fleet's own ground truth, not the system's
// records), and the CLI's `status` shows the same counts as the condition.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CDS_TYPE_URL, EDS_TYPE_URL } from '../../../common/core';
import { startLocalSystem, sampleCanaryService, type LocalSystem } from '../../../infra/local/system';
import { cli, eventually, kubectl, patchSpec } from './helpers';

const ENVOYS = 6;
const GRPC_CLIENTS = 2;
jest.setTimeout(180_000);

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

interface ObjectJson {
  generation: number;
  condition: { status: string; reason: string; message: string; observedGeneration: number } | null;
  live: { state: string; programmed: number; total: number; blockers: unknown[] };
}

describe('local system (startLocalSystem)', () => {
  let system: LocalSystem;
  let dir: string;
  let home: string;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-system-'));
    home = join(dir, 'home');
    system = await startLocalSystem({ envoys: ENVOYS, grpcClients: GRPC_CLIENTS, objects: 2, stateDir: dir, ackTimeoutMs: 5000 }, { logger });
    cliEnv = { XDS_PROGRAMMED_URL: system.endpoints.queryUrl ?? '', XDS_PROGRAMMED_TOKEN: system.endpoints.queryToken, KUBECONFIG: system.endpoints.kubeconfigPath };
  }, 60_000);

  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts every component, in order, with nothing unavailable', () => {
    expect(system.unavailable).toEqual([]);
    expect(system.steps.map((s) => s.component)).toEqual(['dynamo', 'kubernetes', 'echo-backend', 'control-plane', 'gateway', 'functions', 'envoy-fleet', 'samples']);
    expect(system.controlPlane.replicas).toHaveLength(2);
    expect(system.controlPlane.replicas.filter((r) => r.elector.isLeader())).toHaveLength(1);
    expect(system.endpoints.queryUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('kubectl wait returns after every Envoy ACKed the change, and the CLI shows the same counts', async () => {
    const kubeconfig = system.endpoints.kubeconfigPath;
    // Generation 1 first: the sample is programmed at start.
    const first = await kubectl(kubeconfig, home, ['wait', '--for=condition=EnvoyProgrammed', 'httpproxy/sample-0', '--timeout=60s']);
    expect(first).toMatchObject({ code: 0 });

    // Move the route to the canary service: a new cluster name each Envoy's ground truth can show.
    const canaryCluster = `default/${sampleCanaryService(0)}/8080`;
    const patched = await kubectl(kubeconfig, home, ['patch', 'httpproxy/sample-0', '--type=merge', '-p', patchSpec(sampleCanaryService(0), 'sample-0.local')]);
    expect(patched).toMatchObject({ code: 0 });
    const generation = await kubectl(kubeconfig, home, ['get', 'httpproxy/sample-0', '-o', 'jsonpath={.metadata.generation}']);
    expect(generation.stdout).toBe('2');

    // kubectl refuses a condition whose observedGeneration is below metadata.generation, so this
    // waits for generation 2.
    const waited = await kubectl(kubeconfig, home, ['wait', '--for=condition=EnvoyProgrammed', 'httpproxy/sample-0', '--timeout=90s']);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toContain('condition met');

    // Ground truth, recorded by the simulated Envoys themselves: each one accepted a CDS and an EDS
    // update containing the new cluster by the time kubectl returned.
    for (const envoy of system.fleet.simEnvoys) {
      const cds = system.fleet.sim.truth.latestAccepted(envoy.id, CDS_TYPE_URL);
      const eds = system.fleet.sim.truth.latestAccepted(envoy.id, EDS_TYPE_URL);
      expect({ envoy: envoy.id, cds: cds?.resources.some((r) => r.name === canaryCluster) }).toEqual({ envoy: envoy.id, cds: true });
      expect({ envoy: envoy.id, eds: eds?.resources.some((r) => r.name === canaryCluster) }).toEqual({ envoy: envoy.id, eds: true });
    }

    // The condition in Kubernetes and the CLI agree on the counts, over every Envoy (simulated + gRPC).
    const stored = JSON.parse((await kubectl(kubeconfig, home, ['get', 'httpproxy/sample-0', '-o', 'json'])).stdout) as { status: { conditions: Array<{ type: string; status: string; message: string; observedGeneration: number }> } };
    const condition = stored.status.conditions.find((c) => c.type === 'EnvoyProgrammed');
    expect(condition).toMatchObject({ status: 'True', observedGeneration: 2 });
    const total = ENVOYS + GRPC_CLIENTS;
    expect(condition?.message).toContain(`${total}/${total}`);

    const json = await cli(['status', 'httpproxy/sample-0', '-o', 'json'], cliEnv);
    expect(json.code).toBe(0);
    const view = JSON.parse(json.stdout) as ObjectJson;
    expect(view.generation).toBe(2);
    expect(view.live).toMatchObject({ state: 'Programmed', programmed: total, total, blockers: [] });
    expect(view.condition).toMatchObject({ status: 'True', observedGeneration: 2 });
    const text = await cli(['status', 'httpproxy/sample-0'], cliEnv);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${total}/${total} programmed (Programmed)`);
    expect(text.stdout).toContain('EnvoyProgrammed=True');
  });

  it('the fleet view lists every Envoy SYNCED on every type it subscribes to', async () => {
    const result = await eventually(async () => {
      const run = await cli(['status', '-o', 'json'], cliEnv);
      const body = JSON.parse(run.stdout) as { envoys: Array<{ nodeId: string; types: Array<{ status: string }> }> };
      return body.envoys.length === ENVOYS + GRPC_CLIENTS && body.envoys.every((e) => e.types.length > 0 && e.types.every((t) => t.status === 'SYNCED')) ? body : undefined;
    }, 'all Envoys SYNCED');
    expect(result.envoys.map((e) => e.nodeId).sort()).toEqual([...Array.from({ length: ENVOYS }, (_, i) => `envoy-${i}`), 'grpc-0', 'grpc-1'].sort());
    const text = await cli(['status'], cliEnv);
    // Like `istioctl proxy-status`: one column per type, then where and what each Envoy runs.
    expect(text.stdout.split('\n')[0]).toMatch(/^NAME\s+CLUSTER\s+CDS\s+EDS\s+LDS\s+RDS\s+GATEWAY\s+LINEAGE\s+VERSION\s+STATUS$/);
  });
});
