// Starts dynalite (a DynamoDB implementation on LevelDB; in memory unless a path is given), either in
// this process ('inline') or in a child Node process ('child', ./dynalite-child.cjs).
//
// Why a child: the local system runs the front, the stream delivery, the functions, the gateway and
// the fleet in one Node process; dynalite's request handling (JSON validation, its condition-expression
// parser, LevelDB encoding) took ~16% of that one event loop (docs/bench/README.md, "Profile"). In a
// child it runs on the machine's other core and only the HTTP hop stays in the parent.
// dynalite ships no type declarations, so inline it is loaded through createRequire and narrowed here.
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { describeExit, waitUntilReady, watchStderr } from '../child-process';

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

/** Where dynalite runs: in this process, or in a child process on its own event loop (and core). */
export type DynaliteProcess = 'child' | 'inline';

export interface DynaliteOptions {
  host: string;
  path?: string;
  tableStateMs: number;
  /** Default 'inline'. */
  process?: DynaliteProcess;
  /** Child mode: how long to wait for the child to listen (default 30 s). */
  startTimeoutMs?: number;
  /** Child mode: an unexpected exit of the child is logged here at error level. */
  logger?: Logger;
}

export interface RunningDynalite {
  host: string;
  port: number;
  process: DynaliteProcess;
  /** The child's pid (child mode). */
  pid?: number;
  /** Stops dynalite; in child mode resolves once the child has exited. Idempotent. */
  close(): Promise<void>;
}

export async function startDynalite(opts: DynaliteOptions): Promise<RunningDynalite> {
  return (opts.process ?? 'inline') === 'child' ? startChild(opts) : startInline(opts);
}

/** How long dynalite keeps an idle front connection (the child sets the same; dynalite-child.cjs). */
export const DYNALITE_KEEP_ALIVE_MS = 10 * 60_000;

async function startInline(opts: DynaliteOptions): Promise<RunningDynalite> {
  const server = loadDynalite()({
    ...(opts.path === undefined ? {} : { path: opts.path }),
    createTableMs: opts.tableStateMs,
    deleteTableMs: opts.tableStateMs,
    updateTableMs: opts.tableStateMs,
  });
  // Only the front talks to dynalite, over a bounded keep-alive pool: idle sockets closed by the server
  // after Node's default 5 s race with reuse ("socket hang up"), so the server leaves them to the client.
  server.keepAliveTimeout = DYNALITE_KEEP_ALIVE_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    host: opts.host,
    port,
    process: 'inline',
    close: () =>
      (closing ??= new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      })),
  };
}

const CHILD_ENTRY = path.join(__dirname, 'dynalite-child.cjs');
/**
 * Node flags for the child, space-separated, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile
 * dynalite on its own (the parent's flags are never passed on: see execArgv below).
 */
const CHILD_EXEC_ARGV_ENV = 'LOCAL_DYNALITE_EXEC_ARGV';
/** How long close() waits for the child to flush and exit before SIGKILL. */
const CHILD_CLOSE_TIMEOUT_MS = 10_000;

// The child's messages are input from another process: checked, not trusted.
const listeningMessageSchema = z.object({ type: z.literal('listening'), port: z.number().int().min(1).max(65_535) });

async function startChild(opts: DynaliteOptions): Promise<RunningDynalite> {
  const child: ChildProcess = fork(CHILD_ENTRY, [JSON.stringify({ host: opts.host, path: opts.path, tableStateMs: opts.tableStateMs })], {
    // Not the parent's loaders (tsx, jest) or profiling flags: the child needs none.
    execArgv: (process.env[CHILD_EXEC_ARGV_ENV] ?? '').split(' ').filter((flag) => flag !== ''),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const stderr = watchStderr(child);
  let exited = false;
  let closeRequested = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      if (!closeRequested) {
        opts.logger?.error({ pid: child.pid, exit: describeExit(code, signal), stderr: stderr() }, 'dynalite child process exited unexpectedly');
      }
      resolve();
    });
  });

  const port = await waitUntilReady<number>(child, {
    what: 'dynalite child process',
    toDo: 'listen',
    before: 'listening',
    timeoutMs: opts.startTimeoutMs ?? 30_000,
    stderrTail: stderr,
    onGiveUp: () => {
      closeRequested = true;
    },
    listen: (ready) => {
      const onMessage = (message: unknown): void => {
        const parsed = listeningMessageSchema.safeParse(message);
        if (parsed.success) ready(parsed.data.port);
      };
      child.on('message', onMessage);
      return () => child.off('message', onMessage);
    },
  });

  let closing: Promise<void> | undefined;
  return {
    host: opts.host,
    port,
    process: 'child',
    ...(child.pid === undefined ? {} : { pid: child.pid }),
    close: () =>
      (closing ??= (async () => {
        closeRequested = true;
        if (!exited) {
          // A graceful close lets dynalite close LevelDB (persistence with a path); SIGKILL if it hangs.
          if (child.connected) child.send({ type: 'close' }, (error) => error && child.kill('SIGKILL'));
          else child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_CLOSE_TIMEOUT_MS);
          await exit;
          clearTimeout(timer);
        }
        if (child.connected) child.disconnect();
      })()),
  };
}
