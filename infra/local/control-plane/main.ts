// CLI: run one replica of the reference xDS control plane.
//   tsx infra/local/control-plane/main.ts --port 18000 --replica-id cp-1 --routes-file routes.yaml
//   tsx infra/local/control-plane/main.ts --kubeconfig kubeconfig --endpoints-file endpoints.yaml
// With --kubeconfig, HTTPProxies come from Kubernetes, status is written there and a Lease elects the
// status writer; Endpoints/Secrets come from Kubernetes unless --endpoints-file is given (the local API
// server serves no core/v1 Endpoints). Without it, everything comes from --routes-file (reloaded on SIGHUP).
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import { parseAllDocuments } from 'yaml';
import { startControlPlane } from './control-plane';
import { KubeLeaseElector } from './kube-lease-elector';
import { KubeRouteSource } from './kube-route-source';
import { KubeStatusWriter } from './kube-status-writer';
import { InMemoryRouteSource, type RouteSource } from './route-source';
import { InMemoryStatusWriter, type StatusWriter } from './status';

function integer(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError(`not a non-negative integer: ${value}`);
  return parsed;
}

/**
 * Loads a multi-document YAML file into an in-memory source: `kind: HTTPProxy`, `kind: HTTPRoute`, `kind: Endpoints`,
 * `kind: Secret` (type kubernetes.io/tls, `data` base64 or `stringData`). Bad documents are logged and skipped.
 */
export function loadObjectsFile(path: string, into: InMemoryRouteSource, log: pino.Logger): void {
  const documents = parseAllDocuments(readFileSync(path, 'utf8'));
  documents.forEach((document, index) => {
    const object: unknown = document.toJS();
    if (object === null || typeof object !== 'object') return;
    const kind = (object as { kind?: unknown }).kind;
    try {
      if (kind === 'HTTPProxy') into.applyProxy(object);
      else if (kind === 'HTTPRoute') into.applyHTTPRoute(object);
      else if (kind === 'Endpoints') into.applyEndpoints(object);
      else if (kind === 'Secret') {
        const secret = object as { metadata?: unknown; data?: Record<string, string>; stringData?: Record<string, string> };
        const field = (key: string): string | undefined =>
          secret.stringData?.[key] ?? (secret.data?.[key] ? Buffer.from(secret.data[key], 'base64').toString('utf8') : undefined);
        into.applySecret({ metadata: secret.metadata, certificateChain: field('tls.crt'), privateKey: field('tls.key') });
      } else log.warn({ path, document: index, kind }, 'unsupported kind; skipped');
    } catch (error) {
      log.error({ err: error, path, document: index }, 'invalid object; skipped');
    }
  });
}

async function main(): Promise<void> {
  const program = new Command()
    .name('control-plane')
    .description('Reference xDS control plane (HTTPProxy subset -> LDS/RDS/CDS/EDS/SDS)')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--port <port>', 'listen port (0: random)', integer, 18000)
    .option('--replica-id <id>', 'replica identity', `cp-${process.pid}`)
    .option('--version-scheme <scheme>', 'contour | counter', 'contour')
    .option('--provenance', 'stamp xds-programmed.dev/sources metadata', false)
    .option('--listener-style <style>', 'api (gRPC clients) | socket (Envoy)', 'api')
    .option('--holdoff-ms <ms>', 'rebuild holdoff', integer, 100)
    .option('--holdoff-max-ms <ms>', 'maximum holdoff', integer, 500)
    .option('--extra-rebuild-delay-ms <ms>', 'simulated rebuild cost', integer, 0)
    .option('--routes-file <path>', 'YAML with HTTPProxy/HTTPRoute/Endpoints/Secret documents (in-memory mode)')
    .option('--kubeconfig <path>', 'read HTTPProxies (and HTTPRoutes, if their CRD is served) from Kubernetes and write status there')
    .option('--endpoints-file <path>', 'with --kubeconfig: Endpoints/Secrets from this YAML instead of Kubernetes')
    .option('--lease-namespace <ns>', 'Lease namespace', 'default')
    .option('--lease-name <name>', 'Lease name', 'xds-control-plane')
    .parse();
  const options = program.opts<{
    host: string;
    port: number;
    replicaId: string;
    versionScheme: string;
    provenance: boolean;
    listenerStyle: string;
    holdoffMs: number;
    holdoffMaxMs: number;
    extraRebuildDelayMs: number;
    routesFile?: string;
    kubeconfig?: string;
    endpointsFile?: string;
    leaseNamespace: string;
    leaseName: string;
  }>();
  if (options.versionScheme !== 'contour' && options.versionScheme !== 'counter') {
    program.error(`--version-scheme must be contour or counter, not ${options.versionScheme}`);
  }
  if (options.listenerStyle !== 'api' && options.listenerStyle !== 'socket') {
    program.error(`--listener-style must be api or socket, not ${options.listenerStyle}`);
  }
  const log = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { component: 'control-plane' } });

  let source: RouteSource;
  let elector: KubeLeaseElector | undefined;
  let statusWriter: StatusWriter;
  const fileSource = new InMemoryRouteSource();
  if (options.kubeconfig) {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(options.kubeconfig);
    if (options.endpointsFile) loadObjectsFile(options.endpointsFile, fileSource, log);
    source = new KubeRouteSource({ kubeConfig, logger: log, endpointsAndSecrets: options.endpointsFile ? fileSource : 'kubernetes' });
    statusWriter = new KubeStatusWriter({ kubeConfig, logger: log });
    elector = new KubeLeaseElector({ kubeConfig, namespace: options.leaseNamespace, leaseName: options.leaseName, identity: options.replicaId, logger: log });
  } else {
    if (options.routesFile) loadObjectsFile(options.routesFile, fileSource, log);
    source = fileSource;
    statusWriter = new InMemoryStatusWriter();
  }
  const controlPlane = await startControlPlane({
    port: options.port,
    host: options.host,
    replicaId: options.replicaId,
    source,
    statusWriter,
    ...(elector ? { leaderElector: elector } : {}),
    versionScheme: options.versionScheme === 'counter' ? 'counter' : 'contour',
    provenance: options.provenance,
    listenerStyle: options.listenerStyle === 'socket' ? 'socket' : 'api',
    holdoffMs: options.holdoffMs,
    holdoffMaxMs: options.holdoffMaxMs,
    extraRebuildDelayMs: options.extraRebuildDelayMs,
    logger: log,
  });
  elector?.advertise(controlPlane.address);
  await elector?.start();
  // Machine-readable line for scripts that start this process with --port 0.
  console.log(JSON.stringify({ listening: controlPlane.address, replicaId: controlPlane.replicaId }));

  const reloadFile = options.kubeconfig ? options.endpointsFile : options.routesFile;
  if (reloadFile) process.on('SIGHUP', () => loadObjectsFile(reloadFile, fileSource, log));
  const shutdown = (): void => {
    void (async () => {
      await elector?.stop();
      await controlPlane.close();
      await source.close();
      process.exit(0);
    })();
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
