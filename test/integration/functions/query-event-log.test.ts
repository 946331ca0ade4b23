// The query function's Envoy detail over the event log (docs/GATEWAY.md): events in single-event items (the
// format before it), in event-log items and still carried by the STATE are all shown, newest first,
// at most 20, once each.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { CDS_TYPE_URL, RDS_TYPE_URL, toCarriedEvent, type EnvoyEvent, type EnvoyState } from '../../../common/core';
import { createQueryHandler } from '../../../functions/query';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { silentLogger } from './status-support';

const NOW = 1_795_000_000_000;
const LINEAGE = 'gw-0.boot-1.contour';
const TTL = NOW / 1000 + 3600;

function ack(seq: number, typeUrl = RDS_TYPE_URL): EnvoyEvent {
  return { nodeId: 'envoy-1', outcome: 'ACK', lineage: LINEAGE, seq, typeUrl, at: NOW - 1000 + seq, ttl: TTL };
}

let fixture: StoreFixture;

/** GET /envoys/{nodeId} through the deployed query handler. */
function getEnvoy(tableName: string, nodeId: string) {
  const query = createQueryHandler({ env: { TABLE_NAME: tableName, AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: fixture.endpoint }, logger: silentLogger, now: () => NOW });
  const path = `/envoys/${encodeURIComponent(nodeId)}`;
  return query({
    version: '2.0', routeKey: '$default', rawPath: path, rawQueryString: '', headers: {}, isBase64Encoded: false,
    requestContext: { http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' }, requestId: `get-${nodeId}` },
  } as unknown as APIGatewayProxyEventV2);
}

beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

test('GET /envoys/{id}: the 20 newest events from every part of the event log, once each', async () => {
  const tableName = await fixture.newTable();
  const { store } = fixture.openTable(tableName, silentLogger);
  // Seqs 1-2 as single items (before the upgrade), 3-40 in two log items, 41-43 carried by the STATE
  // (43 also logged: a crash between the log write and the STATE write).
  await store.putEvents([ack(1), ack(2, CDS_TYPE_URL)]);
  const logged = Array.from({ length: 41 }, (_, i) => ack(i + 3)).map(toCarriedEvent);
  expect(await store.putEventLogs([
    { nodeId: 'envoy-1', lineage: LINEAGE, events: logged.slice(0, 20) },
    { nodeId: 'envoy-1', lineage: LINEAGE, events: logged.slice(20, 38) },
    { nodeId: 'envoy-1', lineage: LINEAGE, events: [ack(43)].map(toCarriedEvent) },
  ])).toMatchObject({ written: 3, failed: [] });
  const state: EnvoyState = {
    nodeId: 'envoy-1', cluster: 'contour', group: 'contour', metadata: {}, lineage: LINEAGE, status: 'CONNECTED', connectedAt: NOW - 60_000, lastSeenAt: NOW - 1000,
    types: { [RDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked: 43 } }, unlogged: [41, 42, 43].map((seq) => toCarriedEvent(ack(seq))), rev: 0,
  };
  expect(await store.updateEnvoyState(state, undefined)).toEqual({ ok: true });

  const response = await getEnvoy(tableName, 'envoy-1');
  expect(response.statusCode).toBe(200);
  const body = JSON.parse(response.body) as { recentEvents: { seq: number; outcome: string; type: string }[] };
  expect(body.recentEvents.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 43 - i));
  expect(body.recentEvents[0]).toMatchObject({ outcome: 'ACK', type: 'RDS', seq: 43 });
});

test('GET /envoys/{id}: answers in the version log (a demoted Envoy) merged with its own log, newest first; other members\' answers not shown', async () => {
  const tableName = await fixture.newTable();
  const { store, versionLog } = fixture.openTable(tableName, silentLogger);
  // envoy-1 is member 3 of LINEAGE; member 4 is another Envoy in the same chunks.
  expect(await versionLog.putMembers([
    { nodeId: 'envoy-1', lineage: LINEAGE, member: 3, joinedAt: NOW - 60_000, ttl: TTL },
    { nodeId: 'envoy-2', lineage: LINEAGE, member: 4, joinedAt: NOW - 60_000, ttl: TTL },
  ])).toEqual({ written: 2, failed: [] });
  const chunk = (seq: number, ordinal: number, typeUrl: string, outcome: 'ACK' | 'STUCK' = 'ACK') => ({
    lineage: LINEAGE, typeUrl, seq, chunk: ordinal, baseAt: NOW - 900 + seq, ttl: TTL,
    entries: [{ member: 3, outcome, at: NOW - 900 + seq }, { member: 4, outcome: 'ACK' as const, at: NOW - 800 + seq }],
  });
  expect(await versionLog.putChunks([chunk(7, 0, RDS_TYPE_URL), chunk(8, 1, CDS_TYPE_URL, 'STUCK'), chunk(9, 2, RDS_TYPE_URL)])).toMatchObject({ written: 3, failed: [] });
  // Its NACK (with the message) on its own log, between the chunked answers.
  const nack: EnvoyEvent = { nodeId: 'envoy-1', outcome: 'NACK', lineage: LINEAGE, seq: 8, typeUrl: RDS_TYPE_URL, at: NOW - 895, ttl: TTL, message: 'duplicate domain' };
  expect(await store.putEventLogs([{ nodeId: 'envoy-1', lineage: LINEAGE, events: [toCarriedEvent(nack)] }])).toMatchObject({ written: 1, failed: [] });
  const state: EnvoyState = {
    nodeId: 'envoy-1', cluster: 'contour', group: 'contour', metadata: {}, lineage: LINEAGE, status: 'CONNECTED', connectedAt: NOW - 60_000, lastSeenAt: NOW - 1000,
    types: { [RDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked: 9 }, [CDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked: 7 } }, rev: 0,
  };
  expect(await store.updateEnvoyState(state, undefined)).toEqual({ ok: true });

  const response = await getEnvoy(tableName, 'envoy-1');
  expect(response.statusCode).toBe(200);
  const body = JSON.parse(response.body) as { recentEvents: { seq: number; outcome: string; type: string; at: number; message?: string }[] };
  expect(body.recentEvents.map((e) => [e.outcome, e.type, e.seq, e.at])).toEqual([
    ['ACK', 'RDS', 9, NOW - 891],
    ['STUCK', 'CDS', 8, NOW - 892],
    ['ACK', 'RDS', 7, NOW - 893],
    ['NACK', 'RDS', 8, NOW - 895],
  ]);
  expect(body.recentEvents[3]?.message).toBe('duplicate domain');
});
