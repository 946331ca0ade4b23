// RBAC least privilege, derived from behaviour: the gateway's watchers and the status writer run
// against the local Kubernetes API server through a recording proxy (test/security/kube-audit.ts),
// and every (verb, group, resource, name) they ask for is compared with the roles in
// infra/kubernetes/: nothing they use may be missing, nothing granted may go unused. The kinds come
// from the deployed configuration (TRACKED_KINDS and LEADER_LEASE in gateway.yaml, trackedKinds in
// serverless.yml), so changing one without the other fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { parseAllDocuments } from 'yaml';
import pino from 'pino';

import { createKubeAccess } from '../../functions/kube/access';
import { StatusWriter } from '../../functions/kube/status-writer';
import { parseTrackedKinds, TrackedKinds } from '../../functions/kube/tracked-kinds';
import { HTTPPROXY_CRD } from '../../infra/local/control-plane/httpproxy-crd';
import { LeaderFollower } from '../../xds-gateway/tracking/leader-follower';
import { ObjectWatcher } from '../../xds-gateway/tracking/object-watcher';
import { HTTPPROXY_KIND, HTTPROUTE_KIND, type TrackedKind } from '../../xds-gateway/tracking/tracked-kinds';
import { request, startTestServer, type TestServer } from '../integration/kube/helpers';
import { startAuditProxy, type AuditProxy, type AuditRecord } from './kube-audit';
import { waitFor as pollWaitFor } from '../support/eventually';

const ROOT = join(__dirname, '..', '..');
const silent = pino({ level: 'silent' });

interface PolicyRule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
interface RoleDoc { kind: string; metadata: { name: string; namespace?: string }; rules: PolicyRule[] }
interface Grant { group: string; resource: string; verb: string; resourceNames: string[]; namespace?: string; role: string }

/**
 * Grants we keep although the code does not use them, each with its reason. The test fails if one
 * stops being granted (then delete it here).
 */
const KNOWN_UNUSED: Record<string, string> = {};

function roles(file: string): RoleDoc[] {
  return parseAllDocuments(readFileSync(join(ROOT, 'infra', 'kubernetes', file), 'utf8'))
    .map((doc) => doc.toJS() as RoleDoc)
    .filter((doc) => doc !== null && (doc.kind === 'ClusterRole' || doc.kind === 'Role'));
}

function grantsOf(docs: RoleDoc[]): Grant[] {
  return docs.flatMap((doc) => doc.rules.flatMap((rule) => rule.apiGroups.flatMap((group) => rule.resources.flatMap((resource) => rule.verbs.map((verb) => ({
    group, resource, verb, resourceNames: rule.resourceNames ?? [], role: `${doc.kind}/${doc.metadata.name}`,
    ...(doc.kind === 'Role' ? { namespace: doc.metadata.namespace as string } : {}),
  }))))));
}

const grantKey = (grant: Grant): string => `${grant.role} ${grant.group} ${grant.resource} ${grant.verb}`;

function allows(grant: Grant, record: AuditRecord): boolean {
  return grant.group === record.group && grant.resource === record.resource && grant.verb === record.verb
    && (grant.resourceNames.length === 0 || (record.name !== undefined && grant.resourceNames.includes(record.name)))
    && (grant.namespace === undefined || grant.namespace === record.namespace);
}

/** Missing: requests no grant allows. Unused: grants no request needed (minus the known ones). */
function compare(records: readonly AuditRecord[], grants: readonly Grant[]): { missing: string[]; unused: string[] } {
  const missing = [...new Set(records.filter((record) => !grants.some((grant) => allows(grant, record))).map((r) => `${r.verb} ${r.group}/${r.resource}${r.name === undefined ? '' : ` ${r.name}`}${r.namespace === undefined ? '' : ` in ${r.namespace}`}`))];
  const unused = grants.filter((grant) => !records.some((record) => allows(grant, record))).map(grantKey).filter((key) => KNOWN_UNUSED[key] === undefined);
  return { missing, unused };
}

function envOfGatewayDeployment(): Map<string, string> {
  const text = readFileSync(join(ROOT, 'infra', 'kubernetes', 'gateway.yaml'), 'utf8');
  const deployment = parseAllDocuments(text).map((doc) => doc.toJS() as { kind?: string; spec?: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } } }).find((doc) => doc?.kind === 'Deployment');
  return new Map((deployment?.spec?.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));
}

function gatewayKinds(value: string): TrackedKind[] {
  const presets: Record<string, TrackedKind> = { httpproxy: HTTPPROXY_KIND, httproute: HTTPROUTE_KIND };
  return value.split(',').map((name) => {
    const kind = presets[name.trim()];
    if (kind === undefined) throw new Error(`gateway.yaml TRACKED_KINDS ${name}: not a preset this test knows`);
    return kind;
  });
}

function functionKindsJson(): string {
  const match = /^\s*trackedKinds:\s*'(.+)'\s*$/m.exec(readFileSync(join(ROOT, 'serverless.yml'), 'utf8'));
  if (match?.[1] === undefined) throw new Error('serverless.yml has no trackedKinds parameter');
  return match[1];
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  await pollWaitFor(what, () => check() || undefined, { timeoutMs, intervalMs: 20 });
}

