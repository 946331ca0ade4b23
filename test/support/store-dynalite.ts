// Starts a real, in-memory dynalite on 127.0.0.1 with a random port, for the store tests and bench.
// The in-process server is infra/local/dynamo's `startDynalite`; this adapts it to an endpoint URL.
import { createRequire } from 'node:module';
import { startDynalite as startLocalDynalite } from '../../infra/local/dynamo/dynalite';

export interface RunningDynalite {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynalite(): Promise<RunningDynalite> {
  // Table changes take effect at once: tests should not wait on simulated CREATING states.
  // close() drops leftover keep-alive sockets from SDK clients (closeAllConnections) before closing.
  const running = await startLocalDynalite({ host: '127.0.0.1', tableStateMs: 0 });
  return { endpoint: `http://${running.host}:${running.port}`, close: () => running.close() };
}

/**
 * dynalite in a child process, so a benchmark's client and the database do not share one event
 * loop (closer to a real deployment, where DynamoDB is remote).
 */
export async function startDynaliteProcess(): Promise<RunningDynalite> {
  const { spawn } = await import('node:child_process');
  const dynalitePath = createRequire(__filename).resolve('dynalite');
  const script = [
    `const server = require(${JSON.stringify(dynalitePath)})({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });`,
    `server.listen(0, '127.0.0.1', () => console.log('PORT ' + server.address().port));`,
  ].join('\n');
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let output = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`dynalite process exited early with code ${String(code)}`)));
    child.stdout.on('data', (data: Buffer) => {
      output += data.toString('utf8');
      const match = /PORT (\d+)/.exec(output);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
  });
  child.removeAllListeners('exit');
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
