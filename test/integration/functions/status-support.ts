// Shared plumbing of the status function tests: local DynamoDB (with its stream) + the table, the
// local Kubernetes API server with a CRD, helpers to store decisions and read objects back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';

import { type ObjectRef } from '../../../common/core';
import { objectGenerationKey } from '../../../common/store';
import { openTable, type DynamoEventStore, type TableAccess } from '../../../common/store';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo, type StreamDelivery, type StreamHandler } from '../../../infra/local/dynamo';
import { request, startTestServer, WIDGET_CRD, type TestServer } from '../kube/helpers';
import decisions from '../../fixtures/events/status-decisions.json';
import { waitFor as pollWaitFor } from '../../support/eventually';

export const silentLogger = pino({ level: 'silent' });
export { decisions };

export const LINEAGE = 'gw-0.boot-1.contour';
export const WIDGET_KIND = { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true };

export function widgetRef(name: string): ObjectRef {
  return { group: 'example.com', kind: 'Widget', namespace: 'default', name };
}

export interface StatusWorld {
  dynamo: LocalDynamo;
  tableName: string;
  store: DynamoEventStore;
  /** The table's ports on a client separate from the functions': tests plant and read items through `table.rawItems`. */
  table: TableAccess;
  kube: TestServer;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startStatusWorld(): Promise<StatusWorld> {
  const dynamo = await startLocalDynamo({ logger: silentLogger, shardCount: 2 });
  const tableName = `status-${Math.random().toString(36).slice(2, 8)}`;
  const table = openTable({
    tableName,
    client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } },
    logger: silentLogger,
  });
  await table.ensureTable();
  const kube = await startTestServer();
  const created = await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD);
  if (created.status !== 201) throw new Error(`CRD not created: ${JSON.stringify(created.body)}`);
  const env = {
    TABLE_NAME: tableName,
    AWS_REGION: 'us-east-1',
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    TRACKED_KINDS: JSON.stringify([WIDGET_KIND]),
    KUBECONFIG_PATH: kube.kubeconfig,
  };
  return {
    dynamo,
    tableName,
    store: table.store,
    table,
    kube,
    env,
    async close() {
      table.close();
      await kube.cleanup();
      await dynamo.close();
    },
  };
}

export function deliver(world: StatusWorld, handler: StreamHandler): StreamDelivery {
  return createStreamDelivery({
    source: world.dynamo.tableStreams.get(world.tableName),
    handler,
    batchSize: 20,
    maximumBatchingWindowMs: 0,
    maximumRetryAttempts: 2,
    bisectBatchOnFunctionError: true,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    startingPosition: 'LATEST',
    logger: silentLogger,
  });
}

/** What convergence does: the generation item exists (watermark) and carries a decision. */
export async function putDecision(world: StatusWorld, ref: ObjectRef, generation: number, decision: unknown): Promise<void> {
  await world.store.putWatermark(ref, generation, LINEAGE, { seq: 10, types: {}, at: 1795000000000 });
  await world.table.rawItems.setAttributes(objectGenerationKey(ref, generation), { decision });
}

export interface WidgetObject {
  metadata: { name: string; generation: number; resourceVersion: string };
  spec: Record<string, unknown>;
  status?: { conditions?: Record<string, unknown>[] };
}

export async function createWidget(world: StatusWorld, name: string, size = 1): Promise<WidgetObject> {
  const response = await request(world.kube, 'POST', '/apis/example.com/v1/namespaces/default/widgets', {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name, namespace: 'default' },
    spec: { size },
  });
  if (response.status !== 201) throw new Error(`widget not created: ${JSON.stringify(response.body)}`);
  return response.body as WidgetObject;
}

export async function getWidget(world: StatusWorld, name: string): Promise<WidgetObject | undefined> {
  const response = await request(world.kube, 'GET', `/apis/example.com/v1/namespaces/default/widgets/${name}`);
  return response.status === 200 ? (response.body as WidgetObject) : undefined;
}

export async function patchWidgetStatus(world: StatusWorld, name: string, status: unknown, resourceVersion?: string): Promise<number> {
  const body = { ...(resourceVersion === undefined ? {} : { metadata: { resourceVersion } }), status };
  const response = await request(world.kube, 'PATCH', `/apis/example.com/v1/namespaces/default/widgets/${name}/status`, body, 'application/merge-patch+json');
  return response.status;
}

export function privateDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  return pollWaitFor(what, probe, { timeoutMs, intervalMs: 25 });
}
