// `npm start --no-ui` as its own process (infra/local/start.ts through tsx): prints READY with the
// endpoints, gets every sample programmed, serves the query URL only with the token, and shuts down
// cleanly (exit 0, every component closed) on SIGINT.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, REPO_ROOT } from './helpers';

interface Ready {
  queryUrl: string;
  queryToken: string;
  metricsUrl: string;
  kubeconfigPath: string;
  stateDir: string;
  unavailable: unknown[];
  componentsMs: number;
}

// The README's `npm start` is package.json's start script; this test runs that script's command
// directly (tsx as a Node loader) so SIGINT reaches the process without npm in between.
const START_SCRIPT = 'tsx infra/local/start.ts';

test('npm start runs the script this file tests', () => {
  const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  expect(scripts['start']).toBe(START_SCRIPT);
});

describe('npm start --no-ui (child process)', () => {
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  const dir = mkdtempSync(join(tmpdir(), 'xp-start-'));

  beforeAll(() => {
    child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'infra', 'local', 'start.ts'), '--no-ui', '--envoys', '3', '--grpc-clients', '1', '--objects', '2', '--state-dir', dir], {
      cwd: REPO_ROOT,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir, NODE_NO_WARNINGS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  });

  afterAll(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('gets ready, programs the samples, and stops cleanly on SIGINT', async () => {
    const readyLine = await eventually(() => stdout.split('\n').find((line) => line.startsWith('READY ')), `READY line (stderr: ${stderr.slice(-500)})`, 90_000);
    const ready = JSON.parse(readyLine.slice('READY '.length)) as Ready;
    expect(ready.unavailable).toEqual([]);
    expect(stdout).toContain(`kubeconfig     ${ready.kubeconfigPath}`);
    expect(readFileSync(join(dir, 'env.sh'), 'utf8')).toContain(`export XDS_PROGRAMMED_TOKEN='${ready.queryToken}'`);

    // The function URL requires the token; with it, it answers as the query function does.
    expect((await fetch(`${ready.queryUrl}/healthz`)).status).toBe(401);
    expect((await fetch(`${ready.queryUrl}/healthz`, { headers: { authorization: 'Bearer wrong-token-of-some-length' } })).status).toBe(401);
    const healthz = await fetch(`${ready.queryUrl}/healthz`, { headers: { authorization: `Bearer ${ready.queryToken}` } });
    expect(await healthz.json()).toEqual({ ok: true });
    const metrics = await (await fetch(ready.metricsUrl)).text();
    expect(metrics).toContain('xds_programmed_gateway_events_written_total');

    // The plain live view reports both samples programmed into all 4 Envoys (3 simulated + 1 gRPC).
    await eventually(() => stdout.includes('PROGRAMMED all 2 objects'), 'PROGRAMMED line', 90_000);
    expect(stdout).toMatch(/object default\/sample-0 generation 1: 4\/4 Envoys Programmed EnvoyProgrammed=True/);

    child.kill('SIGINT');
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([exited, new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 30_000)))]);
    clearTimeout(timer);
    expect(result).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('stopped cleanly');
    // Nothing listens any more.
    await expect(fetch(`${ready.queryUrl}/healthz`)).rejects.toThrow();
  }, 180_000);
});
