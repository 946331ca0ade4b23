// Status writes come back to the control plane as informer updates. They change nothing translation
// reads (metadata without resourceVersion, and spec), so they must not cause rebuilds; a spec change,
// an annotation change and a delete still do.
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../infra/local/control-plane/control-plane';
import { HTTPPROXY_CRD } from '../../../infra/local/control-plane/httpproxy-crd';
import { KubeRouteSource } from '../../../infra/local/control-plane/kube-route-source';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { kubeconfigYaml } from '../../../infra/local/kube/kubeconfig';
import { type KubeApiServer, startKubeApiServer } from '../../../infra/local/kube/server';
import { endpoints, eventually, proxy, sleep, testLogger } from './helpers';

const PROXY_API = { group: 'projectcontour.io', version: 'v1', namespace: 'default', plural: 'httpproxies' };
const OBJECT = 'projectcontour.io/HTTPProxy/default/echo';

describe('KubeRouteSource: status writes cause no rebuild', () => {
  let kube: KubeApiServer;
  let custom: CustomObjectsApi;
  let controlPlane: ControlPlane;
  let source: KubeRouteSource;

  beforeAll(async () => {
    kube = await startKubeApiServer({ port: 0, host: '127.0.0.1', logger: testLogger });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfigYaml(kube.url));
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const crd = await fetch(`${kube.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(HTTPPROXY_CRD),
    });
    expect(crd.status).toBe(201);
    const endpointsSource = new InMemoryRouteSource();
    endpointsSource.applyEndpoints(endpoints('echo', '10.0.0.1', 80));
    source = new KubeRouteSource({ kubeConfig, logger: testLogger, endpointsAndSecrets: endpointsSource });
    // No status writer: the test writes status itself, so every rebuild seen is caused by an informer event.
    controlPlane = await startControlPlane({ port: 0, replicaId: 'echo', source, holdoffMs: 5, holdoffMaxMs: 20, logger: testLogger });
  });

  afterAll(async () => {
    await controlPlane.close();
    await source.close();
    await kube.close();
  });

  const rebuilds = (): number => controlPlane.rebuildLog.all().length;
  const writeStatus = (index: number) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        ...PROXY_API,
        name: 'echo',
        body: { status: { conditions: [{ type: 'EnvoyProgrammed', status: 'False', reason: 'Pending', message: `${index}/2`, observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z' }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  it('rebuilds on create, spec and annotation changes and delete, never on a status write', async () => {
    await custom.createNamespacedCustomObject({ ...PROXY_API, body: proxy('echo', 'echo.example.com', [{ name: 'echo', port: 80 }]) });
    await eventually(() => controlPlane.rebuildLog.processed(OBJECT, 1), 'the create rebuilt');
    await controlPlane.whenIdle();
    const afterCreate = rebuilds();

    for (let index = 0; index < 5; index++) {
      await writeStatus(index);
      // Longer than the holdoff, so each write would get a rebuild of its own if it caused one.
      await sleep(60);
    }
    // A spec change after the status writes: the informer delivers events in order, so once it is
    // rebuilt every status write before it has been seen.
    await custom.patchNamespacedCustomObject(
      { ...PROXY_API, name: 'echo', body: { spec: { virtualhost: { fqdn: 'echo2.example.com' }, routes: [{ conditions: [], services: [{ name: 'echo', port: 80 }] }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(() => controlPlane.rebuildLog.processed(OBJECT, 2), 'the spec change rebuilt');
    await controlPlane.whenIdle();
    expect(rebuilds() - afterCreate).toBe(1);

    // Annotations are translation input (Contour reads them): a change rebuilds.
    await custom.patchNamespacedCustomObject(
      { ...PROXY_API, name: 'echo', body: { metadata: { annotations: { 'example.com/note': 'x' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(() => rebuilds() - afterCreate === 2, 'the annotation change rebuilt');

    await custom.deleteNamespacedCustomObject({ ...PROXY_API, name: 'echo' });
    await eventually(() => controlPlane.rebuildLog.latest()?.objects.length === 0, 'the delete rebuilt');
  });
});
