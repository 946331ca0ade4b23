// Robustness: random bodies never produce a 5xx or stop the server, and optimistic
// concurrency loses no update when many clients read-modify-write the same object.
import fc from 'fast-check';
import { request, startTestServer, widget, WIDGET_CRD, type TestServer } from './helpers';

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

describe('robustness', () => {
  let test: TestServer;
  beforeAll(async () => {
    test = await startTestServer();
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    expect((await request(test, 'POST', WIDGETS, widget('target', { size: 0 }))).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('random bodies, content types and paths get an object or a Status error, never a 5xx', async () => {
    const targets = [
      ['POST', WIDGETS],
      ['PUT', `${WIDGETS}/target`],
      ['PUT', `${WIDGETS}/target/status`],
      ['PATCH', `${WIDGETS}/target`],
      ['PATCH', `${WIDGETS}/target/status`],
      ['POST', '/api/v1/namespaces'],
      ['PATCH', '/api/v1/namespaces/default'],
      ['POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases'],
      ['POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'],
      ['DELETE', `${WIDGETS}/absent`],
    ] as const;
    const contentTypes = [
      'application/json',
      'application/yaml',
      'application/merge-patch+json',
      'application/json-patch+json',
      'application/strategic-merge-patch+json',
      'application/vnd.kubernetes.protobuf',
      'text/plain',
    ];
    const objectish = fc.record(
      {
        apiVersion: fc.constantFrom('example.com/v1', 'v1', 'coordination.k8s.io/v1', 'apiextensions.k8s.io/v1', 'bogus'),
        kind: fc.constantFrom('Widget', 'Namespace', 'Lease', 'CustomResourceDefinition', 'Nope'),
        metadata: fc.oneof(fc.jsonValue(), fc.record({ name: fc.string(), labels: fc.jsonValue(), resourceVersion: fc.string() }, { requiredKeys: [] })),
        spec: fc.jsonValue(),
        status: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.jsonValue().map((value) => JSON.stringify(value)),
      objectish.map((value) => JSON.stringify(value)),
      fc.array(fc.record({ op: fc.constantFrom('add', 'remove', 'replace', 'test', 'move', 'copy'), path: fc.constantFrom('/spec', '/spec/size', '/metadata/labels', '/status', '/x/y', ''), value: fc.jsonValue(), from: fc.constantFrom('/spec', '/nope') }, { requiredKeys: ['op'] })).map((ops) => JSON.stringify(ops)),
      fc.string(),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), fc.constantFrom(...contentTypes), body, async ([method, path], contentType, text) => {
        const response = await request(test, method, path, text, contentType);
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.body).toMatchObject({ kind: 'Status', status: 'Failure', code: response.status });
        }
      }),
      { numRuns: 400 },
    );
    expect((await request(test, 'GET', '/version')).status).toBe(200);
  });

  it('random paths and query parameters get an answer below 500', async () => {
    const segment = fc.oneof(
      fc.constantFrom('api', 'apis', 'v1', 'v2', 'namespaces', 'default', 'widgets', 'example.com', 'status', 'scale', 'leases', 'coordination.k8s.io', 'openapi', 'v3', 'version', '%', '%E0%A4%A', '%2F', '..'),
      fc.string({ maxLength: 8 }).map(encodeURIComponent),
    );
    const parameter = fc.tuple(
      fc.constantFrom('watch', 'labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion', 'resourceVersionMatch', 'timeoutSeconds', 'allowWatchBookmarks', 'sendInitialEvents', 'fieldValidation', 'dryRun'),
      fc.oneof(fc.constantFrom('true', '1', '0', '-1', 'NotOlderThan', 'Exact', 'Strict', 'a=b', 'a in (b', 'metadata.name=x'), fc.string({ maxLength: 10 })),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('GET', 'DELETE', 'HEAD', 'OPTIONS'), fc.array(segment, { maxLength: 7 }), fc.array(parameter, { maxLength: 4 }), async (method, segments, parameters) => {
        const query = new URLSearchParams(parameters.map(([k, v]): [string, string] => [k, k === 'timeoutSeconds' && Number(v) > 0 ? '1' : v]));
        const controller = new AbortController();
        const response = await fetch(`${test.server.url}/${segments.join('/')}?${query.toString()}`, { method, signal: controller.signal });
        expect(response.status).toBeLessThan(500);
        controller.abort(); // watches stay open: do not wait for them
      }),
      { numRuns: 300 },
    );
    expect((await request(test, 'GET', '/version')).status).toBe(200);
  });

  it('optimistic concurrency: concurrent read-modify-write with retry on 409 loses no increment', async () => {
    await request(test, 'POST', WIDGETS, widget('counter', { size: 0 }));
    let conflicts = 0;
    const increment = async (): Promise<void> => {
      for (;;) {
        const current = (await request(test, 'GET', `${WIDGETS}/counter`)).body as { metadata: Record<string, unknown>; spec: { size: number } };
        const next = { ...current, spec: { size: current.spec.size + 1 } };
        const written = await request(test, 'PUT', `${WIDGETS}/counter`, next);
        if (written.status === 200) return;
        expect(written.status).toBe(409);
        conflicts += 1;
      }
    };
    const clients = 8;
    const perClient = 10;
    await Promise.all(Array.from({ length: clients }, async () => {
      for (let i = 0; i < perClient; i += 1) await increment();
    }));
    const final = (await request(test, 'GET', `${WIDGETS}/counter`)).body as { spec: { size: number }; metadata: { generation: number } };
    expect(final.spec.size).toBe(clients * perClient);
    expect(final.metadata.generation).toBe(clients * perClient + 1);
    expect(conflicts).toBeGreaterThan(0); // the clients really raced
  });
});
