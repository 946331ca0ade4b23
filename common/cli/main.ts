// xds-programmed: the command line of the query API, with kubectl's habits.
//   xds-programmed status [OBJECT…]        object view (condition, counts, blockers), or without an object
//                                          the fleet like istioctl proxy-status
//   xds-programmed wait OBJECT…            wait until programmed into every Envoy (or a terminal verdict:
//                                          Rejected/Invalid, unless --no-fail-fast); exit codes in exit-codes.ts
//   xds-programmed envoys [NODE]           Envoys with lineage, versions, last seen; one Envoy in detail
// OBJECT is kind/name or, as kubectl takes them, `kind name…`, or `kind` with --all or -l (listed from
// Kubernetes, in -n or every namespace with -A). -o text|wide|json|yaml.
// Connection: --url / XDS_PROGRAMMED_URL and --token / XDS_PROGRAMMED_TOKEN (the local runtime's
// bearer token); a Lambda function URL without a token is signed with SigV4 (AWS_IAM auth).
// Startup: `--help` must be as quick as kubectl's, so only commander and this file's light imports load
// before a command runs; the query client (zod), Kubernetes' client, wait's progress bar and yaml
// load in the action that needs them.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EXIT } from './exit-codes';
import { formatRef, parseObjectRef, type KindInfo } from './object-ref';
import type { ObjectRef } from '../core/identity';
import type { ObjectView, QueryClient } from './query-client';
import { byNodeId, renderEnvoyDetail, renderEnvoys, renderObject, renderProxyStatus, styleFor } from './render';

export interface CliIo {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

/** kubectl-style durations: 30s, 2m, 500ms, 1h, or a bare number of seconds. */
export function parseDuration(text: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) throw new InvalidArgumentError(`not a duration (e.g. 30s, 2m): ${text}`);
  const value = Number(match[1]);
  const unit = match[2] ?? 's';
  return Math.round(value * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000));
}

function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`not a positive integer: ${text}`);
  return value;
}

function eventCount(text: string): number {
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || value > 100) throw new InvalidArgumentError(`not a number of events from 0 to 100: ${text}`);
  return value;
}

type OutputFormat = 'text' | 'wide' | 'json' | 'yaml';

interface GlobalOptions {
  url?: string;
  token?: string;
  namespace: string;
  output: OutputFormat;
  kubeconfig?: string;
}

interface SelectOptions {
  all?: boolean;
  selector?: string;
  allNamespaces?: boolean;
}

/** Bad usage or input: exit 2. */
class UsageError extends Error {}

/** An answer to report on one line with its own exit code (e.g. 6: the object does not exist). */
class ExitError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Every error is one line: a message that quotes a multi-line answer is folded. */
const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, ' ').trim();

async function clientFrom(options: GlobalOptions): Promise<QueryClient> {
  if (options.url === undefined) throw new UsageError('no query API URL: pass --url or set XDS_PROGRAMMED_URL (npm start prints both)');
  const { QueryClient } = await import('./query-client');
  try {
    return new QueryClient({ url: options.url, ...(options.token === undefined ? {} : { token: options.token }) });
  } catch {
    throw new UsageError(`--url is not a URL: ${options.url}`);
  }
}

