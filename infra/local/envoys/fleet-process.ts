// Runs a simulated Envoy fleet (a FleetSpec) either in this process or in a child Node process, behind
// one async interface, FleetQueries, that both implement. The child pattern follows
// infra/local/dynamo/dynalite.ts: fork with an IPC channel, a readiness message, the child exits when
// the channel closes, close() waits for the exit; a child that fails to start rejects with its stderr.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Logger } from 'pino';
import { describeExit, waitUntilReady, watchStderr } from '../child-process';
import { ackCountFromTruth, configuredCountOf, connectedCountOf, lastAcksFromTruth, programmedAtFromTruth, type FleetLastAcks, type FleetProgrammedAt, type WatermarkTarget } from './fleet-queries';
import { childMessageSchema, countResultSchema, lastAcksResultSchema, programmedAtResultSchema, routableResultSchema, type FleetQuery, type ParentMessage } from './fleet-process-protocol';
import { buildFleet, routableOf, type BuiltFleet, type FleetSpec } from './fleet-spec';
import type { FleetRoutable } from './route-watch';
import { fleetTrueWritesResultSchema, type FleetTrueWritesQuery, type FleetTrueWritesResult } from '../../../test/truth/fleet-true-writes';

/** Questions about a fleet's state and ground truth, answered the same in both modes. */
export interface FleetQueries {
  /** Envoys whose streams are up. */
  connectedCount(): Promise<number>;
  /** Envoys that accepted at least one response of each of the four types. */
  configuredCount(): Promise<number>;
  /** Responses accepted (ACKed) at or after `since` (ms since the epoch, same machine clock). */
  ackCount(since: number): Promise<number>;
  /** Per resource name, the last Envoy's first acceptance of it (CDS and EDS) since `since`: lastAcksFromTruth. */
  lastAcks(names: readonly string[], since: number): Promise<FleetLastAcks>;
  /** Per target, the last Envoy to have it on every watermarked type since `since`: programmedAtFromTruth. */
  programmedAt(targets: readonly WatermarkTarget[], since: number): Promise<FleetProgrammedAt>;
  /** Per route watch key (the spec's routeWatches), the last of `nodeIds` (default all) to be able to route it: RouteWatch. */
  routable(keys: readonly string[], nodeIds?: readonly string[]): Promise<FleetRoutable>;
  /**
   * Invariant 1 over True writes, judged by the truth checker against the provenance stamps the fleet
   * received (test/truth/fleet-true-writes.ts). Needs the content tap (FleetProcessOptions.tapContents);
   * an inline fleet rejects: in this process the caller taps the codec and runs checkTrueWrites itself.
   */
  trueWriteViolations(query: Omit<FleetTrueWritesQuery, 'kind'>): Promise<FleetTrueWritesResult>;
}

export function inlineFleetQueries(built: BuiltFleet): FleetQueries {
  const { fleet, envoys } = built;
  const nodeIds = (): string[] => envoys.map((envoy) => envoy.id);
  return {
    connectedCount: async () => connectedCountOf(envoys),
    configuredCount: async () => configuredCountOf(fleet.truth, nodeIds()),
    ackCount: async (since) => ackCountFromTruth(fleet.truth, nodeIds(), since),
    lastAcks: async (names, since) => lastAcksFromTruth(fleet.truth, nodeIds(), names, since),
    programmedAt: async (targets, since) => programmedAtFromTruth(fleet.truth, nodeIds(), targets, since),
    routable: async (keys, onlyNodeIds) => routableOf(built, keys, onlyNodeIds),
    trueWriteViolations: () => Promise.reject(new Error('trueWriteViolations: an inline fleet has no content tap; tap the codec (test/truth/content.ts) and run checkTrueWrites in this process')),
  };
}

export interface FleetProcessOptions {
  spec: FleetSpec;
  /** The child's log lines are re-emitted here at their own level; the child logs at this logger's level. */
  logger: Logger;
  /** Record the provenance stamps of every response the Envoys receive, for trueWriteViolations (default off: it costs memory). */
  tapContents?: boolean;
  /** How long to wait for the child to start its fleet (default 30 s). */
  startTimeoutMs?: number;
}

export interface FleetProcess extends FleetQueries {
  pid: number;
  /** Envoys the child created. */
  envoys: number;
  /** Fork → fleet created and connecting, as seen by the parent (includes loading TypeScript). */
  startupMs: number;
  /** Closes the Envoys and resolves once the child has exited (SIGKILL after 10 s). Idempotent. */
  close(): Promise<void>;
}

const CHILD_ENTRY = path.join(__dirname, 'fleet-process-child.ts');
/** Where `--import tsx` resolves from: the repository root, whatever the parent's cwd. */
const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
/** Extra Node flags for the child, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const CHILD_EXEC_ARGV_ENV = 'LOCAL_FLEET_EXEC_ARGV';
const CHILD_CLOSE_TIMEOUT_MS = 10_000;
const FLEET_SEMI_SPACE_FLAG = '--max-semi-space-size=64';
/** A query waits at most this long for its answer (lastAcks over 5,000 Envoys is well under a second). */
const QUERY_TIMEOUT_MS = 60_000;

