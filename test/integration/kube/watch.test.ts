// WATCH semantics: initial state, resume from a resourceVersion, 410 for a resourceVersion
// older than the history window, selector transitions, bookmarks, sendInitialEvents, timeouts.
import { meta, openWatch, request, startTestServer, widget, WIDGET_CRD, type OpenWatch, type TestServer } from './helpers';

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';
const HISTORY = 20;

describe('watch', () => {
  let test: TestServer;
  const open: OpenWatch[] = [];
  const watch = async (query: string): Promise<OpenWatch> => {
    const w = await openWatch(test, `${WIDGETS}?watch=true&${query}`);
    open.push(w);
    return w;
  };
  const summary = (w: OpenWatch): string[] => w.events.map((e) => `${e.type}:${e.object.metadata?.name ?? ''}`);

  beforeAll(async () => {
    test = await startTestServer({ watchHistoryLimit: HISTORY, bookmarkIntervalMs: 200, maxWatchBufferBytes: 1024 * 1024 });
    expect((await request(test, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
  });
  afterEach(() => {
    for (const w of open.splice(0)) w.close();
  });
  afterAll(async () => {
    await test.cleanup();
  });

  it('without a resourceVersion: the current state as ADDED, then live changes in order', async () => {
    await request(test, 'POST', WIDGETS, widget('w-a', { size: 1 }));
    const w = await watch('');
    await w.waitForEvents(1);
    await request(test, 'PATCH', `${WIDGETS}/w-a/status`, { status: { conditions: [{ type: 'Ready', status: 'True' }] } }, 'application/merge-patch+json');
    await request(test, 'POST', WIDGETS, widget('w-b', { size: 2 }));
    await request(test, 'DELETE', `${WIDGETS}/w-a`);
    await w.waitForEvents(4);
    expect(summary(w)).toEqual(['ADDED:w-a', 'MODIFIED:w-a', 'ADDED:w-b', 'DELETED:w-a']);
    const versions = w.events.map((e) => Number(e.object.metadata?.resourceVersion));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(w.events[0]?.object).toMatchObject({ apiVersion: 'example.com/v1', kind: 'Widget' });
  });

  it('resumes after a resourceVersion with exactly the later events', async () => {
    const created = await request(test, 'POST', WIDGETS, widget('w-c', { size: 1 }));
    const from = meta(created.body).resourceVersion;
    await request(test, 'PATCH', `${WIDGETS}/w-c`, { spec: { size: 2 } }, 'application/merge-patch+json');
    await request(test, 'DELETE', `${WIDGETS}/w-c`);
    const w = await watch(`resourceVersion=${from}`);
    await w.waitForEvents(2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(summary(w)).toEqual(['MODIFIED:w-c', 'DELETED:w-c']);
  });

  it('a resourceVersion older than the history window gets an ERROR event with 410 Expired', async () => {
    const first = await request(test, 'POST', WIDGETS, widget('old', { size: 0 }));
    const from = meta(first.body).resourceVersion;
    for (let i = 0; i < HISTORY + 5; i += 1) await request(test, 'PATCH', `${WIDGETS}/old`, { spec: { size: i + 1 } }, 'application/merge-patch+json');
    const w = await watch(`resourceVersion=${from}`);
    await w.ended;
    expect(w.status).toBe(200);
    expect(w.events).toHaveLength(1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('selectors: an object leaving the selection is DELETED, one entering it is ADDED', async () => {
    await request(test, 'POST', WIDGETS, { ...widget('sel', { size: 1 }), metadata: { name: 'sel', labels: { pick: 'yes' } } });
    const w = await watch('labelSelector=pick%3Dyes');
    await w.waitForEvents(1);
    await request(test, 'PATCH', `${WIDGETS}/sel`, { metadata: { labels: { pick: 'no' } } }, 'application/merge-patch+json');
    await request(test, 'PATCH', `${WIDGETS}/sel`, { spec: { size: 2 } }, 'application/merge-patch+json'); // not selected: invisible
    await request(test, 'PATCH', `${WIDGETS}/sel`, { metadata: { labels: { pick: 'yes' } } }, 'application/merge-patch+json');
    await w.waitForEvents(3);
    expect(summary(w)).toEqual(['ADDED:sel', 'DELETED:sel', 'ADDED:sel']);
  });

  it('resumed from a list resourceVersion: listed objects change as MODIFIED, and leave the selection as DELETED', async () => {
    await request(test, 'POST', WIDGETS, { ...widget('listed', { size: 1 }), metadata: { name: 'listed', labels: { stage: 'one' } } });
    const list = await request(test, 'GET', `${WIDGETS}?labelSelector=stage%3Done`);
    const from = (list.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const w = await watch(`resourceVersion=${from}&labelSelector=stage%3Done`);
    await request(test, 'PATCH', `${WIDGETS}/listed`, { spec: { size: 2 } }, 'application/merge-patch+json');
    await request(test, 'PATCH', `${WIDGETS}/listed`, { metadata: { labels: { stage: 'two' } } }, 'application/merge-patch+json');
    await request(test, 'DELETE', `${WIDGETS}/listed`);
    await w.waitForEvents(2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(summary(w)).toEqual(['MODIFIED:listed', 'DELETED:listed']);
  });

  it('fieldSelector metadata.name narrows a watch to one object (what kubectl wait does)', async () => {
    const w = await watch('fieldSelector=metadata.name%3Done');
    await request(test, 'POST', WIDGETS, widget('other', {}));
    await request(test, 'POST', WIDGETS, widget('one', {}));
    await w.waitForEvents(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(summary(w)).toEqual(['ADDED:one']);
  });

  it('allowWatchBookmarks: periodic BOOKMARKs carry the current resourceVersion', async () => {
    const w = await watch('allowWatchBookmarks=true&resourceVersion=0&fieldSelector=metadata.name%3Dnothing');
    const [bookmark] = await w.waitForEvents(1, 5000);
    expect(bookmark?.type).toBe('BOOKMARK');
    expect(bookmark?.object).toMatchObject({ kind: 'Widget', apiVersion: 'example.com/v1' });
    const listed = await request(test, 'GET', WIDGETS);
    expect(Number(bookmark?.object.metadata?.resourceVersion)).toBeLessThanOrEqual(Number(meta(listed.body).resourceVersion));
  });

  it('sendInitialEvents: the state as ADDED, then a BOOKMARK marking the end of the initial events', async () => {
    const w = await watch('sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&labelSelector=pick');
    const events = await w.waitForEvents(2);
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
    expect(events[1]?.object.metadata?.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
  });

  it('deleting the CRD sends DELETED for its objects, then ends watches on it', async () => {
    const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const gadgetCrd = {
      ...WIDGET_CRD,
      metadata: { name: 'gadgets.example.com' },
      spec: { ...WIDGET_CRD.spec, names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' } },
    };
    expect((await request(test, 'POST', CRDS, gadgetCrd)).status).toBe(201);
    const gadgets = '/apis/example.com/v1/namespaces/default/gadgets';
    await request(test, 'POST', gadgets, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1' }, spec: {} });
    const w = await openWatch(test, `${gadgets}?watch=true`);
    open.push(w);
    await w.waitForEvents(1);
    const widgetWatch = await watch('fieldSelector=metadata.name%3Dstill-watched');
    expect((await request(test, 'DELETE', `${CRDS}/gadgets.example.com`)).status).toBe(200);
    await w.ended;
    expect(summary(w)).toEqual(['ADDED:g1', 'DELETED:g1']);
    // Watches on other resources of the same group are untouched.
    await request(test, 'POST', WIDGETS, widget('still-watched', {}));
    await widgetWatch.waitForEvents(1);
    expect(summary(widgetWatch)).toEqual(['ADDED:still-watched']);
  });

  it('a watcher that stops reading has its watch ended instead of buffering without bound', async () => {
    const { connect } = await import('node:net');
    const slow = connect(test.server.port, '127.0.0.1');
    await new Promise((resolve) => slow.once('connect', resolve));
    slow.write(`GET ${WIDGETS}?watch=true&fieldSelector=metadata.name%3Dbulky HTTP/1.1\r\nHost: local\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    slow.pause(); // read nothing from now on
    const padding = 'x'.repeat(200 * 1024); // annotations may total 256 KiB
    await request(test, 'POST', WIDGETS, { ...widget('bulky', { size: 0 }), metadata: { name: 'bulky', annotations: { pad: padding } } });
    // 100 events of 200 KiB: more than the kernel's socket buffers and our 1 MiB limit together.
    for (let i = 1; i <= 100; i += 1) await request(test, 'PATCH', `${WIDGETS}/bulky`, { spec: { size: i } }, 'application/merge-patch+json');
    // The server still answers others at once.
    expect((await request(test, 'GET', `${WIDGETS}/bulky`)).status).toBe(200);
    let received = '';
    const ended = new Promise<void>((resolve) => slow.on('end', resolve));
    slow.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    slow.resume();
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    slow.destroy();
    // The stream was closed by the server (chunked terminator) before all 101 events were sent.
    expect(received).toContain('\r\n0\r\n\r\n');
    expect((received.match(/"type":"(ADDED|MODIFIED)"/g) ?? []).length).toBeLessThan(101);
  });

  it('timeoutSeconds ends the watch from the server side', async () => {
    const w = await watch('timeoutSeconds=1');
    await w.ended;
    expect(w.status).toBe(200);
  });
});
