import fc from 'fast-check';
import {
  ttlEpochSeconds,
  type ObjectRef,
} from '../../../common/core';
import { envoyEventKey, envoyStateKey, lineageStateKey, objectGenerationKey, parseItem, toEnvoyEventItem, toEnvoyStateItem, toLineageStateItem, toObjectGenerationItem, envoyStateFromItem, SCHEMA_VERSION, type TableItem } from '../../../common/store';
import { CDS, L1, LDS, RDS, T0, envoy } from './fixtures';

const ref: ObjectRef = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' };

describe('key builders', () => {
  it.each([
    [envoyStateKey('envoy-1'), { pk: 'ENVOY#envoy-1', sk: 'STATE' }],
    [envoyEventKey('envoy-1', { lineage: L1, seq: 42 }, RDS, 'NACK'), { pk: 'ENVOY#envoy-1', sk: `EVENT#${L1}#0000000000000042#${RDS}#NACK` }],
    [objectGenerationKey(ref, 7), { pk: 'OBJECT#projectcontour.io/HTTPProxy/default/web', sk: 'GEN#0000000000000007' }],
    [lineageStateKey(L1), { pk: `LINEAGE#${L1}`, sk: 'STATE' }],
  ])('key %#', (key, expected) => {
    expect(key).toEqual(expected);
  });

  it('orders generation keys numerically', () => {
    const generations = [1, 2, 9, 10, 11, 100, 99, 12345678901];
    const sorted = generations.map((g) => objectGenerationKey(ref, g).sk).sort();
    expect(sorted).toEqual([...generations].sort((a, b) => a - b).map((g) => objectGenerationKey(ref, g).sk));
  });

  it('orders event keys by seq within a lineage', () => {
    const keys = [5, 50, 7, 1000].map((seq) => envoyEventKey('n', { lineage: L1, seq }, CDS, 'ACK').sk).sort();
    expect(keys.map((sk) => Number(sk.split('#')[2]))).toEqual([5, 7, 50, 1000]);
  });

  it('computes TTL in epoch seconds', () => {
    expect(ttlEpochSeconds(1_000_500, 60_000)).toBe(1061);
  });
});

const goodState = toEnvoyStateItem(envoy('envoy-1', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 } }, [LDS]: { nack: { seq: 5, message: 'bad listener', at: T0 } } }, { metadata: { zone: 'a' } }));
const goodEvent = toEnvoyEventItem({ nodeId: 'envoy-1', outcome: 'NACK', lineage: L1, seq: 5, typeUrl: LDS, at: T0, message: 'bad listener', ttl: 1_800_000_000 });
const goodGeneration = toObjectGenerationItem({
  object: ref,
  generation: 7,
  watermarks: { [L1]: { seq: 12, types: { [CDS]: 10, [RDS]: 12 }, at: T0 } },
  firstSeenAt: T0,
  lastCondition: { type: 'EnvoyProgrammed', status: 'False', observedGeneration: 7, lastTransitionTime: '2026-01-01T00:00:00.000Z', reason: 'Pending', message: '1/2' },
});
const goodLineage = toLineageStateItem({
  lineage: L1, instanceId: 'gw-a', bootId: 'boot1', group: 'edge', currentSeq: 12,
  typeHistory: { [CDS]: [1, 10], [RDS]: [2, 12] }, historyStart: 0, startedAt: T0, heartbeatAt: T0, rev: 3,
});

describe('parseItem accepts what the builders write', () => {
  it.each([[goodState], [goodEvent], [goodGeneration], [goodLineage]] as [TableItem][])('%#', (item) => {
    // Round-trip through JSON, as an unmarshalled DynamoDB item would arrive.
    const raw = JSON.parse(JSON.stringify(item)) as Record<string, unknown>;
    expect(parseItem(raw)).toEqual({ ok: true, item });
  });

  it('strips keys back to the record', () => {
    const parsed = parseItem(JSON.parse(JSON.stringify(goodState)) as Record<string, unknown>);
    expect(parsed.ok && parsed.item.kind === 'EnvoyState' && envoyStateFromItem(parsed.item)).toEqual(envoy('envoy-1', { [CDS]: { acked: 3, pending: { seq: 4, sentAt: T0 } }, [LDS]: { nack: { seq: 5, message: 'bad listener', at: T0 } } }, { metadata: { zone: 'a' } }));
  });

  it('ignores unknown extra attributes (forward compatible)', () => {
    const parsed = parseItem({ ...goodEvent, addedLater: 'x' });
    expect(parsed.ok).toBe(true);
  });
});

function mutate(item: TableItem, change: (raw: Record<string, unknown>) => void): Record<string, unknown> {
  const raw = JSON.parse(JSON.stringify(item)) as Record<string, unknown>;
  change(raw);
  return raw;
}

