// The gateway as its own process (xds-gateway/main.ts): SIGKILL mid-stream, restart on the same port,
// Envoys reconnect to the new lineage, nothing already written is lost; then SIGTERM flushes the
// disconnects and exits 0.
import { ALL_TYPES, adsSpec, endpoints, envoyEvents, envoyState, eventually, httpGet, newFleet, proxy, spawnGateway, testLogger, type GatewayProcess } from './helpers';
import { openTable, type DynamoEventStore } from '../../../common/store';
import type { EnvoyEvent } from '../../../common/core';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';

const TABLE = 'gw-restart';
let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let store: DynamoEventStore;
let destroyStore: () => void;
let fleet: Fleet | undefined;
const processes: GatewayProcess[] = [];

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: testLogger });
  source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1'));
  source.applyProxy(proxy('app', 'app.example.com', 'app'));
  controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-1', source, versionScheme: 'counter', provenance: true, logger: testLogger, holdoffMs: 5, holdoffMaxMs: 20 });
  await controlPlane.rebuildNow();
  const table = openTable({ tableName: TABLE, client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'l', secretAccessKey: 'l' } }, logger: testLogger });
  store = table.store;
  destroyStore = () => table.close();
});

afterAll(async () => {
  fleet?.close();
  for (const gateway of processes) if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
  await Promise.all(processes.map((gateway) => gateway.exited));
  destroyStore();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

function args(port: number): string[] {
  return [
    '--upstream', `127.0.0.1:${controlPlane.port}`,
    '--table', TABLE,
    '--dynamodb-endpoint', dynamo.endpoint,
    '--create-table', 'true',
    '--insecure-plaintext', '--upstream-insecure-plaintext',
    '--listen-host', '127.0.0.1', '--listen-port', String(port),
    '--ops-host', '127.0.0.1', '--ops-port', '0',
    '--instance-id', 'gw-proc',
    '--flush-interval-ms', '20',
    '--shutdown-grace-ms', '0',
    '--log-level', process.env['LOG_LEVEL'] ?? 'warn',
  ];
}

async function everyTypeStoredOn(nodeId: string, lineagePrefix: string): Promise<boolean> {
  const state = await envoyState(store, nodeId);
  return state !== undefined && state.lineage.startsWith(lineagePrefix) && ALL_TYPES.every((t) => state.types[t]?.acked !== undefined && state.types[t]?.lineage === state.lineage);
}

test('SIGKILL mid-stream: Envoys move to the new lineage and nothing written is lost; SIGTERM flushes', async () => {
  const first = await spawnGateway(args(0));
  processes.push(first);
  const lineage1 = `gw-proc.${first.bootId}.`;
  fleet = newFleet(first.xdsPort);
  fleet.addMany(3, adsSpec({ node: (i) => ({ id: `proc-${i}`, cluster: 'edge' }) }), 0);
  fleet.connectAll();
  const ids = fleet.envoys().map((e) => e.id);
  for (const id of ids) await eventually(() => everyTypeStoredOn(id, lineage1), `${id} stored on the first lineage`);

  // Mid-stream: a config change is flowing when the process dies.
  source.applyProxy(proxy('app', 'app.example.com', 'app', 8080, { prefix: '/v2' }));
  await new Promise((resolve) => setTimeout(resolve, 30));
  const before = new Map<string, EnvoyEvent[]>();
  first.child.kill('SIGKILL');
  expect(await first.exited).toBeNull();
  for (const id of ids) before.set(id, await envoyEvents(store, id));

  const second = await spawnGateway(args(first.xdsPort));
  processes.push(second);
  expect(second.bootId).not.toBe(first.bootId);
  const lineage2 = `gw-proc.${second.bootId}.`;
  for (const id of ids) await eventually(() => everyTypeStoredOn(id, lineage2), `${id} reconnected on the new lineage`, 45_000);

  for (const id of ids) {
    const after = await envoyEvents(store, id);
    const afterKeys = new Set(after.map((e) => JSON.stringify(e)));
    // Every event written before the kill is still there, unchanged.
    for (const event of before.get(id) ?? []) expect(afterKeys.has(JSON.stringify(event))).toBe(true);
    expect(after.some((e) => e.outcome === 'ACK' && e.lineage.startsWith(lineage2))).toBe(true);
    const state = await envoyState(store, id);
    expect(state!.status).toBe('CONNECTED');
    expect(state!.programmedThrough).toBeDefined();
    // The Envoy runs exactly what the state says, on the new lineage.
    for (const typeUrl of ALL_TYPES) expect(fleet.envoy(id).acceptedVersion(typeUrl)).toBe(`xp1:${state!.lineage}:${state!.types[typeUrl]!.acked}`);
  }
  expect((await httpGet(second.opsPort, '/healthz')).status).toBe(200);

  // Graceful stop: disconnects are flushed before exit.
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
  for (const id of ids) {
    const state = await envoyState(store, id);
    expect(state!.status).toBe('DISCONNECTED');
    expect(state!.lineage.startsWith(lineage2)).toBe(true);
  }
});
