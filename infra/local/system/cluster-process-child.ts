// The child-process side of startClusterProcess (./cluster-process.ts): the local Kubernetes API server
// and the reference control plane on an event loop of their own, as a cluster's API server and its
// ingress controller are other processes than the functions and DynamoDB in production. Started with
// `node --import tsx` through child_process.fork; the protocol is in ./cluster-process-protocol.ts.
// Logs are pino JSON lines on stderr, which the parent forwards to its own logger.
import pino, { type Logger } from 'pino';
import { runAsForkedChild } from '../child-process';
import { childMessageSchema, parentMessageSchema, type ClusterChildMessage, type ClusterChildSpec } from './cluster-process-protocol';
import { startControlPlaneComponent, type ControlPlaneComponent } from './control-plane';
import { startKubeComponent, type KubeComponent } from './kube';

let kube: KubeComponent | undefined;
let controlPlane: ControlPlaneComponent | undefined;
let logger: Logger = pino({ level: 'warn' }, pino.destination(2));
let exiting = false;

function send(message: ClusterChildMessage): void {
  const checked = childMessageSchema.parse(message);
  if (process.connected) process.send?.(checked);
}

function closeAndExit(code: number): void {
  if (exiting) return;
  exiting = true;
  void (async () => {
    try {
      await controlPlane?.close();
      await kube?.close();
    } catch (error) {
      logger.error({ err: error }, 'cluster child: closing failed');
    }
    process.exit(code);
  })();
}

async function start(spec: ClusterChildSpec): Promise<void> {
  if (kube !== undefined || controlPlane !== undefined) throw new Error('started twice');
  logger = pino({ level: spec.logLevel }, pino.destination(2));
  kube = await startKubeComponent({ port: spec.kubePort, stateDir: spec.stateDir, logger });
  controlPlane = await startControlPlaneComponent({
    replicas: spec.replicas,
    port: (replica) => spec.controlPlanePorts[replica] ?? 0,
    kubeConfig: kube.kubeConfig,
    endpoints: spec.endpoints,
    logger,
    lease: spec.lease,
  });
  send({
    type: 'ready',
    kubeUrl: kube.url,
    kubeconfigPath: kube.kubeconfigPath,
    addresses: [...controlPlane.addresses],
    replicaIds: controlPlane.replicas.map((replica) => replica.replicaId),
  });
}

function onMessage(raw: unknown): void {
  const parsed = parentMessageSchema.safeParse(raw);
  if (!parsed.success) {
    logger.error({ reason: parsed.error.message.slice(0, 300) }, 'cluster child: malformed message from the parent; ignored');
    return;
  }
  const message = parsed.data;
  switch (message.type) {
    case 'start':
      start(message.spec).catch((error: unknown) => {
        logger.error({ err: error }, 'cluster child: start failed');
        send({ type: 'failed', error: error instanceof Error ? error.message : String(error) });
        closeAndExit(1);
      });
      return;
    case 'close':
      closeAndExit(0);
      return;
  }
}

runAsForkedChild('cluster child', { onMessage, closeAndExit });
process.on('SIGTERM', () => closeAndExit(0));
