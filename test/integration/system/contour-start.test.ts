// `npm start -- --control-plane contour` as its own process: unmodified Contour (installed by
// `npm run contour:install`) instead of the reference control plane, the gateway in barrier mode
// following Contour's Lease. It gets ready, a sample goes True in every Envoy, and SIGINT stops
// Contour with everything else. Without the install it says what to run and starts nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, REPO_ROOT, type ProcessResult } from './helpers';

const START = join(REPO_ROOT, 'infra', 'local', 'start.ts');

function start(args: string[], env: Record<string, string>): { child: ChildProcess; output: () => { stdout: string; stderr: string }; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', START, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', NODE_NO_WARNINGS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => ({ stdout, stderr }), exited };
}

function accepts(address: string): Promise<boolean> {
  const colon = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The last lines each Contour replica logged (the system writes `<state>/contour-<n>.log`). */
function contourLogTails(stateDir: string): string {
  const logs = existsSync(stateDir) ? readdirSync(stateDir).filter((name) => /^contour-\d+\.log$/.test(name)) : [];
  if (logs.length === 0) return 'no Contour log yet';
  return logs.map((name) => `${name}: ${readFileSync(join(stateDir, name), 'utf8').split('\n').slice(-6).join('\n')}`).join('\n');
}

describe('npm start -- --control-plane contour', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xp-start-contour-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs Contour behind the gateway, programs a sample, and stops Contour on SIGINT', async () => {
    const run = start(['--control-plane', 'contour', '--no-ui', '--envoys', '3', '--objects', '1', '--state-dir', join(dir, 'state')], { HOME: dir });
    try {
      // Two Contour replicas each build their first DAG before serving xDS: under a full CI run on two
      // cores that alone has taken most of a minute, so the wait is long and says where it stood.
      const readyLine = await eventually(() => run.output().stdout.split('\n').find((line) => line.startsWith('READY ')), 'READY line', 150_000).catch((error: unknown) => {
        // Read at the timeout, not when the wait began.
        throw new Error(`${String(error)}\nstdout: ${run.output().stdout.slice(-800)}\nstderr: ${run.output().stderr.slice(-800)}\n${contourLogTails(join(dir, 'state'))}`);
      });
      const ready = JSON.parse(readyLine.slice('READY '.length)) as { unavailable: unknown[]; controlPlanes: string[] };
      expect(ready.unavailable).toEqual([]);
      expect(ready.controlPlanes).toHaveLength(2);
      expect(run.output().stdout).toContain('control plane: unmodified Contour');
      expect(run.output().stdout).toMatch(/control plane {2}\S+, \S+ \(leader: contour-[12]\)/);
      await eventually(() => run.output().stdout.includes('PROGRAMMED all 1 objects'), 'PROGRAMMED line', 60_000);
      expect(run.output().stdout).toMatch(/object default\/sample-0 generation 1: 3\/3 Envoys Programmed EnvoyProgrammed=True/);
      for (const address of ready.controlPlanes) expect(await accepts(address)).toBe(true);

      run.child.kill('SIGINT');
      let timer: NodeJS.Timeout | undefined;
      const result = await Promise.race([run.exited, new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 30_000)))]);
      clearTimeout(timer);
      expect(result).toEqual({ code: 0, signal: null });
      // Contour's replicas were stopped with the rest (their xDS ports are closed).
      for (const address of ready.controlPlanes) expect(await accepts(address)).toBe(false);
    } finally {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGKILL');
        await run.exited;
      }
    }
  }, 240_000);

  it('says to run `npm run contour:install` when Contour is not installed, and starts nothing', async () => {
    const run = start(['--control-plane', 'contour', '--no-ui'], { HOME: dir, XDS_PEERS_DIR: join(dir, 'no-peers') });
    const { code } = await run.exited;
    const result: ProcessResult = { code: code ?? -1, ...run.output() };
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Contour is not installed');
    expect(result.stderr).toContain('npm run contour:install');
    expect(result.stdout).not.toContain('ready at');
  }, 60_000);
});