describe('RBAC least privilege (requests recorded against the local API server)', () => {
  let server: TestServer;
  let proxy: AuditProxy;
  const gatewayEnv = envOfGatewayDeployment();
  const [leaseNamespace, leaseName] = (gatewayEnv.get('LEADER_LEASE') ?? '').split('/') as [string, string];

  beforeAll(async () => {
    server = await startTestServer();
    proxy = await startAuditProxy(server.server.url);
    const setup = async (method: string, path: string, body: unknown): Promise<void> => {
      const response = await request(server, method, path, body);
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
    };
    await setup('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', HTTPPROXY_CRD);
    for (const name of [leaseNamespace, 'team']) await setup('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await setup('POST', '/apis/projectcontour.io/v1/namespaces/team/httpproxies', { apiVersion: 'projectcontour.io/v1', kind: 'HTTPProxy', metadata: { name: 'web', namespace: 'team' }, spec: { virtualhost: { fqdn: 'web.example.com' } } });
    await setup('POST', `/apis/coordination.k8s.io/v1/namespaces/${leaseNamespace}/leases`, {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: leaseName, namespace: leaseNamespace, annotations: { 'xds-programmed.dev/xds-address': '127.0.0.1:1' } }, spec: { holderIdentity: 'contour-0' },
    });
  });
  afterAll(async () => {
    await proxy.close();
    await server.cleanup();
  });

  it('the gateway: its watchers use exactly what gateway-rbac.yaml grants', async () => {
    expect(leaseNamespace).toMatch(/^[a-z0-9-]+$/);
    proxy.records.length = 0;
    const kubeConfig = proxy.kubeConfig();
    const observed: string[] = [];
    const watcher = new ObjectWatcher({ kubeConfig, kinds: gatewayKinds(gatewayEnv.get('TRACKED_KINDS') ?? ''), barrier: { observe: (o) => observed.push(o.ref.name), forget: () => undefined }, logger: silent, restartMs: 50 });
    const follower = new LeaderFollower({ kubeConfig, namespace: leaseNamespace, leaseName, mapping: { annotation: 'xds-programmed.dev/xds-address' }, relay: { setUpstreamTarget: () => undefined }, logger: silent, restartMs: 50 });
    try {
      await watcher.start();
      await follower.start();
      await waitFor('both watches and the first events', () => observed.includes('web') && follower.currentTarget() === '127.0.0.1:1'
        && proxy.records.filter((r) => r.verb === 'watch').length >= 2);
    } finally {
      await watcher.stop();
      await follower.stop();
    }
    const records = [...proxy.records];
    // What the code asked for, as authorization sees it (a readable failure if it changes).
    expect([...new Set(records.map((r) => `${r.verb} ${r.group}/${r.resource}${r.namespace === undefined ? '' : ` in ${r.namespace}`}`))].sort()).toEqual([
      `list coordination.k8s.io/leases in ${leaseNamespace}`,
      'list projectcontour.io/httpproxies',
      `watch coordination.k8s.io/leases in ${leaseNamespace}`,
      'watch projectcontour.io/httpproxies',
    ]);
    const grants = grantsOf(roles('gateway-rbac.yaml'));
    expect(compare(records, grants)).toEqual({ missing: [], unused: [] });
    // The lease grant is a Role in the control plane's namespace, not cluster-wide.
    expect(grants.filter((g) => g.resource === 'leases').every((g) => g.namespace === leaseNamespace)).toBe(true);
    for (const key of Object.keys(KNOWN_UNUSED)) expect(grants.map(grantKey)).toContain(key);
  });

  it('the status writer: reads, patches and its CRD check use exactly what functions-rbac.yaml grants', async () => {
    proxy.records.length = 0;
    const kinds = parseTrackedKinds(functionKindsJson());
    const writer = new StatusWriter({
      access: createKubeAccess({ source: 'kubeconfig', yaml: proxy.kubeConfig().exportConfig() }),
      kinds: new TrackedKinds(kinds),
      logger: silent,
      now: () => 1_795_000_000_000,
      maxServerErrorAttempts: 1,
    });
    const support = await writer.checkKinds();
    expect([...support.values()].every((s) => s.supported)).toBe(true);
    const ref = { group: 'projectcontour.io', kind: 'HTTPProxy', namespace: 'team', name: 'web' };
    const draft = { type: 'EnvoyProgrammed', status: 'True' as const, reason: 'Programmed', message: 'all 3 Envoys', observedGeneration: 1 };
    expect((await writer.write(ref, draft)).outcome).toBe('written');
    expect((await writer.write(ref, draft)).outcome).toBe('skipped');
    expect((await writer.write({ ...ref, name: 'gone' }, draft)).outcome).toBe('notFound');
    const records = [...proxy.records];
    expect([...new Set(records.map((r) => `${r.verb} ${r.group}/${r.resource}`))].sort()).toEqual([
      'get apiextensions.k8s.io/customresourcedefinitions',
      'get projectcontour.io/httpproxies',
      'patch projectcontour.io/httpproxies/status',
    ]);
    expect(compare(records, grantsOf(roles('functions-rbac.yaml')))).toEqual({ missing: [], unused: [] });
  });

  it('the comparison catches a missing grant and an unused one (the check itself can fail)', () => {
    const grants = grantsOf(roles('functions-rbac.yaml'));
    const records: AuditRecord[] = [{ verb: 'update', group: 'projectcontour.io', resource: 'httpproxies', namespace: 'team', name: 'web' }];
    const result = compare(records, grants);
    expect(result.missing).toEqual(['update projectcontour.io/httpproxies web in team']);
    expect(result.unused.length).toBe(grants.length);
    // resourceNames are honoured: another CRD by name is not allowed.
    expect(compare([{ verb: 'get', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', name: 'secrets.example.com' }], grants).missing).toHaveLength(1);
  });
});
