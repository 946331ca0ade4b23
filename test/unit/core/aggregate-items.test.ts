// The aggregate-side items are parseItem kinds (key checks included), and a stored decision that fails
// validation is dropped with a warning instead of making the OBJECT item unreadable.
import {
  applyMember,
  emptyShard,
  progressFromStates,
} from '../../../common/core';
import { aggregateShardKey, ITEM_KIND, LINEAGE_REGISTRY_KEY, objectGenerationKey, parseItem, pendingKey, SCHEMA_VERSION, toLineageProgressItem, toObjectGenerationItem } from '../../../common/store';
import { CDS, envoy, L1, T0 } from './fixtures';

const object = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default', name: 'web' };
const shard = applyMember(emptyShard(L1, 3), 'envoy-a', { t: 4, r: 1, live: true, s: T0 }).shard;
const progress = toLineageProgressItem(
  progressFromStates({ lineage: L1, v: 3, heartbeatAt: T0, states: [envoy('envoy-a', { [CDS]: { acked: 4 } }, { programmedThrough: 4 })], openWatermarks: [], requiredTypeUrls: [], policy: { ttlMs: 60_000, ackTimeoutMs: 30_000 } }),
);
if (!progress.ok) throw new Error(progress.error);

const items: [string, Record<string, unknown>][] = [
  ['aggregate shard', { ...aggregateShardKey(L1, 3), kind: ITEM_KIND.aggregateShard, schemaVersion: SCHEMA_VERSION, ...shard }],
  ['lineage registry', { ...LINEAGE_REGISTRY_KEY, kind: ITEM_KIND.lineageRegistry, schemaVersion: SCHEMA_VERSION, v: 2, lineages: { [L1]: T0 } }],
  ['pending generation', { ...pendingKey(L1, 7, object, 2), kind: ITEM_KIND.pendingGeneration, schemaVersion: SCHEMA_VERSION, lineage: L1, seq: 7, object, generation: 2 }],
  ['pending generation marked done (legacy)', { ...pendingKey(L1, 7, object, 2), kind: ITEM_KIND.pendingGeneration, schemaVersion: SCHEMA_VERSION, lineage: L1, seq: 7, object, generation: 2, done: true, ttl: 1_700_003_600 }],
  ['lineage progress', progress.item],
];

describe('aggregate items are parseItem kinds', () => {
  it.each(items)('%s parses (JSON round trip, as read back)', (_name, raw) => {
    const parsed = parseItem(JSON.parse(JSON.stringify(raw)) as Record<string, unknown>);
    expect(parsed).toMatchObject({ ok: true, item: { kind: raw['kind'], pk: raw['pk'], sk: raw['sk'] } });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['shard under another lineage key', { ...items[0]![1], pk: 'AGG#gw-b.boot1.edge' }, 'key does not match content'],
    ['shard under another shard number', { ...items[0]![1], sk: 'SHARD#004' }, 'key does not match content'],
    ['registry elsewhere', { ...items[1]![1], sk: 'OTHER' }, 'key does not match content'],
    ['pending entry with another seq', { ...items[2]![1], seq: 8 }, 'key does not match content'],
    ['shard with a bad member', { ...items[0]![1], members: { a: { t: -5, r: 0, live: true, s: T0 } } }, 'members.a.t'],
    ['registry with a bad heartbeat', { ...items[1]![1], lineages: { [L1]: 'yesterday' } }, 'lineages'],
    ['progress under another lineage key', { ...progress.item, pk: 'AGG#gw-b.boot1.edge' }, 'key does not match content'],
    ['progress whose counts do not add up', { ...progress.item, members: 2 }, 'is not the sum of the counts'],
  ])('rejects %s, with the key and a reason', (_name, raw, reason) => {
    const parsed = parseItem(raw);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.key).toEqual({ pk: raw['pk'], sk: raw['sk'] });
    expect(parsed.error).toContain(reason);
  });
});

describe('a stored decision that fails validation', () => {
  const record = { object, generation: 2, watermarks: { [L1]: { seq: 7, types: {}, at: T0 } }, firstSeenAt: T0 };
  const valid = { state: 'Pending', programmed: 1, total: 2, blockers: [], blockersOmitted: 0, decidedAt: T0, evaluatedRev: 3 };

  it('is dropped with a warning; the watermarks stay readable', () => {
    const raw = { ...toObjectGenerationItem(record), decision: { ...valid, state: 'Maybe' } };
    const parsed = parseItem(raw);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.item).toMatchObject({ kind: ITEM_KIND.objectGeneration, watermarks: record.watermarks });
    expect('decision' in parsed.item).toBe(false);
    expect(parsed.warnings).toHaveLength(1);
    expect(parsed.warnings?.[0]).toContain(`${objectGenerationKey(object, 2).pk} / ${objectGenerationKey(object, 2).sk}`);
    expect(parsed.warnings?.[0]).toContain('decision');
  });

  it('a valid one is kept, without warnings', () => {
    const parsed = parseItem({ ...toObjectGenerationItem(record), decision: valid });
    expect(parsed).toMatchObject({ ok: true, item: { decision: valid } });
    expect(parsed.ok && parsed.warnings).toBeFalsy();
  });

  it('the rest of the item is still validated strictly', () => {
    expect(parseItem({ ...toObjectGenerationItem(record), decision: { state: 'Maybe' }, generation: -1 }).ok).toBe(false);
  });
});
