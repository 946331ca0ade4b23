// Pure pieces of the local API server, table-driven: merge patch (RFC 7386 appendix A),
// selectors, structural pruning, CRD version ordering.
import fc from 'fast-check';
import { orderVersions } from '../../../infra/local/kube/crd';
import { jsonEqual, type Json, type JsonObject } from '../../../infra/local/kube/json';
import { applyMergePatch } from '../../../infra/local/kube/patch';
import { pruneAndValidate } from '../../../infra/local/kube/schema';
import { matchesLabels, parseLabelSelector } from '../../../infra/local/kube/selectors';

describe('applyMergePatch (RFC 7386 appendix A)', () => {
  it.each<[Json, Json, Json]>([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('%j + %j = %j', (target, patch, expected) => {
    expect(applyMergePatch(target, patch)).toEqual(expected);
  });

  it('treats a "__proto__" key as data', () => {
    const patched = applyMergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}') as Json) as JsonObject;
    // Had the prototype been replaced, the field would be inherited here.
    expect((patched as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.keys(patched)).toEqual(['__proto__']);
  });

  it('never mutates its inputs, and an empty patch is the identity on objects', () => {
    const json = fc.jsonValue() as fc.Arbitrary<Json>;
    fc.assert(
      fc.property(fc.dictionary(fc.string(), json) as fc.Arbitrary<JsonObject>, json, (target, patch) => {
        const targetCopy = structuredClone(target);
        const patchCopy = structuredClone(patch);
        applyMergePatch(target, patch);
        expect(jsonEqual(target, targetCopy)).toBe(true);
        expect(jsonEqual(patch, patchCopy)).toBe(true);
        expect(jsonEqual(applyMergePatch(target, {}), target)).toBe(true);
      }),
    );
  });
});

describe('label selectors', () => {
  const labels = { app: 'web', tier: 'front', 'example.com/owner': 'team-a' };
  it.each<[string, boolean]>([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['app in (web, db)', true],
    ['app notin (web)', false],
    ['example.com/owner=team-a', true],
    ['tier,app', true],
    ['!tier', false],
    ['!missing', true],
    ['app=web,tier=back', false],
  ])('%s → %s', (selector, expected) => {
    expect(matchesLabels({ metadata: { labels } }, parseLabelSelector(selector))).toBe(expected);
  });

  it.each(['a in (b', '=x', 'a=b=c', 'A B', 'a=' + 'x'.repeat(64)])('refuses %s', (selector) => {
    expect(() => parseLabelSelector(selector)).toThrow();
  });
});

describe('structural pruning', () => {
  const schema: JsonObject = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        required: ['size'],
        properties: {
          size: { type: 'integer' },
          port: { 'x-kubernetes-int-or-string': true },
          tags: { type: 'array', items: { type: 'string' } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
          free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
      },
    },
  };

  it('drops unknown fields at every level and reports their paths', () => {
    const object: JsonObject = {
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'a', bogus: 1 },
      spec: { size: 1, port: 'http', extra: 2, labels: { a: 'b' }, free: { any: { thing: true } } },
      other: true,
    };
    const result = pruneAndValidate(object, schema);
    expect(result.violations).toEqual([]);
    expect(result.pruned.sort()).toEqual(['metadata.bogus', 'other', 'spec.extra']);
    expect(object).toEqual({ apiVersion: 'x/v1', kind: 'X', metadata: { name: 'a' }, spec: { size: 1, port: 'http', labels: { a: 'b' }, free: { any: { thing: true } } } });
  });

  it('reports type errors and missing required fields', () => {
    const result = pruneAndValidate({ spec: { port: 1.5, tags: ['a', 3], labels: { a: 1 } } }, schema);
    expect(result.violations.map((v) => v.field).sort()).toEqual(['spec.labels.a', 'spec.port', 'spec.size', 'spec.tags[1]']);
  });
});

describe('CRD version priority', () => {
  it('orders GA before beta before alpha, higher first, then other names', () => {
    expect(orderVersions(['v1alpha1', 'foo', 'v1beta1', 'v2', 'v1', 'v11alpha2', 'v1beta2', 'bar'])).toEqual([
      'v2', 'v1', 'v1beta2', 'v1beta1', 'v11alpha2', 'v1alpha1', 'bar', 'foo',
    ]);
  });
});
