// Query parameters as kube-apiserver reads them (infra/local/kube/query.ts). The tables restate
// k8s.io/apimachinery's rules: pkg/runtime/conversion.go (Convert_Slice_string_To_bool,
// Convert_Slice_string_To_int64 and their pointer forms), the generated url.Values conversions of
// pkg/apis/meta/v1 (first value wins, dryRun keeps all, DeleteOptions' uid/resourceVersion become
// preconditions), pkg/apis/meta/internalversion (WatchList defaults, ListOptions validation) and
// pkg/apis/meta/v1/validation (Create/Update/Patch/DeleteOptions); Go's url.ParseQuery and strconv.
// The last block checks the same rules through the server, with the real HTTP status codes.
import { ApiError } from '../../../infra/local/kube/errors';
import {
  convertBool,
  convertInt64,
  convertOptionalBool,
  convertOptionalInt64,
  decodeDeleteOptions,
  decodeListOptions,
  decodePatchOptions,
  decodeWriteOptions,
  goQuote,
  parseGoBool,
  parseInt64,
  parseResourceVersion,
  parseUint64,
  prettyOf,
  QueryValues,
} from '../../../infra/local/kube/query';
import type { Json } from '../../../infra/local/kube/json';
import { asStatus, openWatch, request, startTestServer, widget, WIDGET_CRD, type TestServer } from './helpers';
import { captureLog } from './log-capture';

function refusal(run: () => unknown): { code: number; reason: string; message: string; details: unknown } {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, reason: error.reason, message: error.message, details: error.details };
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('Convert_Slice_string_To_bool: only absent, "0" and "false" (any case) are false', () => {
  it.each<[string[], boolean]>([
    [[], false],
    [['false'], false],
    [['False'], false],
    [['FALSE'], false],
    [['fAlSe'], false],
    [['0'], false],
    // strings.EqualFold folds Unicode: U+017F (long s) is an "s".
    [['fal\u017fe'], false],
    [['true'], true],
    [['True'], true], // what str(True) writes in Python
    [['TRUE'], true],
    [['1'], true],
    [[''], true], // ?watch= and ?watch alone are true
    [['yes'], true],
    [['no'], true],
    [['off'], true],
    [['f'], true], // not strconv.ParseBool: "f" is not false here
    [['00'], true],
    [[' false'], true],
    [['false', 'true'], false], // the first value wins
    [['true', 'false'], true],
  ])('%j → %s', (values, expected) => {
    expect(convertBool(values)).toBe(expected);
  });

  it('the pointer form leaves an absent parameter unset and converts a present one the same way', () => {
    expect(convertOptionalBool([])).toBeUndefined();
    expect(convertOptionalBool(['false'])).toBe(false);
    expect(convertOptionalBool(['False'])).toBe(false);
    expect(convertOptionalBool([''])).toBe(true);
    expect(convertOptionalBool(['True'])).toBe(true);
  });
});

