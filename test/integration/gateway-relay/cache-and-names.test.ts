// Pure parts of the relay: the group cache's seq rules, reading resource names from bytes, and the
// ADS push order. (Unit tests of pure logic; they live with the relay's tests.)
import fc from 'fast-check';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL, encodeVersion } from '../../../common/core';
import { packAny } from '../../../common/xds';
import { pushOrder } from '../../../xds-gateway/relay/relay-group';
import { DISCOVERY_RESOURCE_WRAPPER_TYPE_URL, readTopLevelString, resourceNameOf } from '../../../xds-gateway/relay/resource-name';
import { deltaDiff, namesToDiff } from '../../../xds-gateway/relay/delta-downstream';
import { GroupCache, MAX_CHANGES_PER_TYPE } from '../../../xds-gateway/relay/type-cache';

const LINEAGE = 'gw.boot.grp';
const res = (name: string, body: string) => ({ name, resource: { type_url: CDS_TYPE_URL, value: Buffer.from(`${name}:${body}`) } });

describe('GroupCache', () => {
  test('first data takes seq 1; identical bytes keep the seq; any byte change takes the next seq', () => {
    const cache = new GroupCache('grp', LINEAGE);
    expect(cache.apply(CDS_TYPE_URL, [res('a', '1'), res('b', '1')])).toEqual({ changed: true, seq: 1 });
    expect(cache.apply(CDS_TYPE_URL, [res('b', '1'), res('a', '1')])).toEqual({ changed: false, seq: 1 });
    expect(cache.apply(LDS_TYPE_URL, [])).toEqual({ changed: true, seq: 2 }); // empty first data is still data
    expect(cache.apply(CDS_TYPE_URL, [res('a', '2'), res('b', '1')])).toEqual({ changed: true, seq: 3 });
    const snapshot = cache.snapshot(CDS_TYPE_URL);
    expect(snapshot?.version).toBe(encodeVersion({ lineage: LINEAGE, seq: 3 }));
    // Per-resource versions: only the changed resource moved.
    expect(snapshot?.resources.get('a')?.seq).toBe(3);
    expect(snapshot?.resources.get('b')?.seq).toBe(1);
    expect(cache.apply(CDS_TYPE_URL, [res('a', '2')])).toEqual({ changed: true, seq: 4 }); // removal
    expect(cache.typeHistory()).toEqual({ [CDS_TYPE_URL]: [1, 3, 4], [LDS_TYPE_URL]: [2] });
    expect(cache.currentSeq).toBe(4);
  });

  test('property: seq changes exactly when content (as a name→bytes map) changes, and never goes back', () => {
    const responses = fc.array(
      fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.constantFrom('x', 'y'), { maxKeys: 3 }),
      { minLength: 1, maxLength: 20 },
    );
    fc.assert(
      fc.property(responses, (sequence) => {
        const cache = new GroupCache('grp', LINEAGE);
        let previous: string | undefined;
        let lastSeq = 0;
        for (const content of sequence) {
          const key = JSON.stringify(Object.entries(content).sort());
          const result = cache.apply(CDS_TYPE_URL, Object.entries(content).map(([name, body]) => res(name, body)));
          expect(result.changed).toBe(key !== previous);
          expect(result.seq).toBe(result.changed ? lastSeq + 1 : lastSeq);
          previous = key;
          lastSeq = result.seq;
        }
      }),
    );
  });
});

