// `npm start | tee log`: the live view with stdout not a terminal (infra/local/start.ts through tsx,
// the real local system, stdout a pipe). It must print the banner and plain progress lines, no
// escape codes, and end with the "all programmed" summary once both samples are True.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, REPO_ROOT } from './helpers';

describe('npm start with stdout piped (live view, not a terminal)', () => {
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  const dir = mkdtempSync(join(tmpdir(), 'xp-piped-'));

  beforeAll(() => {
    // No --no-ui: the view decides by itself that stdout is not a terminal.
    child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'infra', 'local', 'start.ts'), '--envoys', '3', '--grpc-clients', '1', '--objects', '2', '--state-dir', dir], {
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

  it('prints the banner, plain progress lines and finally "all programmed"', async () => {
    const final = await eventually(
      () => stdout.split('\n').find((line) => line.startsWith('all programmed: ')),
      `"all programmed" line (stdout: ${stdout.slice(-800)}; stderr: ${stderr.slice(-500)})`,
      120_000,
    );
    // Both samples, into all 4 Envoys (3 simulated + 1 gRPC), with the time since the view started.
    expect(final).toMatch(/^all programmed: 2\/2 objects programmed into every Envoy \(4 Envoys\) \[\+\d+\.\ds\]$/);

    const lines = stdout.split('\n');
    // The banner, printed once, as plain text: how to reach the system stays in the log.
    expect(lines).toContain(`  env for the CLI and kubectl: source ${join(dir, 'env.sh')}`);
    expect(readFileSync(join(dir, 'env.sh'), 'utf8')).toContain('XDS_PROGRAMMED_TOKEN=');
    expect(lines.some((line) => line.startsWith('  query URL      http://127.0.0.1:') && line.includes('(Authorization: Bearer '))).toBe(true);
    // Start progress, one line per component, then the view's first line before any object is read.
    expect(lines).toContain('starting: dynamo → kubernetes → echo backend → control plane → gateway → functions → envoys → samples');
    expect(lines.some((line) => /^ {2}gateway ready at \d+ ms$/.test(line))).toBe(true);
    expect(lines.some((line) => /^(reading the objects in namespace default…|progress: \d+\/2 programmed, )/.test(line))).toBe(true);
    // Progress lines are one per change: no two identical summaries in a row.
    const summaries = lines.filter((line) => /^(progress|all programmed|reading)/.test(line)).map((line) => line.replace(/ \[\+[\d.]+s\]$/, ''));
    for (let index = 1; index < summaries.length; index++) expect(summaries[index]).not.toBe(summaries[index - 1]);
    // Not a terminal: no escape sequences at all (no colour, no cursor movement), no bars.
    expect(stdout).not.toContain(String.fromCharCode(27));
    expect(stdout).not.toContain('█');

    child.kill('SIGINT');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('stopped cleanly');
  }, 180_000);
});
