// The query function over a real (dynalite) table holding 1,000 Envoys: every route, pagination with
// the cursor, the proxy-status classification, and bad input (400/404/405) with clear messages.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { type EnvoyState, type TypeState } from '../../../common/core';
import { objectGenerationKey, recordExpireTick, type DynamoEventStore, type RawItems } from '../../../common/store';
import { createQueryHandler, handleQuery, type QueryHandler } from '../../../functions/query';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import fleet from '../../fixtures/events/query-fleet.json';
import { decisions, silentLogger, widgetRef } from './status-support';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const RDS = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
const NOW = 1_795_000_000_000;
const FLEET_SIZE = 1000;

/** Envoy i: every 10th is STALE on RDS, every 25th NACKED, every 40th NOT SENT (behind, nothing in flight); the rest SYNCED. */
function kindOf(i: number): 'SYNCED' | 'STALE' | 'NACKED' | 'NOT_SENT' {
  if (i % 25 === 0) return 'NACKED';
  if (i % 10 === 0) return 'STALE';
  if (i % 40 === 7) return 'NOT_SENT';
  return 'SYNCED';
}

function envoy(i: number, nodeId = `envoy-${String(i).padStart(4, '0')}`): EnvoyState {
  const type = (acked: number, extra: Partial<TypeState> = {}): TypeState => ({ lineage: fleet.lineage, subscribed: true, acked, ...extra });
  const kind = kindOf(i);
  const rds =
    kind === 'SYNCED' ? type(5)
    : kind === 'STALE' ? type(3, { pending: { seq: 5, sentAt: NOW - 1000 } })
    : kind === 'NACKED' ? type(3, { nack: { seq: 5, message: fleet.nackMessage, at: NOW - 500 } })
    : type(3);
  return {
    nodeId,
    cluster: 'contour',
    group: i % 2 === 0 ? 'contour' : 'contour-internal',
    metadata: { pod: nodeId },
    lineage: fleet.lineage,
    status: 'CONNECTED',
    connectedAt: NOW - 60_000,
    lastSeenAt: NOW - 1000,
    types: { [CDS]: type(1), [LDS]: type(2), [RDS]: rds },
    ...(kind === 'SYNCED' ? { programmedThrough: 5 } : {}),
    rev: 0,
  };
}

function get(path: string, query?: Record<string, string>, method = 'GET'): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: new URLSearchParams(query ?? {}).toString(),
    ...(query === undefined ? {} : { queryStringParameters: query }),
    headers: {},
    isBase64Encoded: false,
    requestContext: { http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' }, requestId: 'req-1' },
  } as unknown as APIGatewayProxyEventV2;
}

interface Body {
  error?: { code: string; message: string };
  [key: string]: unknown;
}

