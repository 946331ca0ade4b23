// `xds-programmed wait kind/name`: like `kubectl wait --for=condition=…`, but shows N/M Envoys while
// waiting and, on timeout, exactly which Envoys block and why. Done when the condition recorded for
// the generation is True (the status function records it after writing it to Kubernetes).
import { SingleBar } from 'cli-progress';
import { EXIT } from './exit-codes';
import { formatRef } from './object-ref';
import { QueryApiError, type ObjectRef, type ObjectView, type QueryClient } from './query-client';
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
  now?: () => number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitForObject(options: WaitOptions): Promise<number> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const label = formatRef(options.ref);
  const interactive = options.err.isTTY === true;
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
  try {
    for (;;) {
      let view: ObjectView | undefined;
      try {
        view = await options.client.object(options.ref, options.generation);
      } catch (error) {
        if (error instanceof QueryApiError && (error.status === undefined || error.status >= 500)) {
          // Transient: keep waiting (the deadline still applies), say so once.
          progress(`${label}: query API unavailable (${error.message}); retrying`);
        } else throw error;
      }
      if (view === undefined && last === undefined) {
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
      }
      if (now() >= deadline) break;
      await sleep(Math.min(options.pollMs, Math.max(0, deadline - now())));
    }
  } finally {
    bar?.stop();
  }
  // Timed out: who blocks, and why.
  const at = now();
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
