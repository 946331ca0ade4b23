// Starts dynalite (a DynamoDB implementation on LevelDB; in memory unless a path is given).
// dynalite ships no type declarations, so it is loaded through createRequire and narrowed here.
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type DynaliteFactory = (options: {
  path?: string;
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
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startDynalite(opts: { host: string; path?: string; tableStateMs: number }): Promise<RunningDynalite> {
  const server = loadDynalite()({
    ...(opts.path === undefined ? {} : { path: opts.path }),
    createTableMs: opts.tableStateMs,
    deleteTableMs: opts.tableStateMs,
    updateTableMs: opts.tableStateMs,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    host: opts.host,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
