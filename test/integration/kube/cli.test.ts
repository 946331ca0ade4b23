// The CLI (`tsx infra/local/kube/main.ts`): prints its URL and kubeconfig as one JSON line,
// serves kubectl, and on SIGTERM writes the state file and exits 0.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl, type TestServer } from './helpers';

describe('local-kube CLI', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kube-cli-'));
  });
  afterAll(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts, serves kubectl, and persists on SIGTERM', async () => {
    const stateFile = join(dir, 'state.json');
    // One process (node with the tsx loader), so SIGTERM reaches the server itself.
    const started = spawn(process.execPath, ['--import', 'tsx', 'infra/local/kube/main.ts', '--port', '0', '--state', stateFile, '--kubeconfig-dir', dir], {
      cwd: process.cwd(),
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    let stderr = '';
    started.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      started.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const newline = out.indexOf('\n');
        if (newline >= 0) resolve(out.slice(0, newline));
      });
      started.on('exit', (code) => reject(new Error(`exited early with ${String(code)}`)));
    });
    const printed = JSON.parse(line) as { url: string; kubeconfig: string };
    expect(printed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(printed.kubeconfig).toBe(join(dir, 'kubeconfig'));

    const asTest = { dir, kubeconfig: printed.kubeconfig } as TestServer;
    const created = await kubectl(asTest, ['create', 'namespace', 'from-cli']);
    expect({ ...created, serverStderr: stderr }).toMatchObject({ code: 0, stdout: expect.stringContaining('namespace/from-cli created') });

    const exitCode = await new Promise<number | null>((resolve) => {
      started.on('exit', (code) => resolve(code));
      started.kill('SIGTERM');
    });
    expect({ exitCode, serverStderr: stderr }).toMatchObject({ exitCode: 0 });
    expect(existsSync(stateFile)).toBe(true);
    expect(readFileSync(stateFile, 'utf8')).toContain('"from-cli"');
  });
});
