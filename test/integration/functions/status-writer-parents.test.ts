// The status writer on Gateway API routes (docs/CONVERGENCE.md, "Gateway API routes"): HTTPRoute has
// no top-level status.conditions, so our verdict goes in entries of our own under status.parents,
// one per spec.parentRefs entry, controllerName xds-programmed.dev/status, condition type
// xds-programmed.dev/Programmed. The implementation's entries are never touched, even when it
// writes between our read and our write; a route attached to nothing gets nothing.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { GATEWAY_API_CONDITION_TYPE, STATUS_CONTROLLER_NAME, type ConditionDraft } from '../../../common/core';
import { createKubeAccess, type KubeAccess, type KubeClients } from '../../../functions/kube/access';
import { StatusWriter } from '../../../functions/kube/status-writer';
import { parseTrackedKinds, TrackedKinds } from '../../../functions/kube/tracked-kinds';
import { HTTPROUTE_CRD } from '../../../infra/local/control-plane/httproute-crd';
import { request, startTestServer, type TestServer } from '../kube/helpers';
import { silentLogger } from './status-support';

const GROUP = 'gateway.networking.k8s.io';
const ROUTES = `/apis/${GROUP}/v1/namespaces/default/httproutes`;

/** The route CRD without status.parents in its schema: the API server would prune our entries. */
const CRD_WITHOUT_PARENTS = {
  ...HTTPROUTE_CRD,
  spec: {
    ...HTTPROUTE_CRD.spec,
    versions: HTTPROUTE_CRD.spec.versions.map((version) => ({
      ...version,
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: version.schema.openAPIV3Schema.properties.spec, status: { type: 'object', properties: { other: { type: 'string' } } } } } },
    })),
  },
};

interface Route {
  metadata: { name: string; generation: number; resourceVersion: string };
  status?: { parents?: Array<{ parentRef: Record<string, unknown>; controllerName: string; conditions: Array<Record<string, unknown>> }> };
}

const IMPLEMENTATION = 'projectcontour.io/gateway-controller';
const parentRefs = [{ name: 'gw-a', sectionName: 'http' }, { name: 'gw-b', namespace: 'infra' }];
const implementationEntry = (generation: number, message = 'accepted') => ({
  parentRef: { name: 'gw-a', sectionName: 'http' },
  controllerName: IMPLEMENTATION,
  conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message, observedGeneration: generation, lastTransitionTime: '2026-01-01T00:00:00Z' }],
});
const draft = (generation: number, status: 'True' | 'False' = 'True'): ConditionDraft => ({
  type: GATEWAY_API_CONDITION_TYPE,
  status,
  observedGeneration: generation,
  reason: status === 'True' ? 'Programmed' : 'Pending',
  message: `${status === 'True' ? '3/3' : '1/3'} Envoys programmed at generation ${generation}`,
});
const ref = (name: string) => ({ group: GROUP, kind: 'HTTPRoute', namespace: 'default', name });

