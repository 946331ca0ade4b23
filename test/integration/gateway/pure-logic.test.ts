// Table-driven tests of the gateway's pure pieces: reading "processed generation" from statuses,
// merging Envoy states after a conflict, the lineage mirror, the leader → target mapping, config.
import fc from 'fast-check';
import { CDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, newEnvoyState, programmedThrough, typeVersionAt, type EnvoyState } from '../../../common/core';
import { parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { lineageBootPart, ownsLineage } from '../../../xds-gateway/relay/lineage-boot-part';
import { mergeEnvoyState } from '../../../xds-gateway/tracking/envoy-state-merge';
import { targetForHolder } from '../../../xds-gateway/tracking/leader-follower';
import { lineageStateFor, recordTypeChange } from '../../../xds-gateway/tracking/lineage-mirror';
import { HTTPPROXY_KIND, HTTPROUTE_KIND, observeObject, processedGeneration } from '../../../xds-gateway/tracking/tracked-kinds';

describe('processedGeneration', () => {
  const valid = { type: 'condition', conditionType: 'Valid' } as const;
  const parents = { type: 'parents' } as const;
  test.each([
    ['no status', valid, undefined, undefined],
    ['no conditions', valid, {}, undefined],
    ['conditions not a list', valid, { conditions: 'x' }, undefined],
    ['Valid with observedGeneration', valid, { conditions: [{ type: 'Other', observedGeneration: 9 }, { type: 'Valid', observedGeneration: 3 }] }, 3],
    ['Valid without observedGeneration', valid, { conditions: [{ type: 'Valid', status: 'True' }] }, undefined],
    ['observedGeneration not an integer', valid, { conditions: [{ type: 'Valid', observedGeneration: '3' }] }, undefined],
    ['parents: least advanced parent wins', parents, { parents: [{ conditions: [{ observedGeneration: 4 }, { observedGeneration: 5 }] }, { conditions: [{ observedGeneration: 6 }] }] }, 4],
    ['parents: a parent without conditions means unknown', parents, { parents: [{ conditions: [{ observedGeneration: 4 }] }, {}] }, undefined],
    ['parents: none', parents, { parents: [] }, undefined],
    ['parents: our own entries are never the controller\'s signal', parents, { parents: [{ controllerName: 'xds-programmed.dev/status', conditions: [{ observedGeneration: 9 }] }, { controllerName: 'c', conditions: [{ observedGeneration: 3 }] }] }, 3],
    ['parents: only our own entries: no signal', parents, { parents: [{ controllerName: 'xds-programmed.dev/status', conditions: [{ observedGeneration: 9 }] }] }, undefined],
  ])('%s', (_name, signal, status, expected) => {
    expect(processedGeneration(signal, status as Record<string, unknown> | undefined)).toBe(expected);
  });

  test('parents of other controllers are ignored when controllerName is set', () => {
    const status = { parents: [{ controllerName: 'a', conditions: [{ observedGeneration: 2 }] }, { controllerName: 'b', conditions: [{ observedGeneration: 7 }] }] };
    expect(processedGeneration({ type: 'parents', controllerName: 'b' }, status)).toBe(7);
  });

  test('observeObject reads ref, generation and processed; rejects objects without them', () => {
    expect(observeObject(HTTPPROXY_KIND, { metadata: { name: 'web', namespace: 'ns', generation: 2 }, status: { conditions: [{ type: 'Valid', observedGeneration: 1 }] } })).toEqual({
      ref: { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'ns', name: 'web' },
      generation: 2,
      processed: 1,
    });
    expect(observeObject(HTTPROUTE_KIND, { metadata: { name: 'r' } })).toBeUndefined();
    expect(observeObject(HTTPPROXY_KIND, null)).toBeUndefined();
    expect(observeObject(HTTPPROXY_KIND, { metadata: { name: 'web', generation: 0 } })).toBeUndefined();
  });
});

describe('mergeEnvoyState', () => {
  const identity = { nodeId: 'e1', cluster: 'edge', metadata: {} };
  const ours = (): EnvoyState => ({
    ...newEnvoyState({ identity, group: 'edge', lineage: 'gw.b2.edge', now: 100 }),
    types: { [LDS_TYPE_URL]: { lineage: 'gw.b2.edge', subscribed: true, acked: 3 } },
    programmedThrough: 3,
  });
  const stored = (): EnvoyState => ({
    ...newEnvoyState({ identity, group: 'edge', lineage: 'gw.b1.edge', now: 50 }),
    lastSeenAt: 200,
    types: {
      [LDS_TYPE_URL]: { lineage: 'gw.b1.edge', subscribed: true, acked: 9 },
      [CDS_TYPE_URL]: { lineage: 'gw.b1.edge', subscribed: true, acked: 8 },
    },
    rev: 4,
  });

  test('our lineage wins per type; foreign types we do not serve are kept; programmedThrough stays ours (own-lineage types)', () => {
    const merged = mergeEnvoyState(ours(), stored());
    expect(merged.types[LDS_TYPE_URL]).toEqual({ lineage: 'gw.b2.edge', subscribed: true, acked: 3 });
    expect(merged.types[CDS_TYPE_URL]?.lineage).toBe('gw.b1.edge');
    expect(merged.programmedThrough).toBe(3);
    expect(merged.lastSeenAt).toBe(200);
    expect(merged.lineage).toBe('gw.b2.edge');
  });

  test('without a stored state ours is written as is', () => {
    expect(mergeEnvoyState(ours(), undefined)).toEqual(ours());
  });

  test('a disconnect never overrides another gateway that holds the Envoy now', () => {
    const mine = { ...ours(), status: 'DISCONNECTED' as const };
    const theirs = { ...stored(), lineage: 'gw2.b9.edge', status: 'CONNECTED' as const };
    const merged = mergeEnvoyState(mine, theirs);
    expect(merged.status).toBe('CONNECTED');
    expect(merged.lineage).toBe('gw2.b9.edge');
  });

  test('a disconnect overrides a CONNECTED state of another lineage of this same process (a takeover from another node group)', () => {
    // The relay ended that connection itself when the node id moved to our group; kept, it stayed
    // CONNECTED in the table with no stream behind it (the hostile-node fuzz: every object waited).
    const mine = { ...ours(), status: 'DISCONNECTED' as const, rev: 2 };
    const previousGroup = { ...stored(), lineage: 'gw.b2.other', status: 'CONNECTED' as const };
    const merged = mergeEnvoyState(mine, previousGroup, (lineage) => lineage.startsWith('gw.b2.'));
    expect({ status: merged.status, lineage: merged.lineage, rev: merged.rev }).toEqual({ status: 'DISCONNECTED', lineage: 'gw.b2.edge', rev: 2 });
    // Another process's live connection still wins.
    expect(mergeEnvoyState(mine, { ...previousGroup, lineage: 'gw.b9.other' }, (lineage) => lineage.startsWith('gw.b2.')).status).toBe('CONNECTED');
  });

  test('an EXPIRED mark from the expire function is overridden while we hold a stream', () => {
    const merged = mergeEnvoyState(ours(), { ...stored(), lineage: 'gw.b2.edge', status: 'EXPIRED', types: {} });
    expect(merged.status).toBe('CONNECTED');
  });
});

describe('lineage mirror', () => {
  test('records changes in order, ignores duplicates, trims history and moves historyStart', () => {
    let state = lineageStateFor('gw.boot.edge', 'edge', 0);
    expect(state.instanceId).toBe('gw');
    expect(state.bootId).toBe('boot');
    state = recordTypeChange(state, LDS_TYPE_URL, 1, 1, 2);
    state = recordTypeChange(state, CDS_TYPE_URL, 2, 2, 2);
    expect(recordTypeChange(state, CDS_TYPE_URL, 2, 3, 2)).toBe(state);
    state = recordTypeChange(state, LDS_TYPE_URL, 3, 3, 2);
    state = recordTypeChange(state, LDS_TYPE_URL, 4, 4, 2);
    expect(state.typeHistory[LDS_TYPE_URL]).toEqual([3, 4]);
    expect(state.historyStart).toBe(2);
    expect(state.currentSeq).toBe(4);
  });

  test('property: programmedThrough from the mirror never claims a type version the Envoy has not ACKed', () => {
    const types = [LDS_TYPE_URL, CDS_TYPE_URL, RDS_TYPE_URL];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 30 }), fc.array(fc.nat(), { minLength: 3, maxLength: 3 }), (changes, ackPicks) => {
        let state = lineageStateFor('gw.boot.edge', 'edge', 0);
        changes.forEach((typeIndex, index) => {
          state = recordTypeChange(state, types[typeIndex] as string, index + 1, index + 1);
        });
        const acked: Record<string, number | undefined> = {};
        types.forEach((typeUrl, i) => {
          const history = state.typeHistory[typeUrl] ?? [];
          acked[typeUrl] = history.length === 0 ? 0 : history[(ackPicks[i] as number) % history.length];
        });
        const through = programmedThrough(acked, state.typeHistory, { currentSeq: state.currentSeq, historyStart: state.historyStart });
        if (through === undefined) return;
        for (const typeUrl of types) {
          const required = typeVersionAt(state.typeHistory[typeUrl], through) ?? 0;
          expect(acked[typeUrl] as number).toBeGreaterThanOrEqual(required);
        }
      }),
    );
  });
});

