// Pure logic of the fleet views: the istioctl proxy-status classification of one type (sent against
// acknowledged, functions/query/views.ts), the query API's validation of the Envoy drill-down route,
// the sorted proxy-status table with its version and lineage columns, the drill-down's text, and how
// several objects' outcomes make one exit code.
import { combinedExitCode } from '../../../common/cli/main';
import type { EnvoyDetail, EnvoySummary } from '../../../common/cli/query-client';
import { PLAIN, renderEnvoyDetail, renderProxyStatus, syncLabel } from '../../../common/cli/render';
import type { TypeState } from '../../../common/core';
import { HttpError } from '../../../functions/query/http';
import { route } from '../../../functions/query/routes';
import { lastSentSeq, sentSync } from '../../../functions/query/views';

const LINEAGE = 'gw-0.boot-1.ingress';
const type = (extra: Partial<TypeState>): TypeState => ({ lineage: LINEAGE, subscribed: true, ...extra });

describe('sent against acknowledged, as istioctl proxy-status', () => {
  it.each<[string, TypeState, number | undefined, string]>([
    ['nothing sent', type({}), undefined, 'NOT_SENT'],
    ['the last response sent is ACKed', type({ acked: 5 }), 5, 'SYNCED'],
    ['a response out, never acknowledged', type({ pending: { seq: 2, sentAt: 1 } }), 2, 'STALE'],
    ['a newer response out', type({ acked: 3, pending: { seq: 5, sentAt: 1 } }), 5, 'STALE'],
    ['the last response sent was NACKed', type({ acked: 3, nack: { seq: 5, message: 'bad', at: 1 } }), 5, 'NACKED'],
    ['NACKed, and a newer response is out', type({ acked: 3, nack: { seq: 5, message: 'bad', at: 1 }, pending: { seq: 6, sentAt: 2 } }), 6, 'STALE'],
    ['an older NACK, a newer version ACKed', type({ acked: 7, nack: { seq: 5, message: 'bad', at: 1 } }), 7, 'SYNCED'],
    ['NACKed before anything was accepted', type({ nack: { seq: 1, message: 'bad', at: 1 } }), 1, 'NACKED'],
  ])('%s', (_name, state, sent, sync) => {
    expect(lastSentSeq(state)).toBe(sent);
    expect(sentSync(state)).toBe(sync);
  });
});

describe('GET /envoys/{nodeId}: input checked at the edge', () => {
  const badRequest = (path: string, query: Record<string, string> = {}): HttpError => {
    try {
      route(path, query);
    } catch (error) {
      if (error instanceof HttpError) return error;
      throw error;
    }
    throw new Error(`no error for ${path}`);
  };

  it('takes a URL-encoded node id and a number of recent events (default 20)', () => {
    expect(route(`/envoys/${encodeURIComponent('ns/pod 1')}`, {})).toEqual({ name: 'envoy', nodeId: 'ns/pod 1', events: 20 });
    expect(route('/envoys/envoy-0', { events: '0' })).toEqual({ name: 'envoy', nodeId: 'envoy-0', events: 0 });
    expect(route('/envoys/envoy-0', { events: '100' })).toMatchObject({ events: 100 });
  });

  it.each<[string, Record<string, string>, string]>([
    ['/envoys/a%07b', {}, 'node id has the control or format character U+0007 at index 1; node ids never contain one'],
    ['/envoys/a%E2%80%AEb', {}, 'node id has the control or format character U+202E at index 1; node ids never contain one'],
    [`/envoys/${'x'.repeat(1025)}`, {}, 'node id must be 1-1024 characters'],
    ['/envoys/envoy-0', { events: '101' }, 'events: events must be at most 100'],
    ['/envoys/envoy-0', { events: '-1' }, 'events: events must be a whole number'],
    ['/envoys/envoy-0', { events: 'all' }, 'events: events must be a whole number'],
    ['/envoys/envoy-0', { limit: '5' }, 'unknown query parameter(s): limit'],
  ])('%s %j → 400 %s', (path, query, message) => {
    const error = badRequest(path, query);
    expect(error.statusCode).toBe(400);
    expect(error.message).toBe(message);
  });
});

