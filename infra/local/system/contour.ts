// Unmodified Contour as the local system's control plane (`npm start -- --control-plane contour`,
// test/integration/contour): `contour serve` replicas, as installed by `npm run contour:install`
// (scripts/contour-install.mjs: the binary in .cache/peers/bin, its CRDs in the Go module cache,
// both recorded in .cache/peers/contour.json), against the local API server, electing a status
// writer on the Lease `projectcontour/leader-elect`.
//
// Contour's Lease names its holder `<hostname>_<uuid>` (controller-runtime) and carries no address,
// so the gateway maps the hostname, which in a cluster is the pod name, to an xDS address
// (`--leader-targets`). Replicas on one machine would all share its hostname; each runs in a UTS
// namespace of its own (`unshare --user --map-root-user --uts`, no privileges needed) with the
// hostname `contour-<n>`, as a pod gets its name. docs/CONTOUR.md has what differs from the
// reference control plane.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { parseAllDocuments } from 'yaml';
import type { Component } from './component';
import type { LeaseTimings } from './control-plane';

export const CONTOUR_NAMESPACE = 'projectcontour';
export const CONTOUR_LEASE_NAME = 'leader-elect';
/** `namespace/name` of the Lease Contour's replicas elect their status writer on (its defaults). */
export const CONTOUR_LEASE = `${CONTOUR_NAMESPACE}/${CONTOUR_LEASE_NAME}`;
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${CONTOUR_NAMESPACE}/leases/${CONTOUR_LEASE_NAME}`;

export interface ContourInstall {
  contourVersion: string;
  binary: string;
  contourCrds: string;
  gatewayApiVersion: string;
  gatewayApiCrds: { standard: string[]; experimental: string[] };
}

export const CONTOUR_INSTALL_HINT = 'run `npm run contour:install` (it installs Contour with `go install` into .cache/peers and records where its CRDs are)';

const REPO_ROOT = resolve(__dirname, '..', '..', '..');

/** Where scripts/contour-install.mjs writes its manifest (XDS_PEERS_DIR, as for the other peers). */
export function contourManifestPath(): string {
  return join(process.env['XDS_PEERS_DIR'] ?? join(REPO_ROOT, '.cache', 'peers'), 'contour.json');
}

/** The installed Contour, or an error that says how to install it. */
export function contourInstall(): ContourInstall {
  const manifest = contourManifestPath();
  if (!existsSync(manifest)) throw new Error(`Contour is not installed (${manifest} is missing): ${CONTOUR_INSTALL_HINT}`);
  const install = JSON.parse(readFileSync(manifest, 'utf8')) as ContourInstall;
  for (const path of [install.binary, install.contourCrds, ...install.gatewayApiCrds.experimental]) {
    if (!existsSync(path)) throw new Error(`${path} (from ${manifest}) is missing: ${CONTOUR_INSTALL_HINT}`);
  }
  return install;
}

/** The objects of a multi-document YAML file (CRD bundles), empty documents left out. */
export function yamlObjects(path: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((document) => document.toJS() as unknown)
    .filter((value): value is Record<string, unknown> => typeof value === 'object' && value !== null);
}

/** A port free right now on 127.0.0.1 (the OS picks it; Contour binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ContourProcess {
  /** The hostname Contour runs under (its Lease holder is `<hostname>_<uuid>`), if one was given. */
  hostname: string | undefined;
  pid: number | undefined;
  xdsAddress: string;
  /** Everything Contour logged so far (logrus text lines on stderr; the last 200,000 characters). */
  log(): string;
  exited: Promise<number | null>;
  /** SIGTERM (Contour releases its Lease on the way out), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
  /** SIGKILL: a crashed pod, nothing released (the Lease runs out). */
  kill(): Promise<number | null>;
}

export interface StartContourOptions {
  binary: string;
  kubeconfig: string;
  extraArgs?: readonly string[];
  /** Run in a UTS namespace of its own under this hostname (the pod name in a cluster). */
  hostname?: string;
  /** xDS port (default: a free one). */
  xdsPort?: number;
  /** Also append Contour's output to this file. */
  logFile?: string;
}

let namespaceSupport: string | undefined | null = null;
let parentDeathSignal: boolean | undefined;

/**
 * Whether util-linux `setpriv --pdeathsig` is there: a replica then dies with this process even on
 * a crash, so it can run in a process group of its own and be stopped in order (fleet → … → control
 * plane) instead of taking the terminal's Ctrl-C together with everything else.
 */
function canSetParentDeathSignal(): boolean {
  parentDeathSignal ??= spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', '/bin/true'], { timeout: 10_000 }).status === 0;
  return parentDeathSignal;
}

/** Undefined when `unshare` can give a process its own hostname here, else why not (checked once). */
function hostnameNamespaceProblem(): string | undefined {
  if (namespaceSupport !== null) return namespaceSupport;
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--uts', '--', '/bin/sh', '-c', 'hostname contour-probe && uname -n'], { encoding: 'utf8', timeout: 10_000 });
  namespaceSupport =
    probe.error !== undefined
      ? `unshare(1) could not run (${probe.error.message}); it comes with util-linux`
      : probe.status !== 0 || probe.stdout.trim() !== 'contour-probe'
        ? `unshare --user --map-root-user --uts failed (exit ${probe.status ?? 'none'}: ${probe.stderr.trim().slice(0, 300)}); unprivileged user namespaces must be allowed`
        : undefined;
  return namespaceSupport;
}

/** `contour serve` as a child process against a kubeconfig, plaintext xDS on a loopback port. */
export async function startContourProcess(opts: StartContourOptions): Promise<ContourProcess> {
  // Contour reads port 0 as "unset" (its defaults 8000 and 6060), so every port is picked here; a
  // port taken before Contour binds it is startServingContourProcess's to handle.
  const [xdsPort, metricsPort, healthPort, debugPort] = [opts.xdsPort || (await freePort()), await freePort(), await freePort(), await freePort()];
  const args = [
    'serve',
    '--kubeconfig', opts.kubeconfig,
    '--xds-address', '127.0.0.1',
    '--xds-port', String(xdsPort),
    '--insecure',
    '--http-address', '127.0.0.1',
    '--http-port', String(metricsPort),
    '--health-address', '127.0.0.1',
    '--health-port', String(healthPort),
    '--debug-http-address', '127.0.0.1',
    '--debug-http-port', String(debugPort),
    ...(opts.extraArgs ?? []),
  ];
  let command = opts.binary;
  let argv = args;
  if (opts.hostname !== undefined) {
    const problem = hostnameNamespaceProblem();
    if (problem !== undefined) {
      throw new Error(`cannot give Contour replica ${opts.hostname} a hostname of its own, which the gateway needs to tell the Lease holders apart (they are <hostname>_<uuid>): ${problem}`);
    }
    // unshare, sh and setpriv exec in place, so the spawned pid is Contour's own (a SIGKILL reaches it).
    command = 'unshare';
    const exec = canSetParentDeathSignal() ? 'exec setpriv --pdeathsig KILL -- "$@"' : 'exec "$@"';
    argv = ['--user', '--map-root-user', '--uts', '--', '/bin/sh', '-c', `hostname "$1" && shift && ${exec}`, 'sh', opts.hostname, opts.binary, ...args];
  }
  const ownGroup = opts.hostname !== undefined && canSetParentDeathSignal();
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: ownGroup });
  let output = '';
  const append = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    output = (output + text).slice(-200_000);
    if (opts.logFile !== undefined) {
      try {
        appendFileSync(opts.logFile, text);
      } catch {
        // A log file that cannot be written must not stop Contour.
      }
    }
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<number | null>((resolveExit) => {
    child.on('close', (code) => resolveExit(code));
    child.on('error', (error) => {
      output += `\nspawn failed: ${error.message}`;
      resolveExit(null);
    });
  });
  let done = false;
  void exited.then(() => (done = true));
  return {
    hostname: opts.hostname,
    pid: child.pid,
    xdsAddress: `127.0.0.1:${xdsPort}`,
    log: () => output,
    exited,
    stop: async (graceMs = 10_000) => {
      if (done) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    kill: async () => {
      if (done) return exited;
      child.kill('SIGKILL');
      return exited;
    },
  };
}

/** Contour's line once its xDS listener is bound (cmd/contour/serve.go, after the first DAG). */
const XDS_SERVING_LINE = 'started xDS server';
const BIND_IN_USE = 'address already in use';
const BIND_ATTEMPTS = 5;

export interface ServingContourOptions extends StartContourOptions {
  /**
   * The xDS port after a bind failure. `free`: a new free port (nobody has been given the address
   * yet); `fixed`: the same port after a pause (the gateway's leader targets name it).
   */
  portChoice: 'free' | 'fixed';
  /** Called with each process spawned, before it serves (a restart in place must be visible at once). */
  onSpawn?: (process: ContourProcess) => void;
  logger?: Logger;
  timeoutMs?: number;
}

/**
 * `contour serve`, resolved once it serves xDS. Its ports are picked free (`freePort`) and bound by
 * Contour later (the xDS port seconds later, after its first DAG), and a parallel test or an outgoing
 * connection's ephemeral port can take one meanwhile; Contour then exits with `bind: address already
 * in use`. That is retried (BIND_ATTEMPTS times) on new metrics, health and debug ports; any other
 * exit, or no xDS within the timeout, is an error carrying Contour's log. Serving is Contour's own log
 * line, not a connect: a connect would also succeed against whoever took the port.
 */
export async function startServingContourProcess(opts: ServingContourOptions): Promise<ContourProcess> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let xdsPort = opts.xdsPort || (await freePort());
  for (let attempt = 1; ; attempt++) {
    const process = await startContourProcess({ ...opts, xdsPort });
    opts.onSpawn?.(process);
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void process.exited.then(() => (exited = true));
    while (!exited && !process.log().includes(XDS_SERVING_LINE) && Date.now() < deadline) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    const log = process.log();
    if (!exited && log.includes(XDS_SERVING_LINE)) return process;
    if (!exited) {
      await process.stop(5000);
      throw new Error(`Contour ${opts.hostname ?? ''} did not serve xDS on ${process.xdsAddress} within ${timeoutMs / 1000} s:\n${log.slice(-3000)}`);
    }
    if (!log.includes(BIND_IN_USE) || attempt >= BIND_ATTEMPTS) {
      throw new Error(`Contour ${opts.hostname ?? ''} exited before serving xDS on ${process.xdsAddress} (attempt ${attempt}):\n${log.slice(-3000)}`);
    }
    const previous = xdsPort;
    if (opts.portChoice === 'free') xdsPort = await freePort();
    else await new Promise((resolveWait) => setTimeout(resolveWait, 500 * attempt));
    opts.logger?.warn({ component: 'contour', replica: opts.hostname, port: previous, retryPort: xdsPort, attempt }, 'contour could not bind a port (address already in use); starting it again');
  }
}

export interface ContourReplica {
  /** The replica's hostname: what Contour's Lease holder starts with, and the key of `leaderTargets`. */
  name: string;
  xdsAddress: string;
  process: ContourProcess;
}

export interface ContourComponent extends Component {
  kind: 'contour';
  install: ContourInstall;
  replicas: ContourReplica[];
  /** xDS addresses, replica order. */
  addresses: string[];
  /** Replica name → xDS address: the gateway's `--leader-targets`. */
  leaderTargets: Record<string, string>;
  /** `spec.holderIdentity` of Contour's Lease right now ('' when released or absent). */
  leaseHolder(): Promise<string>;
  /** The replica whose name the Lease holder carries, if any. */
  leader(): Promise<ContourReplica | undefined>;
  /**
   * Stops replica `index` (SIGTERM, if it still runs) and starts a new `contour serve` in its place:
   * same hostname and xDS port, so `leaderTargets` stays right, but a new process (new Lease holder
   * UUID, a fresh snapshot version space). Resolves once it serves xDS; `replicas[index]` is then the
   * new replica.
   */
  restartReplica(index: number): Promise<ContourReplica>;
}

export interface ContourComponentOptions {
  replicas: number;
  /** Have Contour process this Gateway too (`gateway.gatewayRef` in a config file written to `configDir`). */
  gatewayApi?: { configDir: string };
  kubeUrl: string;
  kubeconfigPath: string;
  /** xDS port of replica `i` (0: a free one). */
  port: (replica: number) => number;
  lease: LeaseTimings;
  /** Each replica's output goes to `<logDir>/contour-<n>.log` as well. */
  logDir?: string;
  install?: ContourInstall;
  logger: Logger;
}

/** The Contour replica's hostname: a pod name, as in a Deployment. */
export function contourReplicaName(replica: number): string {
  return `contour-${replica + 1}`;
}

async function post(kubeUrl: string, path: string, body: object): Promise<void> {
  const response = await fetch(`${kubeUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  // 409: already there (a state directory reused); anything else is a real failure.
  if (response.status !== 201 && response.status !== 409) throw new Error(`POST ${path}: HTTP ${response.status} ${await response.text()}`);
}

