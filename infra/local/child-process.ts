// What the local system's child processes (dynalite, the simulated fleet, the gateway) share: keeping
// and relaying their stderr, and waiting for their ready signal. Each child signals readiness its own
// way (an IPC message, its first stdout line), but fails to start the same three ways: it exits first,
// it cannot be started, or it stays silent past a timeout (then it is SIGKILLed). Errors name the
// child and end with the tail of its stderr, where the reason usually is.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';

/** stderr kept for error messages. */
const STDERR_KEPT_CHARS = 4000;

const PINO_LEVEL_NAMES: Record<number, 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}

/**
 * Keeps the tail of the child's stderr (returned as a getter). With `relay`, each line is also
 * re-emitted on the logger: pino JSON at its own level, anything else (a crash) as an error.
 */
export function watchStderr(child: ChildProcess, relay?: { logger: Logger; child: string }): () => string {
  let tail = '';
  let partialLine = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-STDERR_KEPT_CHARS);
    if (relay === undefined) return;
    const lines = (partialLine + chunk).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) relayLogLine(relay.logger, relay.child, line);
  });
  // A last line without a newline (a crash message) is relayed when the pipe ends.
  child.stderr?.on('end', () => {
    if (relay !== undefined && partialLine !== '') relayLogLine(relay.logger, relay.child, partialLine);
  });
  return () => tail.trim() || 'no stderr output';
}

function relayLogLine(logger: Logger, child: string, line: string): void {
  if (line.trim() === '') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === 'object' && 'level' in parsed && typeof parsed.level === 'number') {
    const { level, msg, time: _time, ...fields } = parsed as { level: number; msg?: unknown; time?: unknown } & Record<string, unknown>;
    logger[PINO_LEVEL_NAMES[level] ?? 'info']({ ...fields, child }, typeof msg === 'string' ? msg : `${child} child log`);
    return;
  }
  logger.error({ child, stderr: line.slice(0, 500) }, `${child} child stderr`);
}

export interface ReadyWait<T> {
  /** e.g. "fleet child process". */
  what: string;
  /** What readiness is, as "did not <toDo>" and "exited before <before>": e.g. "listen" / "listening". */
  toDo: string;
  before: string;
  timeoutMs: number;
  stderrTail: () => string;
  /**
   * Installs the listener for the ready signal and returns its removal. It calls `ready` with what
   * the signal carried, or `fail` when the signal is wrong (the child is then killed).
   */
  listen: (ready: (value: T) => void, fail: (reason: string) => void) => () => void;
  /** Called when the wait gives up (so the caller does not report the child's exit as unexpected). */
  onGiveUp?: () => void;
}

/** Resolves with the child's ready signal; rejects (SIGKILLing the child if it still runs) otherwise. */
export function waitUntilReady<T>(child: ChildProcess, wait: ReadyWait<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const giveUp = (message: string, kill: boolean): void => {
      cleanUp();
      wait.onGiveUp?.();
      if (kill) child.kill('SIGKILL');
      reject(new Error(`${wait.what} ${message}`));
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      cleanUp();
      wait.onGiveUp?.();
      // 'exit' can come before the last stderr chunk; give the pipe a moment to drain.
      setTimeout(() => reject(new Error(`${wait.what} exited (${describeExit(code, signal)}) before ${wait.before}: ${wait.stderrTail()}`)), 20);
    };
    const onError = (error: Error): void => giveUp(`could not be started: ${error.message}`, true);
    const timer = setTimeout(() => giveUp(`did not ${wait.toDo} within ${wait.timeoutMs} ms: ${wait.stderrTail()}`, true), wait.timeoutMs);
    // Set once listen() returned: a signal cannot arrive synchronously (they are events).
    const listening: { stop?: () => void } = {};
    function cleanUp(): void {
      clearTimeout(timer);
      listening.stop?.();
      child.off('exit', onExit);
      child.off('error', onError);
    }
    child.once('exit', onExit);
    child.once('error', onError);
    listening.stop = wait.listen(
      (value) => {
        cleanUp();
        resolve(value);
      },
      (reason) => giveUp(`${reason}: ${wait.stderrTail()}`, true),
    );
  });
}

/**
 * The child's side of the same lifecycle, for a child forked with an IPC channel (the fleet, the
 * cluster): without the channel it cannot be told to close, so it refuses to run; the parent owns its
 * life, so when the channel closes (the parent exited, crashed or was SIGKILLed) it closes and exits,
 * leaving no orphan holding ports or streams; a terminal's Ctrl-C reaches the whole process group, and
 * the parent closes it through IPC instead.
 */
export function runAsForkedChild(name: string, handlers: { onMessage: (raw: unknown) => void; closeAndExit: (code: number) => void }): void {
  if (typeof process.send !== 'function') {
    process.stderr.write(`${name}: must be started with child_process.fork (no IPC channel)\n`);
    process.exit(1);
  }
  process.on('disconnect', () => handlers.closeAndExit(0));
  process.on('message', handlers.onMessage);
  process.on('SIGINT', () => undefined);
}
