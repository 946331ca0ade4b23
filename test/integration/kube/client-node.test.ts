// @kubernetes/client-node 1.4.0 against the local server: an informer (list + watch) sees
// adds, updates and deletes; status merge-patch; optimistic concurrency; Leases.
import {
  ApiException,
  CoordinationV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type KubernetesObject,
  type V1Lease,
} from '@kubernetes/client-node';
import { openWatch, request, startTestServer, widget, WIDGET_CRD, type TestServer } from './helpers';
import { waitFor as pollWaitFor } from '../../support/eventually';

interface Widget extends KubernetesObject {
  spec: { size: number };
  status?: { conditions?: { type: string; status: string; observedGeneration: number }[] };
}

function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  return pollWaitFor(what, check, { timeoutMs, intervalMs: 20 });
}

describe('@kubernetes/client-node against the local API server', () => {
  let test: TestServer;
  let kc: KubeConfig;
  let custom: CustomObjectsApi;

  beforeAll(async () => {
    test = await startTestServer();
    kc = new KubeConfig();
    kc.loadFromFile(test.kubeconfig);
    custom = kc.makeApiClient(CustomObjectsApi);
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('an informer sees add, update (status through the watch) and delete', async () => {
    const events: string[] = [];
    const listFn = () =>
      custom.listNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets' }) as Promise<{
        items: Widget[];
        metadata: { resourceVersion: string };
      }>;
    const informer = makeInformer<Widget>(kc, '/apis/example.com/v1/namespaces/default/widgets', listFn);
    informer.on('add', (obj) => events.push(`add:${obj.metadata?.name ?? ''}`));
    informer.on('update', (obj) => events.push(`update:${obj.metadata?.name ?? ''}:${obj.status?.conditions?.[0]?.observedGeneration ?? '-'}`));
    informer.on('delete', (obj) => events.push(`delete:${obj.metadata?.name ?? ''}`));
    const errors: unknown[] = [];
    informer.on('error', (error) => errors.push(error));

    await custom.createNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', body: widget('before', { size: 1 }) });
    await informer.start();
    try {
      await waitFor('the listed object', () => (events.includes('add:before') ? true : undefined));
      await custom.createNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', body: widget('w2', { size: 2 }) });
      await waitFor('the watched add', () => (events.includes('add:w2') ? true : undefined));

      const patched = (await custom.patchNamespacedCustomObjectStatus(
        {
          group: 'example.com',
          version: 'v1',
          namespace: 'default',
          plural: 'widgets',
          name: 'w2',
          body: { status: { conditions: [{ type: 'EnvoyProgrammed', status: 'True', observedGeneration: 1 }] } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as Widget;
      expect(patched.status?.conditions?.[0]?.status).toBe('True');
      await waitFor('the status update', () => (events.includes('update:w2:1') ? true : undefined));
      expect(informer.get('w2', 'default')?.status?.conditions?.[0]?.observedGeneration).toBe(1);

      await custom.deleteNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', name: 'w2' });
      await waitFor('the delete', () => (events.includes('delete:w2') ? true : undefined));
      expect(informer.get('w2', 'default')).toBeUndefined();
      expect(informer.list('default').map((o) => o.metadata?.name)).toEqual(['before']);
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  });

  it('a replace carrying a stale resourceVersion gets 409 Conflict', async () => {
    const created = (await custom.createNamespacedCustomObject({
      group: 'example.com',
      version: 'v1',
      namespace: 'default',
      plural: 'widgets',
      body: widget('w3', { size: 3 }),
    })) as Widget;
    const stale = structuredClone(created);
    await custom.replaceNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', name: 'w3', body: { ...created, spec: { size: 4 } } });
    const attempt = custom.replaceNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', name: 'w3', body: { ...stale, spec: { size: 5 } } });
    await expect(attempt).rejects.toBeInstanceOf(ApiException);
    const error = await attempt.catch((e: unknown) => e as ApiException<string>);
    expect(error.code).toBe(409);
    expect(JSON.parse(error.body) as { reason: string }).toMatchObject({ reason: 'Conflict' });
    const current = (await custom.getNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', name: 'w3' })) as Widget;
    expect(current.spec.size).toBe(4);
    expect(current.metadata?.generation).toBe(2);
  });

  it('KubernetesObjectApi (which finds resources through discovery) creates, reads, merge-patches, lists and deletes', async () => {
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const body: Widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'generic', namespace: 'default', labels: { via: 'generic' } }, spec: { size: 1 } };
    const created = await objects.create(body);
    expect(created.metadata?.uid).toBeDefined();
    const patched = await objects.patch(
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'generic', namespace: 'default' }, spec: { size: 7 } } as Widget,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    expect(patched.spec.size).toBe(7);
    expect(patched.metadata?.generation).toBe(2);
    const read = await objects.read<Widget>({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'generic', namespace: 'default' } });
    expect(read.spec.size).toBe(7);
    const listed = await objects.list<Widget>('example.com/v1', 'Widget', 'default', undefined, undefined, undefined, undefined, 'via=generic');
    expect(listed.items.map((item) => item.metadata?.name)).toEqual(['generic']);
    await objects.delete({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'generic', namespace: 'default' } });
    await expect(objects.read({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'generic', namespace: 'default' } })).rejects.toMatchObject({ code: 404 });
  });

  it('Leases work for leader election: create, renew with the current resourceVersion, conflict with a stale one', async () => {
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const body: V1Lease = { metadata: { name: 'status-writer', namespace: 'default' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } };
    const created = await coordination.createNamespacedLease({ namespace: 'default', body });
    expect(created.spec?.holderIdentity).toBe('a');
    const renewed = await coordination.replaceNamespacedLease({
      name: 'status-writer',
      namespace: 'default',
      body: { ...created, spec: { ...created.spec, renewTime: new Date('2026-01-01T00:00:00.000Z') } },
    });
    expect(Number(renewed.metadata?.resourceVersion)).toBeGreaterThan(Number(created.metadata?.resourceVersion));
    const takeover = coordination.replaceNamespacedLease({ name: 'status-writer', namespace: 'default', body: { ...created, spec: { ...created.spec, holderIdentity: 'b' } } });
    await expect(takeover).rejects.toMatchObject({ code: 409 });
    const current = await coordination.readNamespacedLease({ name: 'status-writer', namespace: 'default' });
    expect(current.spec?.holderIdentity).toBe('a');
    expect(String(current.spec?.renewTime)).toContain('2026-01-01T00:00:00');
  });
});

describe('client-node informer across an expired resourceVersion', () => {
  let test: TestServer;
  beforeAll(async () => {
    // Watches end after a second and only 5 events are kept: a quiet informer falls behind.
    test = await startTestServer({ maxWatchTimeoutSeconds: 1, watchHistoryLimit: 5 });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('relists after 410 Expired and still sees every object', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(test.kubeconfig);
    const custom = kc.makeApiClient(CustomObjectsApi);
    let lists = 0;
    const listFn = () => {
      lists += 1;
      return custom.listNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets' }) as Promise<{
        items: Widget[];
        metadata: { resourceVersion: string };
      }>;
    };
    const informer = makeInformer<Widget>(kc, '/apis/example.com/v1/namespaces/default/widgets', listFn);
    const errors: unknown[] = [];
    informer.on('error', (error) => errors.push(error));
    await informer.start();
    try {
      const listed = await listFn();
      // Writes to another resource move the global resourceVersion past the history window.
      for (let i = 0; i < 10; i += 1) {
        await request(test, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { metadata: { name: `l${i}` }, spec: {} });
      }
      const stale = await openWatch(test, `/apis/example.com/v1/namespaces/default/widgets?watch=true&resourceVersion=${listed.metadata.resourceVersion}`);
      await stale.ended;
      expect(stale.events[0]).toMatchObject({ type: 'ERROR', object: { code: 410 } });
      // The informer's watch ends (timeout), it re-watches from its stale resourceVersion,
      // gets 410 and lists again: only a 410 makes it list a second time.
      await waitFor('the informer to relist', () => (lists >= 3 ? true : undefined));

      await custom.createNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'widgets', body: widget('late', { size: 1 }) });
      await waitFor('the informer to see the late object', () => informer.get('late', 'default'));
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  });
});