export async function startFleetProcess(opts: FleetProcessOptions): Promise<FleetProcess> {
  const forkedAt = Date.now();
  const child: ChildProcess = fork(CHILD_ENTRY, [], {
    cwd: REPO_ROOT,
    // Not the parent's flags (jest, profiling): the child needs only the TypeScript loader, and a young
    // generation large enough for a fleet's response churn: every Envoy decodes every response into
    // short-lived objects, and with the default (16 MB) the child's scavenges were ~35% of its CPU in
    // a change at 1,000 × 1,000; at 64 MB its CPU over the change went 17 → 11 s (docs/bench/README.md,
    // round 15). Simulated Envoys stand for machines of their own: their CPU here is the rig's, and
    // whatever it takes is taken from the system measured beside it.
    execArgv: ['--import', 'tsx', FLEET_SEMI_SPACE_FLAG, ...(process.env[CHILD_EXEC_ARGV_ENV] ?? '').split(' ').filter((flag) => flag !== '')],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    // Serialization 'advanced' (structured clone) would also work; JSON keeps the messages plain data.
    serialization: 'json',
  });
  const stderrTail = watchStderr(child, { logger: opts.logger, child: 'fleet' });

  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  let nextId = 1;
  let exited = false;
  let closeRequested = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      for (const [id, waiter] of pending) {
        clearTimeout(waiter.timer);
        waiter.reject(new Error(`fleet child process exited (${describeExit(code, signal)}) before answering query ${id}`));
      }
      pending.clear();
      if (!closeRequested) opts.logger.error({ pid: child.pid, exit: describeExit(code, signal), stderr: stderrTail() }, 'fleet child process exited unexpectedly');
      resolve();
    });
  });
  child.on('message', (raw: unknown) => {
    const parsed = childMessageSchema.safeParse(raw);
    if (!parsed.success) {
      opts.logger.error({ issues: parsed.error.issues.slice(0, 5) }, 'invalid message from the fleet child, ignored');
      return;
    }
    if (parsed.data.type !== 'reply') return;
    const waiter = pending.get(parsed.data.id);
    if (!waiter) return;
    pending.delete(parsed.data.id);
    clearTimeout(waiter.timer);
    if (parsed.data.ok) waiter.resolve(parsed.data.result);
    else waiter.reject(new Error(`fleet child: ${parsed.data.error ?? 'query failed'}`));
  });

  // With a callback, a failed send (channel closed under us) is reported there, not as an 'error' event.
  const send = (message: ParentMessage, onFailed: (error: Error) => void = () => undefined): void => {
    child.send(message, (error) => {
      if (error) onFailed(error);
    });
  };
  // A ChildProcess 'error' with no listener would throw in this process: log it instead.
  child.on('error', (error) => opts.logger.error({ err: error, pid: child.pid }, 'fleet child process error'));

  const started = await waitUntilReady<{ envoys: number }>(child, {
    what: 'fleet child process',
    toDo: 'start its fleet',
    before: 'starting its fleet',
    timeoutMs: opts.startTimeoutMs ?? 30_000,
    stderrTail,
    onGiveUp: () => {
      closeRequested = true;
    },
    listen: (ready) => {
      const onMessage = (raw: unknown): void => {
        const parsed = childMessageSchema.safeParse(raw);
        if (parsed.success && parsed.data.type === 'started') ready({ envoys: parsed.data.envoys });
      };
      child.on('message', onMessage);
      // The spec goes over IPC, not argv: 5,000 node templates are fine, but argv strings are capped (128 KiB).
      send({ type: 'start', spec: opts.spec, logLevel: opts.logger.level, ...(opts.tapContents === true ? { tapContents: true } : {}) }, (error) => opts.logger.error({ err: error }, 'fleet child: start message not sent'));
      return () => child.off('message', onMessage);
    },
  });

  const ask = (query: FleetQuery): Promise<unknown> => {
    if (exited || !child.connected) return Promise.reject(new Error('fleet child process is not running'));
    const id = nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`fleet child process did not answer ${query.kind} within ${QUERY_TIMEOUT_MS} ms`));
      }, QUERY_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      send({ type: 'query', id, query }, (error) => {
        if (!pending.delete(id)) return;
        clearTimeout(timer);
        reject(new Error(`fleet child process: query ${query.kind} not sent: ${error.message}`));
      });
    });
  };

  let closing: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    envoys: started.envoys,
    startupMs: Date.now() - forkedAt,
    connectedCount: async () => countResultSchema.parse(await ask({ kind: 'connectedCount' })),
    configuredCount: async () => countResultSchema.parse(await ask({ kind: 'configuredCount' })),
    ackCount: async (since) => countResultSchema.parse(await ask({ kind: 'ackCount', since })),
    lastAcks: async (names, since) => lastAcksResultSchema.parse(await ask({ kind: 'lastAcks', names: [...names], since })),
    programmedAt: async (targets, since) => programmedAtResultSchema.parse(await ask({ kind: 'programmedAt', targets: targets.map((t) => ({ ...t })), since })),
    routable: async (keys, nodeIds) => routableResultSchema.parse(await ask({ kind: 'routable', keys: [...keys], ...(nodeIds === undefined ? {} : { nodeIds: [...nodeIds] }) })),
    trueWriteViolations: async (query) => fleetTrueWritesResultSchema.parse(await ask({ kind: 'trueWrites', ...query })),
    close: () =>
      (closing ??= (async () => {
        closeRequested = true;
        if (!exited) {
          if (child.connected) child.send({ type: 'close' } satisfies ParentMessage, (error) => error && child.kill('SIGKILL'));
          else child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_CLOSE_TIMEOUT_MS);
          await exit;
          clearTimeout(timer);
        }
        if (child.connected) child.disconnect();
      })()),
  };
}

/** Builds the spec's fleet in this process and connects it; for callers that want one type for both modes. */
export function startInlineFleet(spec: FleetSpec, logger: Logger): ReturnType<typeof buildFleet> & { queries: FleetQueries } {
  const built = buildFleet(spec, logger);
  built.fleet.connectAll();
  return { ...built, queries: inlineFleetQueries(built) };
}
