// The local Kubernetes API server and the reference control plane in a child process of their own
// (localSystemOptions controlPlane 'reference-child'; the child is ./cluster-process-child.ts). Why:
// in the default layout they share the system process's one event loop with the functions and the
// DynamoDB front, so "change → last ACK" measures a share of that loop as much as the control plane's
// delivery, and the functions' Kubernetes writes wait behind their own DynamoDB work; in production
// the API server and the ingress controller are other processes (docs/bench/README.md, "Measure
// fairly"). What tests reach into in-process (the replicas, their electors and rebuild logs) is not
// available in this mode (nor the Endpoints churn of the soak); the e2e bench, which needs none of it,
// runs it.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeExit, waitUntilReady, watchStderr } from '../child-process';
import { childMessageSchema, type ClusterChildSpec, type ClusterParentMessage } from './cluster-process-protocol';
import type { Component } from './component';
import type { KubeEndpointsComponent } from './kube';

const CHILD_ENTRY = path.join(__dirname, 'cluster-process-child.ts');
/** Where `--import tsx` resolves from: the repository root, whatever the parent's cwd. */
const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
/** Extra Node flags for the child, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const CHILD_EXEC_ARGV_ENV = 'LOCAL_CLUSTER_EXEC_ARGV';
const CHILD_CLOSE_TIMEOUT_MS = 10_000;
const START_TIMEOUT_MS = 60_000;

/** The reference control plane as seen from the parent: where its replicas serve xDS. */
export interface ChildControlPlaneComponent extends Component {
  process: 'child';
  pid: number | undefined;
  /** xDS addresses, replica order. */
  addresses: string[];
  /** The Lease identity of each replica, replica order. */
  replicaIds: string[];
}

export interface ClusterProcess extends Component {
  kube: KubeEndpointsComponent;
  controlPlane: ChildControlPlaneComponent;
}

export async function startClusterProcess(spec: ClusterChildSpec, logger: Logger): Promise<ClusterProcess> {
  const child: ChildProcess = fork(CHILD_ENTRY, [], {
    cwd: REPO_ROOT,
    // Not the parent's flags (jest, profiling): the child needs only the TypeScript loader.
    execArgv: ['--import', 'tsx', ...(process.env[CHILD_EXEC_ARGV_ENV] ?? '').split(' ').filter((flag) => flag !== '')],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const stderrTail = watchStderr(child, { logger, child: 'cluster' });
  const send = (message: ClusterParentMessage): void => {
    if (child.connected) child.send(message);
  };
  send({ type: 'start', spec });
  let closeRequested = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await waitUntilReady<{ kubeUrl: string; kubeconfigPath: string; addresses: string[]; replicaIds: string[] }>(child, {
    what: 'cluster child process',
    toDo: 'serve the API server and the control plane',
    before: 'serving',
    timeoutMs: START_TIMEOUT_MS,
    stderrTail,
    onGiveUp: () => {
      closeRequested = true;
    },
    listen: (resolve, fail) => {
      const onMessage = (raw: unknown): void => {
        const parsed = childMessageSchema.safeParse(raw);
        if (!parsed.success) return fail(`sent a malformed message: ${parsed.error.message.slice(0, 200)}`);
        if (parsed.data.type === 'ready') resolve(parsed.data);
        else if (parsed.data.type === 'failed') fail(`failed to start: ${parsed.data.error}`);
      };
      child.on('message', onMessage);
      return () => child.off('message', onMessage);
    },
  });
  child.once('exit', (code, signal) => {
    if (!closeRequested) logger.error({ child: 'cluster', exit: describeExit(code, signal), stderr: stderrTail() }, 'cluster child process exited unexpectedly: the API server and the control plane are gone');
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      closeRequested = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      send({ type: 'close' });
      const killer = setTimeout(() => child.kill('SIGKILL'), CHILD_CLOSE_TIMEOUT_MS);
      await exited;
      clearTimeout(killer);
    })();
    return closing;
  };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(ready.kubeconfigPath);
  logger.info({ pid: child.pid, kubeUrl: ready.kubeUrl, controlPlanes: ready.addresses }, 'cluster child process started');
  return {
    name: 'cluster',
    close,
    // Closed with the cluster: the system closes the cluster component itself.
    kube: { name: 'kubernetes', url: ready.kubeUrl, kubeconfigPath: ready.kubeconfigPath, kubeConfig, close },
    controlPlane: {
      name: 'control-plane',
      process: 'child',
      pid: child.pid,
      addresses: ready.addresses,
      replicaIds: ready.replicaIds,
      close,
    },
  };
}
