// Fuzzing the query function's URL (Lambda function URL, payload 2.0) over a real dynalite table:
// random methods, paths, percent-encodings, query strings, headers, bodies, base64 flags and
// oversize inputs. Whatever comes in: no throw, a status in {200, 400, 404, 405}, a JSON body, a
// clear `{ error: { code, message } }` on every non-200, no stack trace, and with QUERY_NAMESPACES
// set nothing of another namespace's objects. FUZZ_RUNS raises the number of runs (default 200).
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import pino from 'pino';

import { type EnvoyState, type ObjectRef } from '../../common/core';
import { objectGenerationKey, type DynamoEventStore, type RawItems } from '../../common/store';
import { createQueryHandler, type QueryHandler } from '../../functions/query';
import { startStoreFixture, type StoreFixture } from '../support/store-fixture';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 200);
const NOW = 1_795_000_000_000;
const LINEAGE = 'gw-0.boot-1.contour';
const RDS = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
// Only ever stored on team-b's object: seeing it in a scoped answer is a leak.
const TEAM_B_MARKER = 'marker-b7f3-team-b-only';
const silent = pino({ level: 'silent' });

const refA: ObjectRef = { group: 'example.com', kind: 'Widget', namespace: 'team-a', name: 'w1' };
const refB: ObjectRef = { group: 'example.com', kind: 'Widget', namespace: 'team-b', name: 'secret' };
const refCluster: ObjectRef = { group: 'example.com', kind: 'ClusterWidget', namespace: '', name: 'global' };

function envoy(i: number): EnvoyState {
  return {
    nodeId: `envoy-${i}`,
    cluster: 'contour',
    group: 'contour',
    metadata: {},
    lineage: LINEAGE,
    status: 'CONNECTED',
    connectedAt: NOW - 60_000,
    lastSeenAt: NOW - 1000,
    types: { [RDS]: { lineage: LINEAGE, subscribed: true, acked: 1, ...(i === 0 ? { nack: { seq: 2, message: 'route default/x invalid', at: NOW - 10 } } : {}) } },
    ...(i === 0 ? {} : { programmedThrough: 2 }),
    rev: 0,
  };
}

interface Answer {
  status: number;
  text: string;
  body: { error?: { code?: unknown; message?: unknown }; [key: string]: unknown };
}

function event(parts: { method: string | undefined; path: string | undefined; query: Record<string, string> | undefined; headers: Record<string, string>; body: string | undefined; base64: boolean }): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    ...(parts.path === undefined ? {} : { rawPath: parts.path }),
    rawQueryString: new URLSearchParams(parts.query ?? {}).toString(),
    ...(parts.query === undefined ? {} : { queryStringParameters: parts.query }),
    headers: parts.headers,
    ...(parts.body === undefined ? {} : { body: parts.body }),
    isBase64Encoded: parts.base64,
    requestContext: parts.method === undefined ? undefined : { http: { method: parts.method, path: parts.path ?? '/', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'fuzz' }, requestId: 'fuzz-1' },
  } as unknown as APIGatewayProxyEventV2;
}

async function ask(handler: QueryHandler, request: APIGatewayProxyEventV2): Promise<Answer> {
  const response = await handler(request);
  return { status: response.statusCode, text: response.body, body: JSON.parse(response.body) as Answer['body'] };
}

/** What every answer must satisfy, whatever the input. */
function expectWellFormed(answer: Answer): void {
  expect([200, 400, 404, 405]).toContain(answer.status);
  // No stack frames, no source paths: `    at fn (file.ts:12:3)` or node_modules paths.
  expect(answer.text).not.toMatch(/\bat .+:\d+:\d+\)?/);
  expect(answer.text).not.toMatch(/node_modules|\.ts:\d+/);
  if (answer.status !== 200) {
    expect(typeof answer.body.error?.code).toBe('string');
    expect(typeof answer.body.error?.message).toBe('string');
    expect((answer.body.error?.message as string).length).toBeGreaterThan(0);
    // Echoed caller input is bounded (an oversize path must not come back whole).
    expect(answer.text.length).toBeLessThan(2000);
  }
}