describe('query function', () => {
  let fixture: StoreFixture;
  let store: DynamoEventStore;
  let rawItems: RawItems;
  let query: QueryHandler;
  let tableName: string;

  const call = async (path: string, query_?: Record<string, string>, method?: string): Promise<{ status: number; body: Body; headers: Record<string, unknown> }> => {
    const response = await query(get(path, query_, method));
    return { status: response.statusCode, body: JSON.parse(response.body) as Body, headers: (response.headers ?? {}) as Record<string, unknown> };
  };

  beforeAll(async () => {
    fixture = await startStoreFixture();
    tableName = await fixture.newTable();
    ({ store, rawItems } = fixture.openTable(tableName, silentLogger));
    await store.putLineageState(
      { lineage: fleet.lineage, instanceId: 'gw-0', bootId: 'boot-1', group: 'contour', currentSeq: 5, typeHistory: fleet.typeHistory, historyStart: 0, startedAt: NOW - 100_000, heartbeatAt: NOW - 2000, rev: 0 },
      undefined,
    );
    for (let start = 0; start < FLEET_SIZE; start += 50) {
      await Promise.all(Array.from({ length: Math.min(50, FLEET_SIZE - start) }, (_, k) => store.updateEnvoyState(envoy(start + k), undefined)));
    }
    await store.updateEnvoyState(envoy(1, 'ns/pod 1'), undefined);
    await store.putEvents([{ nodeId: 'envoy-0025', outcome: 'NACK', lineage: fleet.lineage, seq: 5, typeUrl: RDS, at: NOW - 500, message: fleet.nackMessage, ttl: NOW / 1000 + 3600 }]);
    await store.putWatermark(widgetRef('w1'), 3, fleet.lineage, { ...fleet.watermark, at: NOW - 10_000 });
    await rawItems.setAttributes(objectGenerationKey(widgetRef('w1'), 3), { decision: decisions.rejected });
    // The shard path: this fleet is written as Envoy states, every one current (no PROGRESS items).
    query = createQueryHandler({ env: { TABLE_NAME: tableName, AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint, PROGRESS_EVALUATION: 'false' }, logger: silentLogger, now: () => NOW });
  });
  afterAll(async () => {
    await fixture.close();
  });

  it('GET /healthz', async () => {
    expect(await call('/healthz')).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('pages through 1,000 Envoys with the cursor, each exactly once', async () => {
    const seen = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    do {
      const { status, body } = await call('/envoys', { limit: '100', ...(cursor === undefined ? {} : { cursor }) });
      expect(status).toBe(200);
      const envoys = body['envoys'] as { nodeId: string }[];
      expect(envoys.length).toBeLessThanOrEqual(100);
      for (const e of envoys) {
        expect(seen.has(e.nodeId)).toBe(false);
        seen.add(e.nodeId);
      }
      cursor = (body['nextCursor'] as string | null) ?? undefined;
      pages++;
    } while (cursor !== undefined && pages < 50);
    expect(seen.size).toBe(FLEET_SIZE + 1);
    expect(pages).toBeGreaterThanOrEqual(11);
  });

  it('filters by node group', async () => {
    const groups: string[] = [];
    let cursor: string | undefined;
    do {
      const { body } = await call('/envoys', { limit: '300', group: 'contour-internal', ...(cursor === undefined ? {} : { cursor }) });
      groups.push(...(body['envoys'] as { group: string }[]).map((e) => e.group));
      cursor = (body['nextCursor'] as string | null) ?? undefined;
    } while (cursor !== undefined);
    // The odd-numbered half, plus 'ns/pod 1' (built as Envoy 1).
    expect(groups).toHaveLength(FLEET_SIZE / 2 + 1);
    expect(new Set(groups)).toEqual(new Set(['contour-internal']));
  });

  it('classifies each Envoy per type like istioctl proxy-status', async () => {
    const statuses = new Map<string, string>();
    let cursor: string | undefined;
    do {
      const { body } = await call('/envoys', { limit: '1000', ...(cursor === undefined ? {} : { cursor }) });
      for (const e of body['envoys'] as { nodeId: string; types: { type: string; status: string }[]; gateway: unknown }[]) {
        expect(e.gateway).toMatchObject({ instanceId: 'gw-0', currentSeq: 5 });
        statuses.set(e.nodeId, e.types.map((t) => `${t.type}=${t.status}`).join(' '));
      }
      cursor = (body['nextCursor'] as string | null) ?? undefined;
    } while (cursor !== undefined);
    expect(statuses.get('envoy-0001')).toBe('CDS=SYNCED LDS=SYNCED RDS=SYNCED');
    expect(statuses.get('envoy-0010')).toBe('CDS=SYNCED LDS=SYNCED RDS=STALE');
    expect(statuses.get('envoy-0025')).toBe('CDS=SYNCED LDS=SYNCED RDS=NACKED');
    expect(statuses.get('envoy-0007')).toBe('CDS=SYNCED LDS=SYNCED RDS=NOT_SENT');
  });

  it('GET /envoys/{id}: `live` on the table clock, as the decisions judge it (an outage ages nobody)', async () => {
    // Ten TTLs later with no expire tick since NOW: on wall time envoy-0025 is long gone; the table
    // clock stood still from the last tick on (core table-clock.ts), so it is as live as at NOW.
    const later = NOW + 10 * 300_000;
    const env = { TABLE_NAME: tableName, AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint, PROGRESS_EVALUATION: 'false' };
    const asOf = async (): Promise<unknown> => JSON.parse((await createQueryHandler({ env, logger: silentLogger, now: () => later })(get('/envoys/envoy-0025'))).body);
    expect(await asOf()).toMatchObject({ nodeId: 'envoy-0025', live: false });
    const { aggregates } = fixture.openTable(tableName, silentLogger);
    await recordExpireTick(aggregates, NOW, { stallMs: 150_000, ttlMs: 300_000 });
    expect(await asOf()).toMatchObject({ nodeId: 'envoy-0025', live: true });
  });

  it('GET /envoys/{id}: detail with recent events; URL-encoded ids', async () => {
    const { status, body } = await call('/envoys/envoy-0025');
    expect(status).toBe(200);
    expect(body).toMatchObject({ nodeId: 'envoy-0025', status: 'CONNECTED', live: true, metadata: { pod: 'envoy-0025' } });
    expect(body['recentEvents']).toEqual([expect.objectContaining({ outcome: 'NACK', type: 'RDS', seq: 5, message: fleet.nackMessage })]);
    expect((await call(`/envoys/${encodeURIComponent('ns/pod 1')}`)).body).toMatchObject({ nodeId: 'ns/pod 1' });
    expect(await call('/envoys/nobody')).toMatchObject({ status: 404, body: { error: { code: 'EnvoyNotFound' } } });
  });

  it('GET /objects/...: condition, decision, counts and per-Envoy blockers over the live fleet', async () => {
    const { status, body } = await call('/objects/example.com/Widget/default/w1');
    expect(status).toBe(200);
    expect(body).toMatchObject({ object: widgetRef('w1'), generation: 3, decision: { state: 'Rejected' }, condition: null });
    const live = body['live'] as { state: string; programmed: number; total: number; blockers: { nodeId: string; reason: string }[]; blockersNotListed: number };
    const expectedBlocked = Array.from({ length: FLEET_SIZE }, (_, i) => kindOf(i)).filter((k) => k !== 'SYNCED').length;
    expect(live.total).toBe(FLEET_SIZE + 1);
    expect(live.programmed).toBe(FLEET_SIZE + 1 - expectedBlocked);
    expect(live.state).toBe('Rejected');
    expect(live.blockers).toHaveLength(100);
    expect(live.blockersNotListed).toBe(expectedBlocked - 100);
    // Most severe first: NACKs lead, with Envoy's message.
    expect(live.blockers[0]).toMatchObject({ nodeId: 'envoy-0000', reason: 'nacked', nacks: [expect.objectContaining({ type: 'RDS', message: fleet.nackMessage })] });
    expect((await call('/objects/example.com/Widget/default/w1', { generation: '3' })).status).toBe(200);
  });

  it.each([
    ['/objects/example.com/Widget/default/w1', { generation: '9' }, 404, 'ObjectNotFound'],
    ['/objects/example.com/Widget/default/never', undefined, 404, 'ObjectNotFound'],
    ['/objects/example.com/Widget/default/w1', { generation: 'abc' }, 400, 'BadQuery'],
    ['/objects/example.com/Widget/default/w1', { generation: '0' }, 400, 'BadQuery'],
    ['/objects/example.com/Widget/default/w1', { colour: 'red' }, 400, 'BadQuery'],
    ['/objects/example.com/Widget/default', undefined, 400, 'BadObjectPath'],
    ['/objects/Example.COM/Widget/default/w1', undefined, 400, 'BadObjectRef'],
    ['/objects/example.com/Widget/default/%E0%A4%A', undefined, 400, 'BadPath'],
    ['/envoys', { limit: '0' }, 400, 'BadQuery'],
    ['/envoys', { limit: '5000' }, 400, 'BadQuery'],
    ['/envoys', { limit: 'ten' }, 400, 'BadQuery'],
    ['/envoys', { cursor: 'not-a-cursor' }, 400, 'BadCursor'],
    ['/nothing-here', undefined, 404, 'NoSuchRoute'],
    ['/', undefined, 404, 'NoSuchRoute'],
  ] as [string, Record<string, string> | undefined, number, string][])('GET %s %j → %i %s', async (path, params, status, code) => {
    const response = await call(path, params);
    expect(response.status).toBe(status);
    expect(response.body.error?.code).toBe(code);
    expect(response.body.error?.message.length).toBeGreaterThan(5);
  });

  it('an unreadable latest generation is a 500 naming the item, not a 404', async () => {
    await store.putWatermark(widgetRef('w2'), 1, fleet.lineage, { ...fleet.watermark, at: NOW });
    await rawItems.setAttributes(objectGenerationKey(widgetRef('w2'), 1), { firstSeenAt: 'yesterday' });
    const response = await call('/objects/example.com/Widget/default/w2');
    expect(response.status).toBe(500);
    expect(response.body.error).toMatchObject({ code: 'CorruptItem', message: expect.stringContaining('firstSeenAt') });
  });

  it('405 for anything but GET, with Allow', async () => {
    const response = await call('/envoys', undefined, 'DELETE');
    expect(response).toMatchObject({ status: 405, body: { error: { code: 'MethodNotAllowed' } } });
    expect(response.headers['allow']).toBe('GET');
  });

  it('a failing store gives a 500 without internals', async () => {
    const failing = new Proxy({}, { get: () => async () => { throw new Error('secret internal detail at /var/task/index.js:1:2'); } });
    const response = await handleQuery(get('/envoys'), { store: failing as never, policy: { ttlMs: 1, ackTimeoutMs: 1 }, now: NOW, maxFleetScan: 10, maxBlockersListed: 10 }, silentLogger);
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('secret');
    expect(response.body).not.toContain('index.js');
    expect(JSON.parse(response.body)).toEqual({ error: { code: 'InternalError', message: expect.stringContaining('req-1') } });
  });
});