describe('GroupCache.changesSince and the Delta diff', () => {
  const contents = fc.array(fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.constantFrom('x', 'y'), { maxKeys: 4 }), { minLength: 1, maxLength: 24 });
  const subscriptions = fc.record({ wildcard: fc.boolean(), names: fc.subarray(['a', 'b', 'c', 'd', 'e']) });
  const sorted = (diff: { resources: { name?: string | undefined }[]; removed: string[] }) => ({ resources: diff.resources.map((r) => r.name).sort(), removed: [...diff.removed].sort() });

  test('property: a client that held the cache at an earlier seq, and subscribed to more names since, is told what the whole diff tells it', () => {
    fc.assert(
      fc.property(contents, subscriptions, fc.nat(), fc.subarray(['a', 'b', 'c', 'd', 'e']), (sequence, subscription, pick, later) => {
        const cache = new GroupCache('grp', LINEAGE);
        // What a client subscribed to `subscription` held after each of the type's seqs: name → version.
        const heldAt = new Map<number, Map<string, string>>();
        const names = new Set(subscription.names);
        const subscribed = (name: string) => subscription.wildcard || names.has(name);
        for (const content of sequence) {
          const { changed, seq } = cache.apply(CDS_TYPE_URL, Object.entries(content).map(([name, body]) => res(name, body)));
          if (!changed) continue;
          const held = new Map<string, string>();
          for (const [name, cached] of cache.snapshot(CDS_TYPE_URL)?.resources ?? []) if (subscribed(name)) held.set(name, cached.version);
          heldAt.set(seq, held);
        }
        const seqs = [...heldAt.keys()];
        const from = seqs[pick % seqs.length] as number;
        const changedNames = cache.changesSince(CDS_TYPE_URL, from);
        // Kept for the last MAX_CHANGES_PER_TYPE changes (seqs holds the first data too, no change of its own).
        if (seqs.indexOf(from) < seqs.length - 1 - MAX_CHANGES_PER_TYPE) return expect(changedNames).toBeUndefined();
        if (changedNames === undefined) throw new Error(`no changes kept since seq ${from}`);
        const snapshot = cache.snapshot(CDS_TYPE_URL);
        if (snapshot === undefined) throw new Error('no snapshot');
        // Held as of `from` for the subscription then; the names subscribed since are not held.
        const subscribedSince = new Set(later.filter((name) => !subscribed(name)));
        const client = { wildcard: subscription.wildcard, names: new Set([...names, ...subscribedSince]), held: heldAt.get(from) as Map<string, string> };
        expect(sorted(deltaDiff(snapshot, client, namesToDiff(changedNames, subscribedSince)))).toEqual(sorted(deltaDiff(snapshot, client)));
        // Asked again (every stream at that seq asks), the same answer.
        expect(cache.changesSince(CDS_TYPE_URL, from)).toBe(changedNames);
      }),
      { numRuns: 500 },
    );
  });

  test('has nothing to diff from before a seq of the type, or before its first data', () => {
    const cache = new GroupCache('grp', LINEAGE);
    cache.apply(CDS_TYPE_URL, [res('a', '1')]);
    cache.apply(LDS_TYPE_URL, [res('l', '1')]);
    cache.apply(CDS_TYPE_URL, [res('a', '2'), res('b', '1')]);
    expect(cache.changesSince(CDS_TYPE_URL, 1)).toEqual(new Set(['a', 'b']));
    expect(cache.changesSince(CDS_TYPE_URL, 3)).toEqual(new Set());
    expect(cache.changesSince(CDS_TYPE_URL, 2)).toBeUndefined(); // LDS's seq, not one of CDS's
    expect(cache.changesSince(CDS_TYPE_URL, -1)).toBeUndefined(); // never sent
  });
});

describe('resource names from bytes', () => {
  test('field 1 of real resources, field 3 of the Resource wrapper', () => {
    const cluster = packAny(CDS_TYPE_URL, { name: 'default/app/8080', connect_timeout: { seconds: '5' }, type: 'EDS' });
    expect(resourceNameOf(CDS_TYPE_URL, cluster.value)).toBe('default/app/8080');
    const cla = packAny(EDS_TYPE_URL, { cluster_name: 'default/app/8080', endpoints: [{ lb_endpoints: [] }] });
    expect(resourceNameOf(EDS_TYPE_URL, cla.value)).toBe('default/app/8080');
    const wrapper = packAny('type.googleapis.com/envoy.service.discovery.v3.Resource', { version: 'v1', name: 'wrapped', resource: cluster });
    expect(resourceNameOf(DISCOVERY_RESOURCE_WRAPPER_TYPE_URL, wrapper.value)).toBe('wrapped');
  });

  test('malformed bytes throw instead of returning a wrong name', () => {
    expect(() => readTopLevelString(Uint8Array.from([0x0a, 0x05, 0x61]), 1)).toThrow(/past the end/);
    expect(() => readTopLevelString(Uint8Array.from([0x0b]), 1)).toThrow(/wire type 3/);
    expect(() => readTopLevelString(Uint8Array.from([0x08, 0x80]), 1)).toThrow(/varint/);
    expect(readTopLevelString(Uint8Array.from([]), 1)).toBeUndefined();
  });
});

test('ADS push order: SDS, CDS, EDS, LDS, RDS, then other types by name', () => {
  expect(pushOrder(['z.other', RDS_TYPE_URL, LDS_TYPE_URL, EDS_TYPE_URL, 'a.other', CDS_TYPE_URL, SDS_TYPE_URL])).toEqual([
    SDS_TYPE_URL,
    CDS_TYPE_URL,
    EDS_TYPE_URL,
    LDS_TYPE_URL,
    RDS_TYPE_URL,
    'a.other',
    'z.other',
  ]);
});
