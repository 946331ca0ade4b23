// Real xDS clients that nobody here wrote, as child processes: gRPC C-core through grpcio
// (test/peers/grpc-core-xds/client.py, run by the peers virtualenv's python) and grpc-go
// (test/peers/go/grpc-go-xds, built by scripts/peers.mjs). Each resolves xds:///<target> through
// the given xDS server with its own node id, calls the JSON echo backend of
// infra/local/envoys/realClient.ts, and reports what its own xDS client holds, read from its own
// CSDS service. The ground truth is the client's word, not a tap's or the server's.
//
// Peer protocol: argv `--xds-server host:port --node-id ID --node-cluster C --target NAME
// [--rpc-interval-ms N] [--rpc-timeout-ms N] [--snapshot-interval-ms N]`; the peer builds its xDS
// bootstrap from them. stdout carries one JSON object per line, stderr logs. Times are the wall
// clock in ms (Date.now() of the same machine), so they compare with the test's own.
//   {"event":"ready","at":<ms>,"admin":"127.0.0.1:<port>","client":"grpc-core/1.85.0"|"grpc-go/1.85.0"}
//       first line: the CSDS admin server is up and the xds: channel exists.
//   {"event":"config","at":<ms>,"resources":[{"typeUrl","name","version","status","error"?,"value"?}]}
//       the generic_xds_configs of the peer's node in its own CSDS answer, sorted by (typeUrl, name);
//       `status` is the client's client_status word as it reported it (REQUESTED, DOES_NOT_EXIST,
//       ACKED, NACKED, …), `error` its error_state.details, `value` the base64 of the resource bytes
//       it holds (absent when it holds none). Printed at start and then only when the dump changed
//       (queried every snapshot interval, 25 ms by default).
//   {"event":"rpc","at":<ms>,"ok":true,"backend":"<name>"}
//   {"event":"rpc","at":<ms>,"ok":false,"code":"UNAVAILABLE","details":"…"}
//       one echo RPC each rpc interval, one at a time; `code` is the grpc/status.proto name.
// The peer exits on SIGTERM, and on its own when its stdin closes: the harness never writes to it,
// so EOF means the test process is gone, even SIGKILLed.
//
// A peer that exits while open or prints a line outside this protocol is failed: every pending and
// later `waitFor` rejects with the reason and the tail of its stderr.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { z } from 'zod';
import { describeExit, waitUntilReady, watchStderr } from '../../infra/local/child-process';
import type { ClientSnapshot, CsdsResource } from '../truth/client-view';
import { goPeer, peerPython, peerScript } from './peers';

export type { ClientSnapshot, CsdsResource } from '../truth/client-view';

export type XdsPeerKind = 'grpc-core' | 'grpc-go';

export interface XdsPeerOptions {
  kind: XdsPeerKind;
  /** xDS server `host:port` (plaintext). */
  xdsServer: string;
  nodeId: string;
  nodeCluster: string;
  /** The peer resolves `xds:///<target>`. */
  target: string;
  /** Pause between two echo RPCs (default 100 ms). */
  rpcIntervalMs?: number;
  /** Deadline of one echo RPC (default 1,000 ms). */
  rpcTimeoutMs?: number;
  /** Pause between two CSDS queries (default 25 ms). */
  snapshotIntervalMs?: number;
  /** Until the ready line (default 20 s). */
  startTimeoutMs?: number;
  /** Relays the peer's stderr lines (as errors: neither client writes pino JSON). */
  logger?: Logger;
}

export type RpcResult = { at: number; ok: true; backend: string } | { at: number; ok: false; code: string; details: string };

export interface XdsPeer {
  readonly kind: XdsPeerKind;
  readonly nodeId: string;
  readonly target: string;
  /** e.g. `grpc-core/1.85.0`, as the peer reported it. */
  readonly clientVersion: string;
  /** The peer's CSDS admin address. */
  readonly admin: string;
  readonly pid: number;
  /** Spawn → ready line, ms. */
  readonly startupMs: number;
  /** Every config snapshot, oldest first (each differs from the one before). */
  snapshots(): readonly ClientSnapshot[];
  latest(): ClientSnapshot | undefined;
  /** The snapshot in force at `t`: the last one taken at or before it. */
  latestAt(t: number): ClientSnapshot | undefined;
  rpcs(): readonly RpcResult[];
  /** RPC results at or after `t`. */
  rpcsSince(t: number): readonly RpcResult[];
  /**
   * Resolves with the probe's first truthy value, probed now and after every line from the peer.
   * Rejects after `timeoutMs` (with `what`, the last snapshot's summary and the stderr tail) or as
   * soon as the peer fails.
   */
  waitFor<T>(probe: (peer: XdsPeer) => T | undefined | null | false, timeoutMs: number, what?: string): Promise<T>;
  /** Why the peer failed (it exited while open, or broke the protocol), if it did. */
  failure(): Error | undefined;
  /** Resident set size from /proc (bytes); undefined once exited. */
  rssBytes(): number | undefined;
  stderrTail(): string;
  /** SIGTERM, then SIGKILL after `graceMs` (default 3 s); resolves once the process has exited. */
  close(graceMs?: number): Promise<void>;
}

