// Runs a real client (a peer from test/peers, installed by scripts/peers.mjs) as a child process that
// speaks JSON lines on stdout. The API server lives in the jest process, so children are always
// run asynchronously: a blocking spawn would stop the server they talk to.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { waitFor } from '../../support/eventually';

export type JsonLine = Record<string, unknown>;

export interface PeerRun {
  code: number | null;
  lines: JsonLine[];
  stderr: string;
}

function parseLine(line: string): JsonLine | undefined {
  if (line.trim() === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as JsonLine) : { text: line };
  } catch {
    return { text: line };
  }
}

export interface PeerProcess {
  readonly lines: JsonLine[];
  stderr(): string;
  /** Resolves with the first line (in arrival order) that `match` accepts. */
  waitForLine(what: string, match: (line: JsonLine) => boolean, timeoutMs?: number): Promise<JsonLine>;
  send(line: JsonLine): void;
  /** Closes stdin (the peer exits on EOF) and waits for the exit; kills it after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

export function startPeer(command: string, args: string[], env: NodeJS.ProcessEnv = {}): PeerProcess {
  const child: ChildProcessWithoutNullStreams = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: JsonLine[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = parseLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      if (line) lines.push(line);
      newline = buffered.indexOf('\n');
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      const last = parseLine(buffered);
      if (last) lines.push(last);
      resolve(code);
    });
    child.on('error', (error) => {
      stderr += `\nspawn failed: ${error.message}`;
      resolve(null);
    });
  });
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  return {
    lines,
    stderr: () => stderr,
    exited,
    waitForLine: (what, match, timeoutMs = 30_000) =>
      waitFor(
        `${what} from ${command} (lines so far: ${JSON.stringify(lines)}; stderr: ${stderr.slice(-2000)})`,
        () => {
          const found = lines.find(match);
          if (found) return found;
          if (exitCode !== undefined) throw new Error(`${command} exited (${String(exitCode)}) before ${what}: ${JSON.stringify(lines)}\n${stderr.slice(-4000)}`);
          return undefined;
        },
        { timeoutMs, intervalMs: 20 },
      ),
    send: (line) => {
      child.stdin.write(`${JSON.stringify(line)}\n`);
    },
    stop: async (graceMs = 5000) => {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Runs a peer to completion; it is killed after `timeoutMs`. */
export async function runPeer(command: string, args: string[], timeoutMs = 60_000): Promise<PeerRun> {
  const peer = startPeer(command, args);
  const timer = setTimeout(() => void peer.stop(0), timeoutMs);
  const code = await peer.exited;
  clearTimeout(timer);
  return { code, lines: peer.lines, stderr: peer.stderr() };
}

/** The `{"result": ...}` line of a finished run; fails with everything the peer printed otherwise. */
export function resultOf<T>(run: PeerRun): T {
  const line = run.lines.find((l) => 'result' in l);
  if (run.code !== 0 || !line) {
    throw new Error(`peer failed (exit ${String(run.code)}):\n${run.lines.map((l) => JSON.stringify(l)).join('\n')}\n${run.stderr.slice(-4000)}`);
  }
  return line['result'] as T;
}
