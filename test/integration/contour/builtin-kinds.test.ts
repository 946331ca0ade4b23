// The built-in kinds the local API server serves for an ingress controller (Service, Secret,
// ConfigMap, EndpointSlice, Ingress, Event; infra/local/kube/builtin-strategies.ts), checked
// against what kube-apiserver stores for the same requests: defaults, allocations, write-only
// fields, generation, validation; and the protobuf bodies controller-runtime and client-go write
// for Events and Ingresses, and kubectl's for Secrets and ConfigMaps (infra/local/kube/protobuf.ts).
import * as protobuf from 'protobufjs';
import pino from 'pino';
import { ApiError } from '../../../infra/local/kube/errors';
import { decodeKubernetesProtobuf } from '../../../infra/local/kube/protobuf';
import { startKubeApiServer, type KubeApiServer } from '../../../infra/local/kube/server';
import { kubectl, startTestServer, type TestServer } from '../kube/helpers';

type Body = Record<string, unknown> & { metadata?: Record<string, unknown>; spec?: Record<string, unknown>; status?: Record<string, unknown> };

describe('built-in kinds for ingress controllers', () => {
  let kube: KubeApiServer;
  const api = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: Body }> => {
    const response = await fetch(`${kube.url}${path}`, { method, headers: { 'Content-Type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Body };
  };

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', ingressControllerKinds: true, logger: pino({ level: 'silent' }) });
  });
  afterAll(() => kube.close());

  it('Service: defaults, a clusterIP and nodePorts allocated and kept across an update that leaves them out, no generation', async () => {
    const created = await api('POST', '/api/v1/namespaces/default/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { type: 'NodePort', ports: [{ name: 'http', port: 80 }, { name: 'dns', port: 53, protocol: 'UDP', targetPort: 'dns' }] },
    });
    expect(created.status).toBe(201);
    const spec = created.body.spec as { clusterIP: string; clusterIPs: string[]; ports: Record<string, unknown>[] } & Record<string, unknown>;
    expect(spec).toMatchObject({ type: 'NodePort', sessionAffinity: 'None', externalTrafficPolicy: 'Cluster', internalTrafficPolicy: 'Cluster', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' });
    expect(spec.clusterIP).toMatch(/^10\.(9[6-9]|10[0-9]|11[01])\./);
    expect(spec.clusterIPs).toEqual([spec.clusterIP]);
    expect(spec.ports).toEqual([
      { name: 'http', port: 80, protocol: 'TCP', targetPort: 80, nodePort: 30000 },
      { name: 'dns', port: 53, protocol: 'UDP', targetPort: 'dns', nodePort: 30001 },
    ]);
    expect(created.body.status).toEqual({ loadBalancer: {} });
    expect(created.body.metadata?.['generation']).toBeUndefined();

    // A PUT without the allocated values keeps them (kube-apiserver's patchAllocatedValues).
    const replaced = await api('PUT', '/api/v1/namespaces/default/services/web', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { type: 'NodePort', ports: [{ name: 'http', port: 80 }, { name: 'dns', port: 53, protocol: 'UDP', targetPort: 'dns' }], selector: { app: 'web' } },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.spec).toMatchObject({ clusterIP: spec.clusterIP, ports: spec.ports, selector: { app: 'web' } });
    const moved = await api('PATCH', '/api/v1/namespaces/default/services/web', { spec: { clusterIP: '10.96.99.99', clusterIPs: ['10.96.99.99'] } }, 'application/merge-patch+json');
    expect(moved.status).toBe(422);

    const second = await api('POST', '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'other' }, spec: { ports: [{ port: 8080 }] } });
    expect((second.body.spec as { clusterIP: string }).clusterIP).not.toBe(spec.clusterIP);
    const invalid = await api('POST', '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'bad' }, spec: { ports: [{ port: 80 }, { port: 70000 }] } });
    expect(invalid.status).toBe(422);
    expect(JSON.stringify(invalid.body)).toContain('spec.ports[1].name');
    expect(JSON.stringify(invalid.body)).toContain('spec.ports[1].port');
  });

  it('Secret: stringData merged into data and never stored, type Opaque by default, required TLS keys, non-base64 data refused', async () => {
    const created = await api('POST', '/api/v1/namespaces/default/secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      data: { user: Buffer.from('alice').toString('base64') },
      stringData: { password: 's3cret' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ type: 'Opaque', data: { user: Buffer.from('alice').toString('base64'), password: Buffer.from('s3cret').toString('base64') } });
    expect(created.body['stringData']).toBeUndefined();
    const retyped = await api('PATCH', '/api/v1/namespaces/default/secrets/creds', { type: 'kubernetes.io/tls' }, 'application/merge-patch+json');
    expect(retyped.status).toBe(422);
    const tls = await api('POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tls' }, type: 'kubernetes.io/tls', data: { 'tls.crt': '' } });
    expect(tls.status).toBe(422);
    expect(JSON.stringify(tls.body)).toContain('data[tls.key]');
    const garbage = await api('POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'junk' }, data: { key: 'not base64!' } });
    expect(garbage.status).toBe(400);
  });

  it('EndpointSlice: port name and protocol defaulted, a generation that follows any change, addressType immutable', async () => {
    const path = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
    const created = await api('POST', path, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-1' }, addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'] }], ports: [{ port: 8080 }] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ports: [{ name: '', protocol: 'TCP', port: 8080 }], metadata: { generation: 1 } });
    const changed = await api('PATCH', `${path}/web-1`, { endpoints: [{ addresses: ['10.0.0.2'] }] }, 'application/merge-patch+json');
    expect(changed.body.metadata?.['generation']).toBe(2);
    const labelled = await api('PATCH', `${path}/web-1`, { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json');
    expect(labelled.body.metadata?.['generation']).toBe(2);
    expect((await api('PATCH', `${path}/web-1`, { addressType: 'IPv6' }, 'application/merge-patch+json')).status).toBe(422);
    expect((await api('POST', path, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'bad' }, addressType: 'IPv4', endpoints: [{ addresses: ['not-an-ip'] }] })).status).toBe(422);
  });

  it('Ingress: generation follows the spec, status only through /status; ConfigMap: immutable once marked', async () => {
    const path = '/apis/networking.k8s.io/v1/namespaces/default/ingresses';
    const ingress = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'web' }, spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } } };
    const created = await api('POST', path, ingress);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ metadata: { generation: 1 }, status: { loadBalancer: {} } });
    const status = await api('PUT', `${path}/web/status`, { ...created.body, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } });
    expect(status.body).toMatchObject({ metadata: { generation: 1 }, status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } });
    const badPath = await api('POST', path, { ...ingress, metadata: { name: 'bad' }, spec: { rules: [{ http: { paths: [{ path: 'x', pathType: 'Sometimes', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] } });
    expect(badPath.status).toBe(422);

    const configMaps = '/api/v1/namespaces/default/configmaps';
    expect((await api('POST', configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'frozen' }, immutable: true, data: { a: '1' } })).status).toBe(201);
    expect((await api('PATCH', `${configMaps}/frozen`, { data: { a: '2' } }, 'application/merge-patch+json')).status).toBe(422);
    expect((await api('PATCH', `${configMaps}/frozen`, { metadata: { labels: { ok: 'yes' } } }, 'application/merge-patch+json')).status).toBe(200);
  });

  it('discovery lists the kinds where controller-runtime looks them up, namespaced, with their status subresources', async () => {
    const core = (await api('GET', '/api/v1')).body as unknown as { resources: { name: string; namespaced: boolean }[] };
    expect(core.resources.filter((r) => ['services', 'services/status', 'secrets', 'configmaps', 'events'].includes(r.name)).map((r) => [r.name, r.namespaced])).toEqual([
      ['configmaps', true],
      ['events', true],
      ['secrets', true],
      ['services', true],
      ['services/status', true],
    ]);
    const groups = (await api('GET', '/apis')).body as unknown as { groups: { name: string }[] };
    expect(groups.groups.map((g) => g.name)).toEqual(expect.arrayContaining(['discovery.k8s.io', 'networking.k8s.io', 'coordination.k8s.io']));
  });

  it('are served only when asked for (ingressControllerKinds): by default Services are a 404', async () => {
    const plain = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: pino({ level: 'silent' }) });
    try {
      expect((await fetch(`${plain.url}/api/v1/services`)).status).toBe(404);
      expect((await fetch(`${plain.url}/apis/discovery.k8s.io/v1`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

describe('kubectl against the ingress-controller kinds', () => {
  let test: TestServer;
  beforeAll(async () => {
    test = await startTestServer({ ingressControllerKinds: true });
  });
  afterAll(() => test.cleanup());

  it('create secret / configmap (protobuf bodies), field selectors on Secrets and Events, describe service', async () => {
    expect(await kubectl(test, ['create', 'secret', 'generic', 'creds', '--from-literal=user=alice', '--type=example.com/creds'])).toMatchObject({ code: 0 });
    expect(await kubectl(test, ['create', 'configmap', 'settings', '--from-literal=mode=fast'])).toMatchObject({ code: 0 });
    const secret = await kubectl(test, ['get', 'secret', 'creds', '-o', 'json']);
    expect(JSON.parse(secret.stdout)).toMatchObject({ type: 'example.com/creds', data: { user: Buffer.from('alice').toString('base64') } });
    expect(JSON.parse((await kubectl(test, ['get', 'configmap', 'settings', '-o', 'json'])).stdout)).toMatchObject({ data: { mode: 'fast' } });
    const byType = await kubectl(test, ['get', 'secrets', '--field-selector', 'type=example.com/creds', '-o', 'name']);
    expect(byType.stdout.trim()).toBe('secret/creds');
    expect((await kubectl(test, ['get', 'secrets', '--field-selector', 'type=Opaque', '-o', 'name'])).stdout.trim()).toBe('');

    const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }] } };
    expect(await kubectl(test, ['create', '-f', '-'], JSON.stringify(service))).toMatchObject({ code: 0 });
    const uid = (await kubectl(test, ['get', 'service', 'web', '-o', 'jsonpath={.metadata.uid}'])).stdout;
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.1', namespace: 'default' },
      involvedObject: { apiVersion: 'v1', kind: 'Service', name: 'web', namespace: 'default', uid },
      reason: 'Synced',
      message: 'hello from the test',
      type: 'Normal',
      source: { component: 'test' },
      count: 1,
    };
    expect(await kubectl(test, ['create', '-f', '-'], JSON.stringify(event))).toMatchObject({ code: 0 });
    // kubectl describe asks for the Service's Events with involvedObject.* field selectors.
    const described = await kubectl(test, ['describe', 'service', 'web']);
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(/IP:\s+10\.96\./);
    expect(described.stdout).toContain('hello from the test');
    expect((await kubectl(test, ['get', 'events', '--field-selector', 'source=test'])).code).not.toBe(0);
  });
});

