// Pure parsing of the CLI (object references, durations) and the local function URL adapter
// (event shape, token check, result translation, failures) with a recording handler.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import pino from 'pino';
import { parseDuration } from '../../../common/cli/main';
import { parseObjectRef } from '../../../common/cli/object-ref';
import { functionUrlRegion } from '../../../common/cli/function-url';
import { startFunctionUrl, type FunctionUrlHandler, type FunctionUrlServer } from '../../../infra/local/system';

describe('CLI parsing', () => {
  it.each([
    ['httpproxy/web', { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'team', name: 'web' }],
    ['HTTPProxy/web', { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'team', name: 'web' }],
    ['httpproxies.projectcontour.io/web', { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'team', name: 'web' }],
    ['httproute/r1', { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'team', name: 'r1' }],
    ['Widget.example.com/w.1', { group: 'example.com', kind: 'Widget', namespace: 'team', name: 'w.1' }],
  ])('parses %s', (text, ref) => {
    expect(parseObjectRef(text, 'team').ref).toEqual(ref);
  });

  it.each(['web', '/web', 'httpproxy/', 'httpproxy/a/b', 'widgets/w', 'httpproxy/Web_1', 'widget.example.com/w'])('refuses %s with a message', (text) => {
    expect(() => parseObjectRef(text, 'default')).toThrow(/kind|name/);
  });

  it.each([
    ['30s', 30_000],
    ['2m', 120_000],
    ['500ms', 500],
    ['1h', 3_600_000],
    ['45', 45_000],
    ['1.5s', 1500],
  ])('duration %s = %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '-1s', '10 s', '5d'])('refuses duration %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/duration/);
  });

  it('recognises Lambda function URLs (SigV4) and nothing else', () => {
    expect(functionUrlRegion(new URL('https://abcdef123.lambda-url.eu-west-1.on.aws/objects'))).toBe('eu-west-1');
    expect(functionUrlRegion(new URL('http://127.0.0.1:8080'))).toBeUndefined();
    expect(functionUrlRegion(new URL('https://lambda-url.eu-west-1.on.aws.example.com'))).toBeUndefined();
  });
});

describe('local function URL', () => {
  const token = 'test-token-0123456789';
  const seen: APIGatewayProxyEventV2[] = [];
  let answer: Awaited<ReturnType<FunctionUrlHandler>> | Error = { statusCode: 200, body: '{}' };
  let server: FunctionUrlServer;

  beforeAll(async () => {
    server = await startFunctionUrl({
      token,
      port: 0,
      logger: pino({ level: 'silent' }),
      handler: async (event) => {
        seen.push(event);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    });
  });

  afterAll(() => server.close());

  const call = (path: string, init: RequestInit = {}, withToken = true) =>
    fetch(`${server.url}${path}`, { ...init, headers: { ...(withToken ? { authorization: `Bearer ${token}` } : {}), ...(init.headers as Record<string, string> | undefined) } });

  it('refuses requests without the right bearer token, before the function runs', async () => {
    const before = seen.length;
    const missing = await call('/healthz', {}, false);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect((await call('/healthz', { headers: { authorization: `Bearer ${token}x` } }, false)).status).toBe(401);
    expect((await call('/healthz', { headers: { authorization: token } }, false)).status).toBe(401);
    expect(seen.length).toBe(before);
  });

  it('delivers the payload 2.0 event a function URL would', async () => {
    answer = { statusCode: 201, headers: { 'x-test': 'yes' }, body: '{"a":1}' };
    const response = await call('/objects/projectcontour.io/HTTPProxy/default/web?generation=2&x=a&x=b', { headers: { cookie: 'c1=1; c2=2', 'x-custom': 'v' } });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-test')).toBe('yes');
    expect(await response.text()).toBe('{"a":1}');
    const event = seen[seen.length - 1];
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/objects/projectcontour.io/HTTPProxy/default/web',
      rawQueryString: 'generation=2&x=a&x=b',
      queryStringParameters: { generation: '2', x: 'a,b' },
      cookies: ['c1=1', 'c2=2'],
      isBase64Encoded: false,
      requestContext: { http: { method: 'GET', path: '/objects/projectcontour.io/HTTPProxy/default/web', protocol: 'HTTP/1.1' }, stage: '$default', routeKey: '$default' },
    });
    expect(event?.headers['x-custom']).toBe('v');
    expect(event?.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(event?.body).toBeUndefined();
  });

  it('passes bodies (binary ones base64) and serialises non-structured results as 200 JSON', async () => {
    answer = { ok: true };
    const binary = await call('/x', { method: 'POST', body: Buffer.from([0, 1, 2, 255]), headers: { 'content-type': 'application/octet-stream' } });
    expect(binary.status).toBe(200);
    expect(await binary.json()).toEqual({ ok: true });
    expect(seen[seen.length - 1]).toMatchObject({ body: Buffer.from([0, 1, 2, 255]).toString('base64'), isBase64Encoded: true, requestContext: { http: { method: 'POST' } } });
    const text = await call('/x', { method: 'POST', body: '{"q":1}', headers: { 'content-type': 'application/json' } });
    expect(text.status).toBe(200);
    expect(seen[seen.length - 1]).toMatchObject({ body: '{"q":1}', isBase64Encoded: false });
  });

  it('a failing function is a 502 with the request id, and the server keeps serving', async () => {
    answer = new Error('boom with internals');
    const failed = await call('/healthz');
    expect(failed.status).toBe(502);
    const body = await failed.text();
    expect(body).not.toContain('internals');
    expect(body).toContain(failed.headers.get('x-amzn-requestid') ?? 'missing');
    answer = { statusCode: 200, body: '{"ok":true}' };
    expect((await call('/healthz')).status).toBe(200);
  });
});