function parseRef(text: string, namespace: string): ReturnType<typeof parseObjectRef> {
  try {
    return parseObjectRef(text, namespace);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

interface Target {
  ref: ObjectRef;
  kind?: KindInfo;
  /** metadata.generation when the object was listed from Kubernetes (--all, -l). */
  generation?: number;
}

/** Kubernetes failures: not found → 6, an unreadable kubeconfig → 2, anything else → 4. */
async function fromKubernetes<T>(read: () => Promise<T>): Promise<T> {
  const { KubeError, KubeconfigError } = await import('./kube-generation');
  try {
    return await read();
  } catch (error) {
    if (error instanceof KubeconfigError) throw new UsageError(error.message);
    if (error instanceof KubeError) throw new ExitError(error.status === 404 ? EXIT.notFound : EXIT.unavailable, error.message);
    throw error;
  }
}

/**
 * The objects a command names, as kubectl takes them: `kind/name…`, `kind name…`, or `kind` with
 * --all or -l (listed from Kubernetes; -A: every namespace). Sorted by namespace and name when listed.
 */
async function resolveTargets(args: readonly string[], select: SelectOptions, global: GlobalOptions): Promise<{ targets: Target[]; listed: boolean }> {
  const selecting = select.all === true || select.selector !== undefined;
  const [first, ...rest] = args;
  if (first === undefined) throw new UsageError('name at least one object (kind/name, or kind name…), or a kind with --all or -l');
  if (first.includes('/')) {
    if (selecting) throw new UsageError('--all and -l take a kind (e.g. httpproxy --all), not kind/name');
    if (select.allNamespaces === true) throw new UsageError('-A selects objects in every namespace: use it with a kind and --all or -l, not with names');
    return { targets: args.map((arg) => parseRef(arg, global.namespace)), listed: false };
  }
  if (rest.some((arg) => arg.includes('/'))) throw new UsageError(`after the kind ${JSON.stringify(first)} give names, not kind/name (${rest.find((arg) => arg.includes('/'))})`);
  if (rest.length > 0) {
    if (selecting) throw new UsageError('name objects or select them with --all or -l, not both');
    if (select.allNamespaces === true) throw new UsageError('-A selects objects in every namespace: use it with --all or -l, not with names');
    return { targets: rest.map((name) => parseRef(`${first}/${name}`, global.namespace)), listed: false };
  }
  if (!selecting) throw new UsageError(`name the ${first} objects (${first} NAME…, or ${first}/NAME), or select them with --all or -l`);
  const { kind } = parseRef(`${first}/x`, global.namespace);
  if (kind === undefined) throw new UsageError(`--all and -l list objects from Kubernetes, which needs a kind this CLI knows: httpproxy or httproute, not ${JSON.stringify(first)}`);
  const kubeconfig = global.kubeconfig;
  if (kubeconfig === undefined) throw new UsageError('--all and -l list the objects from Kubernetes: pass --kubeconfig or set KUBECONFIG');
  const namespace = select.allNamespaces === true ? undefined : global.namespace;
  const { listObjects } = await import('./kube-generation');
  const objects = await fromKubernetes(() => listObjects(kubeconfig, kind, namespace, select.selector));
  if (objects.length === 0) {
    const what = select.selector === undefined ? `no ${kind.plural}` : `no ${kind.plural} match -l ${select.selector}`;
    throw new ExitError(EXIT.notFound, `${what} ${namespace === undefined ? 'in any namespace' : `in namespace ${namespace}`}`);
  }
  return {
    targets: objects.map((object) => ({ ref: { group: kind.group, kind: kind.kind, namespace: object.namespace, name: object.name }, kind, generation: object.generation })),
    listed: true,
  };
}

/** Formats machine output: a single object as itself, several as a list (kubectl's `kind: List`). */
async function writeStructured(io: CliIo, format: 'json' | 'yaml', value: unknown): Promise<void> {
  if (format === 'json') {
    io.out.write(`${JSON.stringify(value, null, 2)}\n`);
    return;
  }
  const { stringify } = await import('yaml');
  io.out.write(stringify(value));
}

const selectOptions = (command: Command): Command =>
  command
    .option('--all', 'every object of the kind in the namespace (listed from Kubernetes)')
    .option('-l, --selector <selector>', 'objects of the kind matching this label selector (listed from Kubernetes), e.g. app=web')
    .option('-A, --all-namespaces', 'with --all or -l: in every namespace');

/** The exit code of several outcomes: the first failure's, in the order the objects were named. */
export function combinedExitCode(codes: readonly number[]): number {
  return codes.find((code) => code !== EXIT.ok) ?? EXIT.ok;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.ok;
  const style = styleFor(io.out, io.env);
  const program = new Command('xds-programmed')
    .description('Is my change programmed into every Envoy? Reads the xds-programmed query API.')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out.write(text), writeErr: (text) => io.err.write(text) })
    .addOption(new Option('--url <url>', 'query function URL').env('XDS_PROGRAMMED_URL'))
    .addOption(new Option('--token <token>', 'bearer token of the local runtime (deployed URLs use SigV4 instead)').env('XDS_PROGRAMMED_TOKEN'))
    .addOption(new Option('-n, --namespace <ns>', 'namespace of the objects').default('default'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'wide', 'json', 'yaml']).default('text'))
    .addOption(new Option('--kubeconfig <path>', 'Kubernetes, for the objects\' current generation (wait, status) and --all / -l').env('KUBECONFIG'));
  // commander reads .env() from process.env; give it ours (tests, embedding).
  const globals = (): GlobalOptions => {
    const opts = program.opts<GlobalOptions>();
    return {
      ...opts,
      url: opts.url ?? io.env['XDS_PROGRAMMED_URL'],
      token: opts.token ?? io.env['XDS_PROGRAMMED_TOKEN'],
      kubeconfig: opts.kubeconfig ?? (io.env['KUBECONFIG'] === undefined || io.env['KUBECONFIG'] === '' ? undefined : io.env['KUBECONFIG']),
    };
  };

  selectOptions(
    program
      .command('status')
      .description('object view (condition, counts, blocking Envoys) or, without an object, the fleet like istioctl proxy-status')
      .argument('[objects...]', 'kind/name (e.g. httpproxy/web), kind name…, or kind with --all or -l')
      .option('--generation <n>', 'a specific generation (default: the latest seen)', positiveInteger),
  ).action(async (args: string[], options: SelectOptions & { generation?: number }) => {
    const global = globals();
    const now = Date.now();
    if (args.length === 0 && options.all !== true && options.selector === undefined) {
      if (options.allNamespaces === true) throw new UsageError('-A selects objects in every namespace: give a kind with --all or -l (the fleet view is not per namespace)');
      const client = await clientFrom(global);
      const { envoys, corrupt } = await client.envoys();
      const sorted = byNodeId(envoys);
      if (global.output === 'json' || global.output === 'yaml') await writeStructured(io, global.output, { envoys: sorted, corrupt });
      else io.out.write(`${sorted.length === 0 ? 'no Envoys have connected to a gateway' : renderProxyStatus(sorted, style, { wide: global.output === 'wide', now })}\n${corrupt > 0 ? `${corrupt} unreadable Envoy records skipped\n` : ''}`);
      return;
    }
    if (args.length === 0) throw new UsageError('--all and -l take a kind, e.g. status httpproxy --all');
    const { targets, listed } = await resolveTargets(args, options, global);
    const client = await clientFrom(global);
    const { currentGeneration } = await import('./kube-generation');
    const results = await Promise.all(
      targets.map(async (target) => {
        const view = await client.object(target.ref, options.generation);
        // The observedGeneration rule: what the gateways saw last may be older than the spec in
        // Kubernetes; say so rather than show an older generation's verdict as current.
        let kubernetesGeneration = target.generation;
        if (view !== undefined && kubernetesGeneration === undefined && options.generation === undefined && global.kubeconfig !== undefined && target.kind !== undefined) {
          const { ref, kind } = target;
          kubernetesGeneration = await currentGeneration(global.kubeconfig, kind, ref.namespace, ref.name).catch(() => undefined);
        }
        return { target, view, kubernetesGeneration: options.generation === undefined ? kubernetesGeneration : undefined };
      }),
    );
    const codes: number[] = [];
    const found: Array<{ view: ObjectView; kubernetesGeneration: number | undefined }> = [];
    for (const { target, view, kubernetesGeneration } of results) {
      if (view === undefined) {
        io.err.write(`${formatRef(target.ref)}${options.generation === undefined ? '' : ` generation ${options.generation}`}: not seen by any gateway\n`);
        codes.push(EXIT.notFound);
      } else {
        found.push({ view, kubernetesGeneration });
        codes.push(EXIT.ok);
      }
    }
    exitCode = combinedExitCode(codes);
    if (global.output === 'json' || global.output === 'yaml') {
      const items = found.map(({ view, kubernetesGeneration }) => (kubernetesGeneration === undefined ? view : { ...view, kubernetesGeneration }));
      if (!listed && targets.length === 1) {
        if (items[0] !== undefined) await writeStructured(io, global.output, items[0]);
      } else {
        await writeStructured(io, global.output, { kind: 'List', items });
      }
      return;
    }
    const blocks = found.map(({ view, kubernetesGeneration }) => {
      const behind = kubernetesGeneration !== undefined && kubernetesGeneration > view.generation;
      const text = renderObject(view, style, now, { wide: global.output === 'wide' });
      return behind ? `${text}\n${style.yellow(`  catching up: Kubernetes is at generation ${kubernetesGeneration}, which no gateway has seen programmed yet (its controller may not have accepted it)`)}` : text;
    });
    if (blocks.length > 0) io.out.write(`${blocks.join('\n\n')}\n`);
  });

  selectOptions(
    program
      .command('wait')
      .description('wait until each object\'s generation is programmed into every Envoy (like kubectl wait, with progress); several objects are awaited at once')
      .argument('<objects...>', 'kind/name (e.g. httpproxy/web), kind name…, or kind with --all or -l')
      .addOption(new Option('--timeout <duration>', 'give up after this long (30s, 2m, …), for all the objects together').argParser(parseDuration).default(30_000, '30s'))
      .option('--generation <n>', 'wait for this generation (default: the object\'s metadata.generation with --kubeconfig, else the latest seen)', positiveInteger)
      .addOption(new Option('--poll <duration>', 'poll interval').argParser(parseDuration).default(500, '500ms'))
      .option('--no-fail-fast', 'keep waiting (until the timeout) when the generation is Rejected or Invalid, instead of exiting 7 at once'),
  ).action(async (args: string[], options: SelectOptions & { timeout: number; generation?: number; poll: number; failFast: boolean }) => {
    const global = globals();
    const { targets } = await resolveTargets(args, options, global);
    const client = await clientFrom(global);
    const [{ waitForObject }, { currentGeneration }] = await Promise.all([import('./wait'), import('./kube-generation')]);
    const several = targets.length > 1;
    const codes = await Promise.all(
      targets.map(async (target): Promise<number> => {
        let generation = options.generation ?? target.generation;
        const kubeconfig = global.kubeconfig;
        if (generation === undefined && kubeconfig !== undefined && target.kind !== undefined) {
          const { ref, kind } = target;
          try {
            generation = await fromKubernetes(() => currentGeneration(kubeconfig, kind, ref.namespace, ref.name));
          } catch (error) {
            if (!(error instanceof ExitError || error instanceof UsageError)) throw error;
            io.err.write(`xds-programmed: ${oneLine(error.message)}\n`);
            return error instanceof ExitError ? error.exitCode : EXIT.usage;
          }
        }
        return waitForObject({ client, ref: target.ref, generation, timeoutMs: options.timeout, pollMs: options.poll, failFast: options.failFast, progressBar: !several, out: io.out, err: io.err, style: styleFor(io.err, io.env) });
      }),
    );
    exitCode = combinedExitCode(codes);
  });

  program
    .command('envoys')
    .description('Envoys with their lineage, versions (acked/current per type) and last seen; with a node id, that Envoy in detail: per type the version sent, ACKed and last NACKed, and its recent events')
    .argument('[node]', 'node id of one Envoy')
    .option('--group <group>', 'only this node group')
    .addOption(new Option('--events <n>', 'recent events to show for one Envoy (0-100)').argParser(eventCount).default(20))
    .action(async (node: string | undefined, options: { group?: string; events: number }) => {
      const global = globals();
      const client = await clientFrom(global);
      if (node !== undefined) {
        if (options.group !== undefined) throw new UsageError('--group filters the list; with a node id it has nothing to do');
        const envoy = await client.envoy(node, options.events);
        if (envoy === undefined) throw new ExitError(EXIT.notFound, `no Envoy with node id ${JSON.stringify(node)}`);
        if (global.output === 'json' || global.output === 'yaml') await writeStructured(io, global.output, envoy);
        else io.out.write(`${renderEnvoyDetail(envoy, style, Date.now())}\n`);
        return;
      }
      const { envoys, corrupt } = await client.envoys(options.group === undefined ? {} : { group: options.group });
      const sorted = byNodeId(envoys);
      if (global.output === 'json' || global.output === 'yaml') await writeStructured(io, global.output, { envoys: sorted, corrupt });
      else io.out.write(`${sorted.length === 0 ? 'no Envoys' : renderEnvoys(sorted, style, Date.now(), { wide: global.output === 'wide' })}\n`);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof UsageError) {
      io.err.write(`xds-programmed: ${oneLine(error.message)}\n`);
      return EXIT.usage;
    }
    if (error instanceof ExitError) {
      io.err.write(`xds-programmed: ${oneLine(error.message)}\n`);
      return error.exitCode;
    }
    // Loaded already if the error is one of its own.
    const { QueryApiError } = await import('./query-client');
    if (error instanceof QueryApiError) {
      io.err.write(`xds-programmed: ${oneLine(error.message)}\n`);
      // A throttled answer (429) is the service's state, not the caller's mistake.
      return error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 403 && error.status !== 429 ? EXIT.usage : EXIT.unavailable;
    }
    io.err.write(`xds-programmed: ${oneLine(error instanceof Error ? error.message : String(error))}\n`);
    return EXIT.unavailable;
  }
}