/** Contour's namespace (its Lease and Events live there) and the Envoy Service it reads addresses from. */
export async function applyContourNamespace(kubeUrl: string): Promise<void> {
  await post(kubeUrl, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONTOUR_NAMESPACE } });
  // Contour copies this Service's load-balancer address into Ingress and HTTPProxy status
  // (--envoy-service-namespace/-name); locally nothing allocates one, so it stays empty.
  await post(kubeUrl, `/api/v1/namespaces/${CONTOUR_NAMESPACE}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'envoy', namespace: CONTOUR_NAMESPACE },
    spec: { type: 'LoadBalancer', selector: { app: 'envoy' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }, { name: 'https', port: 443, targetPort: 8443 }] },
  });
}

/** Contour's controller name on Gateway API objects it processes (GatewayClass, route status.parents). */
export const CONTOUR_GATEWAY_CONTROLLER = 'projectcontour.io/gateway-controller';
export const CONTOUR_GATEWAY_NAME = 'contour';

/** The GatewayClass and the Gateway Contour processes: one HTTP listener on 80, routes from every namespace. */
export async function applyContourGateway(kubeUrl: string): Promise<void> {
  await post(kubeUrl, '/apis/gateway.networking.k8s.io/v1/gatewayclasses', {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'contour' },
    spec: { controllerName: CONTOUR_GATEWAY_CONTROLLER },
  });
  await post(kubeUrl, `/apis/gateway.networking.k8s.io/v1/namespaces/${CONTOUR_NAMESPACE}/gateways`, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: CONTOUR_GATEWAY_NAME, namespace: CONTOUR_NAMESPACE },
    spec: { gatewayClassName: 'contour', listeners: [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } }] },
  });
}

export async function readLeaseHolder(kubeUrl: string): Promise<string> {
  const response = await fetch(`${kubeUrl}${LEASE_PATH}`);
  if (response.status === 404) return '';
  if (!response.ok) throw new Error(`GET ${LEASE_PATH}: HTTP ${response.status}`);
  const lease = (await response.json()) as { spec?: { holderIdentity?: string } };
  return lease.spec?.holderIdentity ?? '';
}

/**
 * Contour's replicas, each started as a pod would be, ready once each serves xDS (Contour opens its
 * xDS port only after its first DAG, i.e. with its informers synced) and one holds the Lease. The
 * Contour CRDs must already be installed (startKubeComponent's `crds`).
 */
export async function startContourComponent(opts: ContourComponentOptions): Promise<ContourComponent> {
  const install = opts.install ?? contourInstall();
  await applyContourNamespace(opts.kubeUrl);
  const replicas: ContourReplica[] = [];
  const close = async (): Promise<void> => {
    // Newest first, SIGTERM: each releases the Lease on the way out, as in a rollout.
    for (const replica of [...replicas].reverse()) await replica.process.stop(5000);
  };
  const replicaArgs = [
    '--leader-election-lease-duration', `${opts.lease.leaseDurationSeconds}s`,
    '--leader-election-renew-deadline', `${opts.lease.renewDeadlineMs}ms`,
    '--leader-election-retry-period', `${opts.lease.retryPeriodMs}ms`,
  ];
  if (opts.gatewayApi !== undefined) {
    await applyContourGateway(opts.kubeUrl);
    const configPath = join(opts.gatewayApi.configDir, 'contour-config.yaml');
    writeFileSync(configPath, `gateway:\n  gatewayRef:\n    namespace: ${CONTOUR_NAMESPACE}\n    name: ${CONTOUR_GATEWAY_NAME}\n`);
    replicaArgs.push('--config-path', configPath);
  }
  const replicaOf = (holder: string): ContourReplica | undefined => replicas.find((replica) => holder.startsWith(`${replica.name}_`));
  /** Starts replica `index` in its slot and resolves once it serves xDS (see startServingContourProcess). */
  const startReplica = async (index: number, xdsPort: number, portChoice: 'free' | 'fixed'): Promise<ContourReplica> => {
    const name = contourReplicaName(index);
    const process = await startServingContourProcess({
      binary: install.binary,
      kubeconfig: opts.kubeconfigPath,
      extraArgs: replicaArgs,
      hostname: name,
      xdsPort,
      portChoice,
      logger: opts.logger,
      // The slot holds the newest process at once, so close() stops it even while it starts.
      onSpawn: (process) => (replicas[index] = { name, xdsAddress: process.xdsAddress, process }),
      ...(opts.logDir === undefined ? {} : { logFile: join(opts.logDir, `${name}.log`) }),
    });
    opts.logger.info({ component: 'contour', replica: name, pid: process.pid, xds: process.xdsAddress }, 'contour serves xDS');
    // onSpawn already put this process in its slot.
    return replicas[index] as ContourReplica;
  };
  try {
    // Settled, not all: close() below must not run while another replica is still being started.
    const started = await Promise.allSettled(Array.from({ length: opts.replicas }, (_, index) => (opts.port(index) ? startReplica(index, opts.port(index), 'fixed') : startReplica(index, 0, 'free'))));
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const deadline = Date.now() + 60_000;
    let holder = '';
    while (replicaOf(holder) === undefined) {
      holder = await readLeaseHolder(opts.kubeUrl).catch(() => '');
      const dead = replicas.find((replica) => replica.process.log().includes('spawn failed') || replica.process.log().includes('level=fatal'));
      if (dead !== undefined || Date.now() > deadline) {
        const why = dead !== undefined ? `${dead.name} failed` : `has no Lease holder after 60 s (holder '${holder}')`;
        throw new Error(`Contour ${why}:\n${(dead ?? replicas[0])?.process.log().slice(-3000) ?? ''}`);
      }
      if (replicaOf(holder) === undefined) await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    opts.logger.info({ component: 'contour', holder }, 'contour replicas serve xDS; a leader holds the Lease');
  } catch (error) {
    await close();
    throw error;
  }
  return {
    name: 'contour',
    kind: 'contour',
    install,
    replicas,
    addresses: replicas.map((replica) => replica.xdsAddress),
    leaderTargets: Object.fromEntries(replicas.map((replica) => [replica.name, replica.xdsAddress])),
    leaseHolder: () => readLeaseHolder(opts.kubeUrl),
    leader: async () => replicaOf(await readLeaseHolder(opts.kubeUrl)),
    restartReplica: async (index) => {
      const old = replicas[index];
      if (old === undefined) throw new Error(`no Contour replica ${index} (there are ${replicas.length})`);
      await old.process.stop(5000);
      // The same port: the gateway's leader targets name it (the system's address book is fixed at start).
      const port = Number(old.xdsAddress.slice(old.xdsAddress.lastIndexOf(':') + 1));
      return startReplica(index, port, 'fixed');
    },
    close,
  };
}