function envoy(nodeId: string, types: Array<{ type: string; sync: 'SYNCED' | 'NOT_SENT' | 'STALE' | 'NACKED' }>, programmedThrough: number | null): EnvoySummary {
  return {
    nodeId,
    cluster: 'ingress',
    group: 'ingress',
    status: 'CONNECTED',
    live: true,
    lineage: LINEAGE,
    gateway: { instanceId: 'gw-0', currentSeq: 9, heartbeatAt: 0 },
    programmedThrough,
    connectedAt: 0,
    lastSeenAt: 0,
    types: types.map((t) => ({ type: t.type, typeUrl: `type.googleapis.com/${t.type}`, status: t.sync, sync: t.sync })),
  };
}

describe('the proxy-status table', () => {
  it('is sorted by node id (code-unit order), with a column per type, then gateway, lineage and version', () => {
    const fleet = [
      envoy('envoy-b', [{ type: 'CDS', sync: 'SYNCED' }, { type: 'RDS', sync: 'STALE' }], 7),
      envoy('envoy-B', [{ type: 'CDS', sync: 'NOT_SENT' }], null),
      envoy('envoy-a', [{ type: 'CDS', sync: 'NACKED' }, { type: 'RDS', sync: 'SYNCED' }], 9),
    ];
    const lines = renderProxyStatus(fleet, PLAIN, { now: 0 }).split('\n').map((line) => line.split(/\s{2,}/));
    expect(lines).toEqual([
      ['NAME', 'CLUSTER', 'CDS', 'RDS', 'GATEWAY', 'LINEAGE', 'VERSION', 'STATUS'],
      ['envoy-B', 'ingress', 'NOT SENT', '-', 'gw-0', LINEAGE, '-', 'CONNECTED'],
      ['envoy-a', 'ingress', 'NACKED', 'SYNCED', 'gw-0', LINEAGE, '9', 'CONNECTED'],
      ['envoy-b', 'ingress', 'SYNCED', 'STALE', 'gw-0', LINEAGE, '7', 'CONNECTED'],
    ]);
    // The same rows whatever order the query API answered in.
    expect(renderProxyStatus([...fleet].reverse(), PLAIN, { now: 0 })).toBe(renderProxyStatus(fleet, PLAIN, { now: 0 }));
    expect(renderProxyStatus(fleet, PLAIN, { wide: true, now: 0 }).split('\n')[0]).toMatch(/VERSION\s+GROUP\s+CURRENT\s+CONNECTED\s+LAST-SEEN\s+STATUS$/);
  });

  it('shows the version its lineage\'s PROGRESS vouches for when the stored state is behind (fleet-size path)', () => {
    const behind = { ...envoy('envoy-c', [{ type: 'CDS', sync: 'STALE' }], 4), progress: { lineage: LINEAGE, v: 3, asOf: 0, programmedThroughAtLeast: 9, listed: false } };
    const listed = { ...envoy('envoy-d', [{ type: 'CDS', sync: 'SYNCED' }], 4), progress: { lineage: LINEAGE, v: 3, asOf: 0, programmedThroughAtLeast: 8, listed: true } };
    const ahead = { ...envoy('envoy-e', [{ type: 'CDS', sync: 'SYNCED' }], 9), progress: { lineage: LINEAGE, v: 3, asOf: 0, programmedThroughAtLeast: 5, listed: false } };
    const versions = renderProxyStatus([behind, listed, ahead], PLAIN, { now: 0 }).split('\n').slice(1).map((line) => line.split(/\s{2,}/)[5]);
    expect(versions).toEqual(['≥9', '8', '9']);
    const detail = renderEnvoyDetail({ ...behind, recentEvents: [] }, PLAIN, 60_000);
    expect(detail).toContain("programmed: through version 4 in its stored state; at least through version 9 by its lineage's PROGRESS of 1m0s ago");
  });

  it('falls back to the status field of a query API without sync', () => {
    expect(syncLabel({ type: 'CDS', typeUrl: 'x', status: 'NOT_SENT' })).toBe('NOT SENT');
    expect(syncLabel({ type: 'CDS', typeUrl: 'x', status: 'NOT_SENT', sync: 'SYNCED' })).toBe('SYNCED');
  });
});