describe('strconv.ParseInt(value, 10, 64) and ParseUint, with Go error text', () => {
  it.each<[string, bigint]>([
    ['5', 5n],
    ['+5', 5n],
    ['-5', -5n],
    ['007', 7n],
    ['0', 0n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
  ])('ParseInt %j = %s', (value, expected) => {
    expect(parseInt64(value)).toEqual({ ok: true, value: expected });
  });

  it.each<[string, string]>([
    ['', 'strconv.ParseInt: parsing "": invalid syntax'],
    ['abc', 'strconv.ParseInt: parsing "abc": invalid syntax'],
    [' 5', 'strconv.ParseInt: parsing " 5": invalid syntax'],
    ['5 ', 'strconv.ParseInt: parsing "5 ": invalid syntax'],
    ['1.5', 'strconv.ParseInt: parsing "1.5": invalid syntax'],
    ['1e3', 'strconv.ParseInt: parsing "1e3": invalid syntax'],
    ['0x10', 'strconv.ParseInt: parsing "0x10": invalid syntax'],
    ['1_000', 'strconv.ParseInt: parsing "1_000": invalid syntax'],
    ['+', 'strconv.ParseInt: parsing "+": invalid syntax'],
    ['9223372036854775808', 'strconv.ParseInt: parsing "9223372036854775808": value out of range'],
    ['-9223372036854775809', 'strconv.ParseInt: parsing "-9223372036854775809": value out of range'],
  ])('ParseInt %j fails: %s', (value, message) => {
    expect(parseInt64(value)).toEqual({ ok: false, message });
  });

  it('ParseUint takes no sign and reaches 2^64-1', () => {
    expect(parseUint64('18446744073709551615')).toEqual({ ok: true, value: 18446744073709551615n });
    expect(parseUint64('18446744073709551616')).toEqual({ ok: false, message: 'strconv.ParseUint: parsing "18446744073709551616": value out of range' });
    expect(parseUint64('+5')).toEqual({ ok: false, message: 'strconv.ParseUint: parsing "+5": invalid syntax' });
    expect(parseUint64('-1')).toEqual({ ok: false, message: 'strconv.ParseUint: parsing "-1": invalid syntax' });
  });

  it('Convert_Slice_string_To_int64: absent is 0; the pointer form leaves it unset; an empty value is an error', () => {
    expect(convertInt64([])).toEqual({ ok: true, value: 0n });
    expect(convertOptionalInt64([])).toEqual({ ok: true, value: undefined });
    expect(convertInt64(['3', 'x'])).toEqual({ ok: true, value: 3n });
    expect(convertInt64([''])).toEqual({ ok: false, message: 'strconv.ParseInt: parsing "": invalid syntax' });
    expect(convertOptionalInt64(['x'])).toEqual({ ok: false, message: 'strconv.ParseInt: parsing "x": invalid syntax' });
  });

  it('resourceVersion (APIObjectVersioner.ParseResourceVersion): "" and "0" mean any, else a decimal uint64', () => {
    expect(parseResourceVersion('')).toEqual({ ok: true, value: undefined });
    expect(parseResourceVersion('0')).toEqual({ ok: true, value: undefined });
    expect(parseResourceVersion('42')).toEqual({ ok: true, value: 42n });
    expect(parseResourceVersion('1e3')).toEqual({
      ok: false,
      message: 'invalid resource version: resourceVersion: Invalid value: "1e3": strconv.ParseUint: parsing "1e3": invalid syntax',
    });
  });
});

describe('strconv.ParseBool (pretty) and strconv.Quote (messages)', () => {
  it.each<[string, boolean | undefined]>([
    ['1', true],
    ['t', true],
    ['T', true],
    ['TRUE', true],
    ['true', true],
    ['True', true],
    ['0', false],
    ['f', false],
    ['F', false],
    ['FALSE', false],
    ['false', false],
    ['False', false],
    ['tRUE', undefined],
    ['yes', undefined],
    ['', undefined],
  ])('ParseBool %j → %s', (value, expected) => {
    expect(parseGoBool(value)).toBe(expected);
  });

  it.each<[string, string]>([
    ['abc', '"abc"'],
    ['a"b', '"a\\"b"'],
    ['tab\t', '"tab\\t"'],
    ['\u0001', '"\\x01"'],
    ['\u007f', '"\\x7f"'],
    ['é ✓', '"é ✓"'],
    ['\u200b', '"\\u200b"'],
  ])('Quote %j = %s', (value, expected) => {
    expect(goQuote(value)).toBe(expected);
  });
});

describe('url.ParseQuery', () => {
  const parsed = (raw: string, name: string): readonly string[] => QueryValues.parse(raw).all(name);
  it.each<[string, string, string[]]>([
    ['watch=True', 'watch', ['True']],
    ['watch', 'watch', ['']],
    ['watch=', 'watch', ['']],
    ['a=1&a=2', 'a', ['1', '2']],
    ['a=b+c', 'a', ['b c']],
    ['a=%2B', 'a', ['+']],
    ['labelSelector=app%3Dweb%2Ctier%20in%20(a)', 'labelSelector', ['app=web,tier in (a)']],
    ['a=%E2%9C%93', 'a', ['✓']],
    ['&&a=1&', 'a', ['1']],
    ['=x', '', ['x']],
    ['a=x=y', 'a', ['x=y']],
    // A malformed escape drops the whole pair (Go), where URLSearchParams would keep "%zz".
    ['watch=%zz', 'watch', []],
    ['w%zz=1&watch=1', 'watch', ['1']],
    // A pair with a semicolon is dropped, since Go 1.17.
    ['watch=1;limit=2', 'watch', []],
    ['watch=1;limit=2', 'limit', []],
  ])('%j: %s = %j', (raw, name, expected) => {
    expect(parsed(raw, name)).toEqual(expected);
  });

  it('first() is the first value and undefined when absent', () => {
    const query = QueryValues.parse('limit=5&limit=6');
    expect(query.first('limit')).toBe('5');
    expect(query.first('continue')).toBeUndefined();
  });
});

describe('ListOptions', () => {
  const list = (raw: string) => decodeListOptions(QueryValues.parse(raw));

  it('defaults: not a watch, no limit, timeout and initial events unset', () => {
    expect(list('')).toMatchObject({ watch: false, allowWatchBookmarks: false, limit: 0, timeoutSeconds: undefined, sendInitialEvents: undefined, resourceVersionMatch: '', continue: '' });
  });

  it.each<[string, boolean]>([
    ['watch=true', true],
    ['watch=True', true],
    ['watch=1', true],
    ['watch=', true],
    ['watch', true],
    ['watch=yes', true],
    ['watch=false', false],
    ['watch=False', false],
    ['watch=0', false],
    ['watch=%zz', false],
  ])('%j is a watch: %s', (raw, watch) => {
    expect(list(raw).watch).toBe(watch);
  });

  it('a watch from "" or "0" without initial-events options is a WatchList watch (SetListOptionsDefaults, kube 1.34+)', () => {
    expect(list('watch=True')).toMatchObject({ sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' });
    expect(list('watch=1&resourceVersion=0')).toMatchObject({ sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' });
    expect(list('watch=1&resourceVersion=12')).toMatchObject({ sendInitialEvents: undefined, resourceVersionMatch: '' });
    expect(list('watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan')).toMatchObject({ sendInitialEvents: false });
    // A LIST is never defaulted.
    expect(list('resourceVersion=0')).toMatchObject({ sendInitialEvents: undefined, resourceVersionMatch: '' });
  });

  it('integers: limit, timeoutSeconds', () => {
    expect(list('limit=2').limit).toBe(2);
    expect(list('limit=-1').limit).toBe(-1);
    expect(list('limit=%2B3').limit).toBe(3);
    // An unescaped + in a query is a space, and " 3" is no integer.
    expect(refusal(() => list('limit=+3')).message).toBe('query parameter limit: strconv.ParseInt: parsing " 3": invalid syntax');
    expect(list('watch=1&timeoutSeconds=0').timeoutSeconds).toBe(0);
    expect(list('watch=1&timeoutSeconds=-5').timeoutSeconds).toBe(-5);
  });

  it.each<[string, string]>([
    ['limit=abc', 'query parameter limit: strconv.ParseInt: parsing "abc": invalid syntax'],
    ['limit=', 'query parameter limit: strconv.ParseInt: parsing "": invalid syntax'],
    ['limit=2.5', 'query parameter limit: strconv.ParseInt: parsing "2.5": invalid syntax'],
    ['watch=1&timeoutSeconds=1m', 'query parameter timeoutSeconds: strconv.ParseInt: parsing "1m": invalid syntax'],
    ['timeoutSeconds=99999999999999999999', 'query parameter timeoutSeconds: strconv.ParseInt: parsing "99999999999999999999": value out of range'],
  ])('%j → 400: %s', (raw, message) => {
    expect(refusal(() => list(raw))).toMatchObject({ code: 400, reason: 'BadRequest', message });
  });

  it.each<[string, string, { field: string; reason: string }[]]>([
    [
      'resourceVersionMatch=NotOlderThan',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
      [{ field: 'resourceVersionMatch', reason: 'FieldValueForbidden' }],
    ],
    [
      'resourceVersion=1&resourceVersionMatch=exact',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "exact": supported values: "Exact", "NotOlderThan", ""',
      [{ field: 'resourceVersionMatch', reason: 'FieldValueNotSupported' }],
    ],
    [
      'resourceVersion=0&resourceVersionMatch=Exact',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
      [{ field: 'resourceVersionMatch', reason: 'FieldValueForbidden' }],
    ],
    [
      'sendInitialEvents=false',
      'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list',
      [{ field: 'sendInitialEvents', reason: 'FieldValueForbidden' }],
    ],
    [
      'resourceVersionMatch=Bogus',
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""]',
      [
        { field: 'resourceVersionMatch', reason: 'FieldValueForbidden' },
        { field: 'resourceVersionMatch', reason: 'FieldValueNotSupported' },
      ],
    ],
    [
      'watch=true&resourceVersion=5&sendInitialEvents=true',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      [{ field: 'resourceVersionMatch', reason: 'FieldValueForbidden' }],
    ],
    [
      'watch=true&resourceVersion=5&resourceVersionMatch=NotOlderThan',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
      [{ field: 'resourceVersionMatch', reason: 'FieldValueForbidden' }],
    ],
  ])('%j → 422', (raw, message, causes) => {
    const refused = refusal(() => list(raw));
    expect(refused).toMatchObject({ code: 422, reason: 'Invalid', message });
    expect(refused.details).toMatchObject({ group: 'meta.k8s.io', kind: 'ListOptions', causes: causes.map((c) => expect.objectContaining(c)) });
  });

  it('selectors: a malformed label selector and an unsupported field are 400', () => {
    expect(refusal(() => list('labelSelector=a%20in%20(b'))).toMatchObject({ code: 400 });
    expect(refusal(() => list('fieldSelector=spec.size%3D1'))).toMatchObject({ code: 400, message: 'field label not supported: spec.size' });
    expect(list('labelSelector=app%3Dweb').labelSelector).toEqual([{ key: 'app', op: 'equals', value: 'web' }]);
  });
});

describe('Create/Update/Patch/DeleteOptions', () => {
  const write = (raw: string) => decodeWriteOptions(QueryValues.parse(raw), 'CreateOptions');

  it('fieldValidation: "" is Warn; the three values are case-sensitive', () => {
    expect(write('').fieldValidation).toBe('Warn');
    expect(write('fieldValidation=').fieldValidation).toBe('Warn');
    expect(write('fieldValidation=Strict').fieldValidation).toBe('Strict');
    expect(refusal(() => write('fieldValidation=strict'))).toMatchObject({
      code: 422,
      message: 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"',
    });
    expect(refusal(() => decodeWriteOptions(QueryValues.parse('fieldValidation=x'), 'UpdateOptions')).message).toMatch(/^UpdateOptions\.meta\.k8s\.io "" is invalid/);
  });

  it('dryRun: every value must be "All"', () => {
    expect(write('dryRun=All&dryRun=All').dryRun).toEqual(['All', 'All']);
    expect(write('dryRun=All').dryRun).toEqual(['All']);
    expect(write('').dryRun).toEqual([]);
    expect(refusal(() => write('dryRun=All&dryRun=all'))).toMatchObject({
      code: 422,
      message: 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","all"]: supported values: "All"',
    });
    expect(refusal(() => write('dryRun=')).message).toContain('dryRun: Unsupported value: [""]');
  });

  it('fieldManager: at most 128 bytes, printable characters', () => {
    expect(write(`fieldManager=${'m'.repeat(128)}`).fieldManager).toHaveLength(128);
    expect(refusal(() => write(`fieldManager=${'m'.repeat(129)}`)).message).toBe('CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes');
    expect(refusal(() => write('fieldManager=%C3%A9%01')).message).toBe(
      'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "é\\x01": invalid character U+0001 (at position 2)',
    );
  });

  it('PatchOptions: force only with an apply patch', () => {
    expect(decodePatchOptions(QueryValues.parse('fieldManager=me')).force).toBeUndefined();
    expect(refusal(() => decodePatchOptions(QueryValues.parse('force=false')))).toMatchObject({
      code: 422,
      message: 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    });
  });

  const del = (raw: string, body?: Json) => decodeDeleteOptions(QueryValues.parse(raw), body);

  it('DeleteOptions from the query: gracePeriodSeconds, orphanDependents, propagationPolicy, uid/resourceVersion preconditions', () => {
    expect(del('gracePeriodSeconds=0&propagationPolicy=Foreground&uid=u1&resourceVersion=7')).toEqual({
      dryRun: [],
      gracePeriodSeconds: 0,
      orphanDependents: undefined,
      propagationPolicy: 'Foreground',
      preconditions: { uid: 'u1', resourceVersion: '7' },
    });
    expect(del('orphanDependents=False').orphanDependents).toBe(false);
    expect(refusal(() => del('gracePeriodSeconds=soon'))).toMatchObject({ code: 400, message: 'query parameter gracePeriodSeconds: strconv.ParseInt: parsing "soon": invalid syntax' });
    expect(refusal(() => del('propagationPolicy=background'))).toMatchObject({
      code: 422,
      message: 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "background": supported values: "Foreground", "Background", "Orphan", "nil"',
    });
    expect(refusal(() => del('orphanDependents=true&propagationPolicy=Orphan')).message).toBe(
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set',
    );
  });

  it('DeleteOptions from a body: the query is not read at all', () => {
    expect(del('propagationPolicy=Bogus&uid=ignored', { preconditions: { resourceVersion: '9' } })).toMatchObject({ propagationPolicy: undefined, preconditions: { resourceVersion: '9' } });
    expect(refusal(() => del('', { propagationPolicy: 'Bogus' }))).toMatchObject({ code: 422 });
    expect(refusal(() => del('', { gracePeriodSeconds: 'soon' }))).toMatchObject({ code: 400, reason: 'BadRequest' });
    expect(refusal(() => del('', { dryRun: ['Everything'] }))).toMatchObject({ code: 422 });
  });

  it('pretty: strconv.ParseBool of the first value; unreadable is not pretty', () => {
    expect(prettyOf(QueryValues.parse('pretty=true'))).toBe(true);
    expect(prettyOf(QueryValues.parse('pretty=1'))).toBe(true);
    expect(prettyOf(QueryValues.parse('pretty=yes'))).toBe(false);
    expect(prettyOf(QueryValues.parse('pretty'))).toBe(false);
    expect(prettyOf(QueryValues.parse('pretty=false&pretty=true'))).toBe(false);
  });
});

describe('query parameters through the server', () => {
  const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';
  let test: TestServer;
  const log = captureLog('info');
  const logLines = log.lines;

  beforeAll(async () => {
    test = await startTestServer({ logger: log.logger });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    expect((await request(test, 'POST', WIDGETS, widget('one', { size: 1 }))).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it.each(['watch=True', 'watch=', 'watch', 'watch=yes&allowWatchBookmarks=True'])('GET ?%s is a watch', async (query) => {
    const w = await openWatch(test, `${WIDGETS}?${query}`);
    try {
      const [first] = await w.waitForEvents(1);
      expect(first).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'one' } } });
    } finally {
      w.close();
    }
  });

  it.each(['watch=false', 'watch=FALSE', 'watch=0', 'watch=%zz'])('GET ?%s is a list', async (query) => {
    const response = await request(test, 'GET', `${WIDGETS}?${query}`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ kind: 'WidgetList', items: [{ metadata: { name: 'one' } }] });
  });

  it('a WatchList watch from "" with bookmarks gets the initial-events-end bookmark after the state', async () => {
    const w = await openWatch(test, `${WIDGETS}?watch=True&allowWatchBookmarks=True`);
    try {
      const events = await w.waitForEvents(2);
      expect(events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
      expect(events[1]?.object.metadata?.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    } finally {
      w.close();
    }
  });

  it('sendInitialEvents=false from "" starts from now: no initial state', async () => {
    const w = await openWatch(test, `${WIDGETS}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan`);
    try {
      await request(test, 'POST', WIDGETS, widget('from-now', { size: 2 }));
      const [first] = await w.waitForEvents(1);
      expect(first).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'from-now' } } });
    } finally {
      w.close();
      await request(test, 'DELETE', `${WIDGETS}/from-now`);
    }
  });

  it('a negative timeoutSeconds ends the watch at once', async () => {
    const w = await openWatch(test, `${WIDGETS}?watch=1&resourceVersion=1&timeoutSeconds=-1`);
    await w.ended;
    expect(w.status).toBe(200);
  });

  it.each<[string, string, string, number, RegExp]>([
    ['GET', `${WIDGETS}?limit=ten`, 'limit', 400, /^query parameter limit: strconv\.ParseInt: parsing "ten": invalid syntax$/],
    ['GET', `${WIDGETS}?watch=1&timeoutSeconds=1.5`, 'timeoutSeconds', 400, /^query parameter timeoutSeconds: /],
    ['GET', `${WIDGETS}?resourceVersion=abc`, 'resourceVersion', 400, /^invalid resource version: resourceVersion: Invalid value: "abc"/],
    ['GET', `${WIDGETS}?watch=1&resourceVersion=%2B5`, 'resourceVersion', 400, /strconv\.ParseUint: parsing "\+5": invalid syntax/],
    ['GET', `${WIDGETS}?sendInitialEvents=true`, 'sendInitialEvents', 422, /^ListOptions\.meta\.k8s\.io "" is invalid: sendInitialEvents: Forbidden/],
    ['POST', `${WIDGETS}?fieldValidation=strict`, 'fieldValidation', 422, /^CreateOptions\.meta\.k8s\.io "" is invalid: fieldValidation: Unsupported value: "strict"/],
    ['PATCH', `${WIDGETS}/one?force=true`, 'force', 422, /^PatchOptions\.meta\.k8s\.io "" is invalid: force: Forbidden/],
    ['DELETE', `${WIDGETS}/one?gracePeriodSeconds=now`, 'gracePeriodSeconds', 400, /^query parameter gracePeriodSeconds: /],
    ['DELETE', `${WIDGETS}/one?propagationPolicy=Cascade`, 'propagationPolicy', 422, /^DeleteOptions\.meta\.k8s\.io "" is invalid: propagationPolicy: Unsupported value: "Cascade"/],
    ['POST', `${WIDGETS}?dryRun=all`, 'dryRun', 422, /dryRun: Unsupported value: \["all"\]/],
  ])('%s %s → %s refused with %d, logged with the request', async (method, path, parameter, code, message) => {
    const body = method === 'POST' ? widget('refused', {}) : method === 'PATCH' ? { spec: { size: 3 } } : undefined;
    const response = await request(test, method, path, body, method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
    expect(response.status).toBe(code);
    const status = asStatus(response.body);
    expect(status).toMatchObject({ kind: 'Status', code, reason: code === 400 ? 'BadRequest' : 'Invalid' });
    expect(status.message).toMatch(message);
    expect(status.message).toContain(parameter);
    expect(logLines).toContainEqual(expect.objectContaining({ msg: 'request refused', method, url: path, code, message: status.message }));
    // Nothing was written or deleted.
    const list = await request(test, 'GET', WIDGETS);
    expect((list.body as { items: { metadata: { name: string }; spec: { size: number } }[] }).items.map((i) => [i.metadata.name, i.spec.size])).toEqual([['one', 1]]);
  });

  it('a valid dryRun is refused as not implemented, on writes only', async () => {
    expect((await request(test, 'POST', `${WIDGETS}?dryRun=All`, widget('dry', {}))).status).toBe(501);
    expect((await request(test, 'DELETE', `${WIDGETS}/one?dryRun=All`)).status).toBe(501);
    // GetOptions and ListOptions have no dryRun: it is ignored, as by kube-apiserver.
    expect((await request(test, 'GET', `${WIDGETS}/one?dryRun=All`)).status).toBe(200);
    expect((await request(test, 'GET', `${WIDGETS}?dryRun=All`)).status).toBe(200);
  });

  it('GET of one object ignores watch, as kube-apiserver does', async () => {
    const response = await request(test, 'GET', `${WIDGETS}/one?watch=true`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ kind: 'Widget', metadata: { name: 'one' } });
  });

  it('DELETE preconditions from the query (uid, resourceVersion) are checked', async () => {
    expect((await request(test, 'POST', WIDGETS, widget('guarded', {}))).status).toBe(201);
    const conflict = await request(test, 'DELETE', `${WIDGETS}/guarded?uid=not-its-uid`);
    expect(conflict.status).toBe(409);
    expect(asStatus(conflict.body).message).toMatch(/Precondition failed: UID in precondition: not-its-uid/);
    const current = await request(test, 'GET', `${WIDGETS}/guarded`);
    const rv = (current.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    expect((await request(test, 'DELETE', `${WIDGETS}/guarded?resourceVersion=${Number(rv) - 1}`)).status).toBe(409);
    expect((await request(test, 'DELETE', `${WIDGETS}/guarded?resourceVersion=${rv}&propagationPolicy=Background&gracePeriodSeconds=0`)).status).toBe(200);
  });

  it('LIST: continue with a resourceVersion is a 400; a continue token that is not ours is a 400', async () => {
    expect((await request(test, 'POST', WIDGETS, widget('two', {}))).status).toBe(201);
    try {
      const first = await request(test, 'GET', `${WIDGETS}?limit=1`);
      const token = (first.body as { metadata: { continue: string } }).metadata.continue;
      const both = await request(test, 'GET', `${WIDGETS}?limit=1&continue=${token}&resourceVersion=5`);
      expect(both.status).toBe(400);
      expect(asStatus(both.body).message).toBe('specifying resource version is not allowed when using continue');
      expect((await request(test, 'GET', `${WIDGETS}?limit=1&continue=${token}&resourceVersion=0`)).status).toBe(200);
      expect(asStatus((await request(test, 'GET', `${WIDGETS}?continue=nope`)).body).message).toMatch(/^invalid continue token/);
      // limit=0 and a negative limit are "no limit".
      for (const limit of ['0', '-3']) {
        const all = await request(test, 'GET', `${WIDGETS}?limit=${limit}`);
        expect((all.body as { items: unknown[]; metadata: { continue?: string } }).items).toHaveLength(2);
      }
    } finally {
      await request(test, 'DELETE', `${WIDGETS}/two`);
    }
  });

  it('pretty=true indents the response; pretty=yes does not', async () => {
    const pretty = await fetch(`${test.server.url}${WIDGETS}/one?pretty=true`);
    expect(await pretty.text()).toMatch(/^\{\n {2}"apiVersion": "example\.com\/v1",\n {2}"kind": "Widget",\n/);
    const plain = await fetch(`${test.server.url}${WIDGETS}/one?pretty=yes`);
    expect(await plain.text()).toMatch(/^\{"apiVersion":"example\.com\/v1","kind":"Widget",/);
  });
});
