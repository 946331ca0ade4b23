// The xds-programmed CLI with kubectl's habits, against the whole local system (the real query API,
// the local Kubernetes API server, simulated Envoys): every error on one line with its documented
// exit code (a missing object is 6, Kubernetes unreachable 4, a bad kubeconfig 2); -o yaml/json/wide;
// -n after the command; -l, --all and -A listed from Kubernetes; several objects in one status or
// wait; the fleet view sorted with version and lineage columns and istioctl's SYNCED / STALE / NACKED;
// the `envoys <node>` drill-down and its query API route; the kubectl plugin through real kubectl; the
// prebuilt bundle and the tsx path printing the same.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pino from 'pino';
import { parse as parseYaml } from 'yaml';
import { CDS_TYPE_URL } from '../../../common/core';
import { DEFAULT_BEHAVIOUR, parseBehaviour } from '../../../infra/local/envoys';
import { sampleCanaryService, sampleFqdn, sampleService, startLocalSystem, type LocalSystem } from '../../../infra/local/system';
import { cli, kubectl, patchSpec, REPO_ROOT, type ProcessResult } from '../system/helpers';

jest.setTimeout(240_000);

const logger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });
const BUNDLE = join(REPO_ROOT, 'dist', 'cli', 'xds-programmed.cjs');

