// The simulated fleet in a child process (infra/local/envoys/fleet-process.ts), a real child against
// the reference control plane: it connects and ACKs (seen through FleetQueries), answers lastAcks
// like the same spec run in this process, rejects with the child's stderr when it cannot start, and
// dies with its parent (IPC disconnect).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startFleetProcess, startInlineFleet, type FleetProcess, type FleetQueries } from '../../../infra/local/envoys/fleet-process';
import type { FleetSpec } from '../../../infra/local/envoys/fleet-spec';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { eventually } from '../../support/eventually';

const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const ALL_TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL].map((typeUrl) => ({ typeUrl }));
const ENVOYS = 20;
const SLOW = 4;

function httpProxy(name: string, port: number): Record<string, unknown> {
  return { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name, namespace: 'default' }, spec: { virtualhost: { fqdn: `${name}.example.com` }, routes: [{ services: [{ name, port }] }] } };
}
function endpointsOf(name: string, port: number): Record<string, unknown> {
  return { metadata: { name, namespace: 'default' }, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ port }] }] };
}

/** The local system's shape (ADS SotW, four types, reconnect), a few of them slow to ACK. */
function specFor(target: string, idPrefix: string): FleetSpec {
  const common = { transport: 'ads' as const, protocol: 'sotw' as const, subscriptions: ALL_TYPES, reconnectOnError: true, reconnectDelayMs: 200, node: { idPrefix, cluster: 'ingress', alternating: { key: 'zone', values: ['a', 'b'] } } };
  return {
    target,
    channels: 2,
    maxStreamsPerChannel: 8,
    groups: [
      { ...common, role: 'slow', count: SLOW, firstIndex: 0, behaviour: { ackDelayMs: 150 } },
      { ...common, role: 'normal', count: ENVOYS - SLOW, firstIndex: SLOW },
    ],
    routeWatches: [
      { key: 'app2', host: 'app2.example.com', cluster: 'default/app2/9090' },
      // app's host never routes to app2's cluster.
      { key: 'crossed', host: 'app.example.com', cluster: 'default/app2/9090' },
    ],
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('simulated fleet in a child process', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let child: FleetProcess | undefined;
  let inline: ReturnType<typeof startInlineFleet> | undefined;

  beforeAll(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpointsOf('app', 8080));
    source.applyProxy(httpProxy('app', 8080));
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-fleet-process', source, holdoffMs: 10, holdoffMaxMs: 50, logger: quiet });
  });

  afterAll(async () => {
    inline?.fleet.close();
    await child?.close();
    await controlPlane.close();
  });

  test('child and inline fleets of the same spec connect, ACK, and report the same lastAcks after a change', async () => {
    const forkedAt = Date.now();
    child = await startFleetProcess({ spec: specFor(controlPlane.address, 'child-'), logger: quiet });
    expect(child.envoys).toBe(ENVOYS);
    expect(child.pid).toBeGreaterThan(0);
    expect(child.startupMs).toBeLessThanOrEqual(Date.now() - forkedAt);
    console.log(`fleet child start-up (fork → ${ENVOYS} Envoys created): ${child.startupMs} ms`);
    inline = startInlineFleet(specFor(controlPlane.address, 'inline-'), quiet);
    const modes: Array<[string, FleetQueries]> = [['child', child], ['inline', inline.queries]];

    for (const [mode, queries] of modes) {
      await eventually(async () => (await queries.connectedCount()) === ENVOYS, `${mode}: every Envoy connected`, { timeoutMs: 20_000, intervalMs: 50 });
      await eventually(async () => (await queries.configuredCount()) === ENVOYS, `${mode}: every Envoy ACKed all four types`, { timeoutMs: 20_000, intervalMs: 50 });
      expect(await queries.ackCount(0)).toBeGreaterThanOrEqual(ENVOYS * 4);
      expect(await queries.routable(['app2', 'crossed'])).toEqual({ lastAt: {}, envoysWith: { app2: 0, crossed: 0 } });
    }

    // A second HTTPProxy: a new cluster and endpoints (plus its route) for every Envoy.
    const since = Date.now();
    source.applyEndpoints(endpointsOf('app2', 9090));
    source.applyProxy(httpProxy('app2', 9090));
    await controlPlane.rebuildNow();
    const names = ['default/app2/9090', 'default/not-served/1'];
    const results = [];
    for (const [mode, queries] of modes) {
      results.push(await eventually(async () => {
        const result = await queries.lastAcks(names, since);
        return result.envoysWith['default/app2/9090'] === ENVOYS ? result : undefined;
      }, `${mode}: every Envoy accepted the new cluster and its endpoints`, { timeoutMs: 20_000, intervalMs: 50 }));
    }
    // By content: every Envoy can route app2's host once its route arrived too (LDS/RDS may come after CDS/EDS).
    const routables = [];
    for (const [mode, queries] of modes) {
      routables.push(await eventually(async () => {
        const result = await queries.routable(['app2', 'crossed']);
        return result.envoysWith['app2'] === ENVOYS ? result : undefined;
      }, `${mode}: every Envoy routes app2's host to its cluster`, { timeoutMs: 20_000, intervalMs: 50 }));
      expect(await queries.routable(['app2'], [`${mode}-0`, `${mode}-${ENVOYS - 1}`])).toMatchObject({ envoysWith: { app2: 2 } });
    }
    const after = Date.now();
    for (const routable of routables) {
      expect(routable.envoysWith['crossed']).toBe(0);
      expect(routable.lastAt['app2']).toBeGreaterThanOrEqual(since + 150);
      expect(routable.lastAt['app2']).toBeLessThanOrEqual(after);
    }
    const [fromChild, fromInline] = results;
    if (!fromChild || !fromInline) throw new Error('missing results');
    // Same names (the unserved one in neither), same counts; times in the window, in both processes' clock.
    expect(Object.keys(fromChild.lastAck)).toEqual(['default/app2/9090']);
    expect(Object.keys(fromInline.lastAck)).toEqual(['default/app2/9090']);
    expect(fromChild.envoysWith).toEqual(fromInline.envoysWith);
    for (const result of results) {
      const at = result.lastAck['default/app2/9090'] ?? 0;
      // The slow Envoys ACK 150 ms after receiving: the last ACK is at least that far after the change.
      expect(at).toBeGreaterThanOrEqual(since + 150);
      expect(at).toBeLessThanOrEqual(after);
      expect(result.acks).toBeGreaterThanOrEqual(ENVOYS * 2);
    }
    // ACK counts only grow (LDS/RDS may still be arriving, and two rebuilds may or may not coalesce,
    // so the two fleets' counts need not be equal), and ackCount agrees with lastAcks once settled.
    expect(await child.ackCount(since)).toBeGreaterThanOrEqual(fromChild.acks);
    await eventually(async () => (await child?.ackCount(since)) === (await child?.lastAcks(names, since))?.acks, 'ackCount and lastAcks agree', { timeoutMs: 5000, intervalMs: 100 });

    await child.close();
    expect(isAlive(child.pid)).toBe(false);
    await expect(child.connectedCount()).rejects.toThrow(/not running/);
  });

  test('a child that cannot build its fleet rejects with its stderr', async () => {
    const spec = specFor(controlPlane.address, 'bad-');
    const bad: FleetSpec = { ...spec, groups: [{ ...spec.groups[1]!, behaviour: { nackRules: [{ resourceName: '(unclosed', message: 'x' }] } }] };
    await expect(startFleetProcess({ spec: bad, logger: quiet })).rejects.toThrow(/exited \(code 1\) before starting its fleet: fleet child: invalid fleet spec: .*not a valid regular expression/);
  });

  test('the child exits when its parent dies (IPC channel closed)', async () => {
    const parent = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fleet-process-parent.ts'), controlPlane.address], { cwd: join(__dirname, '..', '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    parent.stdout.setEncoding('utf8');
    parent.stdout.on('data', (chunk: string) => (output += chunk));
    const parentExited = new Promise<void>((resolve) => parent.once('exit', () => resolve()));
    const childPid = await eventually(() => {
      const match = /"childPid":(\d+)/.exec(output);
      return match ? Number(match[1]) : undefined;
    }, 'the parent to report its fleet child', { timeoutMs: 20_000, intervalMs: 50 });
    expect(isAlive(childPid)).toBe(true);
    parent.kill('SIGKILL');
    await parentExited;
    await eventually(() => !isAlive(childPid), 'the orphaned fleet child to exit', { timeoutMs: 10_000, intervalMs: 50 });
  });
});
