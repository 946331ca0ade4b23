// CLI: `npx tsx infra/local/kube/main.ts --port 0 --state <file> --kubeconfig-dir <dir> [--ingress-controller-kinds]`
// Prints one JSON line with the URL and the kubeconfig path, then serves until SIGINT/SIGTERM.
import { Command } from 'commander';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startKubeApiServer } from './server';

async function main(): Promise<void> {
  const program = new Command()
    .name('local-kube')
    .description('Local Kubernetes API server (Namespaces, Leases, CRDs and custom resources)')
    .option('--port <port>', 'port to listen on (0: random)', '0')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--state <file>', 'state file: objects survive restarts')
    .option('--kubeconfig-dir <dir>', 'where to write the kubeconfig', join(tmpdir(), 'xds-programmed-kube'))
    .option('--ingress-controller-kinds', 'also serve Services, Secrets, ConfigMaps, Events, EndpointSlices and Ingresses (for an unmodified Contour)')
    .parse();
  const opts = program.opts<{ port: string; host: string; state?: string; kubeconfigDir: string; ingressControllerKinds?: boolean }>();
  const port = Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535 (got ${opts.port})`);
  // Logs go to stderr so stdout carries only the JSON line with the URL and kubeconfig.
  const logger = pino({ name: 'local-kube', level: process.env['LOG_LEVEL'] ?? 'info' }, pino.destination(2));
  const server = await startKubeApiServer({
    port,
    host: opts.host,
    logger,
    ...(opts.state ? { stateFile: opts.state } : {}),
    ...(opts.ingressControllerKinds ? { ingressControllerKinds: true } : {}),
  });
  const kubeconfig = server.kubeconfigPath(opts.kubeconfigDir);
  console.log(JSON.stringify({ url: server.url, kubeconfig }));
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