describe('targetForHolder', () => {
  test.each([
    ['empty holder', '', {}, {}, undefined],
    ['exact map', 'cp-1', { targets: { 'cp-1': '10.0.0.1:8001' } }, {}, '10.0.0.1:8001'],
    ['template', 'contour-abc', { template: '{holder}.contour:8001' }, {}, 'contour-abc.contour:8001'],
    ['annotation first', 'cp-1', { annotation: 'addr', targets: { 'cp-1': 'x:1' } }, { addr: '10.0.0.9:8001' }, '10.0.0.9:8001'],
    ['annotation missing falls back', 'cp-1', { annotation: 'addr', targets: { 'cp-1': 'x:1' } }, {}, 'x:1'],
    ['unknown holder', 'cp-2', { targets: { 'cp-1': 'x:1' } }, {}, undefined],
  ])('%s', (_name, holder, mapping, annotations, expected) => {
    expect(targetForHolder(holder, mapping, annotations)).toBe(expected);
  });
});

describe('parseGatewayConfig', () => {
  const required = ['--upstream', 'cp:8001', '--table', 'events', '--instance-id', 'gw-1', '--insecure-plaintext', '--upstream-insecure-plaintext'];

  test('defaults, flags and environment (flags win)', () => {
    const parsed = parseGatewayConfig([...required, '--ack-timeout-ms', '5000'], { ACK_TIMEOUT_MS: '7000', OPS_PORT: '9191', HOSTNAME: 'ignored' });
    expect(parsed.kind).toBe('ok');
    if (parsed.kind !== 'ok') return;
    expect(parsed.config.ackTimeoutMs).toBe(5000);
    expect(parsed.config.opsPort).toBe(9191);
    expect(parsed.config.listenPort).toBe(18000);
    expect(parsed.config.upstreamAds).toBe(true);
    expect(parsed.config.watermarks).toEqual(['provenance']);
    expect(parsed.config.trackedKinds).toEqual([HTTPPROXY_KIND]);
  });

  test('stream admission on by default, off on request', () => {
    const byDefault = parseGatewayConfig(required, {});
    expect(byDefault.kind === 'ok' && byDefault.config.streamAdmission).toBe(true);
    const off = parseGatewayConfig([...required, '--stream-admission', 'false'], {});
    expect(off.kind === 'ok' && off.config.streamAdmission).toBe(false);
  });

  test('event log mode: chunks by default (with the demoted states), carried on the shard path, items on request, anything else refused', () => {
    const byDefault = parseGatewayConfig(required, {});
    expect(byDefault.kind === 'ok' && byDefault.config.eventLogMode).toBe('chunks');
    const shardPath = parseGatewayConfig([...required, '--progress', 'false'], {});
    expect(shardPath.kind === 'ok' && shardPath.config.eventLogMode).toBe('carried');
    const everyState = parseGatewayConfig([...required, '--state-writes', 'every'], {});
    expect(everyState.kind === 'ok' && [everyState.config.progress, everyState.config.eventLogMode]).toEqual([true, 'carried']);
    const items = parseGatewayConfig(required, { EVENT_LOG_MODE: 'items' });
    expect(items.kind === 'ok' && items.config.eventLogMode).toBe('items');
    const bad = parseGatewayConfig([...required, '--event-log-mode', 'both'], {});
    expect(bad.kind).toBe('error');
    expect(bad.kind === 'error' && bad.message).toContain('--event-log-mode');
  });

  test('the fleet-size path by default (PROGRESS, class-changes); every with --progress false; class-changes only with --progress', () => {
    const byDefault = parseGatewayConfig(required, {});
    expect(byDefault.kind === 'ok' && [byDefault.config.progress, byDefault.config.stateWrites]).toEqual([true, 'class-changes']);
    const shardPath = parseGatewayConfig(required, { PROGRESS: 'false' });
    expect(shardPath.kind === 'ok' && [shardPath.config.progress, shardPath.config.stateWrites]).toEqual([false, 'every']);
    const demoted = parseGatewayConfig([...required, '--progress', 'true', '--state-writes', 'class-changes', '--state-refresh-ms', '60000'], {});
    expect(demoted.kind === 'ok' && [demoted.config.stateWrites, demoted.config.stateRefreshMs]).toEqual(['class-changes', 60_000]);
    const alone = parseGatewayConfig([...required, '--progress', 'false', '--state-writes', 'class-changes'], {});
    expect(alone.kind).toBe('error');
    expect(alone.kind === 'error' && alone.message).toContain('--state-writes class-changes needs --progress true');
  });

  test('instance id from HOSTNAME when not given', () => {
    const parsed = parseGatewayConfig(['--upstream', 'cp:8001', '--table', 'events', '--insecure-plaintext', '--upstream-insecure-plaintext'], { HOSTNAME: 'Gateway-7f9c_x' });
    expect(parsed.kind === 'ok' && parsed.config.instanceId).toBe('gateway-7f9c-x');
  });

  test.each([
    [['--table', 'events', '--instance-id', 'g', '--insecure-plaintext', '--upstream-insecure-plaintext'], '--upstream (UPSTREAM_TARGET)'],
    [[...required, '--listen-port', '99999'], '--listen-port (XDS_LISTEN_PORT)'],
    [[...required, '--watermarks', 'provenance,magic'], '--watermarks'],
    [[...required, '--watermarks', 'barrier'], 'needs --kubeconfig'],
    [[...required, '--upstream-tls-cert', '/c.pem'], 'go together'],
    [[...required, '--leader-lease', 'ns/name', '--kubeconfig', '/k'], '--leader-lease needs'],
    [[...required, '--tracked-kinds', 'gizmo'], 'unknown kind preset'],
    [[...required, '--tracked-kinds', '[{"group":"g","version":"v1","kind":"K","plural":"ks","signal":{"type":"maybe"}}]'], '--tracked-kinds'],
    [[...required, '--no-such-flag'], 'unknown option'],
  ])('rejects %j with a clear message', (argv, message) => {
    const parsed = parseGatewayConfig(argv, {});
    expect(parsed.kind).toBe('error');
    expect(parsed.kind === 'error' && parsed.message).toContain(message);
  });

  test('--help lists every flag with its environment variable', () => {
    const parsed = parseGatewayConfig(['--help'], {});
    expect(parsed.kind).toBe('help');
    expect(parsed.kind === 'help' && parsed.text).toContain('--upstream <host:port>');
    expect(parsed.kind === 'help' && parsed.text).toContain('env TABLE_NAME');
  });

  test('JSON tracked kinds and leader mapping', () => {
    const kinds = JSON.stringify([{ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', signal: { type: 'none' } }]);
    const parsed = parseGatewayConfig([...required, '--tracked-kinds', kinds, '--kubeconfig', '/k', '--watermarks', 'barrier', '--leader-lease', 'projectcontour/leader-elect', '--leader-targets', '{"contour-0":"10.0.0.1:8001"}'], {});
    expect(parsed.kind).toBe('ok');
    if (parsed.kind !== 'ok') return;
    expect(parsed.config.trackedKinds[0]?.signal).toEqual({ type: 'none' });
    expect(parsed.config.leaderTargets).toEqual({ 'contour-0': '10.0.0.1:8001' });
  });
});

describe('ownsLineage', () => {
  const boot = '4ab48296d41d';
  test.each([
    ['the first lineage of a group', `gw.${boot}.edge`, true],
    ['a later lineage of a group (epoch suffix)', `gw.${lineageBootPart(boot, 12)}.edge`, true],
    ['another boot of the same instance', 'gw.000000000000.edge', false],
    ['another boot with an epoch suffix', 'gw.000000000000-l3.edge', false],
    ['another instance', `gw2.${boot}.edge`, false],
    ['not a lineage', `gw.${boot}`, false],
  ])('%s', (_name, lineage, expected) => {
    expect(ownsLineage(lineage, 'gw', boot)).toBe(expected);
  });
});