const BIG = 'x'.repeat(300_000);
const segmentArb = fc.oneof(
  fc.constantFrom('objects', 'envoys', 'healthz', 'example.com', 'Widget', 'ClusterWidget', 'team-a', 'team-b', 'w1', 'secret', 'global', '_', '', 'envoy-0', 'envoy-1', '..', '.'),
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '%2F', 'a%2Fb', '%F0%9F%92%A9', encodeURIComponent('ns/pod 1')),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constant(BIG.slice(0, 2000)),
);
const pathArb = fc.oneof(
  { weight: 3, arbitrary: fc.array(segmentArb, { maxLength: 7 }).map((segments) => `/${segments.join('/')}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom('/', '', '//', '/objects/example.com/Widget/team-b/secret', '/objects/example.com/Widget/team-a/w1/', '/objects/example.com/ClusterWidget/_/global', `/${BIG}`, `/objects/${BIG}/Widget/team-a/w1`, '/envoys/', '/envoys/envoy-0') },
);
const queryKeyArb = fc.oneof(fc.constantFrom('limit', 'cursor', 'group', 'generation', 'x', '', '__proto__', 'constructor'), fc.string({ maxLength: 12 }));
const queryValueArb = fc.oneof(
  fc.constantFrom('1', '0', '-1', '1000', '1001', '1.5', '1e3', 'NaN', '9999999999999999', '2', '3', '', ' 1', '0x10', BIG.slice(0, 10_000)),
  fc.integer().map(String),
  fc.string({ maxLength: 40 }),
  fc.base64String({ maxLength: 80 }),
);
const requestArb = fc.record({
  method: fc.option(fc.oneof(fc.constantFrom('GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'get'), fc.string({ maxLength: 200 })), { nil: undefined }),
  path: fc.option(pathArb, { nil: undefined, freq: 20 }),
  query: fc.option(fc.dictionary(queryKeyArb, queryValueArb, { maxKeys: 4 }), { nil: undefined }),
  headers: fc.dictionary(fc.constantFrom('content-type', 'authorization', 'x-forwarded-for', 'accept', 'content-length', 'x-amz-date'), fc.string({ maxLength: 40 }), { maxKeys: 4 }),
  body: fc.option(fc.oneof(fc.string({ maxLength: 200 }), fc.base64String({ maxLength: 200 }), fc.constant(BIG)), { nil: undefined }),
  base64: fc.boolean(),
});

describe('query function URL under random input', () => {
  let fixture: StoreFixture;
  let store: DynamoEventStore;
  let rawItems: RawItems;
  let open: QueryHandler;
  let scoped: QueryHandler;

  beforeAll(async () => {
    fixture = await startStoreFixture();
    const tableName = await fixture.newTable();
    ({ store, rawItems } = fixture.openTable(tableName, silent));
    await store.putLineageState({ lineage: LINEAGE, instanceId: 'gw-0', bootId: 'boot-1', group: 'contour', currentSeq: 2, typeHistory: { [RDS]: [1, 2] }, historyStart: 0, startedAt: NOW - 100_000, heartbeatAt: NOW - 2000, rev: 0 }, undefined);
    for (let i = 0; i < 5; i++) await store.updateEnvoyState(envoy(i), undefined);
    for (const [ref, generation] of [[refA, 1], [refA, 2], [refB, 1], [refCluster, 4]] as const) {
      await store.putWatermark(ref, generation, LINEAGE, { seq: 2, types: { [RDS]: 2 }, at: NOW - 5000 });
    }
    // team-b's decision carries the marker (as an Envoy's NACK message would).
    await rawItems.setAttributes(objectGenerationKey(refB, 1), {
      decision: { state: 'Rejected', programmed: 4, total: 5, decidedAt: NOW, blockersOmitted: 0, evaluatedRev: 1, blockers: [{ nodeId: 'envoy-0', reason: 'nacked', nacks: [{ typeUrl: RDS, seq: 2, message: TEAM_B_MARKER, at: NOW }] }] },
    });
    const env = { TABLE_NAME: tableName, AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint };
    open = createQueryHandler({ env, logger: silent, now: () => NOW });
    scoped = createQueryHandler({ env: { ...env, QUERY_NAMESPACES: 'team-a' }, logger: silent, now: () => NOW });
  });
  afterAll(async () => {
    await fixture.close();
  });

  it('answers every request with a well-formed JSON status, and the scoped one leaks no other namespace', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArb, async (parts) => {
        const request = event(parts);
        const answerOpen = await ask(open, request);
        expectWellFormed(answerOpen);
        const answerScoped = await ask(scoped, request);
        expectWellFormed(answerScoped);
        statuses.set(answerOpen.status, (statuses.get(answerOpen.status) ?? 0) + 1);
        expect(answerScoped.text).not.toContain(TEAM_B_MARKER);
        if (answerScoped.status === 200 && answerScoped.body['object'] !== undefined) {
          expect((answerScoped.body['object'] as ObjectRef).namespace).toBe('team-a');
        }
        // Only GET may succeed, and a body never changes the answer of a read-only API.
        if (answerOpen.status === 200) expect(parts.method ?? 'GET').toBe('GET');
      }),
      {
        numRuns: RUNS,
        // One sure example of each answer, so the coverage check below does not depend on the seed.
        examples: [
          [{ method: 'GET', path: '/objects/example.com/Widget/team-a/w1', query: { generation: '2' }, headers: {}, body: undefined, base64: false }],
          [{ method: 'GET', path: '/envoys', query: { limit: '0' }, headers: {}, body: 'x', base64: true }],
          [{ method: 'GET', path: '/nope', query: undefined, headers: {}, body: undefined, base64: false }],
          [{ method: 'DELETE', path: '/healthz', query: undefined, headers: {}, body: undefined, base64: false }],
        ],
      },
    );
    // The generator reaches the interesting answers, not just 404s.
    for (const status of [200, 400, 404, 405]) expect(statuses.get(status) ?? 0).toBeGreaterThan(0);
  }, 180_000);

  it('without QUERY_NAMESPACES every namespace is visible (the documented default)', async () => {
    const answer = await ask(open, event({ method: 'GET', path: '/objects/example.com/Widget/team-b/secret', query: undefined, headers: {}, body: undefined, base64: false }));
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(TEAM_B_MARKER);
    expect((await ask(open, event({ method: 'GET', path: '/envoys', query: undefined, headers: {}, body: undefined, base64: false }))).status).toBe(200);
  });

  it('with QUERY_NAMESPACES, another namespace answers exactly like a missing object and the fleet views are off', async () => {
    const get = (path: string, query?: Record<string, string>) => ask(scoped, event({ method: 'GET', path, query, headers: {}, body: undefined, base64: false }));
    expect((await get('/objects/example.com/Widget/team-a/w1')).status).toBe(200);
    const other = await get('/objects/example.com/Widget/team-b/secret');
    const missing = await get('/objects/example.com/Widget/team-b/never-existed');
    expect(other).toEqual(missing);
    expect(other.status).toBe(404);
    expect(await get('/objects/example.com/Widget/team-b/secret', { generation: '1' })).toEqual(await get('/objects/example.com/Widget/team-b/never-existed', { generation: '1' }));
    // Cluster-scoped objects (`_`) are outside unless listed.
    expect((await get('/objects/example.com/ClusterWidget/_/global')).status).toBe(404);
    for (const path of ['/envoys', '/envoys/envoy-0']) {
      const fleet = await get(path);
      expect(fleet.status).toBe(404);
      expect(fleet.body.error?.code).toBe('FleetViewDisabled');
    }
    const withCluster = createQueryHandler({ env: { TABLE_NAME: 'unused-table', AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint, QUERY_NAMESPACES: 'team-a, _' }, logger: silent, now: () => NOW });
    // Reaches the store (a 500 from the missing table is fine here): the scope let it through.
    expect((await ask(withCluster, event({ method: 'GET', path: '/objects/example.com/ClusterWidget/_/global', query: undefined, headers: {}, body: undefined, base64: false }))).body.error?.code).not.toBe('ObjectNotFound');
  });

  it('refuses a malformed QUERY_NAMESPACES at start-up rather than guessing', () => {
    const env = { TABLE_NAME: 'table-x', AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint };
    expect(() => createQueryHandler({ env: { ...env, QUERY_NAMESPACES: 'Team_A' }, logger: silent })).toThrow(/RFC 1123/);
    expect(() => createQueryHandler({ env: { ...env, QUERY_NAMESPACES: '*' }, logger: silent })).not.toThrow();
  });

  it('bounds echoed caller input: the method of a 405, an oversize object path part (regressions)', async () => {
    const answer = await ask(open, event({ method: 'P'.repeat(100_000), path: '/healthz', query: undefined, headers: {}, body: undefined, base64: false }));
    expect(answer.status).toBe(405);
    expect(answer.text.length).toBeLessThan(400);
    const oversize = await ask(open, event({ method: 'GET', path: `/objects/${BIG}/Widget/team-a/w1`, query: undefined, headers: {}, body: undefined, base64: false }));
    expect(oversize.status).toBe(400);
    expect(oversize.body.error?.code).toBe('BadObjectRef');
    expect(oversize.text.length).toBeLessThan(600);
  });
});
