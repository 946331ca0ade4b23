// Bad input gets a Status error with the right code and reason, and the server keeps serving.
import { request as httpRequest } from 'node:http';
import { asStatus, request, startTestServer, widget, WIDGET_CRD, type TestServer } from './helpers';

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

describe('bad input', () => {
  let test: TestServer;

  beforeAll(async () => {
    test = await startTestServer({ maxBodyBytes: 64 * 1024 });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    expect((await request(test, 'POST', WIDGETS, widget('existing', { size: 1 }))).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  const cases: { name: string; method: string; path: string; body?: unknown; contentType?: string; code: number; reason: string; message?: RegExp }[] = [
    { name: 'malformed JSON', method: 'POST', path: WIDGETS, body: '{"kind": "Widget",', code: 400, reason: 'BadRequest', message: /not valid JSON/ },
    { name: 'a JSON array as an object', method: 'POST', path: WIDGETS, body: '[1,2]', code: 400, reason: 'BadRequest' },
    { name: 'missing kind', method: 'POST', path: WIDGETS, body: { apiVersion: 'example.com/v1', metadata: { name: 'x' } }, code: 400, reason: 'BadRequest', message: /Kind/ },
    { name: 'kind of another resource', method: 'POST', path: WIDGETS, body: { ...widget('x', {}), kind: 'Gadget' }, code: 400, reason: 'BadRequest' },
    { name: 'unknown resource', method: 'GET', path: '/apis/example.com/v1/namespaces/default/gadgets', code: 404, reason: 'NotFound' },
    { name: 'unknown group', method: 'GET', path: '/apis/nothing.example.com/v1/things', code: 404, reason: 'NotFound' },
    { name: 'unserved version', method: 'GET', path: '/apis/example.com/v2/namespaces/default/widgets', code: 404, reason: 'NotFound' },
    { name: 'malformed percent-encoding in the path', method: 'GET', path: `${WIDGETS}/%E0%A4%A`, code: 400, reason: 'BadRequest' },
    { name: 'unknown path', method: 'GET', path: '/metrics-or-whatever', code: 404, reason: 'NotFound' },
    { name: 'missing object', method: 'GET', path: `${WIDGETS}/nope`, code: 404, reason: 'NotFound', message: /widgets.example.com "nope" not found/ },
    { name: 'missing namespace', method: 'POST', path: '/apis/example.com/v1/namespaces/ghost/widgets', body: widget('x', {}, 'ghost'), code: 404, reason: 'NotFound', message: /namespaces "ghost" not found/ },
    { name: 'namespace in the body differs from the path', method: 'POST', path: WIDGETS, body: widget('elsewhere', {}, 'kube-system'), code: 400, reason: 'BadRequest', message: /namespace/ },
    { name: 'a label value that is not a string', method: 'POST', path: WIDGETS, body: { ...widget('l1', {}), metadata: { name: 'l1', labels: { a: 1 } } }, code: 422, reason: 'Invalid', message: /metadata.labels.a/ },
    { name: 'an invalid label value', method: 'POST', path: WIDGETS, body: { ...widget('l2', {}), metadata: { name: 'l2', labels: { a: 'has space' } } }, code: 422, reason: 'Invalid' },
    { name: 'an invalid label key', method: 'POST', path: WIDGETS, body: { ...widget('l3', {}), metadata: { name: 'l3', labels: { 'bad key': 'x' } } }, code: 422, reason: 'Invalid' },
    { name: 'finalizers that are not strings', method: 'POST', path: WIDGETS, body: { ...widget('f1', {}), metadata: { name: 'f1', finalizers: [1] } }, code: 422, reason: 'Invalid' },
    { name: 'an incomplete ownerReference', method: 'POST', path: WIDGETS, body: { ...widget('o1', {}), metadata: { name: 'o1', ownerReferences: [{ kind: 'X' }] } }, code: 422, reason: 'Invalid' },
    { name: 'a label patch that breaks the rules', method: 'PATCH', path: `${WIDGETS}/existing`, body: { metadata: { labels: { a: '-bad-' } } }, contentType: 'application/merge-patch+json', code: 422, reason: 'Invalid' },
    { name: 'duplicate name', method: 'POST', path: WIDGETS, body: widget('existing', {}), code: 409, reason: 'AlreadyExists' },
    { name: 'invalid name', method: 'POST', path: WIDGETS, body: widget('Not_Valid', {}), code: 422, reason: 'Invalid', message: /metadata.name/ },
    { name: 'namespace name with a dot', method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a.b' } }, code: 422, reason: 'Invalid' },
    { name: 'schema type mismatch', method: 'POST', path: WIDGETS, body: widget('typed', { size: 'big' }), code: 422, reason: 'Invalid', message: /spec.size/ },
    { name: 'enum violation', method: 'POST', path: WIDGETS, body: widget('colored', { color: 'green' }), code: 422, reason: 'Invalid', message: /Unsupported value/ },
    { name: 'text body on create', method: 'POST', path: WIDGETS, body: 'kind: Widget', contentType: 'text/plain', code: 415, reason: 'UnsupportedMediaType' },
    { name: 'malformed YAML', method: 'POST', path: WIDGETS, body: 'kind: [Widget', contentType: 'application/yaml', code: 400, reason: 'BadRequest', message: /not valid YAML/ },
    { name: 'protobuf body', method: 'POST', path: WIDGETS, body: 'k8s\u0000', contentType: 'application/vnd.kubernetes.protobuf', code: 415, reason: 'UnsupportedMediaType' },
    { name: 'server-side apply', method: 'PATCH', path: `${WIDGETS}/existing`, body: 'spec: {}', contentType: 'application/apply-patch+yaml', code: 415, reason: 'UnsupportedMediaType', message: /server-side apply/ },
    { name: 'strategic merge on a custom resource', method: 'PATCH', path: `${WIDGETS}/existing`, body: {}, contentType: 'application/strategic-merge-patch+json', code: 415, reason: 'UnsupportedMediaType' },
    { name: 'strategic merge directive on a Namespace', method: 'PATCH', path: '/api/v1/namespaces/default', body: { metadata: { $patch: 'replace' } }, contentType: 'application/strategic-merge-patch+json', code: 415, reason: 'UnsupportedMediaType' },
    { name: 'JSON patch that is not a list', method: 'PATCH', path: `${WIDGETS}/existing`, body: { op: 'add' }, contentType: 'application/json-patch+json', code: 400, reason: 'BadRequest' },
    { name: 'JSON patch whose test fails', method: 'PATCH', path: `${WIDGETS}/existing`, body: [{ op: 'test', path: '/spec/size', value: 99 }], contentType: 'application/json-patch+json', code: 422, reason: 'Invalid' },
    { name: 'bad label selector', method: 'GET', path: `${WIDGETS}?labelSelector=${encodeURIComponent('a in (b')}`, code: 400, reason: 'BadRequest' },
    { name: 'unsupported field selector', method: 'GET', path: `${WIDGETS}?fieldSelector=spec.size%3D1`, code: 400, reason: 'BadRequest', message: /field label not supported/ },
    { name: 'bad continue token', method: 'GET', path: `${WIDGETS}?limit=1&continue=garbage`, code: 400, reason: 'BadRequest' },
    { name: 'bad watch resourceVersion', method: 'GET', path: `${WIDGETS}?watch=true&resourceVersion=abc`, code: 400, reason: 'BadRequest' },
    { name: 'sendInitialEvents without bookmarks', method: 'GET', path: `${WIDGETS}?watch=true&sendInitialEvents=true`, code: 422, reason: 'Invalid' },
    { name: 'unknown subresource', method: 'GET', path: `${WIDGETS}/existing/scale`, code: 404, reason: 'NotFound' },
    { name: 'POST on an object', method: 'POST', path: `${WIDGETS}/existing`, body: {}, code: 405, reason: 'MethodNotAllowed' },
    { name: 'deletecollection across all namespaces', method: 'DELETE', path: '/apis/example.com/v1/widgets', code: 405, reason: 'MethodNotAllowed' },
    { name: 'PUT on discovery', method: 'PUT', path: '/apis', body: {}, code: 405, reason: 'MethodNotAllowed' },
    { name: 'dryRun', method: 'POST', path: `${WIDGETS}?dryRun=All`, body: widget('dry', {}), code: 501, reason: 'NotImplemented' },
    { name: 'resourceVersionMatch=Exact', method: 'GET', path: `${WIDGETS}?resourceVersion=1&resourceVersionMatch=Exact`, code: 501, reason: 'NotImplemented' },
    { name: 'invalid CRD', method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: { ...WIDGET_CRD, metadata: { name: 'wrong.example.com' } }, code: 422, reason: 'Invalid', message: /metadata.name/ },
    { name: 'oversize body', method: 'POST', path: WIDGETS, body: widget('big', { size: 1, pad: 'x'.repeat(70 * 1024) }), code: 413, reason: 'RequestEntityTooLarge' },
  ];

  it.each(cases)('$name → $code $reason', async ({ method, path, body, contentType, code, reason, message }) => {
    const response = await request(test, method, path, body, contentType);
    expect(response.status).toBe(code);
    const status = asStatus(response.body);
    expect(status).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
    if (message) expect(status.message).toMatch(message);
    // Still serving, and nothing was written by the refused request.
    const list = await request(test, 'GET', WIDGETS);
    expect(list.status).toBe(200);
    expect((list.body as { items: { metadata: { name: string } }[] }).items.map((item) => item.metadata.name)).toEqual(['existing']);
  });

  it('an oversize body without Content-Length (chunked) is refused too', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${test.server.url}${WIDGETS}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 80; i += 1) req.write('x'.repeat(1024));
      req.end();
    });
    expect(status).toBe(413);
    expect((await request(test, 'GET', `${WIDGETS}/existing`)).status).toBe(200);
  });

  it('a malformed HTTP request does not stop the server', async () => {
    const { connect } = await import('node:net');
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(test.server.port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
      socket.on('close', () => resolve(data));
    });
    expect(answer).toContain('400');
    expect((await request(test, 'GET', '/version')).status).toBe(200);
  });
});
