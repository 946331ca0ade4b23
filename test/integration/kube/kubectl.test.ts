// The real kubectl (v1.32) against the local server: apply a CRD and an object, get, apply a
// change, patch status, wait (stale observedGeneration refused, late condition delivered by
// the watch), delete.
import { kubectl, startTestServer, type TestServer } from './helpers';

const CRD_YAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`;

const widgetYaml = (size: number, extra = ''): string => `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: ${size}${extra}}
`;

function readyStatusPatch(observedGeneration: number): string {
  return JSON.stringify({
    status: {
      conditions: [
        { type: 'EnvoyProgrammed', status: 'True', observedGeneration, reason: 'Programmed', message: 'all Envoys', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ],
    },
  });
}

interface WidgetJson {
  metadata: { generation: number; resourceVersion: string; annotations?: Record<string, string> };
  spec: { size: number };
  status?: { conditions?: { observedGeneration: number }[] };
}

describe('kubectl against the local API server', () => {
  let test: TestServer;

  beforeAll(async () => {
    test = await startTestServer();
  });
  afterAll(async () => {
    await test.cleanup();
  });

  const getWidget = async (): Promise<WidgetJson> => {
    const result = await kubectl(test, ['get', 'widgets.example.com', 'w1', '-n', 'default', '-o', 'json']);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as WidgetJson;
  };

  it('applies a CRD, then an object of the new kind', async () => {
    const crd = await kubectl(test, ['apply', '-f', '-'], CRD_YAML);
    expect(crd).toMatchObject({ code: 0 });
    expect(crd.stdout).toContain('customresourcedefinition.apiextensions.k8s.io/widgets.example.com created');
    const established = await kubectl(test, ['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=10s']);
    expect(established.code).toBe(0);

    const object = await kubectl(test, ['apply', '-f', '-'], widgetYaml(3));
    expect(object.stderr).toBe('');
    expect(object.stdout).toContain('widget.example.com/w1 created');
    const got = await getWidget();
    expect(got.spec.size).toBe(3);
    expect(got.metadata.generation).toBe(1);
    expect(got.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toContain('"size":3');
  });

  it('lists through the short name and the table printer', async () => {
    const result = await kubectl(test, ['get', 'wd']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^NAME\s+AGE\n/);
    expect(result.stdout).toContain('w1');
  });

  it('re-applies a changed spec as a merge patch and bumps the generation', async () => {
    const result = await kubectl(test, ['apply', '-f', '-'], widgetYaml(4));
    expect(result.stdout).toContain('widget.example.com/w1 configured');
    const got = await getWidget();
    expect(got.spec.size).toBe(4);
    expect(got.metadata.generation).toBe(2);
    const unchanged = await kubectl(test, ['apply', '-f', '-'], widgetYaml(4));
    expect(unchanged.stdout).toContain('unchanged');
    expect((await getWidget()).metadata.resourceVersion).toBe(got.metadata.resourceVersion);
  });

  it('refuses unknown fields with the Strict validation kubectl asks for', async () => {
    const result = await kubectl(test, ['apply', '-f', '-'], widgetYaml(4, ', colour: red'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('unknown field "spec.colour"');
  });

  it('patches status without touching the generation', async () => {
    const before = await getWidget();
    const patched = await kubectl(test, ['patch', 'widget', 'w1', '--subresource=status', '--type=merge', '-p', readyStatusPatch(1)]);
    expect(patched.stdout).toContain('widget.example.com/w1 patched');
    const after = await getWidget();
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(after.status?.conditions?.[0]?.observedGeneration).toBe(1);
    expect(Number(after.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));
  });

  it('refuses a strategic merge patch on a custom resource with 415, like Kubernetes', async () => {
    const result = await kubectl(test, ['patch', 'widget', 'w1', '-p', '{"spec":{"size":5}}']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/UnsupportedMediaType|unknown format|not supported/i);
  });

  it('kubectl wait refuses a condition whose observedGeneration is below metadata.generation', async () => {
    // generation is 2, the condition speaks about generation 1
    const result = await kubectl(test, ['wait', 'widget/w1', '--for=condition=EnvoyProgrammed', '--timeout=2s']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('timed out');
  });

  it('kubectl wait sees a condition that arrives later through its watch', async () => {
    const waiting = kubectl(test, ['wait', 'widget/w1', '--for=condition=EnvoyProgrammed', '--timeout=30s']);
    // Let kubectl list and open its watch first, then write the condition for generation 2.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const patched = await kubectl(test, ['patch', 'widget', 'w1', '--subresource=status', '--type=merge', '-p', readyStatusPatch(2)]);
    expect(patched.code).toBe(0);
    const result = await waiting;
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('widget.example.com/w1 condition met');
  });

  it('status in a main-resource patch is ignored (status subresource rule)', async () => {
    const result = await kubectl(test, ['patch', 'widget', 'w1', '--type=merge', '-p', '{"status":{"conditions":[]},"metadata":{"labels":{"a":"b"}}}']);
    expect(result.code).toBe(0);
    const got = await getWidget();
    expect(got.status?.conditions?.[0]?.observedGeneration).toBe(2);
    expect(got.metadata.generation).toBe(2); // a label change is not a spec change
  });

  it('applies a Namespace (built-in: strategic merge patch) and a Lease', async () => {
    const ns = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {tier: one}\n';
    expect((await kubectl(test, ['apply', '-f', '-'], ns)).stdout).toContain('namespace/team-a created');
    const relabel = await kubectl(test, ['apply', '-f', '-'], ns.replace('tier: one', 'tier: two'));
    expect(relabel.stderr).toBe('');
    expect(relabel.stdout).toContain('namespace/team-a configured');
    const labels = await kubectl(test, ['get', 'ns', 'team-a', '-o', 'jsonpath={.metadata.labels.tier}']);
    expect(labels.stdout).toBe('two');
    const lease = 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: leader, namespace: team-a}\nspec: {holderIdentity: a, leaseDurationSeconds: 15}\n';
    expect((await kubectl(test, ['apply', '-f', '-'], lease)).stdout).toContain('lease.coordination.k8s.io/leader created');
    const holder = await kubectl(test, ['get', 'lease', 'leader', '-n', 'team-a', '-o', 'jsonpath={.spec.holderIdentity}']);
    expect(holder.stdout).toBe('a');
  });

  it('kubectl create namespace (a protobuf body from the typed client) and delete namespace', async () => {
    const created = await kubectl(test, ['create', 'namespace', 'from-generator']);
    expect(created.stderr).toBe('');
    expect(created.stdout).toContain('namespace/from-generator created');
    const phase = await kubectl(test, ['get', 'namespace', 'from-generator', '-o', 'jsonpath={.status.phase}']);
    expect(phase.stdout).toBe('Active');
    const invalid = await kubectl(test, ['create', 'namespace', 'Bad_Name']);
    expect(invalid.stderr).toContain('is invalid');
    const deleted = await kubectl(test, ['delete', 'namespace', 'from-generator']);
    expect(deleted.stdout).toContain('namespace "from-generator" deleted');
  });

  it('deletes the object, then the CRD', async () => {
    const deleted = await kubectl(test, ['delete', 'widget', 'w1']);
    expect(deleted.stdout).toContain('widget.example.com "w1" deleted');
    const missing = await kubectl(test, ['get', 'widget', 'w1']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('widgets.example.com "w1" not found');
    const crd = await kubectl(test, ['delete', 'crd', 'widgets.example.com']);
    expect(crd.code).toBe(0);
    const gone = await kubectl(test, ['get', 'crd']);
    expect(gone.stdout).not.toContain('widgets.example.com');
  });
});
