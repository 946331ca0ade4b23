// Pure parts of the relay: the group cache's seq rules, reading resource names from bytes, and the
// ADS push order. (Unit tests of pure logic; they live with the relay's tests.)
import fc from 'fast-check';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL, SDS_TYPE_URL, encodeVersion } from '../../../common/core';
import { packAny } from '../../../common/xds';
import { pushOrder } from '../../../xds-gateway/relay/relay-group';
import { DISCOVERY_RESOURCE_WRAPPER_TYPE_URL, readTopLevelString, resourceNameOf } from '../../../xds-gateway/relay/resource-name';
import { GroupCache } from '../../../xds-gateway/relay/type-cache';

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
