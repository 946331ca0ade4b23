// State file: a restart keeps CRDs, their objects, status and generation, and resourceVersions
// keep increasing; watches from before the restart get 410 (the history did not survive).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startKubeApiServer } from '../../../infra/local/kube/server';
import { meta, openWatch, request, silentLogger, startTestServer, widget, WIDGET_CRD } from './helpers';

const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

describe('persistence', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kube-state-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('a restart with the state file keeps objects and continues the resourceVersion', async () => {
    const stateFile = join(dir, 'state.json');
    const first = await startTestServer({ stateFile });
    expect((await request(first, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    await request(first, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kept' } });
    await request(first, 'POST', WIDGETS, widget('w', { size: 1 }));
    await request(first, 'PATCH', `${WIDGETS}/w`, { spec: { size: 2 } }, 'application/merge-patch+json');
    const status = await request(first, 'PATCH', `${WIDGETS}/w/status`, { status: { conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2 }] } }, 'application/merge-patch+json');
    const before = meta(status.body);
    await first.cleanup();

    const second = await startTestServer({ stateFile });
    try {
      const got = await request(second, 'GET', `${WIDGETS}/w`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        metadata: { uid: before.uid, generation: 2, resourceVersion: before.resourceVersion },
        spec: { size: 2 },
        status: { conditions: [{ type: 'Ready', observedGeneration: 2 }] },
      });
      expect((await request(second, 'GET', '/api/v1/namespaces/kept')).status).toBe(200);
      const discovery = await request(second, 'GET', '/apis/example.com/v1');
      expect(discovery.status).toBe(200);

      const next = await request(second, 'POST', WIDGETS, widget('after', {}));
      expect(Number(meta(next.body).resourceVersion)).toBeGreaterThan(Number(before.resourceVersion));
      const stale = await openWatch(second, `${WIDGETS}?watch=true&resourceVersion=${Number(before.resourceVersion) - 1}`);
      await stale.ended;
      expect(stale.events[0]).toMatchObject({ type: 'ERROR', object: { code: 410 } });
      const fromCurrent = await openWatch(second, `${WIDGETS}?watch=true&resourceVersion=${before.resourceVersion}`);
      await fromCurrent.waitForEvents(1);
      expect(fromCurrent.events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'after' } } });
      fromCurrent.close();
    } finally {
      await second.cleanup();
    }
  });

  it('a state file that cannot be written is logged and the server keeps serving', async () => {
    const blocker = join(dir, 'not-a-directory');
    writeFileSync(blocker, 'a file where a directory should be');
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const server = await startKubeApiServer({ port: 0, stateFile: join(blocker, 'state.json'), logger, persistDelayMs: 1 });
    try {
      const response = await fetch(`${server.url}/api/v1/namespaces`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'still-works' } }),
      });
      expect(response.status).toBe(201);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await fetch(`${server.url}/api/v1/namespaces/still-works`)).status).toBe(200);
    } finally {
      await server.close();
    }
    expect(lines.some((line) => line.includes('writing the state file failed') && line.includes('not-a-directory'))).toBe(true);
  });

  it('a corrupt state file is a clear startup error, not a half-started server', async () => {
    const stateFile = join(dir, 'corrupt.json');
    writeFileSync(stateFile, '{"formatVersion": 1, "resourceVersion": "x"');
    await expect(startKubeApiServer({ port: 0, stateFile, logger: silentLogger })).rejects.toThrow(/state file .* not valid JSON/);
    writeFileSync(stateFile, JSON.stringify({ formatVersion: 99, resourceVersion: 1, objects: {} }));
    await expect(startKubeApiServer({ port: 0, stateFile, logger: silentLogger })).rejects.toThrow(/unexpected shape/);
  });
});
