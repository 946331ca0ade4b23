// The hand-off end to end: Envoy states and watermarks (as the gateway writes them) → the real
// convergence function decides → the status function writes the condition → the real kubectl waits
// on it. Two event source mappings on one table stream, as in serverless.yml.
import { buildFunctionContext } from '../../../functions/lib/context';
import { handleConvergence } from '../../../functions/convergence';
import { createStatusHandler } from '../../../functions/status';
import type { StreamDelivery } from '../../../infra/local/dynamo';
import { kubectl, openWatch, request, startTestServer, WIDGET_CRD, type TestServer } from '../kube/helpers';
import { CDS, deliver, FakeEnvoy, FakeGateway, LDS, silentLogger, startWorld, waitFor, waitForDecision, type World } from './convergence-support';
import { WIDGET_KIND, widgetRef, type WidgetObject } from './status-support';

const LINEAGE = 'gw-a.boot1.edge';

describe('gateway items → convergence → status → kubectl wait', () => {
  let world: World;
  let kube: TestServer;
  let convergence: StreamDelivery;
  let status: StreamDelivery;
  let gateway: FakeGateway;
  let envoys: FakeEnvoy[];

  const widget = async (): Promise<WidgetObject> => (await request(kube, 'GET', '/apis/example.com/v1/namespaces/default/widgets/pipe')).body as WidgetObject;
  const condition = async (): Promise<Record<string, unknown> | undefined> => (await widget()).status?.conditions?.find((c) => c['type'] === 'EnvoyProgrammed');
  const conditionWhere = (what: string, predicate: (c: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
    waitFor(what, async () => {
      const found = await condition();
      return found !== undefined && predicate(found) ? found : undefined;
    });

  beforeAll(async () => {
    world = await startWorld('pipeline');
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', WIDGET_CRD)).status).toBe(201);
    const context = buildFunctionContext(world.env, silentLogger);
    convergence = deliver(world, (event) => handleConvergence(event, context));
    status = deliver(world, createStatusHandler({ env: { ...world.env, TRACKED_KINDS: JSON.stringify([WIDGET_KIND]), KUBECONFIG_PATH: kube.kubeconfig }, logger: silentLogger }));
    const now = Date.now();
    gateway = new FakeGateway(world, LINEAGE, now);
    gateway.change(CDS);
    gateway.change(LDS);
    await gateway.save(now);
    envoys = ['envoy-a', 'envoy-b'].map((id) => new FakeEnvoy(world, gateway, id, now));
    for (const envoy of envoys) await envoy.ackAll(now);
    await convergence.idle();
  });
  afterAll(async () => {
    await convergence.stop();
    await status.stop();
    await kube.cleanup();
    await world.close();
  });

  it('Pending → Programmed at generation 1, then Rejected → Programmed at generation 2, with O(1) writes', async () => {
    const created = await request(kube, 'POST', '/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'pipe', namespace: 'default' }, spec: { size: 1 } });
    expect(created.status).toBe(201);
    const watch = await openWatch(kube, '/apis/example.com/v1/namespaces/default/widgets?watch=true&fieldSelector=metadata.name%3Dpipe');
    try {
      // Generation 1 reaches the gateway's cache: the clusters change, the watermark is recorded.
      gateway.change(CDS);
      await gateway.save(Date.now());
      await gateway.watermark(widgetRef('pipe'), 1, Date.now());
      expect(await conditionWhere('Pending', (c) => c['reason'] === 'Pending')).toMatchObject({ status: 'False', observedGeneration: 1 });
      const waiting = kubectl(kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/pipe', '-n', 'default', '--timeout=30s']);
      for (const envoy of envoys) await envoy.ackAll(Date.now());
      const waited = await waiting;
      expect(waited.stderr).toBe('');
      expect(waited.code).toBe(0);
      expect(await condition()).toMatchObject({ status: 'True', reason: 'Programmed', message: '2/2 Envoys programmed at generation 1' });

      // The user changes the spec: generation 2. kubectl no longer accepts the generation-1 condition.
      const patched = await fetch(`${kube.server.url}/apis/example.com/v1/namespaces/default/widgets/pipe`, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/merge-patch+json' },
        body: JSON.stringify({ spec: { size: 2 } }),
      });
      expect(((await patched.json()) as WidgetObject).metadata.generation).toBe(2);
      const stale = await kubectl(kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/pipe', '-n', 'default', '--timeout=1s']);
      expect(stale.code).not.toBe(0);

      gateway.change(CDS);
      await gateway.save(Date.now());
      await gateway.watermark(widgetRef('pipe'), 2, Date.now());
      await envoys[0]!.ackAll(Date.now());
      // Records of different Envoys reach convergence in no guaranteed order (stream shards): let
      // envoy-a's ACK be decided first, so the Rejected condition's message is deterministic.
      await waitForDecision(world, widgetRef('pipe'), 2, (d) => d.programmed === 1, 'envoy-a programmed at generation 2');
      await envoys[1]!.nack(CDS, 'cluster "pipe": invalid lb_policy', Date.now());
      const rejected = await conditionWhere('Rejected at generation 2', (c) => c['reason'] === 'Rejected' && c['observedGeneration'] === 2);
      expect(rejected['message']).toBe('1/2 Envoys programmed at generation 2; envoy-b rejected CDS: cluster "pipe": invalid lb_policy');

      await envoys[1]!.ackAll(Date.now());
      await conditionWhere('Programmed at generation 2', (c) => c['status'] === 'True' && c['observedGeneration'] === 2);
      const ready = await kubectl(kube, ['wait', '--for=condition=EnvoyProgrammed', 'widgets.example.com/pipe', '-n', 'default', '--timeout=10s']);
      expect(ready.code).toBe(0);

      await convergence.idle();
      await status.idle();
      // ADDED, the spec change, and one status write per (status, reason, generation) change:
      // Pending@1, True@1, Rejected@2 (possibly Pending@2 first), True@2.
      const modified = watch.events.filter((event) => event.type === 'MODIFIED').length;
      expect(modified).toBeGreaterThanOrEqual(5);
      expect(modified).toBeLessThanOrEqual(6);
    } finally {
      watch.close();
      await watch.ended;
    }
  });
});
