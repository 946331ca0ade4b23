// API semantics over plain HTTP: generation, status subresource, optimistic concurrency,
// no-op writes, pruning and fieldValidation, finalizers, preconditions, cascades, selectors,
// paging, multi-version CRDs, discovery.
import { asStatus, meta, request, startTestServer, widget, WIDGET_CRD, type TestServer } from './helpers';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

interface Obj {
  metadata: { name: string; resourceVersion: string; generation?: number; uid: string; deletionTimestamp?: string; finalizers?: string[]; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  apiVersion?: string;
}
interface ObjList {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: Obj[];
}
const obj = (body: unknown): Obj => body as Obj;
const names = (body: unknown): string[] => (body as ObjList).items.map((item) => item.metadata.name);

describe('API semantics', () => {
  let test: TestServer;

  beforeAll(async () => {
    test = await startTestServer();
    expect((await request(test, 'POST', CRDS, WIDGET_CRD)).status).toBe(201);
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('create sets server metadata, generation 1, and drops status (status subresource)', async () => {
    const created = await request(test, 'POST', WIDGETS, { ...widget('g1', { size: 1 }), status: { conditions: [{ type: 'X', status: 'True' }] } });
    expect(created.status).toBe(201);
    const body = obj(created.body);
    expect(body.metadata.generation).toBe(1);
    expect(body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.metadata).toHaveProperty('creationTimestamp');
    expect(body.status).toBeUndefined();
  });

  it('generation bumps on spec changes only; /status changes status only', async () => {
    const path = `${WIDGETS}/g1`;
    const labelled = await request(test, 'PATCH', path, { metadata: { labels: { team: 'a' } } }, 'application/merge-patch+json');
    expect(obj(labelled.body).metadata.generation).toBe(1);
    const respec = await request(test, 'PATCH', path, { spec: { size: 2 } }, 'application/merge-patch+json');
    expect(obj(respec.body).metadata.generation).toBe(2);
    const status = await request(test, 'PATCH', `${path}/status`, { spec: { size: 99 }, status: { conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2 }] } }, 'application/merge-patch+json');
    expect(status.status).toBe(200);
    expect(obj(status.body).metadata.generation).toBe(2);
    expect(obj(status.body).spec).toEqual({ size: 2 }); // spec in a status write is ignored
    expect(obj(status.body).status).toEqual({ conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2 }] });
    const main = await request(test, 'PATCH', path, { status: { conditions: [] } }, 'application/merge-patch+json');
    expect(obj(main.body).status).toEqual(obj(status.body).status); // status in a main write is ignored
    expect(obj(main.body).metadata.resourceVersion).toBe(obj(status.body).metadata.resourceVersion); // so: a no-op
  });

  it('PUT /status replaces status and keeps everything else', async () => {
    const current = obj((await request(test, 'GET', `${WIDGETS}/g1`)).body);
    const put = await request(test, 'PUT', `${WIDGETS}/g1/status`, { ...current, metadata: { ...current.metadata, labels: { other: 'x' } }, status: { conditions: [] } });
    expect(put.status).toBe(200);
    expect(obj(put.body).status).toEqual({ conditions: [] });
    expect(obj(put.body).metadata.labels).toEqual({ team: 'a' });
  });

  it('a stale resourceVersion gets 409 Conflict on PUT and on PATCH; an empty one is unconditional', async () => {
    const current = obj((await request(test, 'GET', `${WIDGETS}/g1`)).body);
    const stale = { ...current, metadata: { ...current.metadata, resourceVersion: '1' }, spec: { size: 3 } };
    const put = await request(test, 'PUT', `${WIDGETS}/g1`, stale);
    expect(put.status).toBe(409);
    expect(asStatus(put.body)).toMatchObject({ reason: 'Conflict', code: 409 });
    const patch = await request(test, 'PATCH', `${WIDGETS}/g1`, { metadata: { resourceVersion: '1' }, spec: { size: 3 } }, 'application/merge-patch+json');
    expect(patch.status).toBe(409);
    const unconditional = await request(test, 'PUT', `${WIDGETS}/g1`, { ...current, metadata: { ...current.metadata, resourceVersion: undefined }, spec: { size: 3 } });
    expect(unconditional.status).toBe(200);
    expect(obj(unconditional.body).metadata.generation).toBe(3);
    expect(Number(obj(unconditional.body).metadata.resourceVersion)).toBeGreaterThan(Number(current.metadata.resourceVersion));
  });

