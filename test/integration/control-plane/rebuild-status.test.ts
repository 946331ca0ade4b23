// Rebuild pipeline: validation -> Valid condition (in-memory status writer), snapshot-before-status,
// leader-only status, rebuild log (generation -> version), version schemes, holdoff coalescing.
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { StaticLeaderElector } from '../../../infra/local/control-plane/leader-election';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { InMemoryStatusWriter, type ProxyStatusUpdate, type StatusWriter } from '../../../infra/local/control-plane/status';
import { endpoints, eventually, proxy, testLogger } from './helpers';

const WEB = 'projectcontour.io/HTTPProxy/default/web';

describe('rebuilds, status and the rebuild log', () => {
  const started: ControlPlane[] = [];
  const start = async (options: Partial<ControlPlaneOptions> & { source: InMemoryRouteSource }): Promise<ControlPlane> => {
    const controlPlane = await startControlPlane({
      port: 0,
      replicaId: `cp-${started.length}`,
      holdoffMs: 5,
      holdoffMaxMs: 20,
      logger: testLogger,
      ...options,
    });
    started.push(controlPlane);
    return controlPlane;
  };

  afterAll(async () => {
    for (const controlPlane of started) await controlPlane.close();
  });

  it('writes Valid=False with the reasons for invalid objects, Valid=True otherwise, keeping foreign conditions', async () => {
    const source = new InMemoryRouteSource();
    const statusWriter = new InMemoryStatusWriter(() => new Date('2026-01-01T00:00:00Z'));
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]));
    source.applyProxy(proxy('missing-service', 'a.example.com', [{ name: 'nope', port: 80 }]));
    source.applyProxy(proxy('bad-prefix', 'b.example.com', [{ name: 'app', port: 80 }], { prefix: 'no-slash' }));
    source.applyProxy(proxy('dup-1', 'dup.example.com', [{ name: 'app', port: 80 }]));
    source.applyProxy(proxy('dup-2', 'dup.example.com', [{ name: 'app', port: 80 }]));
    source.applyProxy(proxy('no-secret', 'tls.example.com', [{ name: 'app', port: 80 }], { tlsSecret: 'cert' }));
    source.applyProxy({ metadata: { name: 'wrong-types', namespace: 'default' }, spec: { virtualhost: { fqdn: 42 }, routes: 'x' } });
    statusWriter.setForeignCondition('default', 'web', { type: 'EnvoyProgrammed', status: 'Unknown', reason: 'Pending', observedGeneration: 1 });

    const controlPlane = await start({ source, statusWriter });
    await controlPlane.whenIdle();

    expect(statusWriter.validCondition('default', 'web')).toEqual({
      type: 'Valid',
      status: 'True',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-01T00:00:00Z',
      reason: 'Valid',
      message: 'Valid HTTPProxy',
    });
    expect(statusWriter.statuses.get('default/web')?.conditions.map((c) => c.type)).toEqual(['EnvoyProgrammed', 'Valid']);
    const invalid = (name: string) => statusWriter.validCondition('default', name);
    expect(invalid('missing-service')).toMatchObject({ status: 'False', reason: 'ErrorPresent', message: expect.stringContaining('Service "default/nope" not found') });
    expect(invalid('bad-prefix')?.message).toContain('prefix "no-slash" must start with "/"');
    expect(invalid('dup-1')?.message).toContain('fqdn "dup.example.com" is used in multiple HTTPProxies');
    expect(invalid('dup-2')?.status).toBe('False');
    expect(invalid('no-secret')?.message).toContain('TLS Secret "default/cert" not found');
    expect(invalid('wrong-types')?.message).toMatch(/spec\.virtualhost\.fqdn/);
    expect(statusWriter.statuses.get('default/missing-service')?.currentStatus).toBe('invalid');

    // Invalid objects are in the rebuild log as processed, but no type contains them.
    const record = controlPlane.rebuildLog.latest();
    expect(record?.objects.find((o) => o.object.endsWith('/missing-service'))).toMatchObject({ generation: 1, valid: false });
    expect(Object.values(record?.contained ?? {}).flat().some((s) => s.includes('missing-service'))).toBe(false);
    expect(record?.contained.RDS).toContain(`${WEB}@1`);

    // Fixing an object flips its condition and moves the transition time.
    source.applyEndpoints(endpoints('nope', '10.0.0.2', 80));
    await controlPlane.whenIdle();
    expect(invalid('missing-service')).toMatchObject({ status: 'True', observedGeneration: 1 });
  });

  it('records generation -> version per type, sets the snapshot before writing status, and skips unchanged status', async () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]));
    const handle: { controlPlane?: ControlPlane } = {};
    const observedAtWrite: Array<{ update: ProxyStatusUpdate; rdsHasIt: boolean }> = [];
    const checkingWriter: StatusWriter = {
      async writeProxyStatus(update) {
        const latest = handle.controlPlane?.rebuildLog.latest();
        observedAtWrite.push({
          update,
          rdsHasIt: latest?.contained.RDS.includes(`projectcontour.io/HTTPProxy/${update.namespace}/${update.name}@${update.generation}`) ?? false,
        });
      },
    };
    // The first rebuild happens inside startControlPlane, before `controlPlane` is assigned: start
    // with a writer that only records, then check the ordering on the next generation.
    const controlPlane = await start({ source, statusWriter: checkingWriter, versionScheme: 'counter', provenance: true });
    handle.controlPlane = controlPlane;
    await controlPlane.whenIdle();
    const first = controlPlane.rebuildLog.firstContaining(WEB, 1, 'RDS');
    expect(first).toEqual({ seq: 1, version: '1' });

    const generation = source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }], { prefix: '/v2' }));
    expect(generation).toBe(2);
    await controlPlane.whenIdle();
    const second = controlPlane.rebuildLog.firstContaining(WEB, 2, 'RDS');
    expect(second).toEqual({ seq: 2, version: '2' });
    // With provenance, the stamp itself changes the bytes of the proxy's listener and clusters; EDS
    // (no metadata field) and SDS are untouched.
    expect(controlPlane.rebuildLog.firstContaining(WEB, 2, 'CDS')).toEqual({ seq: 2, version: '2' });
    expect(controlPlane.rebuildLog.latest()?.changedTypes).toEqual(['CDS', 'LDS', 'RDS']);
    expect(controlPlane.rebuildLog.latest()?.versions).toMatchObject({ EDS: '1', SDS: '1' });
    const write = observedAtWrite.find((w) => w.update.generation === 2);
    expect(write?.rdsHasIt).toBe(true);

    // An annotation-only change keeps the generation: the rebuild runs, the status is not rewritten.
    const writesBefore = observedAtWrite.length;
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }], { prefix: '/v2', annotations: { note: 'x' } }));
    await controlPlane.whenIdle();
    expect(controlPlane.rebuildLog.latest()?.seq).toBe(3);
    expect(observedAtWrite.length).toBe(writesBefore);
  });

  it('contour versions: one UUID per rebuild for LDS/RDS/CDS/SDS, UUID prefix + counter for EDS', async () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]));
    let uuid = 0;
    const controlPlane = await start({ source, versionScheme: 'contour', newUuid: () => `uuid-${++uuid}` });
    const first = controlPlane.rebuildLog.latest();
    expect(first?.versions).toEqual({ CDS: 'uuid-2', EDS: 'uuid-1-1', LDS: 'uuid-2', RDS: 'uuid-2', SDS: 'uuid-2' });

    source.applyEndpoints(endpoints('app', '10.0.0.2', 80));
    await controlPlane.whenIdle();
    expect(controlPlane.rebuildLog.latest()?.versions).toEqual({ CDS: 'uuid-2', EDS: 'uuid-1-2', LDS: 'uuid-2', RDS: 'uuid-2', SDS: 'uuid-2' });
    expect(controlPlane.rebuildLog.latest()?.contained.EDS).toEqual(['/Endpoints/default/app@2']);

    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }], { prefix: '/x' }));
    await controlPlane.whenIdle();
    expect(controlPlane.rebuildLog.latest()?.versions).toEqual({ CDS: 'uuid-3', EDS: 'uuid-1-2', LDS: 'uuid-3', RDS: 'uuid-3', SDS: 'uuid-3' });
  });

  it('only the leader writes status; a new leader writes what is current', async () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]));
    const statusWriter = new InMemoryStatusWriter();
    const leaderElector = new StaticLeaderElector(false);
    const controlPlane = await start({ source, statusWriter, leaderElector });
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }], { prefix: '/b' }));
    await controlPlane.whenIdle();
    expect(controlPlane.rebuildLog.latest()?.seq).toBe(2);
    expect(statusWriter.writes).toEqual([]);

    leaderElector.set(true);
    await controlPlane.whenIdle();
    expect(statusWriter.writes).toEqual([expect.objectContaining({ name: 'web', generation: 2, valid: true })]);
  });

  it('retries a failed status write', async () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    source.applyProxy(proxy('web', 'web.example.com', [{ name: 'app', port: 80 }]));
    const inner = new InMemoryStatusWriter();
    let failures = 1;
    const flaky: StatusWriter = {
      async writeProxyStatus(update) {
        if (failures > 0) {
          failures -= 1;
          throw new Error('simulated API server outage');
        }
        await inner.writeProxyStatus(update);
      },
    };
    await start({ source, statusWriter: flaky, statusRetryMs: 20 });
    await eventually(() => inner.validCondition('default', 'web'), 'status written after retry');
    expect(inner.writes).toHaveLength(1);
  });

  it('keeps a bounded rebuild log (oldest records dropped)', async () => {
    const source = new InMemoryRouteSource();
    const controlPlane = await start({ source, rebuildLogCapacity: 2 });
    await controlPlane.rebuildNow();
    await controlPlane.rebuildNow();
    expect(controlPlane.rebuildLog.all().map((r) => r.seq)).toEqual([2, 3]);
  });

  it('coalesces a burst of changes into one rebuild (holdoff)', async () => {
    const source = new InMemoryRouteSource();
    source.applyEndpoints(endpoints('app', '10.0.0.1', 80));
    const controlPlane = await start({ source, holdoffMs: 30, holdoffMaxMs: 200, extraRebuildDelayMs: 10 });
    const before = controlPlane.rebuildLog.all().length;
    for (let i = 0; i < 10; i += 1) source.applyProxy(proxy(`p${i}`, `p${i}.example.com`, [{ name: 'app', port: 80 }]));
    await controlPlane.whenIdle();
    const after = controlPlane.rebuildLog.all();
    expect(after.length).toBe(before + 1);
    expect(after[after.length - 1]?.objects).toHaveLength(10);
  });
});
