// The xds-programmed CLI (through its bin shim, as a child process) against the whole local system:
// wait's progress and exit codes (programmed, stuck, NACK at once or after the timeout with
// --no-fail-fast, never seen), status of unknown objects,
// the envoys list, and errors (bad token, unreachable URL, bad kind).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CDS_TYPE_URL } from '../../../common/core';
import { DEFAULT_BEHAVIOUR, parseBehaviour } from '../../../infra/local/envoys';
import { startLocalSystem, sampleCanaryService, type LocalSystem } from '../../../infra/local/system';
import { cli, kubectl, patchSpec } from '../system/helpers';

jest.setTimeout(180_000);

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

describe('xds-programmed CLI', () => {
  let system: LocalSystem;
  let dir: string;
  let home: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'xp-cli-'));
    home = join(dir, 'home');
    // A short ACK timeout so a hanging Envoy is reported stuck within the test.
    system = await startLocalSystem({ envoys: 4, grpcClients: 1, objects: 3, stateDir: dir, ackTimeoutMs: 1500 }, { logger });
    env = { XDS_PROGRAMMED_URL: system.endpoints.queryUrl ?? '', XDS_PROGRAMMED_TOKEN: system.endpoints.queryToken, KUBECONFIG: system.endpoints.kubeconfigPath };
  }, 60_000);

  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const patchToCanary = async (index: number): Promise<void> => {
    const patched = await kubectl(system.endpoints.kubeconfigPath, home, ['patch', `httpproxy/sample-${index}`, '--type=merge', '-p', patchSpec(sampleCanaryService(index), `sample-${index}.local`)]);
    expect(patched.code).toBe(0);
  };

  it('wait returns 0 once the current generation (read from Kubernetes) is programmed', async () => {
    const initial = await cli(['wait', 'httpproxy/sample-0', '--timeout', '60s'], env);
    expect(initial.code).toBe(0);
    await patchToCanary(0);
    const waited = await cli(['wait', 'httpproxy/sample-0', '--timeout', '60s'], env);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toMatch(/condition met: EnvoyProgrammed=True at generation 2 \(5\/5 Envoys\)/);
    // Without a terminal, progress is plain lines on stderr.
    expect(waited.stderr).toMatch(/Envoys programmed at generation 2|not seen by any gateway yet/);
  });

  it('wait times out with exit 1 naming the stuck Envoy, and returns 0 once it answers', async () => {
    const stuck = system.fleet.sim.envoy('envoy-1');
    stuck.setBehaviour(parseBehaviour({ hang: true }));
    try {
      await patchToCanary(2);
      const timedOut = await cli(['wait', 'httpproxy/sample-2', '--timeout', '6s'], env);
      expect(timedOut.code).toBe(1);
      expect(timedOut.stderr).toContain('timed out after 6s');
      expect(timedOut.stderr).toMatch(/envoy-1: STUCK on [A-Z,]+ \(no ACK\/NACK for \d+s\)/);
      expect(timedOut.stderr).toMatch(/4\/5 Envoys programmed \(Stuck\)/);
    } finally {
      stuck.setBehaviour(DEFAULT_BEHAVIOUR);
    }
    const recovered = await cli(['wait', 'httpproxy/sample-2', '--timeout', '60s'], env);
    expect(recovered.code).toBe(0);
  });

  it('wait exits 7 as soon as the generation is Rejected, quoting the Envoy\'s error (3 after the timeout with --no-fail-fast), and the object carries it too', async () => {
    const canary = `default/${sampleCanaryService(1)}/`;
    system.fleet.sim.envoy('envoy-0').setBehaviour(parseBehaviour({ nackRules: [{ typeUrl: CDS_TYPE_URL, resourceName: `^${canary}`, message: 'cluster rejected by test' }] }));
    await patchToCanary(1);
    const started = Date.now();
    const rejected = await cli(['wait', 'httpproxy/sample-1', '--timeout', '20s'], env);
    const elapsed = Date.now() - started;
    expect(rejected.code).toBe(7);
    expect(rejected.stderr).toMatch(/generation 2 is Rejected; waiting cannot change that/);
    expect(rejected.stderr).toContain(`envoy-0: NACKED CDS: cluster rejected by test (resource ${canary}8080)`);
    // It returned on the verdict, not at the deadline (before: 24.5 s for --timeout 20s, then exit 3).
    expect(elapsed).toBeLessThan(15_000);
    process.stdout.write(`wait on a NACKed generation (local system): exit ${rejected.code} after ${elapsed} ms (--timeout 20s)\n`);
    const patient = await cli(['wait', 'httpproxy/sample-1', '--timeout', '3s', '--no-fail-fast'], env);
    expect(patient.code).toBe(3);
    expect(patient.stderr).toContain('timed out after 3s');
    expect(patient.stderr).toContain(`envoy-0: NACKED CDS: cluster rejected by test (resource ${canary}8080)`);
    const status = await cli(['status', 'httpproxy/sample-1'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('4/5 programmed (Rejected)');
    expect(status.stdout).toContain('EnvoyProgrammed=False reason=Rejected');
    expect(status.stdout).toContain('cluster rejected by test');
  });

  it('envoys lists every Envoy with its lineage and versions', async () => {
    const listed = await cli(['envoys'], env);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NODE\s+GROUP\s+LINEAGE\s+STATUS\s+PROGRAMMED-THROUGH\s+ACKED\/CURRENT\s+LAST-SEEN$/);
    const nodes = lines.slice(1).map((line) => line.split(/\s+/)[0]);
    expect(nodes.sort()).toEqual(['envoy-0', 'envoy-1', 'envoy-2', 'envoy-3', 'grpc-0']);
    for (const line of lines.slice(1)) expect(line).toMatch(/gw-local\.[a-z0-9-]+\.(ingress|grpc)\s+CONNECTED/);
    const json = JSON.parse((await cli(['envoys', '--group', 'grpc', '-o', 'json'], env)).stdout) as { envoys: Array<{ nodeId: string }> };
    expect(json.envoys.map((e) => e.nodeId)).toEqual(['grpc-0']);
  });

  it('status and wait say "catching up" for a generation the controller did not accept', async () => {
    const kubeconfig = system.endpoints.kubeconfigPath;
    // A route to a service that does not exist: the control plane reports Valid=False for the new
    // generation and never serves it, so no gateway can see it programmed.
    expect((await kubectl(kubeconfig, home, ['patch', 'httpproxy/sample-0', '--type=merge', '-p', patchSpec('no-such-service', 'sample-0.local')])).code).toBe(0);
    const invalid = await kubectl(kubeconfig, home, ['wait', '--for=jsonpath={.status.conditions[?(@.type=="Valid")].status}=False', 'httpproxy/sample-0', '--timeout=60s']);
    expect(invalid.code).toBe(0);
    const generation = Number((await kubectl(kubeconfig, home, ['get', 'httpproxy/sample-0', '-o', 'jsonpath={.metadata.generation}'])).stdout);

    const text = await cli(['status', 'httpproxy/sample-0'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`catching up: Kubernetes is at generation ${generation}`);
    const json = JSON.parse((await cli(['status', 'httpproxy/sample-0', '-o', 'json'], env)).stdout) as { generation: number; kubernetesGeneration: number };
    expect(json.kubernetesGeneration).toBe(generation);
    expect(json.generation).toBeLessThan(generation);

    const waited = await cli(['wait', 'httpproxy/sample-0', '--timeout', '3s'], env);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain(`generation ${generation} was never seen by a gateway`);
  });

  it('answers unknown objects, generations never seen, bad input and auth failures with distinct exit codes', async () => {
    const unknown = await cli(['status', 'httpproxy/nope'], env);
    expect(unknown).toMatchObject({ code: 6 });
    expect(unknown.stderr).toContain('not seen by any gateway');

    const never = await cli(['wait', 'httpproxy/sample-0', '--generation', '99', '--timeout', '1s'], env);
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('generation 99 was never seen by a gateway');

    const badKind = await cli(['status', 'deployment/web'], env);
    expect(badKind.code).toBe(2);
    expect(badKind.stderr).toContain('unknown kind "deployment"');
    expect((await cli(['wait', 'httpproxy/x', '--timeout', 'soon'], env)).code).toBe(2);

    const badToken = await cli(['status'], { ...env, XDS_PROGRAMMED_TOKEN: 'not-the-token-at-all' });
    expect(badToken.code).toBe(4);
    expect(badToken.stderr).toContain('send the token printed by npm start');

    const unreachable = await cli(['envoys', '--url', 'http://127.0.0.1:1'], { XDS_PROGRAMMED_TOKEN: 'x'.repeat(20) });
    expect(unreachable.code).toBe(4);
    expect(unreachable.stderr).toContain('cannot reach the query API');
  });
});
