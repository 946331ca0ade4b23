// xds-programmed: the command line of the query API.
//   xds-programmed status [kind/name]     object view (condition, counts, blockers) or fleet view
//   xds-programmed wait kind/name         wait until programmed into every Envoy (or a terminal verdict:
//                                         Rejected/Invalid, unless --no-fail-fast); exit codes in exit-codes.ts
//   xds-programmed envoys                 Envoys with lineage, versions, last seen
// Connection: --url / XDS_PROGRAMMED_URL and --token / XDS_PROGRAMMED_TOKEN (the local runtime's
// bearer token); a Lambda function URL without a token is signed with SigV4 (AWS_IAM auth).
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EXIT } from './exit-codes';
import { currentGeneration } from './kube-generation';
import { formatRef, parseObjectRef } from './object-ref';
import { QueryApiError, QueryClient } from './query-client';
import { renderEnvoys, renderObject, renderProxyStatus, styleFor } from './render';
import { waitForObject } from './wait';

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

interface GlobalOptions {
  url?: string;
  token?: string;
  namespace: string;
  output: 'text' | 'json';
  kubeconfig?: string;
}

class UsageError extends Error {}

function clientFrom(options: GlobalOptions): QueryClient {
  if (options.url === undefined) throw new UsageError('no query API URL: pass --url or set XDS_PROGRAMMED_URL (npm start prints both)');
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

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.ok;
  const style = styleFor(io.out, io.env);
  const program = new Command('xds-programmed')
    .description('Is my change programmed into every Envoy? Reads the xds-programmed query API.')
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out.write(text), writeErr: (text) => io.err.write(text) })
    .addOption(new Option('--url <url>', 'query function URL').env('XDS_PROGRAMMED_URL'))
    .addOption(new Option('--token <token>', 'bearer token of the local runtime (deployed URLs use SigV4 instead)').env('XDS_PROGRAMMED_TOKEN'))
    .addOption(new Option('-n, --namespace <ns>', 'namespace of the object').default('default'))
    .addOption(new Option('-o, --output <format>', 'text or json').choices(['text', 'json']).default('text'))
    .addOption(new Option('--kubeconfig <path>', 'read the object\'s current generation from Kubernetes (wait)').env('KUBECONFIG'));
  // commander reads .env() from process.env; give it ours (tests, embedding).
  const globals = (): GlobalOptions => {
    const opts = program.opts<GlobalOptions>();
    return {
      ...opts,
      url: opts.url ?? io.env['XDS_PROGRAMMED_URL'],
      token: opts.token ?? io.env['XDS_PROGRAMMED_TOKEN'],
      kubeconfig: opts.kubeconfig ?? (io.env['KUBECONFIG'] === '' ? undefined : io.env['KUBECONFIG']),
    };
  };

  program
    .command('status')
    .description('object view (condition, counts, blocking Envoys) or, without an object, the fleet like istioctl proxy-status')
    .argument('[kind/name]', 'e.g. httpproxy/web')
    .option('--generation <n>', 'a specific generation (default: the latest seen)', positiveInteger)
    .action(async (target: string | undefined, options: { generation?: number }) => {
      const global = globals();
      const client = clientFrom(global);
      const now = Date.now();
      if (target === undefined) {
        const { envoys, corrupt } = await client.envoys();
        if (global.output === 'json') io.out.write(`${JSON.stringify({ envoys, corrupt }, null, 2)}\n`);
        else io.out.write(`${envoys.length === 0 ? 'no Envoys have connected to a gateway' : renderProxyStatus(envoys, style)}\n${corrupt > 0 ? `${corrupt} unreadable Envoy records skipped\n` : ''}`);
        return;
      }
      const { ref, kind } = parseRef(target, global.namespace);
      const view = await client.object(ref, options.generation);
      if (view === undefined) {
        io.err.write(`${formatRef(ref)}${options.generation === undefined ? '' : ` generation ${options.generation}`}: not seen by any gateway\n`);
        exitCode = EXIT.notFound;
        return;
      }
      // The observedGeneration rule: what the gateways saw last may be older than the spec in
      // Kubernetes; say so rather than show an older generation's verdict as current.
      let kubernetesGeneration: number | undefined;
      if (options.generation === undefined && global.kubeconfig !== undefined && kind !== undefined) {
        kubernetesGeneration = await currentGeneration(global.kubeconfig, kind, ref.namespace, ref.name).catch(() => undefined);
      }
      const behind = kubernetesGeneration !== undefined && kubernetesGeneration > view.generation;
      if (global.output === 'json') {
        io.out.write(`${JSON.stringify(kubernetesGeneration === undefined ? view : { ...view, kubernetesGeneration }, null, 2)}\n`);
        return;
      }
      io.out.write(`${renderObject(view, style, now)}\n`);
      if (behind) io.out.write(`${style.yellow(`  catching up: Kubernetes is at generation ${kubernetesGeneration}, which no gateway has seen programmed yet (its controller may not have accepted it)`)}\n`);
    });

  program
    .command('wait')
    .description('wait until the object\'s generation is programmed into every Envoy (like kubectl wait, with progress)')
    .argument('<kind/name>', 'e.g. httpproxy/web')
    .option('--timeout <duration>', 'give up after this long (30s, 2m, …)', parseDuration, 30_000)
    .option('--generation <n>', 'wait for this generation (default: the object\'s metadata.generation with --kubeconfig, else the latest seen)', positiveInteger)
    .option('--poll <duration>', 'poll interval', parseDuration, 500)
    .option('--no-fail-fast', 'keep waiting (until the timeout) when the generation is Rejected or Invalid, instead of exiting 7 at once')
    .action(async (target: string, options: { timeout: number; generation?: number; poll: number; failFast: boolean }) => {
      const global = globals();
      const client = clientFrom(global);
      const { ref, kind } = parseRef(target, global.namespace);
      let generation = options.generation;
      if (generation === undefined && global.kubeconfig !== undefined && kind !== undefined) {
        try {
          generation = await currentGeneration(global.kubeconfig, kind, ref.namespace, ref.name);
        } catch (error) {
          io.err.write(`cannot read ${formatRef(ref)} from Kubernetes: ${error instanceof Error ? error.message : String(error)}\n`);
          exitCode = EXIT.unavailable;
          return;
        }
      }
      exitCode = await waitForObject({ client, ref, generation, timeoutMs: options.timeout, pollMs: options.poll, failFast: options.failFast, out: io.out, err: io.err, style: styleFor(io.err, io.env) });
    });

  program
    .command('envoys')
    .description('Envoys with their lineage, versions (acked/current per type) and last seen')
    .option('--group <group>', 'only this node group')
    .action(async (options: { group?: string }) => {
      const global = globals();
      const client = clientFrom(global);
      const { envoys, corrupt } = await client.envoys(options.group === undefined ? {} : { group: options.group });
      if (global.output === 'json') io.out.write(`${JSON.stringify({ envoys, corrupt }, null, 2)}\n`);
      else io.out.write(`${envoys.length === 0 ? 'no Envoys' : renderEnvoys(envoys, style, Date.now())}\n`);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof UsageError) {
      io.err.write(`xds-programmed: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof QueryApiError) {
      io.err.write(`xds-programmed: ${error.message}\n`);
      // A throttled answer (429) is the service's state, not the caller's mistake.
      return error.status !== undefined && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 403 && error.status !== 429 ? EXIT.usage : EXIT.unavailable;
    }
    io.err.write(`xds-programmed: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.unavailable;
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2), { out: process.stdout, err: process.stderr, env: process.env }).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`xds-programmed: ${String(error)}\n`);
      process.exitCode = EXIT.unavailable;
    },
  );
}