function run(command: string, args: string[], env: Record<string, string>): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: '/tmp', env: { HOME: '/tmp', NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** One line of error output, nothing else. */
const oneLine = (result: ProcessResult): string => {
  expect(result.stderr.endsWith('\n')).toBe(true);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  return result.stderr.trimEnd();
};

describe('xds-programmed with kubectl habits (local system)', () => {
  let system: LocalSystem;
  let dir: string;
  let home: string;
  let env: Record<string, string>;
  let kubeconfig: string;

  beforeAll(async () => {
    // The shim runs the bundle while it is fresh: build it, so that is what cli() exercises.
    execFileSync(process.execPath, [join(REPO_ROOT, 'scripts', 'build-cli.mjs')], { cwd: REPO_ROOT, stdio: 'ignore' });
    dir = mkdtempSync(join(tmpdir(), 'xp-cli-habits-'));
    home = join(dir, 'home');
    system = await startLocalSystem({ envoys: 3, grpcClients: 0, objects: 3, stateDir: dir, ackTimeoutMs: 1500 }, { logger });
    kubeconfig = system.endpoints.kubeconfigPath;
    env = { XDS_PROGRAMMED_URL: system.endpoints.queryUrl ?? '', XDS_PROGRAMMED_TOKEN: system.endpoints.queryToken, KUBECONFIG: kubeconfig };
    for (const index of [0, 1, 2]) expect((await cli(['wait', `httpproxy/sample-${index}`, '--timeout', '60s'], env)).code).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await system?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const patch = async (index: number, service: string): Promise<void> => {
    expect((await kubectl(kubeconfig, home, ['patch', `httpproxy/sample-${index}`, '--type=merge', '-p', patchSpec(service, sampleFqdn(index))])).code).toBe(0);
  };

  it('answers a missing object, an unreachable Kubernetes and a bad kubeconfig on one line with exit 6, 4 and 2', async () => {
    const missing = await cli(['wait', 'httpproxy/nope', '--timeout', '5s'], env);
    expect(missing.code).toBe(6);
    expect(oneLine(missing)).toBe('xds-programmed: HTTPProxy default/nope not found in Kubernetes');

    const unreachableConfig = join(dir, 'unreachable.kubeconfig');
    writeFileSync(unreachableConfig, ['apiVersion: v1', 'kind: Config', 'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]', 'users: [{name: u, user: {token: t}}]', 'contexts: [{name: x, context: {cluster: c, user: u}}]', 'current-context: x', ''].join('\n'));
    const unreachable = await cli(['wait', 'httpproxy/sample-0', '--timeout', '5s'], { ...env, KUBECONFIG: unreachableConfig });
    expect(unreachable.code).toBe(4);
    expect(oneLine(unreachable)).toMatch(/^xds-programmed: cannot reach Kubernetes at http:\/\/127\.0\.0\.1:1 reading HTTPProxy default\/sample-0: /);

    const badConfig = await cli(['status', 'httpproxy', '--all'], { ...env, KUBECONFIG: join(dir, 'no-such.kubeconfig') });
    expect(badConfig.code).toBe(2);
    expect(oneLine(badConfig)).toContain(`cannot read the kubeconfig ${join(dir, 'no-such.kubeconfig')}`);

    const unknown = await cli(['status', 'httpproxy/nope'], env);
    expect(unknown.code).toBe(6);
    expect(oneLine(unknown)).toBe('HTTPProxy.projectcontour.io default/nope: not seen by any gateway');
  });

  it('prints -o yaml, json and wide, and takes -n after the command', async () => {
    const yaml = await cli(['status', 'httpproxy/sample-0', '-o', 'yaml'], env);
    expect(yaml.code).toBe(0);
    const fromYaml = parseYaml(yaml.stdout) as { object: { name: string }; generation: number; condition: { status: string } };
    const fromJson = JSON.parse((await cli(['status', 'httpproxy/sample-0', '-o', 'json'], env)).stdout) as typeof fromYaml;
    expect(yaml.stdout).toMatch(/^object:\n {2}group: projectcontour\.io\n/);
    expect(fromYaml).toMatchObject({ object: { name: 'sample-0' }, condition: { status: 'True' } });
    expect(fromYaml.generation).toBe(fromJson.generation);

    const wide = await cli(['status', 'httpproxy/sample-0', '-o', 'wide'], env);
    expect(wide.stdout).toMatch(/first seen: \S+ ago/);
    expect(wide.stdout).toMatch(/watermarks: \n\s+gw-local\.[a-z0-9-]+\.ingress at version \d+/);

    expect((await cli(['status', 'httpproxy/sample-0', '-n', 'default'], env)).code).toBe(0);
    const elsewhere = await cli(['status', 'httpproxy/sample-0', '-n', 'other'], env);
    expect(elsewhere.code).toBe(6);
    expect(oneLine(elsewhere)).toBe('HTTPProxy.projectcontour.io other/sample-0: not seen by any gateway');

    const fleetYaml = parseYaml((await cli(['envoys', '-o', 'yaml'], env)).stdout) as { envoys: Array<{ nodeId: string }> };
    expect(fleetYaml.envoys.map((e) => e.nodeId)).toEqual(['envoy-0', 'envoy-1', 'envoy-2']);
    expect((await cli(['envoys', '-o', 'wide'], env)).stdout.split('\n')[0]).toMatch(/LAST-SEEN\s+CLUSTER\s+GATEWAY\s+CONNECTED\s+SYNC$/);
    expect((await cli(['status', '-o', 'xml'], env)).code).toBe(2);
  });

  it('selects objects with -l, --all and -A from Kubernetes, for status and wait', async () => {
    expect((await kubectl(kubeconfig, home, ['label', 'httpproxy/sample-1', 'tier=edge'])).code).toBe(0);
    const names = async (args: string[]) => {
      const result = await cli(['status', ...args, '-o', 'json'], env);
      expect(result.code).toBe(0);
      const list = JSON.parse(result.stdout) as { kind: string; items: Array<{ object: { namespace: string; name: string } }> };
      expect(list.kind).toBe('List');
      return list.items.map((item) => `${item.object.namespace}/${item.object.name}`);
    };
    expect(await names(['httpproxy', '--all'])).toEqual(['default/sample-0', 'default/sample-1', 'default/sample-2']);
    expect(await names(['httpproxy', '-l', 'tier=edge'])).toEqual(['default/sample-1']);
    expect(await names(['httpproxies', '-l', 'tier!=edge', '-A'])).toEqual(['default/sample-0', 'default/sample-2']);
    expect(await names(['httpproxy', '--all', '-A', '-n', 'other'])).toHaveLength(3);
    // A kind with names, several kind/name, as kubectl takes them.
    expect(await names(['httpproxy', 'sample-2', 'sample-0'])).toEqual(['default/sample-2', 'default/sample-0']);

    const none = await cli(['status', 'httpproxy', '--all', '-n', 'other'], env);
    expect(none.code).toBe(6);
    expect(oneLine(none)).toBe('xds-programmed: no httpproxies in namespace other');
    const noMatch = await cli(['wait', 'httpproxy', '-l', 'tier=nowhere'], env);
    expect(noMatch.code).toBe(6);
    expect(oneLine(noMatch)).toBe('xds-programmed: no httpproxies match -l tier=nowhere in namespace default');

    const selected = await cli(['wait', 'httpproxy', '-l', 'tier=edge', '--timeout', '60s'], env);
    expect(selected.code).toBe(0);
    expect(selected.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^HTTPProxy\.projectcontour\.io default\/sample-1 condition met: EnvoyProgrammed=True at generation \d+ \(3\/3 Envoys\)$/)]);
    const all = await cli(['wait', 'httpproxy', '--all', '--timeout', '60s'], env);
    expect(all.code).toBe(0);
    // Each line as its object's condition is met, as kubectl wait prints them.
    expect(all.stdout.trim().split('\n').map((line) => line.split(' ')[1]).sort()).toEqual(['default/sample-0', 'default/sample-1', 'default/sample-2']);

    for (const [args, message] of [
      [['httpproxy', '-l', 'tier=edge'], '--all and -l list the objects from Kubernetes: pass --kubeconfig or set KUBECONFIG'],
      [['httpproxy/sample-0', '--all'], '--all and -l take a kind (e.g. httpproxy --all), not kind/name'],
      [['httpproxy/sample-0', '-A'], '-A selects objects in every namespace: use it with a kind and --all or -l, not with names'],
      [['httpproxy'], 'name the httpproxy objects (httpproxy NAME…, or httpproxy/NAME), or select them with --all or -l'],
      [['Widget.example.com', '--all'], '--all and -l list objects from Kubernetes, which needs a kind this CLI knows: httpproxy or httproute, not "Widget.example.com"'],
    ] as Array<[string[], string]>) {
      const { KUBECONFIG: _kubeconfig, ...withoutKubeconfig } = env;
      const refused = await cli(['wait', ...args], message.includes('KUBECONFIG') ? withoutKubeconfig : env);
      expect(refused.code).toBe(2);
      expect(oneLine(refused)).toBe(`xds-programmed: ${message}`);
    }
  });

  it('waits for several objects at once; the exit code is the first failure\'s', async () => {
    const both = await cli(['wait', 'httpproxy/sample-0', 'httpproxy/sample-2', '--timeout', '60s'], env);
    expect(both.code).toBe(0);
    expect(both.stdout).toContain('default/sample-0 condition met');
    expect(both.stdout).toContain('default/sample-2 condition met');
    expect(both.stdout.trim().split('\n')).toHaveLength(2);
    const oneMissing = await cli(['wait', 'httpproxy', 'sample-0', 'nope', '--timeout', '60s'], env);
    expect(oneMissing.code).toBe(6);
    expect(oneMissing.stdout).toContain('default/sample-0 condition met');
    expect(oneMissing.stderr).toContain('xds-programmed: HTTPProxy default/nope not found in Kubernetes\n');
    const statusBoth = await cli(['status', 'httpproxy/sample-0', 'httpproxy/nope'], env);
    expect(statusBoth.code).toBe(6);
    expect(statusBoth.stdout).toContain('HTTPProxy.projectcontour.io default/sample-0  generation');
    expect(oneLine(statusBoth)).toBe('HTTPProxy.projectcontour.io default/nope: not seen by any gateway');
  });

  it('shows durations in --help as they are typed', async () => {
    const help = await cli(['wait', '--help'], env);
    expect(help.stdout).toMatch(/--timeout <duration>[\s\S]*\(default: 30s\)/);
    expect(help.stdout).toContain('(default: 500ms)');
    expect(help.stdout).not.toContain('30000');
  });

  it('shows the fleet sorted like istioctl proxy-status, NACKED and STALE per type, and drills down into one Envoy', async () => {
    const fleetLines = async () => (await cli(['status'], env)).stdout.trim().split('\n');
    const settled = await fleetLines();
    expect(settled[0]).toMatch(/^NAME\s+CLUSTER\s+(?:[A-Z]+\s+)+GATEWAY\s+LINEAGE\s+VERSION\s+STATUS$/);
    expect(settled.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(['envoy-0', 'envoy-1', 'envoy-2']);
    for (const line of settled.slice(1)) expect(line).toMatch(/^envoy-\d\s+ingress\s+(SYNCED\s+)+gw-local\s+gw-local\.[a-z0-9-]+\.ingress\s+\d+\s+CONNECTED$/);

    // envoy-0 refuses sample-2's canary cluster: its CDS is NACKED (the last response sent was refused).
    const canary = `default/${sampleCanaryService(2)}/`;
    system.fleet.sim.envoy('envoy-0').setBehaviour(parseBehaviour({ nackRules: [{ typeUrl: CDS_TYPE_URL, resourceName: `^${canary}`, message: 'cluster rejected by test' }] }));
    await patch(2, sampleCanaryService(2));
    expect((await cli(['wait', 'httpproxy/sample-2', '--timeout', '30s'], env)).code).toBe(7);
    const header = (await fleetLines())[0]?.split(/\s+/) ?? [];
    const cell = (lines: string[], node: string, column: string) => lines.find((line) => line.startsWith(`${node} `))?.split(/\s+/)[header.indexOf(column)];
    const nacked = await fleetLines();
    expect(cell(nacked, 'envoy-0', 'CDS')).toBe('NACKED');
    expect(cell(nacked, 'envoy-1', 'CDS')).toBe('SYNCED');

    const detail = await cli(['envoys', 'envoy-0'], env);
    expect(detail.code).toBe(0);
    expect(detail.stdout).toMatch(/^envoy-0\s+CONNECTED\s+cluster ingress\s+group ingress$/m);
    expect(detail.stdout).toMatch(/^CDS\s+NACKED\s+xp1:gw-local\.[a-z0-9-]+\.ingress:(\d+)\s+-\s+xp1:gw-local\.[a-z0-9-]+\.ingress:\d+\s+\d+$/m);
    expect(detail.stdout).toMatch(new RegExp(`^  CDS xp1:gw-local\\.[a-z0-9-]+\\.ingress:\\d+ at \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z \\(\\d+s ago\\): cluster rejected by test \\(resource ${canary}8080\\)$`, 'm'));
    expect(detail.stdout).toMatch(/recent events \(newest first\):\n\s+AT\s+OUTCOME\s+TYPE\s+VERSION\s+MESSAGE\n(?:.*\n)*?\s+\S+\s+NACK\s+CDS\s+xp1:\S+\s+cluster rejected by test/);
    const json = JSON.parse((await cli(['envoys', 'envoy-0', '-o', 'json', '--events', '3'], env)).stdout) as { types: Array<{ type: string; sync: string; sent: { version: string }; ackedVersion: string; nack: { version: string; message: string } }>; recentEvents: unknown[] };
    const cds = json.types.find((t) => t.type === 'CDS');
    expect(cds).toMatchObject({ sync: 'NACKED', nack: { message: expect.stringContaining('cluster rejected by test') } });
    expect(cds?.sent.version).toBe(cds?.nack.version);
    expect(cds?.ackedVersion).not.toBe(cds?.sent.version);
    expect(json.recentEvents).toHaveLength(3);

    // envoy-1 stops answering: the response sent to it stays unanswered, STALE.
    system.fleet.sim.envoy('envoy-0').setBehaviour(DEFAULT_BEHAVIOUR);
    const hanging = system.fleet.sim.envoy('envoy-1');
    hanging.setBehaviour(parseBehaviour({ hang: true }));
    try {
      await patch(1, sampleCanaryService(1));
      expect((await cli(['wait', 'httpproxy/sample-1', '--timeout', '4s'], env)).code).toBe(1);
      const stale = await fleetLines();
      expect(header.filter((_, column) => column >= 2 && stale.find((line) => line.startsWith('envoy-1 '))?.split(/\s+/)[column] === 'STALE').length).toBeGreaterThan(0);
      expect((await cli(['envoys', 'envoy-1'], env)).stdout).toMatch(/^[A-Z]+\s+STALE\s+xp1:\S+\s+\d+s ago\s+xp1:\S+\s+\d+$/m);
    } finally {
      hanging.setBehaviour(DEFAULT_BEHAVIOUR);
    }

    // A newer generation ACKed everywhere: envoy-0's NACK is answered, and still shown as its last.
    await patch(2, sampleService(2));
    expect((await cli(['wait', 'httpproxy/sample-2', '--timeout', '60s'], env)).code).toBe(0);
    const fixed = await cli(['envoys', 'envoy-0'], env);
    expect(fixed.stdout).toMatch(/^CDS\s+SYNCED\s/m);
    expect(fixed.stdout).toMatch(/^ {2}CDS xp1:\S+ at \S+ \(\S+ ago\) \(a later version was ACKed\): cluster rejected by test/m);
  });

  it('answers drill-down mistakes with a line and an exit code, and the query API with a 400 naming the problem', async () => {
    const nobody = await cli(['envoys', 'nobody'], env);
    expect(nobody.code).toBe(6);
    expect(oneLine(nobody)).toBe('xds-programmed: no Envoy with node id "nobody"');
    const tooMany = await cli(['envoys', 'envoy-0', '--events', '101'], env);
    expect(tooMany.code).toBe(2);
    expect(oneLine(tooMany)).toContain('not a number of events from 0 to 100: 101');
    expect((await cli(['envoys', 'a', 'b'], env)).code).toBe(2);

    const base = (system.endpoints.queryUrl ?? '').replace(/\/$/, '');
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${system.endpoints.queryToken}` } });
      return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
    };
    expect(await get('/envoys/envoy-0?events=1000')).toEqual({ status: 400, body: { error: { code: 'BadQuery', message: 'events: events must be at most 100' } } });
    expect(await get('/envoys/envoy%1B0')).toEqual({ status: 400, body: { error: { code: 'BadNodeId', message: 'node id has the control or format character U+001B at index 5; node ids never contain one' } } });
    expect((await get('/envoys/envoy-0?events=0')).status).toBe(200);
  });

  it('runs as a kubectl plugin: kubectl xds-programmed, found on PATH', async () => {
    const path = [join(REPO_ROOT, 'scripts'), dirname(process.execPath), '/usr/bin', '/bin'].join(':');
    const plugin = (args: string[]) =>
      new Promise<ProcessResult>((resolve) => {
        execFile('/usr/bin/kubectl', ['xds-programmed', ...args], { cwd: '/tmp', env: { ...env, PATH: path, HOME: home, NO_COLOR: '1' } }, (error, stdout, stderr) => {
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
        });
      });
    const help = await plugin(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe((await cli(['--help'], env)).stdout);
    const status = await plugin(['status', 'httpproxy/sample-0']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^HTTPProxy\.projectcontour\.io default\/sample-0 {2}generation \d+\n {2}condition: EnvoyProgrammed=True reason=Programmed/);
    const missing = await plugin(['wait', 'httpproxy/nope']);
    expect(missing.code).toBe(6);
    expect(missing.stderr).toBe('xds-programmed: HTTPProxy default/nope not found in Kubernetes\n');
  });

  it('prints the same through the prebuilt bundle and through tsx', async () => {
    const viaTsx = (args: string[]) => cli(args, { ...env, XDS_PROGRAMMED_TSX: '1' });
    const viaBundle = (args: string[]) => run(process.execPath, [BUNDLE, ...args], { ...env, PATH: process.env['PATH'] ?? '/usr/bin:/bin' });
    for (const args of [['--help'], ['status', '--help'], ['wait', '--help'], ['envoys', '--help'], ['status', 'deployment/web'], ['wait', 'httpproxy/nope'], ['status', 'httpproxy/sample-0', '-o', 'yaml'], ['envoys', '-o', 'nope']]) {
      const [bundled, compiled] = await Promise.all([viaBundle(args), viaTsx(args)]);
      expect({ args, ...bundled }).toEqual({ args, ...compiled });
    }
  });
});