  it('JSON patch applies, including test operations', async () => {
    const patched = await request(test, 'PATCH', `${WIDGETS}/g1`, [{ op: 'test', path: '/spec/size', value: 3 }, { op: 'replace', path: '/spec/size', value: 4 }], 'application/json-patch+json');
    expect(patched.status).toBe(200);
    expect(obj(patched.body).spec).toEqual({ size: 4 });
  });

  it('server-owned metadata cannot be overwritten', async () => {
    const before = obj((await request(test, 'GET', `${WIDGETS}/g1`)).body);
    const patched = await request(test, 'PATCH', `${WIDGETS}/g1`, { metadata: { uid: 'mine', generation: 100, creationTimestamp: '2000-01-01T00:00:00Z' } }, 'application/merge-patch+json');
    expect(obj(patched.body).metadata).toMatchObject({ uid: before.metadata.uid, generation: before.metadata.generation });
  });

  it('resourceVersion is global and strictly increasing across resources', async () => {
    const versions: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const ns = await request(test, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `rv-${i}` } });
      versions.push(Number(meta(ns.body).resourceVersion));
      const w = await request(test, 'POST', `/apis/example.com/v1/namespaces/rv-${i}/widgets`, widget(`w`, { size: i }, `rv-${i}`));
      versions.push(Number(meta(w.body).resourceVersion));
    }
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
  });

  it('unknown fields: pruned silently with Ignore, warned with Warn (default), refused with Strict', async () => {
    const withExtra = (name: string) => ({ ...widget(name, { size: 1, extra: true }), topLevel: 1 });
    const ignored = await request(test, 'POST', `${WIDGETS}?fieldValidation=Ignore`, withExtra('p1'));
    expect(ignored.status).toBe(201);
    expect(obj(ignored.body).spec).toEqual({ size: 1 });
    expect(ignored.body).not.toHaveProperty('topLevel');
    expect(ignored.headers.get('warning')).toBeNull();
    const warned = await request(test, 'POST', WIDGETS, withExtra('p2'));
    expect(warned.status).toBe(201);
    expect(warned.headers.get('warning')).toContain('unknown field \\"spec.extra\\"');
    const strict = await request(test, 'POST', `${WIDGETS}?fieldValidation=Strict`, withExtra('p3'));
    expect(strict.status).toBe(400);
    expect(asStatus(strict.body).message).toContain('unknown field "topLevel"');
    expect((await request(test, 'GET', `${WIDGETS}/p3`)).status).toBe(404);
  });

  it('finalizers hold a deletion until they are removed', async () => {
    await request(test, 'POST', WIDGETS, { ...widget('fin', { size: 1 }), metadata: { name: 'fin', finalizers: ['example.com/hold'] } });
    const deleting = await request(test, 'DELETE', `${WIDGETS}/fin`);
    expect(deleting.status).toBe(200);
    expect(obj(deleting.body).metadata.deletionTimestamp).toBeDefined();
    expect((await request(test, 'GET', `${WIDGETS}/fin`)).status).toBe(200);
    const released = await request(test, 'PATCH', `${WIDGETS}/fin`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    expect(released.status).toBe(200);
    expect((await request(test, 'GET', `${WIDGETS}/fin`)).status).toBe(404);
  });

  it('delete preconditions are checked', async () => {
    const created = obj((await request(test, 'POST', WIDGETS, widget('pre', { size: 1 }))).body);
    const wrong = await request(test, 'DELETE', `${WIDGETS}/pre`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-it' } });
    expect(wrong.status).toBe(409);
    const right = await request(test, 'DELETE', `${WIDGETS}/pre`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: created.metadata.uid, resourceVersion: created.metadata.resourceVersion } });
    expect(right.status).toBe(200);
  });

  it('generateName gives a unique name', async () => {
    const a = await request(test, 'POST', WIDGETS, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { generateName: 'gen-' }, spec: {} });
    const b = await request(test, 'POST', WIDGETS, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { generateName: 'gen-' }, spec: {} });
    expect(meta(a.body).name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(meta(a.body).name).not.toBe(meta(b.body).name);
  });

  describe('selectors and paging', () => {
    const NS = '/apis/example.com/v1/namespaces/sel/widgets';
    beforeAll(async () => {
      await request(test, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sel' } });
      const labels: Record<string, Record<string, string>> = { a: { tier: 'web', env: 'prod' }, b: { tier: 'db', env: 'prod' }, c: { tier: 'web' }, d: {}, e: { env: 'dev' } };
      for (const [name, l] of Object.entries(labels)) {
        expect((await request(test, 'POST', NS, { ...widget(name, {}, 'sel'), metadata: { name, namespace: 'sel', labels: l } })).status).toBe(201);
      }
    });

    it.each([
      ['tier=web', ['a', 'c']],
      ['tier==web,env=prod', ['a']],
      ['tier!=web', ['b', 'd', 'e']],
      ['env in (prod,dev)', ['a', 'b', 'e']],
      ['env notin (prod)', ['c', 'd', 'e']],
      ['tier', ['a', 'b', 'c']],
      ['!tier', ['d', 'e']],
    ])('labelSelector %s', async (selector, expected) => {
      const list = await request(test, 'GET', `${NS}?labelSelector=${encodeURIComponent(selector)}`);
      expect(list.status).toBe(200);
      expect(names(list.body)).toEqual(expected);
    });

    it('fieldSelector on metadata.name and metadata.namespace, across namespaces', async () => {
      expect(names((await request(test, 'GET', `${NS}?fieldSelector=metadata.name%3Dc`)).body)).toEqual(['c']);
      expect(names((await request(test, 'GET', `${NS}?fieldSelector=metadata.name!%3Dc`)).body)).toEqual(['a', 'b', 'd', 'e']);
      const all = await request(test, 'GET', `/apis/example.com/v1/widgets?fieldSelector=metadata.namespace%3Dsel`);
      expect(names(all.body)).toEqual(['a', 'b', 'c', 'd', 'e']);
      const everywhere = await request(test, 'GET', `/apis/example.com/v1/widgets`);
      expect(names(everywhere.body).length).toBeGreaterThan(5);
    });

    it('limit and continue walk the whole list once', async () => {
      const seen: string[] = [];
      let cont: string | undefined;
      let pages = 0;
      do {
        const page = await request(test, 'GET', `${NS}?limit=2${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
        const list = page.body as ObjList;
        seen.push(...names(list));
        if (list.metadata.continue) expect(list.metadata.remainingItemCount).toBe(5 - seen.length);
        cont = list.metadata.continue;
        pages += 1;
      } while (cont);
      expect(pages).toBe(3);
      expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
    });

    it('deletecollection honours the label selector', async () => {
      const deleted = await request(test, 'DELETE', `${NS}?labelSelector=env%3Dprod`);
      expect(deleted.status).toBe(200);
      expect(names(deleted.body)).toEqual(['a', 'b']);
      expect(names((await request(test, 'GET', NS)).body)).toEqual(['c', 'd', 'e']);
    });

    it('deleting a namespace deletes what it contains', async () => {
      expect((await request(test, 'DELETE', '/api/v1/namespaces/sel')).status).toBe(200);
      expect((await request(test, 'GET', '/api/v1/namespaces/sel')).status).toBe(404);
      expect(names((await request(test, 'GET', '/apis/example.com/v1/widgets?fieldSelector=metadata.namespace%3Dsel')).body)).toEqual([]);
    });
  });

  describe('CRD variants', () => {
    const clusterCrd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.tools.example.org' },
      spec: {
        group: 'tools.example.org',
        names: { plural: 'gadgets', kind: 'Gadget' },
        scope: 'Cluster',
        versions: [
          { name: 'v1beta1', served: true, storage: false, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } } },
        ],
      },
    };

    it('a cluster-scoped, two-version CRD is discovered and served at both versions', async () => {
      const created = await request(test, 'POST', CRDS, clusterCrd);
      expect(created.status).toBe(201);
      const status = (created.body as { status: { conditions: { type: string; status: string }[]; storedVersions: string[] } }).status;
      expect(status.conditions.map((c) => `${c.type}=${c.status}`).sort()).toEqual(['Established=True', 'NamesAccepted=True']);
      expect(status.storedVersions).toEqual(['v1']);
      const group = await request(test, 'GET', '/apis/tools.example.org');
      expect(group.body).toMatchObject({ kind: 'APIGroup', preferredVersion: { version: 'v1' } });
      const resources = await request(test, 'GET', '/apis/tools.example.org/v1beta1');
      expect(resources.body).toMatchObject({ kind: 'APIResourceList', resources: [{ name: 'gadgets', namespaced: false, kind: 'Gadget' }] });
      const g = await request(test, 'POST', '/apis/tools.example.org/v1/gadgets', { apiVersion: 'tools.example.org/v1', kind: 'Gadget', metadata: { name: 'g' }, spec: { any: { thing: 1 } } });
      expect(g.status).toBe(201);
      const viaBeta = await request(test, 'GET', '/apis/tools.example.org/v1beta1/gadgets/g');
      expect(obj(viaBeta.body).apiVersion).toBe('tools.example.org/v1beta1');
      expect(obj(viaBeta.body).spec).toEqual({ any: { thing: 1 } });
      expect((await request(test, 'GET', '/apis/tools.example.org/v1/namespaces/default/gadgets/g')).status).toBe(404);
    });

    it('deleting a CRD deletes its objects and its discovery', async () => {
      expect((await request(test, 'DELETE', `${CRDS}/gadgets.tools.example.org`)).status).toBe(200);
      expect((await request(test, 'GET', '/apis/tools.example.org/v1/gadgets')).status).toBe(404);
      const groups = (await request(test, 'GET', '/apis')).body as { groups: { name: string }[] };
      expect(groups.groups.map((g) => g.name)).not.toContain('tools.example.org');
      // Re-created: the old objects did not survive.
      expect((await request(test, 'POST', CRDS, clusterCrd)).status).toBe(201);
      expect(names((await request(test, 'GET', '/apis/tools.example.org/v1/gadgets')).body)).toEqual([]);
    });

    it('a CRD cannot change its group, plural or scope', async () => {
      const current = obj((await request(test, 'GET', `${CRDS}/gadgets.tools.example.org`)).body);
      const changed = await request(test, 'PUT', `${CRDS}/gadgets.tools.example.org`, { ...clusterCrd, metadata: current.metadata, spec: { ...clusterCrd.spec, scope: 'Namespaced' } });
      expect(changed.status).toBe(422);
    });
  });

  it('discovery lists core, groups and status subresources', async () => {
    expect((await request(test, 'GET', '/version')).body).toMatchObject({ major: '1', minor: '32' });
    expect((await request(test, 'GET', '/api')).body).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    const core = (await request(test, 'GET', '/api/v1')).body as { resources: { name: string }[] };
    expect(core.resources.map((r) => r.name)).toEqual(['namespaces', 'namespaces/status']);
    const widgets = (await request(test, 'GET', '/apis/example.com/v1')).body as { resources: { name: string; verbs: string[] }[] };
    expect(widgets.resources.map((r) => r.name)).toEqual(['widgets', 'widgets/status']);
    expect(widgets.resources[1]?.verbs).toEqual(['get', 'patch', 'update']);
    const openapi = (await request(test, 'GET', '/openapi/v3')).body as { paths: Record<string, { serverRelativeURL: string }> };
    expect(Object.keys(openapi.paths)).toEqual(expect.arrayContaining(['api/v1', 'apis/example.com/v1', 'apis/coordination.k8s.io/v1']));
    const doc = await request(test, 'GET', openapi.paths['apis/example.com/v1']?.serverRelativeURL ?? '');
    expect(JSON.stringify(doc.body)).toContain('fieldValidation');
    expect((await request(test, 'GET', '/openapi/v2')).status).toBe(404);
  });
});