describe('the drill-down of one Envoy', () => {
  it('shows per type the version sent, since when unanswered, the version ACKed and the last NACK', () => {
    const now = 1_800_000_000_000;
    const detail: EnvoyDetail = {
      ...envoy('envoy-0', [], 7),
      types: [
        { type: 'CDS', typeUrl: 'c', status: 'SYNCED', sync: 'SYNCED', acked: 7, current: 7, sent: { seq: 7, version: `xp1:${LINEAGE}:7` }, ackedVersion: `xp1:${LINEAGE}:7`, nack: null, lastNack: { seq: 5, version: `xp1:${LINEAGE}:5`, message: 'old trouble', at: now - 60_000, cleared: true } },
        { type: 'RDS', typeUrl: 'r', status: 'NACKED', sync: 'NACKED', acked: 6, current: 8, sent: { seq: 8, version: `xp1:${LINEAGE}:8` }, ackedVersion: `xp1:${LINEAGE}:6`, nack: { seq: 8, version: `xp1:${LINEAGE}:8`, message: 'unknown cluster', at: now - 2000 }, lastNack: { seq: 8, version: `xp1:${LINEAGE}:8`, message: 'unknown cluster', at: now - 2000, cleared: false } },
        { type: 'EDS', typeUrl: 'e', status: 'STALE', sync: 'STALE', current: 8, sent: { seq: 8, version: `xp1:${LINEAGE}:8`, at: now - 4000 }, ackedVersion: null, nack: null, lastNack: null },
      ],
      recentEvents: [{ outcome: 'NACK', type: 'RDS', lineage: LINEAGE, seq: 8, at: now - 2000, message: 'unknown cluster' }],
    };
    const text = renderEnvoyDetail(detail, PLAIN, now);
    const row = (type: string) => text.split('\n').find((line) => line.startsWith(`${type} `))?.split(/\s{2,}/);
    expect(row('CDS')).toEqual(['CDS', 'SYNCED', `xp1:${LINEAGE}:7`, '-', `xp1:${LINEAGE}:7`, '7']);
    expect(row('RDS')).toEqual(['RDS', 'NACKED', `xp1:${LINEAGE}:8`, '-', `xp1:${LINEAGE}:6`, '8']);
    expect(row('EDS')).toEqual(['EDS', 'STALE', `xp1:${LINEAGE}:8`, '4s ago', 'never acknowledged', '8']);
    expect(text).toContain(`  RDS xp1:${LINEAGE}:8 at ${new Date(now - 2000).toISOString()} (2s ago): unknown cluster`);
    expect(text).toContain(`  CDS xp1:${LINEAGE}:5 at ${new Date(now - 60_000).toISOString()} (1m0s ago) (a later version was ACKed): old trouble`);
    expect(text).toMatch(/recent events \(newest first\):\n\s+AT\s+OUTCOME\s+TYPE\s+VERSION\s+MESSAGE\n.*NACK\s+RDS\s+xp1:gw-0\.boot-1\.ingress:8\s+unknown cluster/);
  });
});

describe('several objects, one exit code', () => {
  it('is the first failure in the order the objects were named, 0 when all succeed', () => {
    expect(combinedExitCode([0, 0])).toBe(0);
    expect(combinedExitCode([0, 6, 1])).toBe(6);
    expect(combinedExitCode([1, 7])).toBe(1);
    expect(combinedExitCode([])).toBe(0);
  });
});
