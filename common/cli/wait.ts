// `xds-programmed wait kind/name`: like `kubectl wait --for=condition=…`, but shows N/M Envoys while
// waiting and, on timeout, exactly which Envoys block and why. Done when the condition recorded for
// the generation is True (the status function records it after writing it to Kubernetes). A
// generation whose condition says Rejected (an Envoy refused the config: only a new generation gets a
// new verdict) or Invalid ends the wait at once with its own exit code, unless asked to keep waiting.
// Throttling (HTTP 429: the query function's reserved concurrency is a cost ceiling, so many waits at
// once meet it), 5xx and an unreachable URL are transient: retried with backoff until the deadline.
import { SingleBar } from 'cli-progress';
import { EXIT } from './exit-codes';
import { formatRef } from './object-ref';
import type { ObjectRef } from '../core/identity';
import { QueryApiError, type ObjectView, type QueryClient } from './query-client';
import { describeBlocker, type Style } from './render';

export interface WaitOptions {
  client: QueryClient;
  ref: ObjectRef;
  /** Wait for this generation; undefined = the latest one the gateways have seen. */
  generation: number | undefined;
  timeoutMs: number;
  pollMs: number;
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
  style: Style;
  /**
   * A progress bar on a terminal (default true). Off when several objects are awaited at once: their
   * bars would overwrite each other's line, so each says its progress in lines of its own.
   */
  progressBar?: boolean;
  /** Return as soon as the generation's verdict is terminal (default true; `--no-fail-fast`). */
  failFast?: boolean;
  now?: () => number;
  /** Uniform in [0, 1): the backoff's jitter (tests pass a fixed one). */
  random?: () => number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Condition reasons after which waiting cannot help: Rejected (an Envoy NACKed this generation; the
 * control plane does not resend it, only a new generation gets a new verdict) and Invalid (the
 * generation itself is refused).
 */
export const TERMINAL_REASONS: ReadonlySet<string> = new Set(['Rejected', 'Invalid']);

/** The longest pause between two attempts after transient failures. */
export const MAX_BACKOFF_MS = 10_000;

/**
 * Transient answers: throttled (429), server errors, no answer at all. Retried until the deadline;
 * anything else (401/403, 400, an unexpected body) ends the wait.
 */
export function isTransient(error: unknown): error is QueryApiError {
  return error instanceof QueryApiError && (error.status === undefined || error.status === 429 || error.status >= 500);
}

/**
 * The pause after the `failures`-th transient failure in a row: the poll interval doubled each time,
 * capped, with the upper half jittered so many waits throttled together do not come back together.
 */
export function transientBackoffMs(failures: number, pollMs: number, random: () => number = Math.random): number {
  const cap = Math.min(MAX_BACKOFF_MS, Math.max(1, pollMs) * 2 ** Math.min(Math.max(0, failures - 1), 20));
  return Math.round(cap / 2 + (cap / 2) * random());
}

function describeTransient(error: QueryApiError): string {
  if (error.status === 429) return `query API throttled (HTTP 429: ${error.message}); retrying with backoff`;
  return `query API unavailable (${error.message}); retrying with backoff`;
}

export async function waitForObject(options: WaitOptions): Promise<number> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const label = formatRef(options.ref);
  const interactive = options.err.isTTY === true && options.progressBar !== false;
  const bar = interactive ? new SingleBar({ format: `${label} [{bar}] {value}/{total} Envoys  {state}`, stream: options.err, hideCursor: true, clearOnComplete: false }) : undefined;
  let barStarted = false;
  let lastLine = '';
  let last: ObjectView | undefined;
  const progress = (line: string, view?: ObjectView): void => {
    if (bar && view) {
      if (!barStarted) {
        bar.start(view.live.total, view.live.programmed, { state: view.live.state });
        barStarted = true;
      }
      bar.setTotal(view.live.total);
      bar.update(view.live.programmed, { state: view.live.state });
    } else if (line !== lastLine) {
      options.err.write(`${line}\n`);
    }
    lastLine = line;
  };
  const failFast = options.failFast ?? true;
  const random = options.random ?? Math.random;
  let failures = 0;
  let lastError: QueryApiError | undefined;
  try {
    for (;;) {
      let view: ObjectView | undefined;
      let answered = false;
      try {
        view = await options.client.object(options.ref, options.generation);
        answered = true;
        failures = 0;
        lastError = undefined;
      } catch (error) {
        if (!isTransient(error)) throw error;
        // Transient: keep waiting (the deadline still applies), say so once per kind of failure.
        failures++;
        lastError = error;
        progress(`${label}: ${describeTransient(error)}`);
      }
      if (answered && view === undefined && last === undefined) {
        progress(`${label}: generation ${options.generation ?? '(latest)'} not seen by any gateway yet`);
      } else if (view !== undefined) {
        last = view;
        const condition = view.condition;
        progress(`${label}: ${view.live.programmed}/${view.live.total} Envoys programmed at generation ${view.generation} (${view.live.state})`, view);
        if (condition?.status === 'True' && (condition.observedGeneration === undefined || condition.observedGeneration >= view.generation)) {
          bar?.stop();
          options.out.write(`${label} condition met: ${condition.type}=True at generation ${view.generation} (${view.live.programmed}/${view.live.total} Envoys)\n`);
          return EXIT.ok;
        }
        if (view.live.state === 'GenerationNotObservable' || condition?.reason === 'GenerationNotObservable') {
          bar?.stop();
          options.err.write(`${label}: this kind gives no signal that its controller processed generation ${view.generation}; the condition can never be True\n`);
          return EXIT.notObservable;
        }
        if (failFast && condition !== null && TERMINAL_REASONS.has(condition.reason) && (condition.observedGeneration === undefined || condition.observedGeneration === view.generation)) {
          bar?.stop();
          options.err.write(`${terminalReport(label, view, options.style, now())}\n`);
          return EXIT.terminal;
        }
      }
      if (now() >= deadline) break;
      const pause = failures > 0 ? transientBackoffMs(failures, options.pollMs, random) : options.pollMs;
      await sleep(Math.min(pause, Math.max(0, deadline - now())));
    }
  } finally {
    bar?.stop();
  }
  // Timed out: who blocks, and why.
  const at = now();
  if (last === undefined && lastError !== undefined) {
    options.err.write(`timed out after ${Math.round(options.timeoutMs / 1000)}s: ${label}: the query API never answered (last: ${lastError.message})\n`);
    return EXIT.unavailable;
  }
  if (last === undefined) {
    options.err.write(`timed out after ${Math.round(options.timeoutMs / 1000)}s: ${label} generation ${options.generation ?? '(latest)'} was never seen by a gateway (is the object tracked, and did its controller accept it?)\n`);
    return EXIT.timeout;
  }
  const lines = [
    `timed out after ${Math.round(options.timeoutMs / 1000)}s: ${label} generation ${last.generation}: ${last.live.programmed}/${last.live.total} Envoys programmed (${last.live.state})`,
    ...(last.condition ? [`  condition: ${last.condition.type}=${last.condition.status} reason=${last.condition.reason}: ${last.condition.message}`] : []),
    ...last.live.blockers.map((blocker) => `  ${options.style.red(describeBlocker(blocker, at))}`),
    ...(last.live.blockersNotListed > 0 ? [`  … and ${last.live.blockersNotListed} more`] : []),
  ];
  options.err.write(`${lines.join('\n')}\n`);
  return last.live.blockers.some((blocker) => blocker.reason === 'nacked') ? EXIT.rejected : EXIT.timeout;
}

/** Why the wait ended early: the verdict, the condition's own words, and who refused. */
function terminalReport(label: string, view: ObjectView, style: Style, at: number): string {
  const condition = view.condition;
  return [
    `${label}: generation ${view.generation} is ${condition?.reason ?? 'terminal'}; waiting cannot change that (--no-fail-fast keeps waiting)`,
    ...(condition ? [`  condition: ${condition.type}=${condition.status} reason=${condition.reason}: ${condition.message}`] : []),
    ...view.live.blockers.map((blocker) => `  ${style.red(describeBlocker(blocker, at))}`),
    ...(view.live.blockersNotListed > 0 ? [`  … and ${view.live.blockersNotListed} more`] : []),
  ].join('\n');
}
