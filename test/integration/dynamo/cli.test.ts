// The CLI entry (infra/local/dynamo/main.ts) in its own process: prints the endpoint first, serves
// DynamoDB on it, rejects bad flags, and exits cleanly on SIGTERM.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { clientFor, createTestTable } from '../../support/dynamo-local';

const ROOT = path.join(__dirname, '..', '..', '..');
const MAIN = path.join(ROOT, 'infra', 'local', 'dynamo', 'main.ts');

function startCli(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn' } });
}

function exitOf(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  return new Promise((resolve) => child.once('close', (code) => resolve(code)));
}

test('prints DYNAMODB_ENDPOINT, serves it, and exits 0 on SIGTERM', async () => {
  const child = startCli(['--port', '0', '--shards', '2']);
  const exited = exitOf(child);
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line !== undefined) {
          const match = /^DYNAMODB_ENDPOINT=(http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
          if (match?.[1]) resolve(match[1]);
          else reject(new Error(`unexpected first line: ${line}`));
        }
      });
      child.once('close', (code) => reject(new Error(`exited early with ${code}`)));
    });
    const client = clientFor(endpoint);
    try {
      await createTestTable(client, 'cli-table');
      expect((await client.send(new ListTablesCommand({}))).TableNames).toEqual(['cli-table']);
    } finally {
      client.destroy();
    }
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
});

test('a bad flag is a clear error and a non-zero exit', async () => {
  const child = startCli(['--port', 'not-a-port']);
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  expect(await exitOf(child)).not.toBe(0);
  expect(err).toMatch(/--port/);
});