describe('status writer, status.parents placement', () => {
  let kube: TestServer;
  let access: KubeAccess;
  let writer: StatusWriter;
  const kinds = new TrackedKinds(parseTrackedKinds(JSON.stringify([{ group: GROUP, version: 'v1', kind: 'HTTPRoute', plural: 'httproutes' }])));

  const get = async (name: string): Promise<Route> => (await request(kube, 'GET', `${ROUTES}/${name}`)).body as Route;
  const create = async (name: string, refs: unknown[] = parentRefs): Promise<void> => {
    expect((await request(kube, 'POST', ROUTES, { apiVersion: `${GROUP}/v1`, kind: 'HTTPRoute', metadata: { name }, spec: { parentRefs: refs, hostnames: [`${name}.local`] } })).status).toBe(201);
  };
  const implementationWrites = async (name: string, generation: number, message?: string): Promise<void> => {
    for (;;) {
      const route = await get(name);
      const others = (route.status?.parents ?? []).filter((entry) => entry.controllerName !== IMPLEMENTATION);
      const body = { metadata: { resourceVersion: route.metadata.resourceVersion }, status: { parents: [implementationEntry(generation, message), ...others] } };
      const answer = await request(kube, 'PATCH', `${ROUTES}/${name}/status`, body, 'application/merge-patch+json');
      if (answer.status === 200) return;
      expect(answer.status).toBe(409);
    }
  };

  beforeAll(async () => {
    kube = await startTestServer();
    expect((await request(kube, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', HTTPROUTE_CRD)).status).toBe(201);
    access = createKubeAccess({ source: 'kubeconfigFile', path: kube.kubeconfig });
    writer = new StatusWriter({ access, kinds, logger: silentLogger });
  });
  afterAll(async () => {
    await kube.cleanup();
  });

  it('Gateway API kinds default to status.parents and a domain-prefixed condition type', () => {
    expect(kinds.conditionTypeFor(ref('x'), 'EnvoyProgrammed')).toBe('xds-programmed.dev/Programmed');
    expect(kinds.kinds[0]?.placement).toBeUndefined();
  });

  it('writes one entry of ours per parentRef and keeps the implementation\'s entry', async () => {
    await create('web');
    await implementationWrites('web', 1);
    expect(await writer.write(ref('web'), draft(1, 'False'))).toMatchObject({ outcome: 'written' });
    let route = await get('web');
    expect(route.status?.parents?.map((entry) => [entry.controllerName, entry.parentRef])).toEqual([
      [IMPLEMENTATION, { name: 'gw-a', sectionName: 'http' }],
      [STATUS_CONTROLLER_NAME, parentRefs[0]],
      [STATUS_CONTROLLER_NAME, parentRefs[1]],
    ]);
    const ours = route.status?.parents?.filter((entry) => entry.controllerName === STATUS_CONTROLLER_NAME) ?? [];
    for (const entry of ours) expect(entry.conditions).toEqual([expect.objectContaining({ type: GATEWAY_API_CONDITION_TYPE, status: 'False', observedGeneration: 1 })]);

    // The same verdict again is a no-op (read from our entry, not from top-level conditions).
    expect(await writer.write(ref('web'), draft(1, 'False'))).toMatchObject({ outcome: 'skipped' });
    // The implementation rewrites its entry; ours stay, and our next write keeps its new message.
    await implementationWrites('web', 1, 'accepted again');
    expect(await writer.write(ref('web'), draft(1, 'True'))).toMatchObject({ outcome: 'written' });
    route = await get('web');
    expect(route.status?.parents?.[0]?.conditions[0]?.['message']).toBe('accepted again');
    expect(route.status?.parents?.filter((entry) => entry.controllerName === STATUS_CONTROLLER_NAME).map((entry) => entry.conditions[0]?.['status'])).toEqual(['True', 'True']);
    // jsonpath a user can `kubectl wait` on finds our verdict.
    expect(route.status?.parents?.find((entry) => entry.controllerName === STATUS_CONTROLLER_NAME)?.conditions.find((c) => c['type'] === GATEWAY_API_CONDITION_TYPE)?.['status']).toBe('True');
  });

  it('re-reads on 409 when the implementation writes between our read and our write, losing nothing', async () => {
    await create('race');
    let reads = 0;
    const interfering: KubeAccess = {
      clients: async (): Promise<KubeClients> => {
        const real = await access.clients();
        const customObjects = Object.create(real.customObjects) as CustomObjectsApi;
        customObjects.getNamespacedCustomObject = async (...args: Parameters<CustomObjectsApi['getNamespacedCustomObject']>) => {
          const object: unknown = await real.customObjects.getNamespacedCustomObject(...args);
          if (reads++ < 2) await implementationWrites('race', 1, `write ${reads}`);
          return object;
        };
        return { ...real, customObjects };
      },
    };
    const racing = new StatusWriter({ access: interfering, kinds, logger: silentLogger, sleep: async () => undefined });
    expect(await racing.write(ref('race'), draft(1))).toMatchObject({ outcome: 'written', conflicts: 2 });
    const route = await get('race');
    expect(route.status?.parents?.map((entry) => entry.controllerName)).toEqual([IMPLEMENTATION, STATUS_CONTROLLER_NAME, STATUS_CONTROLLER_NAME]);
    expect(route.status?.parents?.[0]?.conditions[0]?.['message']).toBe('write 2');
  });

  it('writes nothing on a route attached to nothing, and refuses a CRD without status.parents', async () => {
    await create('detached', []);
    expect(await writer.write(ref('detached'), draft(1))).toMatchObject({ outcome: 'unsupported', detail: expect.stringContaining('spec.parentRefs is empty') });
    expect((await get('detached')).status?.parents).toBeUndefined();

    const other = await startTestServer();
    try {
      expect((await request(other, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD_WITHOUT_PARENTS)).status).toBe(201);
      const strict = new StatusWriter({ access: createKubeAccess({ source: 'kubeconfigFile', path: other.kubeconfig }), kinds, logger: silentLogger });
      expect(await strict.write(ref('any'), draft(1))).toMatchObject({ outcome: 'unsupported', detail: expect.stringContaining('no status.parents in its schema') });
    } finally {
      await other.cleanup();
    }
  });
});
