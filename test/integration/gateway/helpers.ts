// Shared fixtures for the gateway integration tests: local dynamo + reference control plane +
// the gateway (in-process, or as a child process) + simulated Envoys. Everything real.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import pino from 'pino';
import {
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  RDS_TYPE_URL,
  type EnvoyEvent,
  type EnvoyState,
  type EventStore,
  type LineageState,
  type VersionChunk,
  type VersionLog,
  memberAnswerEvent,
  memberAnswers,
} from '../../../common/core';

import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import { Fleet, type FleetEnvoySpec } from '../../../infra/local/envoys';
import { eventually as pollEventually, type Probe } from '../../support/eventually';
import { parseGatewayConfig, type GatewayConfig } from '../../../xds-gateway/ops/config';
import { startGateway, type Gateway, type GatewaySeams } from '../../../xds-gateway/ops/gateway';
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, createDiscoveryClient, openAdsSotw, type DiscoveryRequest, type DiscoveryResponse } from '../../../common/xds';
import { StreamReader } from '../gateway-relay/stream-reader';

export const testLogger = pino({ level: process.env['LOG_LEVEL'] ?? 'silent' });

export const ALL_TYPES = [CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL] as const;

export function proxy(name: string, fqdn: string, service: string, port = 8080, extra: { prefix?: string; annotations?: Record<string, string> } = {}): Record<string, unknown> {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name, namespace: 'default', ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: { virtualhost: { fqdn }, routes: [{ conditions: extra.prefix ? [{ prefix: extra.prefix }] : [], services: [{ name: service, port }] }] },
  };
}

export function endpoints(name: string, ip: string, port = 8080): Record<string, unknown> {
  return { metadata: { name, namespace: 'default' }, subsets: [{ addresses: [{ ip }], ports: [{ port }] }] };
}

export function gatewayConfig(args: Record<string, string>): GatewayConfig {
  // The shard path unless the test asks for PROGRESS: these tests pin what each Envoy state write
  // carries, and the fleet-size path (the gateway's default) writes states on class changes only.
  const argv = Object.entries({ progress: 'false', ...args }).flatMap(([key, value]) => [`--${key}`, value]);
  const parsed = parseGatewayConfig(argv, {});
  if (parsed.kind !== 'ok') throw new Error(parsed.kind === 'error' ? parsed.message : 'help');
  return parsed.config;
}

export async function startTestGateway(args: Record<string, string>, seams: GatewaySeams = {}): Promise<Gateway> {
  const config = gatewayConfig({
    // Plaintext must be asked for, as in a deployment: these gateways are plaintext on loopback
    // unless the test gives TLS files (then the opt-in would contradict them and is left out).
    ...('listen-tls-cert' in args ? {} : { 'insecure-plaintext': 'true' }),
    ...('upstream-tls-ca' in args ? {} : { 'upstream-insecure-plaintext': 'true' }),
    'listen-host': '127.0.0.1',
    'listen-port': '0',
    'ops-host': '127.0.0.1',
    'ops-port': '0',
    'instance-id': 'gw-test',
    region: 'us-east-1',
    'create-table': 'true',
    'flush-interval-ms': '20',
    'shutdown-grace-ms': '0',
    ...args,
  });
  return startGateway(config, testLogger, { defaultMetrics: false, ...seams });
}

/** A fleet whose Envoys subscribe to CDS/EDS/LDS/RDS (wildcard) over ADS SotW unless told otherwise. */
export function adsSpec(overrides: Partial<FleetEnvoySpec> = {}): FleetEnvoySpec {
  return {
    transport: 'ads',
    protocol: 'sotw',
    subscriptions: ALL_TYPES.map((typeUrl) => ({ typeUrl })),
    reconnectOnError: true,
    reconnectDelayMs: 100,
    ...overrides,
  };
}

/** A local DynamoDB plus a reference control plane (counter versions, provenance) serving one `app` route, rebuilt once. */
export async function startDynamoAndControlPlane(): Promise<{ dynamo: LocalDynamo; source: InMemoryRouteSource; controlPlane: ControlPlane }> {
  const dynamo = await startLocalDynamo({ logger: testLogger });
  const source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1'));
  source.applyProxy(proxy('app', 'app.example.com', 'app'));
  const controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-1', source, versionScheme: 'counter', provenance: true, logger: testLogger, holdoffMs: 10, holdoffMaxMs: 50 });
  await controlPlane.rebuildNow();
  return { dynamo, source, controlPlane };
}

export function newFleet(port: number): Fleet {
  return new Fleet({ target: `127.0.0.1:${port}`, channels: 2, logger: testLogger });
}

/** Polls (every 50 ms, retrying through probe errors) until `probe` returns something other than `undefined`/`false`. */
export function eventually<T>(probe: Probe<T>, description: string, timeoutMs = 30_000): Promise<T> {
  return pollEventually(probe, description, { timeoutMs, intervalMs: 50, retryOnError: true });
}

export async function envoyState(store: EventStore, nodeId: string): Promise<EnvoyState | undefined> {
  const read = await store.getEnvoyState(nodeId);
  return read.status === 'found' ? read.value : undefined;
}

