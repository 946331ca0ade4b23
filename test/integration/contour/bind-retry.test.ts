// Contour's xDS port is picked free and bound by Contour seconds later (after its first DAG); when
// something else holds it by then, Contour exits with `bind: address already in use`.
// startServingContourProcess must start it again: on a new free port when nobody has been given the
// address yet, on the same port (once it is free again) when the gateway's leader targets name it.
// The port is taken here on purpose, by a listener of this test.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import { CONTOUR_NAMESPACE, startServingContourProcess, type ContourProcess } from '../../../infra/local/system/contour';
import { captureLog } from '../kube/log-capture';
import { contourInstall, yamlObjects, type ContourInstall } from './contour-process';

jest.setTimeout(180_000);

function listen(port = 0): Promise<Server> {
  return new Promise((resolveListen, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolveListen(server));
  });
}
const portOf = (server: Server): number => {
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return address.port;
};
const portOfAddress = (address: string): number => Number(address.slice(address.lastIndexOf(':') + 1));

describe("Contour whose xDS port is taken before it binds it", () => {
  let install: ContourInstall;
  const log = captureLog('info');
  let kube: KubeApiServer | undefined;
  let dir: string | undefined;
  const processes: ContourProcess[] = [];
  const blockers: Server[] = [];

  beforeAll(async () => {
    install = contourInstall();
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', ingressControllerKinds: true, logger: pino({ level: 'silent' }) });
    dir = mkdtempSync(join(tmpdir(), 'contour-bind-'));
    const crds = [...yamlObjects(install.contourCrds), ...install.gatewayApiCrds.experimental.flatMap(yamlObjects)];
    for (const crd of crds) {
      const response = await fetch(`${kube.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(crd) });
      if (response.status !== 201) throw new Error(`CRD: HTTP ${response.status} ${await response.text()}`);
    }
    await fetch(`${kube.url}/api/v1/namespaces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONTOUR_NAMESPACE } }) });
  });
  afterAll(async () => {
    for (const process of processes) await process.stop(5000);
    for (const blocker of blockers) blocker.close();
    await kube?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const kubeconfig = (): string => {
    if (!kube || !dir) throw new Error('the local API server did not start');
    return kube.kubeconfigPath(dir);
  };
  /** A replica without leader election whose xDS port is `taken`, recording each process spawned. */
  const startOn = (taken: number, portChoice: 'free' | 'fixed', onSpawn: (process: ContourProcess) => void, logger?: typeof log.logger): Promise<ContourProcess> =>
    startServingContourProcess({ binary: install.binary, kubeconfig: kubeconfig(), extraArgs: ['--disable-leader-election'], xdsPort: taken, portChoice, onSpawn, ...(logger === undefined ? {} : { logger }) });

  it('a free port choice moves to another free port and serves there', async () => {
    const blocker = await listen();
    blockers.push(blocker);
    const taken = portOf(blocker);
    const spawned: ContourProcess[] = [];
    const contour = await startOn(taken, 'free', (process) => spawned.push(process), log.logger);
    processes.push(contour);
    // At least one retry; more when one of the other ports Contour binds (metrics, health, debug: new free
    // ports on every attempt) is taken meanwhile by a parallel test, which the retry exists for too.
    expect(spawned.length).toBeGreaterThanOrEqual(2);
    expect(spawned[0]?.log()).toContain('address already in use');
    expect(portOfAddress(contour.xdsAddress)).not.toBe(taken);
    expect(contour.log()).toContain('started xDS server');
    expect(log.lines.some((line) => line['msg'] === 'contour could not bind a port (address already in use); starting it again' && line['port'] === taken)).toBe(true);
  });

  it('a fixed port choice waits for the same port and serves on it', async () => {
    const blocker = await listen();
    const taken = portOf(blocker);
    const spawned: ContourProcess[] = [];
    // The port comes free while the second attempt waits: the address the gateway knows still holds.
    const contour = await startOn(taken, 'fixed', (process) => {
      spawned.push(process);
      if (spawned.length === 1) void process.exited.then(() => blocker.close());
    });
    processes.push(contour);
    // At least one retry (more when another of its ports is taken meanwhile, as above), every one on the
    // same xDS port.
    expect(spawned.length).toBeGreaterThanOrEqual(2);
    expect(spawned.map((process) => portOfAddress(process.xdsAddress))).toEqual(spawned.map(() => taken));
    expect(portOfAddress(contour.xdsAddress)).toBe(taken);
    expect(contour.log()).toContain('started xDS server');
  });

  it('an exit for any other reason is an error with its log, not a retry', async () => {
    const spawned: ContourProcess[] = [];
    await expect(
      startServingContourProcess({
        binary: install.binary,
        kubeconfig: join(dir ?? tmpdir(), 'no-such-kubeconfig'),
        portChoice: 'free',
        onSpawn: (process) => spawned.push(process),
      }),
    ).rejects.toThrow(/exited before serving xDS .*attempt 1/);
    expect(spawned).toHaveLength(1);
  });
});
