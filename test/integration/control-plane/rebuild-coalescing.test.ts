// Changes that arrive while a rebuild runs are covered by one rebuild queued behind it, not one each
// (bulk creation used to queue a rebuild per object once the holdoff maximum had passed).
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { endpoints, proxy, sleep, testLogger } from './helpers';

const CHANGES = 30;

describe('control plane: rebuild coalescing', () => {
  let controlPlane: ControlPlane;
  let source: InMemoryRouteSource;

  beforeAll(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    // Each rebuild takes 100 ms; changes come every 10 ms, always past the 5 ms holdoff maximum.
    controlPlane = await startControlPlane({ port: 0, replicaId: 'coalesce', source, holdoffMs: 1, holdoffMaxMs: 5, extraRebuildDelayMs: 100, logger: testLogger });
  });

  afterAll(async () => {
    await controlPlane.close();
  });

  it('rebuilds a burst of changes a few times, and the last rebuild holds every change', async () => {
    const before = controlPlane.rebuildLog.all().length;
    for (let index = 0; index < CHANGES; index++) {
      source.applyProxy(proxy(`burst-${index}`, `burst-${index}.example.com`, [{ name: 'app', port: 80 }]));
      await sleep(10);
    }
    await controlPlane.whenIdle();
    const rebuilds = controlPlane.rebuildLog.all().slice(before);
    // ~300 ms of changes at 100 ms per rebuild: about 4, never one per change.
    expect(rebuilds.length).toBeGreaterThanOrEqual(2);
    expect(rebuilds.length).toBeLessThanOrEqual(8);
    // Every rebuild after the first found something new: none was queued for a change already built.
    for (const record of rebuilds) expect(record.changedTypes.length).toBeGreaterThan(0);
    expect(controlPlane.rebuildLog.latest()?.objects.map((o) => o.object).filter((o) => o.includes('burst-'))).toHaveLength(CHANGES);
  });
});
