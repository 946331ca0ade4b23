import fc from 'fast-check';
import {
  formatObjectRef,
  formatSourceRef,
  groupByCluster,
  groupByMetadata,
  lineageGroupId,
  parseObjectRef,
  parseSourceRef,
  shortTypeName,
  isValidTypeUrl,
  CDS_TYPE_URL,
  EDS_TYPE_URL,
  LDS_TYPE_URL,
  RDS_TYPE_URL,
  SDS_TYPE_URL,
} from '../../../common/core';

describe('object refs', () => {
  it.each([
    ['projectcontour.io/HTTPProxy/default/web', { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'default', name: 'web' }],
    ['/ConfigMap/kube-system/cm', { group: '', kind: 'ConfigMap', namespace: 'kube-system', name: 'cm' }],
    ['gateway.networking.k8s.io/GatewayClass//contour', { group: 'gateway.networking.k8s.io', kind: 'GatewayClass', namespace: '', name: 'contour' }],
    ['x.dev/Route/ns/a.b-c', { group: 'x.dev', kind: 'Route', namespace: 'ns', name: 'a.b-c' }],
  ])('parses %s and formats it back', (text, ref) => {
    expect(parseObjectRef(text)).toEqual({ ok: true, value: ref });
    expect(formatObjectRef(ref)).toBe(text);
  });

  it.each([
    [''],
    ['a/b/c'],
    ['a/B/c/d/e'],
    ['x.dev//ns/name'], // no kind
    ['x.dev/Route/ns/'], // no name
    ['x.dev/Route/NS/name'],
    ['x.dev/Route/ns/Name'],
    ['X.dev/Route/ns/name'],
    ['x.dev/1Route/ns/name'],
    ['x.dev/Route/ns/name@7'],
  ])('rejects %j', (text) => {
    expect(parseObjectRef(text).ok).toBe(false);
  });

  it.each([
    ['projectcontour.io/HTTPProxy/default/web@7', 7],
    ['/Service/ns/svc@1', 1],
  ])('parses source %s', (text, generation) => {
    const parsed = parseSourceRef(text);
    expect(parsed.ok && parsed.value.generation).toBe(generation);
    if (parsed.ok) expect(formatSourceRef(parsed.value)).toBe(text);
  });

  it.each([['x.dev/Route/ns/n'], ['x.dev/Route/ns/n@0'], ['x.dev/Route/ns/n@07'], ['x.dev/Route/ns/n@x'], ['x.dev/Route/ns/n@99999999999999999']])(
    'rejects source %j',
    (text) => {
      expect(parseSourceRef(text).ok).toBe(false);
    },
  );
});

describe('node groups', () => {
  const identity = { nodeId: 'n1', cluster: 'edge', metadata: { pool: 'blue', n: 3 } };
  it.each([
    [groupByCluster, 'edge'],
    [groupByMetadata('pool'), 'blue'],
    [groupByMetadata('n'), 'edge'], // not a string: fall back to cluster
    [groupByMetadata('missing'), 'edge'],
  ])('group key %#', (fn, expected) => {
    expect(fn(identity)).toBe(expected);
  });

  it.each([['edge', 'edge'], ['Edge', null], ['a_b', null], ['', null]])('lineageGroupId(%j)', (group, same) => {
    const id = lineageGroupId(group);
    expect(id).toMatch(/^[a-z0-9-]{1,63}$/);
    if (same !== null) expect(id).toBe(same);
  });

  it('lineageGroupId is always valid and distinct groups that needed cleaning stay distinct', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        expect(lineageGroupId(a)).toMatch(/^[a-z0-9-]{1,63}$/);
        if (a !== b && lineageGroupId(a) === lineageGroupId(b)) {
          // Only possible through a 32-bit hash collision; fast-check will not find one by chance.
          throw new Error(`collision: ${JSON.stringify(a)} ${JSON.stringify(b)}`);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('type URLs', () => {
  it.each([
    [CDS_TYPE_URL, 'CDS'],
    [EDS_TYPE_URL, 'EDS'],
    [LDS_TYPE_URL, 'LDS'],
    [RDS_TYPE_URL, 'RDS'],
    [SDS_TYPE_URL, 'SDS'],
    ['type.googleapis.com/envoy.service.runtime.v3.Runtime', 'Runtime'],
    ['custom', 'custom'],
  ])('shortTypeName(%s) = %s', (typeUrl, short) => {
    expect(shortTypeName(typeUrl)).toBe(short);
  });

  it.each([
    [CDS_TYPE_URL, true],
    ['type.googleapis.com/x.y.Z', true],
    ['', false],
    ['a#b', false],
    ['a b', false],
    ['x'.repeat(257), false],
  ])('isValidTypeUrl(%j) = %p', (typeUrl, valid) => {
    expect(isValidTypeUrl(typeUrl)).toBe(valid);
  });
});