export async function lineageState(store: EventStore, lineage: string): Promise<LineageState | undefined> {
  const read = await store.getLineageState(lineage);
  return read.status === 'found' ? read.value : undefined;
}

export async function envoyEvents(store: EventStore, nodeId: string): Promise<EnvoyEvent[]> {
  const events: EnvoyEvent[] = [];
  for await (const event of pages((cursor) => store.listEnvoyEvents(nodeId, cursor === undefined ? {} : { cursor }))) events.push(event);
  return events;
}

/**
 * Every answer of `nodeId` the table holds: its event log, and on the fleet-size path (answers of
 * demoted states in the version log, docs/GATEWAY.md "The version log") every chunk of every lineage
 * it was a member of, read whole (a test's reader, unlike the query function's bounded one).
 */
export async function envoyAnswers(store: EventStore, versionLog: VersionLog, nodeId: string, typeUrls: readonly string[]): Promise<EnvoyEvent[]> {
  const answers = await envoyEvents(store, nodeId);
  for await (const membership of pages((cursor) => versionLog.listMembers(nodeId, cursor === undefined ? {} : { cursor }))) {
    for (const typeUrl of typeUrls) {
      const chunks: VersionChunk[] = [];
      for await (const chunk of pages((cursor) => versionLog.listChunks(membership.lineage, { typeUrl, fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER }, cursor === undefined ? { consistent: true } : { cursor, consistent: true }))) chunks.push(chunk);
      for (const answer of memberAnswers(chunks, membership.lineage, membership.member)) answers.push(memberAnswerEvent(nodeId, membership.lineage, answer));
    }
  }
  return answers;
}

/** Every item of a paged listing, page after page. */
export async function* pages<T>(read: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string }>): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
}

export function lastOf(history: readonly number[] | undefined): number | undefined {
  return history === undefined ? undefined : history[history.length - 1];
}

export async function httpGet(port: number, pathname: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${pathname}`);
  return { status: response.status, body: await response.text() };
}

const MAIN = path.join(__dirname, '..', '..', '..', 'xds-gateway', 'main.ts');

export interface GatewayProcess {
  child: ChildProcess;
  xdsPort: number;
  opsPort: number;
  bootId: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Runs xds-gateway/main.ts as its own OS process (node --import tsx); resolves once it prints its ports. */
export function spawnGateway(args: string[], env: Record<string, string> = {}): Promise<GatewayProcess> {
  return new Promise((resolve, reject) => {
    // The shard path unless asked otherwise, as gatewayConfig.
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...(args.includes('--progress') || 'PROGRESS' in env ? [] : ['--progress', 'false']), ...args], {
      cwd: path.join(__dirname, '..', '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', ...env },
    });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined || !stdout.includes('\n')) return;
      try {
        const ports = JSON.parse(line) as { xdsPort: number; opsPort: number; bootId: string };
        resolve({ child, ...ports, stderr: () => stderr, exited });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    child.on('error', reject);
    void exited.then((code) => reject(new Error(`gateway exited ${String(code)} before serving: ${stderr.slice(-3000)}`)));
  });
}

/**
 * A TCP proxy that delays everything the server sends by `delayMs` (a slow or distant control
 * plane): the xDS push reaches the gateway well after the control plane wrote status. Used to show
 * that the barrier's re-open, not luck, makes watermarks safe.
 */
export async function startDelayProxy(target: string, delayMs: number): Promise<{ address: string; close: () => Promise<void> }> {
  const net = await import('node:net');
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<import('node:net').Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        if (!client.destroyed) client.write(chunk);
      }, delayMs);
    });
    const end = (): void => {
      setTimeout(() => {
        client.destroy();
        upstream.destroy();
      }, delayMs);
    };
    upstream.on('close', end);
    upstream.on('error', end);
    client.on('close', () => upstream.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A gateway on a local DynamoDB and reference control plane, with a raw ADS client to it. */
export interface GatewayOnLocalSystem {
  gateway: Gateway;
  client: grpc.Client;
  close(): Promise<void>;
}

export async function startGatewayOnLocalSystem(table: string, args: Record<string, string> = {}, seams: GatewaySeams = {}): Promise<GatewayOnLocalSystem> {
  const { dynamo, source, controlPlane } = await startDynamoAndControlPlane();
  const gateway = await startTestGateway({ upstream: `127.0.0.1:${controlPlane.port}`, table, 'dynamodb-endpoint': dynamo.endpoint, ...args }, seams);
  const client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${gateway.xdsPort}`);
  return {
    gateway,
    client,
    close: async () => {
      client.close();
      await gateway.close();
      await controlPlane.close();
      await source.close();
      await dynamo.close();
    },
  };
}

/** An ADS SotW stream subscribed to every type (wildcard), the node sent on the first request only. */
export function subscribeAllTypes(client: grpc.Client, node: { id: string; cluster: string }): StreamReader<DiscoveryRequest, DiscoveryResponse> {
  const reader = new StreamReader<DiscoveryRequest, DiscoveryResponse>(openAdsSotw(client));
  ALL_TYPES.forEach((typeUrl, index) => reader.send({ ...(index === 0 ? { node } : {}), type_url: typeUrl, resource_names: [], version_info: '' }));
  return reader;
}
