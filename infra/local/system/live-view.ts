// The live view of `npm start`: each tracked object with a progress bar of Envoys programmed at its
// latest generation (metadata.generation from Kubernetes, so a fresh change shows as catching up),
// NACKs and stuck Envoys highlighted. Without a terminal (--no-ui) it prints one plain line per
// change instead. It reads the same query API as the CLI, through the CLI's client.
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { QueryApiError, QueryClient, type ObjectView } from '../../../common/cli/query-client';
import { COLOUR, PLAIN, type Style } from '../../../common/cli/render';

export interface ObjectProgress {
  name: string;
  /** metadata.generation in Kubernetes. */
  generation: number | undefined;
  /** What the query API says about that generation (undefined: no gateway saw it yet). */
  view: ObjectView | undefined;
}

export interface LiveViewOptions {
  queryUrl: string;
  queryToken: string;
  kubeUrl: string;
  namespace: string;
  /** Objects to show (names of HTTPProxies in `namespace`); re-read each poll so new ones appear. */
  listObjects: () => Promise<string[]>;
  mode: 'ui' | 'lines';
  out: NodeJS.WritableStream & { isTTY?: boolean };
  pollMs: number;
  /** Called after each poll (start.ts measures "ready" with it). */
  onPoll?: (objects: ObjectProgress[]) => void;
}

export interface LiveView {
  stop(): Promise<void>;
}

/** Names of HTTPProxies in a namespace, read straight from the API server. */
export async function listHttpProxies(kubeUrl: string, namespace: string): Promise<string[]> {
  const response = await fetch(`${kubeUrl}/apis/projectcontour.io/v1/namespaces/${namespace}/httpproxies`);
  if (!response.ok) return [];
  const body = (await response.json()) as { items?: Array<{ metadata?: { name?: string } }> };
  return (body.items ?? []).map((item) => item.metadata?.name ?? '').filter((name) => name !== '').sort();
}

async function generationOf(kubeUrl: string, namespace: string, name: string): Promise<number | undefined> {
  const response = await fetch(`${kubeUrl}/apis/projectcontour.io/v1/namespaces/${namespace}/httpproxies/${encodeURIComponent(name)}`);
  if (!response.ok) return undefined;
  const body = (await response.json()) as { metadata?: { generation?: number } };
  return body.metadata?.generation;
}

/** Short text for the state column: what is blocking, in the words an operator acts on. */
export function describeProgress(progress: ObjectProgress, style: Style): { state: string; note: string } {
  const view = progress.view;
  if (progress.generation === undefined) return { state: style.yellow('Unknown'), note: 'not in Kubernetes' };
  if (view === undefined) return { state: style.yellow('CatchingUp'), note: `generation ${progress.generation} not seen by the gateway yet` };
  const nacked = view.live.blockers.filter((b) => b.reason === 'nacked');
  const stuck = view.live.blockers.filter((b) => b.reason === 'stuck');
  const notes: string[] = [];
  if (nacked.length > 0) notes.push(style.red(`NACK by ${nacked.map((b) => b.nodeId).slice(0, 3).join(',')}${nacked.length > 3 ? '…' : ''}: ${nacked[0]?.reason === 'nacked' ? (nacked[0].nacks[0]?.message ?? '') : ''}`));
  if (stuck.length > 0) notes.push(style.red(`stuck: ${stuck.map((b) => b.nodeId).slice(0, 3).join(',')}${stuck.length > 3 ? '…' : ''}`));
  const condition = view.condition;
  const written = condition === null ? 'condition not written yet' : `${condition.type}=${condition.status}`;
  const state = view.live.state === 'Programmed' ? style.green(view.live.state) : view.live.state === 'Rejected' || view.live.state === 'Stuck' ? style.red(view.live.state) : style.yellow(view.live.state);
  return { state, note: [written, ...notes].join('  ') };
}

export function startLiveView(options: LiveViewOptions): LiveView {
  const client = new QueryClient({ url: options.queryUrl, token: options.queryToken, timeoutMs: 5000 });
  const style = options.mode === 'ui' && options.out.isTTY === true ? COLOUR : PLAIN;
  const multi =
    options.mode === 'ui'
      ? new MultiBar({ stream: options.out, hideCursor: true, clearOnComplete: false, format: '{name} gen {gen} [{bar}] {value}/{total} Envoys  {state}  {note}', barsize: 24 }, Presets.shades_classic)
      : undefined;
  const bars = new Map<string, SingleBar>();
  const lastLines = new Map<string, string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const poll = async (): Promise<void> => {
    const names = await options.listObjects();
    const objects: ObjectProgress[] = [];
    for (const name of names) {
      const generation = await generationOf(options.kubeUrl, options.namespace, name);
      let view: ObjectView | undefined;
      if (generation !== undefined) {
        try {
          view = await client.object({ group: 'projectcontour.io', kind: 'HTTPProxy', namespace: options.namespace, name }, generation);
        } catch (error) {
          if (!(error instanceof QueryApiError)) throw error;
        }
      }
      objects.push({ name, generation, view });
    }
    for (const progress of objects) {
      const { state, note } = describeProgress(progress, style);
      const programmed = progress.view?.live.programmed ?? 0;
      const total = progress.view?.live.total ?? 0;
      if (multi) {
        let bar = bars.get(progress.name);
        const payload = { name: progress.name.padEnd(12), gen: String(progress.generation ?? '-').padStart(2), state, note };
        if (bar === undefined) {
          bar = multi.create(Math.max(total, 1), programmed, payload);
          bars.set(progress.name, bar);
        }
        bar.setTotal(Math.max(total, 1));
        bar.update(programmed, payload);
      } else {
        const line = `object ${options.namespace}/${progress.name} generation ${progress.generation ?? '-'}: ${programmed}/${total} Envoys ${state} ${note}`;
        if (lastLines.get(progress.name) !== line) options.out.write(`${line}\n`);
        lastLines.set(progress.name, line);
      }
    }
    options.onPoll?.(objects);
  };
  const loop = (): void => {
    running = poll()
      .catch((error: unknown) => {
        if (!multi) options.out.write(`live view: poll failed: ${error instanceof Error ? error.message : String(error)}\n`);
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, options.pollMs);
      });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
      multi?.stop();
    },
  };
}