const resourceSchema = z.object({
  typeUrl: z.string(),
  name: z.string(),
  version: z.string(),
  status: z.string().min(1),
  error: z.string().optional(),
  value: z.string().optional(),
});

const lineSchema = z.union([
  z.object({ event: z.literal('ready'), at: z.number(), admin: z.string().min(1), client: z.string().min(1) }),
  z.object({ event: z.literal('config'), at: z.number(), resources: z.array(resourceSchema) }),
  z.object({ event: z.literal('rpc'), at: z.number(), ok: z.literal(true), backend: z.string() }),
  z.object({ event: z.literal('rpc'), at: z.number(), ok: z.literal(false), code: z.string().min(1), details: z.string() }),
]);
type PeerLine = z.infer<typeof lineSchema>;

/** Peers not yet exited: killed if the test process exits without closing them. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
  live.add(child);
  child.once('exit', () => live.delete(child));
}

function command(options: XdsPeerOptions): { file: string; args: string[] } {
  const args = [
    '--xds-server', options.xdsServer,
    '--node-id', options.nodeId,
    '--node-cluster', options.nodeCluster,
    '--target', options.target,
    '--rpc-interval-ms', String(options.rpcIntervalMs ?? 100),
    '--rpc-timeout-ms', String(options.rpcTimeoutMs ?? 1000),
    '--snapshot-interval-ms', String(options.snapshotIntervalMs ?? 25),
  ];
  switch (options.kind) {
    case 'grpc-core':
      // -u: unbuffered, so a line is never held back in Python's buffer (the peer flushes anyway).
      return { file: peerPython(), args: ['-u', peerScript('grpc-core-xds', 'client.py'), ...args] };
    case 'grpc-go':
      return { file: goPeer('grpc-go-xds'), args };
  }
}

function parseLine(line: string): PeerLine | string {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return `printed a line that is not JSON: ${line.slice(0, 300)}`;
  }
  const parsed = lineSchema.safeParse(json);
  return parsed.success ? parsed.data : `printed a line outside the protocol (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}): ${line.slice(0, 300)}`;
}

function toSnapshot(line: Extract<PeerLine, { event: 'config' }>): ClientSnapshot {
  const resources: CsdsResource[] = line.resources.map((r) => ({
    typeUrl: r.typeUrl,
    name: r.name,
    version: r.version,
    status: r.status,
    ...(r.error !== undefined ? { error: r.error } : {}),
    ...(r.value !== undefined ? { value: Buffer.from(r.value, 'base64') } : {}),
  }));
  return { at: line.at, resources };
}

function summarise(snapshot: ClientSnapshot | undefined): string {
  if (snapshot === undefined) return 'no config snapshot yet';
  const short = (typeUrl: string): string => typeUrl.slice(typeUrl.lastIndexOf('.') + 1);
  return snapshot.resources.map((r) => `${short(r.typeUrl)} ${r.name} ${r.status}${r.version ? `@${r.version}` : ''}${r.error ? ` (${r.error})` : ''}`).join('; ') || 'no resources';
}

/** Starts one peer and resolves once it printed its ready line. */
export async function startXdsPeer(options: XdsPeerOptions): Promise<XdsPeer> {
  const { file, args } = command(options);
  const env = { ...process.env };
  // The peers build their bootstrap from argv; an inherited file bootstrap would win in both clients.
  delete env['GRPC_XDS_BOOTSTRAP'];
  delete env['GRPC_XDS_BOOTSTRAP_CONFIG'];
  const what = `${options.kind} peer ${options.nodeId}`;
  const spawnedAt = Date.now();
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
  track(child);
  const stderrTail = watchStderr(child, options.logger ? { logger: options.logger, child: what } : undefined);

  const snapshots: ClientSnapshot[] = [];
  const rpcs: RpcResult[] = [];
  const probes = new Set<() => void>();
  let failed: Error | undefined;
  let closing = false;
  let exited = false;
  let sawReady = false;
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      resolve();
      // Before the ready line waitUntilReady reports the exit. After it, let the last stdout lines
      // and stderr drain first: they usually say why.
      if (sawReady) setTimeout(() => fail(`exited (${describeExit(code, signal)}) while open`), 20);
    }),
  );

  function fail(reason: string): void {
    if (failed !== undefined || closing) return;
    failed = new Error(`${what} ${reason}: ${stderrTail()}`);
    if (!exited) child.kill('SIGKILL');
    for (const probe of [...probes]) probe();
  }

  let onReady: ((line: Extract<PeerLine, { event: 'ready' }>) => void) | undefined;
  let onBadFirstLine: ((reason: string) => void) | undefined;
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', (raw) => {
    if (raw.trim() === '') return;
    const line = parseLine(raw);
    if (typeof line === 'string') {
      if (!sawReady) onBadFirstLine?.(line);
      else fail(line);
      return;
    }
    if (!sawReady) {
      if (line.event !== 'ready') {
        onBadFirstLine?.(`printed ${line.event} before ready`);
        return;
      }
      sawReady = true;
      onReady?.(line);
      return;
    }
    switch (line.event) {
      case 'ready':
        fail('printed a second ready line');
        return;
      case 'config':
        snapshots.push(toSnapshot(line));
        break;
      case 'rpc':
        rpcs.push(line.ok ? { at: line.at, ok: true, backend: line.backend } : { at: line.at, ok: false, code: line.code, details: line.details });
        break;
    }
    for (const probe of [...probes]) probe();
  });

  const ready = await waitUntilReady<Extract<PeerLine, { event: 'ready' }>>(child, {
    what,
    toDo: 'print its ready line',
    before: 'its ready line',
    timeoutMs: options.startTimeoutMs ?? 20_000,
    stderrTail,
    listen: (resolve, reject) => {
      onReady = resolve;
      onBadFirstLine = reject;
      return () => {
        onReady = undefined;
        onBadFirstLine = undefined;
      };
    },
  });
  const startupMs = Date.now() - spawnedAt;

  if (exited) fail(`exited (${describeExit(child.exitCode, child.signalCode)}) right after its ready line`);

  const peer: XdsPeer = {
    kind: options.kind,
    nodeId: options.nodeId,
    target: options.target,
    clientVersion: ready.client,
    admin: ready.admin,
    pid: child.pid ?? -1,
    startupMs,
    snapshots: () => snapshots,
    latest: () => snapshots[snapshots.length - 1],
    latestAt: (t) => {
      let found: ClientSnapshot | undefined;
      for (const snapshot of snapshots) {
        if (snapshot.at > t) break;
        found = snapshot;
      }
      return found;
    },
    rpcs: () => rpcs,
    rpcsSince: (t) => rpcs.filter((r) => r.at >= t),
    waitFor: <T>(probe: (p: XdsPeer) => T | undefined | null | false, timeoutMs: number, description = 'condition') =>
      new Promise<T>((resolve, reject) => {
        const check = (): void => {
          if (failed !== undefined || closing) {
            finish();
            reject(new Error(`waiting for ${description}: ${failed?.message ?? `${what} was closed`}`));
            return;
          }
          let value: T | undefined | null | false;
          try {
            value = probe(peer);
          } catch (error) {
            finish();
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          if (value !== undefined && value !== null && value !== false) {
            finish();
            resolve(value);
          }
        };
        const finish = (): void => {
          probes.delete(check);
          clearTimeout(timer);
        };
        const timer = setTimeout(() => {
          finish();
          const last = rpcs[rpcs.length - 1];
          reject(
            new Error(
              `${what}: still waiting for ${description} after ${timeoutMs} ms; last config: ${summarise(snapshots[snapshots.length - 1])}; last rpc: ${
                last === undefined ? 'none' : last.ok ? `ok from ${last.backend}` : `${last.code} ${last.details}`
              }; stderr: ${stderrTail()}`,
            ),
          );
        }, timeoutMs);
        probes.add(check);
        check();
      }),
    failure: () => failed,
    rssBytes: () => {
      if (exited || child.pid === undefined) return undefined;
      try {
        const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        return match?.[1] === undefined ? undefined : Number(match[1]) * 1024;
      } catch {
        return undefined;
      }
    },
    stderrTail,
    close: async (graceMs = 3000) => {
      closing = true;
      for (const probe of [...probes]) probe();
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exitedPromise;
        clearTimeout(timer);
      }
      lines.close();
      child.stdin?.destroy();
    },
  };
  return peer;
}

/** Starts several peers at once; if one fails to start, the others are closed before rethrowing. */
export async function startXdsPeers(options: readonly XdsPeerOptions[]): Promise<XdsPeer[]> {
  const results = await Promise.allSettled(options.map((o) => startXdsPeer(o)));
  const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure !== undefined) {
    await Promise.all(started.map((p) => p.close()));
    throw failure.reason;
  }
  return started;
}