// Protobuf bodies built with protobufjs's writer, field numbers from k8s.io/api's generated.proto.
function message(build: (w: protobuf.Writer) => void): Uint8Array {
  const writer = protobuf.Writer.create();
  build(writer);
  return writer.finish();
}
const bytes = (w: protobuf.Writer, field: number, value: Uint8Array | string): protobuf.Writer =>
  typeof value === 'string' ? w.uint32((field << 3) | 2).string(value) : w.uint32((field << 3) | 2).bytes(value);
const varint = (w: protobuf.Writer, field: number, value: number): protobuf.Writer => w.uint32(field << 3).int64(value);

function envelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const typeMeta = message((w) => bytes(bytes(w, 1, apiVersion), 2, kind));
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), message((w) => bytes(bytes(w, 1, typeMeta), 2, raw))]);
}

describe('protobuf bodies of Events and Ingresses', () => {
  it('decodes an Event as client-go typed clients post it', () => {
    const time = message((w) => varint(w, 1, 1767225600));
    const raw = message((w) => {
      bytes(w, 1, message((m) => bytes(bytes(m, 1, 'leader.1'), 3, 'projectcontour')));
      bytes(w, 2, message((r) => bytes(bytes(bytes(r, 1, 'Lease'), 2, 'projectcontour'), 3, 'leader')));
      bytes(w, 3, 'LeaderElection');
      bytes(w, 4, 'x became leader');
      bytes(w, 5, message((s) => bytes(s, 1, 'contour')));
      bytes(w, 6, time);
      bytes(w, 7, time);
      varint(w, 8, 1);
      bytes(w, 9, 'Normal');
      bytes(w, 10, new Uint8Array());
      bytes(w, 14, 'contour');
      bytes(w, 15, '');
    });
    expect(decodeKubernetesProtobuf(envelope('v1', 'Event', raw))).toEqual({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'leader.1', namespace: 'projectcontour' },
      involvedObject: { kind: 'Lease', namespace: 'projectcontour', name: 'leader' },
      reason: 'LeaderElection',
      message: 'x became leader',
      source: { component: 'contour' },
      firstTimestamp: '2026-01-01T00:00:00Z',
      lastTimestamp: '2026-01-01T00:00:00Z',
      count: 1,
      type: 'Normal',
      eventTime: null,
      reportingComponent: 'contour',
    });
  });

  it('decodes an Ingress with its inline rule value and status, and refuses a field it does not know', () => {
    const backend = message((b) => bytes(b, 4, message((s) => bytes(bytes(s, 1, 'web'), 2, message((p) => varint(p, 2, 80))))));
    const path = message((p) => bytes(bytes(bytes(p, 1, '/'), 2, backend), 3, 'Prefix'));
    const rule = message((r) => bytes(bytes(r, 1, 'a.example.com'), 2, message((v) => bytes(v, 1, message((h) => bytes(h, 1, path))))));
    const spec = message((s) => bytes(bytes(s, 3, rule), 4, 'contour'));
    const status = message((s) => bytes(s, 1, message((l) => bytes(l, 1, message((i) => bytes(i, 1, '192.0.2.10'))))));
    const raw = message((w) => bytes(bytes(bytes(w, 1, message((m) => bytes(bytes(m, 1, 'web'), 3, 'default'))), 2, spec), 3, status));
    expect(decodeKubernetesProtobuf(envelope('networking.k8s.io/v1', 'Ingress', raw))).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: 'default' },
      spec: { ingressClassName: 'contour', rules: [{ host: 'a.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
      status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } },
    });
    let caught: unknown;
    try {
      decodeKubernetesProtobuf(envelope('networking.k8s.io/v1', 'Ingress', message((w) => bytes(w, 9, 'x'))));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).code).toBe(415);
  });
});