describe('parseItem rejects corrupt items, with the key and a reason, never throwing', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no keys', { kind: 'EnvoyState' }, /pk\/sk/],
    ['numeric pk', mutate(goodState, (r) => { r.pk = 5; }), /pk\/sk/],
    ['unknown kind', mutate(goodState, (r) => { r.kind = 'Mystery'; }), /unknown kind/],
    ['no kind', mutate(goodState, (r) => { delete r.kind; }), /unknown kind/],
    ['future schema version', mutate(goodState, (r) => { r.schemaVersion = SCHEMA_VERSION + 1; }), /schemaVersion/],
    ['schema version as string', mutate(goodState, (r) => { r.schemaVersion = '1'; }), /schemaVersion/],
    ['state: bad status', mutate(goodState, (r) => { r.status = 'ONLINE'; }), /status/],
    ['state: negative rev', mutate(goodState, (r) => { r.rev = -1; }), /rev/],
    ['state: fractional time', mutate(goodState, (r) => { r.lastSeenAt = 1.5; }), /lastSeenAt/],
    ['state: time as string', mutate(goodState, (r) => { r.connectedAt = '2026-01-01'; }), /connectedAt/],
    ['state: bad lineage', mutate(goodState, (r) => { r.lineage = 'not a lineage'; }), /lineage/],
    ['state: type with bad lineage', mutate(goodState, (r) => { (r.types as Record<string, Record<string, unknown>>)[CDS]!.lineage = 'x'; }), /lineage/],
    ['state: acked negative', mutate(goodState, (r) => { (r.types as Record<string, Record<string, unknown>>)[CDS]!.acked = -3; }), /acked/],
    ['state: nack without message', mutate(goodState, (r) => { delete (r.types as Record<string, Record<string, Record<string, unknown>>>)[LDS]!.nack!.message; }), /message/],
    ['state: type key with #', mutate(goodState, (r) => { (r.types as Record<string, unknown>)['a#b'] = { lineage: L1, subscribed: true }; }), /types\.a#b: Invalid key/],
    ['state: key/content mismatch', mutate(goodState, (r) => { r.nodeId = 'envoy-2'; }), /does not match/],
    ['state: empty node id', mutate(goodState, (r) => { r.nodeId = ''; }), /nodeId/],
    ['event: NACK without message', mutate(goodEvent, (r) => { delete r.message; }), /message/],
    ['event: bad outcome', mutate(goodEvent, (r) => { r.outcome = 'MAYBE'; }), /outcome/],
    ['event: sk for another seq', mutate(goodEvent, (r) => { r.seq = 6; }), /does not match/],
    ['event: missing ttl', mutate(goodEvent, (r) => { delete r.ttl; }), /ttl/],
    ['event: oversized message', mutate(goodEvent, (r) => { r.message = 'x'.repeat(100_000); }), /message/],
    ['generation: zero generation', mutate(goodGeneration, (r) => { r.generation = 0; }), /generation/],
    ['generation: bad object ref', mutate(goodGeneration, (r) => { (r.object as Record<string, unknown>).name = 'Bad/Name'; }), /name/],
    ['generation: watermark seq string', mutate(goodGeneration, (r) => { (r.watermarks as Record<string, Record<string, unknown>>)[L1]!.seq = '12'; }), /seq/],
    ['generation: watermark under bad lineage', mutate(goodGeneration, (r) => { (r.watermarks as Record<string, unknown>)['bad'] = { seq: 1, types: {}, at: T0 }; }), /watermarks\.bad: Invalid key/],
    ['generation: condition status', mutate(goodGeneration, (r) => { (r.lastCondition as Record<string, unknown>).status = 'Yes'; }), /status/],
    ['generation: condition reason with spaces', mutate(goodGeneration, (r) => { (r.lastCondition as Record<string, unknown>).reason = 'not ok'; }), /reason/],
    ['lineage: history not ascending', mutate(goodLineage, (r) => { (r.typeHistory as Record<string, unknown>)[CDS] = [10, 1]; }), /ascending/],
    ['lineage: key mismatch', mutate(goodLineage, (r) => { r.lineage = 'gw-z.boot1.edge'; }), /does not match/],
  ])('%s', (_name, raw, reason) => {
    const parsed = parseItem(raw);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toMatch(reason);
      if (typeof raw.pk === 'string' && typeof raw.sk === 'string') expect(parsed.key).toEqual({ pk: raw.pk, sk: raw.sk });
    }
  });
});

describe('parseItem on arbitrary input (property)', () => {
  const goods: TableItem[] = [goodState, goodEvent, goodGeneration, goodLineage];
  it('never throws, and any change to a field either still validates or is reported with the key', () => {
    fc.assert(
      fc.property(fc.nat(3), fc.nat(40), fc.anything(), (which, fieldIndex, value) => {
        const raw = JSON.parse(JSON.stringify(goods[which]!)) as Record<string, unknown>;
        const fields = Object.keys(raw);
        const field = fields[fieldIndex % fields.length]!;
        raw[field] = value;
        const parsed = parseItem(raw);
        if (!parsed.ok && field !== 'pk' && field !== 'sk') expect(parsed.key).toEqual({ pk: raw.pk, sk: raw.sk });
        if (parsed.ok) expect(parsed.item.kind).toBe(goods[which]!.kind);
      }),
      { numRuns: 1000 },
    );
  });

  it('never throws on arbitrary objects', () => {
    fc.assert(
      fc.property(fc.object(), (raw) => {
        expect(parseItem(raw).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
