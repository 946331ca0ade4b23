// Starts a real, in-memory dynalite on 127.0.0.1 with a random port, for the store tests and bench.
// dynalite ships no type declarations, so it is loaded through createRequire and narrowed here.
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type DynaliteFactory = (options: {
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
}) => Server;

function loadDynalite(): DynaliteFactory {
  const loaded: unknown = createRequire(__filename)('dynalite');
  if (typeof loaded !== 'function') throw new Error('dynalite did not export a factory function');
  return loaded as DynaliteFactory;
}

export interface RunningDynalite {
  endpoint: string;
  close(): Promise<void>;
}

export async function startDynalite(): Promise<RunningDynalite> {
  // Table changes take effect at once: tests should not wait on simulated CREATING states.
  const server = loadDynalite()({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Keep-alive sockets from SDK clients would hold the server open; the clients are destroyed
        // by their owners, and this drops whatever is left.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
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
