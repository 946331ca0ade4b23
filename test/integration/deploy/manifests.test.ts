// The deployment manifests (infra/kubernetes) and Envoy bootstraps (infra/envoy), checked without a
// cluster: every Kubernetes document parsed and cross-checked (selectors, ports, least-privilege
// RBAC, secure defaults: TLS from mounted Secrets, a hardened pod, a NetworkPolicy that admits only
// what the gateway needs), the Namespace applied with the real kubectl to the local API server (the
// only manifest kind it serves), the kustomization built by the real kubectl with and without the
// cert-manager component, and each bootstrap validated field by field against Envoy's own Bootstrap
// proto.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as protobuf from 'protobufjs';
import '@grpc/proto-loader'; // registers descriptor.proto & co. that Envoy's annotation protos import
import { parseAllDocuments, parse } from 'yaml';

import { xdsProtoIncludeDirs } from '../../../common/xds/protos';
import { FLAGS, parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { kubectl, startTestServer, type TestServer } from '../kube/helpers';

const ROOT = join(__dirname, '..', '..', '..');
const KUBE_DIR = join(ROOT, 'infra', 'kubernetes');
const ENVOY_DIR = join(ROOT, 'infra', 'envoy');

interface KubeDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

function loadDocs(): { file: string; doc: KubeDoc }[] {
  return readdirSync(KUBE_DIR)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(KUBE_DIR, file), 'utf8')).map((d) => {
        if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
        return { file, doc: d.toJS() as KubeDoc };
      }),
    );
}

interface EnvVar { name: string; value?: string; valueFrom?: unknown }
interface VolumeMount { name: string; mountPath: string; readOnly?: boolean }
interface Container {
  name: string;
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: VolumeMount[];
  securityContext?: { privileged?: boolean; allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; runAsNonRoot?: boolean; runAsUser?: number; capabilities?: { drop?: string[]; add?: string[] }; seccompProfile?: { type: string } };
}
interface PodSpec {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string; defaultMode?: number } }[];
}
interface PolicyPeer { podSelector?: { matchLabels?: Record<string, string> }; namespaceSelector?: { matchLabels?: Record<string, string> }; ipBlock?: { cidr: string } }
interface PolicyPort { port?: number | string; protocol?: string }
interface NetworkPolicySpec {
  podSelector: { matchLabels?: Record<string, string> };
  policyTypes?: string[];
  ingress?: { from?: PolicyPeer[]; ports?: PolicyPort[] }[];
  egress?: { to?: PolicyPeer[]; ports?: PolicyPort[] }[];
}

const TLS_FILE_VARIABLES = ['XDS_LISTEN_TLS_CERT', 'XDS_LISTEN_TLS_KEY', 'XDS_LISTEN_TLS_CLIENT_CA', 'UPSTREAM_TLS_CA', 'UPSTREAM_TLS_CERT', 'UPSTREAM_TLS_KEY'];
/** The keys of a kubernetes.io/tls Secret (cert-manager adds ca.crt). */
const TLS_SECRET_KEYS = new Set(['tls.crt', 'tls.key', 'ca.crt']);

/** What keeps the gateway pod from being hardened (non-root, no escalation, read-only root, …); [] when nothing. */
function podHardeningProblems(spec: PodSpec): string[] {
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  if (spec.hostNetwork === true || spec.hostPID === true || spec.hostIPC === true) problems.push('pod shares a host namespace');
  if (pod.runAsNonRoot !== true) problems.push('pod: runAsNonRoot is not true');
  if (pod.runAsUser === 0) problems.push('pod: runAsUser is root');
  for (const container of spec.containers) {
    const sc = container.securityContext ?? {};
    const at = `container ${container.name}`;
    if ((sc.seccompProfile ?? pod.seccompProfile)?.type !== 'RuntimeDefault') problems.push(`${at}: seccomp is not RuntimeDefault`);
    if (sc.privileged === true) problems.push(`${at}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem is not true`);
    if (sc.runAsUser === 0 || sc.runAsNonRoot === false) problems.push(`${at}: may run as root`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${at}: capabilities not dropped`);
    if ((sc.capabilities?.add ?? []).length > 0) problems.push(`${at}: adds capabilities`);
    for (const mount of container.volumeMounts ?? []) {
      const volume = spec.volumes?.find((v) => v.name === mount.name);
      if (volume?.secret !== undefined && mount.readOnly !== true) problems.push(`${at}: Secret ${volume.secret.secretName} mounted writable`);
    }
  }
  for (const volume of spec.volumes ?? []) {
    // Kubernetes' default 0644 lets every user in the pod read the keys.
    if (volume.secret !== undefined && ((volume.secret.defaultMode ?? 0o644) & 0o007) !== 0) problems.push(`Secret ${volume.secret.secretName}: files readable by others (defaultMode ${(volume.secret.defaultMode ?? 0o644).toString(8)})`);
  }
  return problems;
}

/** Every TLS file the gateway reads lies in a read-only Secret mount under a kubernetes.io/tls key; plaintext not asked for. */
function tlsProblems(spec: PodSpec): string[] {
  const problems: string[] = [];
  const container = spec.containers[0];
  const env = new Map((container?.env ?? []).map((e) => [e.name, e.value]));
  for (const name of TLS_FILE_VARIABLES) {
    const path = env.get(name);
    if (path === undefined) {
      problems.push(`${name} is not set`);
      continue;
    }
    const mount = container?.volumeMounts?.find((m) => path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
    const volume = spec.volumes?.find((v) => v.name === mount?.name);
    const file = path.slice((mount?.mountPath.replace(/\/$/, '') ?? '').length + 1);
    if (mount === undefined || volume?.secret === undefined) problems.push(`${name}: ${path} is not in a Secret mount`);
    else if (mount.readOnly !== true) problems.push(`${name}: ${mount.mountPath} is writable`);
    else if (!TLS_SECRET_KEYS.has(file)) problems.push(`${name}: ${file} is not a kubernetes.io/tls key`);
  }
  if (env.get('XDS_LISTEN_TLS_REQUIRE_CLIENT_CERT') !== 'true') problems.push('client certificates are not required (mTLS off)');
  for (const name of ['INSECURE_PLAINTEXT', 'UPSTREAM_INSECURE_PLAINTEXT']) {
    if (env.has(name) && env.get(name) !== 'false') problems.push(`${name} is set`);
  }
  return problems;
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>): boolean =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
const portsOf = (ports: PolicyPort[] | undefined): string[] => (ports ?? []).map((p) => `${String(p.port)}/${p.protocol ?? 'TCP'}`);

/**
 * What keeps the NetworkPolicy from admitting only what the gateway needs: it must select the gateway
 * pods for both directions; each ingress rule names its ports and peers chosen by pod labels (never
 * "everyone"), the xDS and ops ports in separate rules; egress only DNS, the control plane's port
 * (to pods) and HTTPS. [] when nothing.
 */
function networkPolicyProblems(policy: NetworkPolicySpec, podLabels: Record<string, string>, upstreamPort: string): string[] {
  const problems: string[] = [];
  if (!selects(policy.podSelector.matchLabels, podLabels)) problems.push('does not select the gateway pods');
  for (const type of ['Ingress', 'Egress']) if (!(policy.policyTypes ?? []).includes(type)) problems.push(`${type} not in policyTypes`);
  const ingress = policy.ingress ?? [];
  ingress.forEach((rule, index) => {
    const at = `ingress[${index}]`;
    const ports = portsOf(rule.ports);
    if (ports.length === 0) problems.push(`${at}: every port`);
    if (ports.some((p) => !['xds/TCP', 'ops/TCP'].includes(p))) problems.push(`${at}: ports other than xds and ops: ${ports.join(', ')}`);
    if (ports.includes('xds/TCP') && ports.includes('ops/TCP')) problems.push(`${at}: xds and ops share a rule (the scraper would reach xDS)`);
    if ((rule.from ?? []).length === 0) problems.push(`${at}: from everywhere`);
    for (const peer of rule.from ?? []) if (peer.ipBlock !== undefined || Object.keys(peer.podSelector?.matchLabels ?? {}).length === 0) problems.push(`${at}: a peer not chosen by pod labels`);
  });
  for (const port of ['xds/TCP', 'ops/TCP']) if (!ingress.some((rule) => portsOf(rule.ports).includes(port))) problems.push(`no ingress rule for ${port}`);
  const egress = policy.egress ?? [];
  const allowed = new Set(['53/UDP', '53/TCP', `${upstreamPort}/TCP`, '443/TCP']);
  egress.forEach((rule, index) => {
    const ports = portsOf(rule.ports);
    if (ports.length === 0 || (rule.to ?? []).length === 0) problems.push(`egress[${index}]: open to every port or peer`);
    if (ports.some((p) => !allowed.has(p))) problems.push(`egress[${index}]: unexpected ports ${ports.join(', ')}`);
  });
  for (const port of allowed) if (!egress.some((rule) => portsOf(rule.ports).includes(port))) problems.push(`no egress rule for ${port}`);
  const toControlPlane = egress.find((rule) => portsOf(rule.ports).includes(`${upstreamPort}/TCP`));
  if (toControlPlane !== undefined && (toControlPlane.to ?? []).some((peer) => Object.keys(peer.podSelector?.matchLabels ?? {}).length === 0)) problems.push('the control plane port is open to more than its pods');
  return problems;
}

describe('infra/kubernetes manifests', () => {
  const docs = loadDocs();
  const find = (kind: string, name: string): KubeDoc => {
    const found = docs.find(({ doc }) => doc.kind === kind && doc.metadata.name === name)?.doc;
    if (found === undefined) throw new Error(`no ${kind} ${name}`);
    return found;
  };

  it('every document is a named Kubernetes object; namespaced kinds say where; kustomization lists every file', () => {
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    for (const { file, doc } of docs) {
      expect(`${file}: ${doc.apiVersion}`).toMatch(/: (v1|apps\/v1|policy\/v1|networking\.k8s\.io\/v1|rbac\.authorization\.k8s\.io\/v1)$/);
      expect(doc.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      if (clusterScoped.has(doc.kind)) expect(doc.metadata.namespace).toBeUndefined();
      else expect(doc.metadata.namespace).toBeDefined();
    }
    const kustomization = parse(readFileSync(join(KUBE_DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect(new Set(kustomization.resources)).toEqual(new Set(docs.map(({ file }) => file)));
    expect(docs.map(({ doc }) => doc.kind).sort()).toEqual(
      ['ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'Deployment', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'Service', 'ServiceAccount'].sort(),
    );
  });

  it('Deployment, Service and PodDisruptionBudget select the same pods, and the Service targets declared ports', () => {
    const deployment = find('Deployment', 'xds-gateway') as KubeDoc & {
      spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: { ports: { name: string }[]; readinessProbe: { httpGet: { port: string } } }[] } } };
    };
    const podLabels = deployment.spec.template.metadata.labels;
    const matches = (selector: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
    expect(matches(deployment.spec.selector.matchLabels)).toBe(true);
    const service = find('Service', 'xds-gateway') as KubeDoc & { spec: { selector: Record<string, string>; ports: { targetPort: string; port: number }[] } };
    expect(matches(service.spec.selector)).toBe(true);
    const pdb = find('PodDisruptionBudget', 'xds-gateway') as KubeDoc & { spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable: number } };
    expect(matches(pdb.spec.selector.matchLabels)).toBe(true);
    // A PDB that allows one disruption at a time only makes sense with more than one replica.
    expect(deployment.spec.replicas).toBeGreaterThan(pdb.spec.maxUnavailable);
    const container = deployment.spec.template.spec.containers[0];
    const portNames = container?.ports.map((p) => p.name) ?? [];
    for (const port of service.spec.ports) expect(portNames).toContain(port.targetPort);
    expect(portNames).toContain(container?.readinessProbe.httpGet.port);
    expect(deployment.spec.template.spec.serviceAccountName).toBe(find('ServiceAccount', 'xds-gateway').metadata.name);
  });

  it('the gateway container sets only variables the gateway reads, and its ports match them', () => {
    const deployment = find('Deployment', 'xds-gateway') as KubeDoc & {
      spec: { template: { spec: { containers: { env: { name: string; value?: string }[]; ports: { name: string; containerPort: number }[] }[] } } };
    };
    const container = deployment.spec.template.spec.containers[0];
    const known = new Set(FLAGS.map((flag) => flag.env));
    const env = new Map((container?.env ?? []).map((e) => [e.name, e.value]));
    for (const name of env.keys()) expect(`${name}: ${known.has(name) ? 'known' : 'unknown to xds-gateway/ops/config.ts'}`).toBe(`${name}: known`);
    for (const required of ['UPSTREAM_TARGET', 'TABLE_NAME', 'INSTANCE_ID']) expect(env.has(required)).toBe(true);
    const ports = new Map((container?.ports ?? []).map((p) => [p.name, String(p.containerPort)]));
    expect(ports.get('xds')).toBe(env.get('XDS_LISTEN_PORT'));
    expect(ports.get('ops')).toBe(env.get('OPS_PORT'));
  });

  describe('secure by default', () => {
    const deployment = (): KubeDoc & { spec: { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } } =>
      find('Deployment', 'xds-gateway') as KubeDoc & { spec: { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } };
    const policy = (): NetworkPolicySpec => (find('NetworkPolicy', 'xds-gateway') as KubeDoc & { spec: NetworkPolicySpec }).spec;
    const envOf = (spec: PodSpec): Record<string, string> =>
      // INSTANCE_ID comes from the pod name (a fieldRef); any lineage part stands in for it here.
      Object.fromEntries((spec.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? (e.name === 'INSTANCE_ID' ? 'xds-gateway-7d9f-abcde' : '')]));
    const upstreamPort = (spec: PodSpec): string => (envOf(spec)['UPSTREAM_TARGET'] ?? '').split(':').pop() ?? '';

    it('the gateway serves and subscribes over mTLS from read-only kubernetes.io/tls Secret mounts, and its configuration parses as such', () => {
      const spec = deployment().spec.template.spec;
      expect(tlsProblems(spec)).toEqual([]);
      const parsed = parseGatewayConfig([], envOf(spec));
      if (parsed.kind !== 'ok') throw new Error(parsed.kind === 'error' ? parsed.message : 'help');
      expect(parsed.config).toMatchObject({
        insecurePlaintext: false,
        upstreamInsecurePlaintext: false,
        listenTlsCert: '/etc/xds-gateway/tls/tls.crt',
        listenTlsClientCa: '/etc/xds-gateway/tls/ca.crt',
        listenTlsRequireClientCert: true,
        upstreamTlsCa: '/etc/xds-gateway/upstream-tls/ca.crt',
        upstreamTlsCert: '/etc/xds-gateway/upstream-tls/tls.crt',
        // Kubelet probes reach the pod IP; the NetworkPolicy narrows who else may.
        opsHost: '0.0.0.0',
      });
      // Without the TLS variables the same pod would refuse to start, naming both ways out.
      const withoutTls = Object.fromEntries(Object.entries(envOf(spec)).filter(([name]) => !name.includes('_TLS_')));
      const refused = parseGatewayConfig([], withoutTls);
      expect(refused.kind === 'error' && refused.message).toContain('--insecure-plaintext (INSECURE_PLAINTEXT): downstream xDS has no TLS: give --listen-tls-cert and --listen-tls-key, or --insecure-plaintext');
      expect(refused.kind === 'error' && refused.message).toContain('--upstream-insecure-plaintext (UPSTREAM_INSECURE_PLAINTEXT)');
    });

    it('the gateway pod runs hardened: non-root, no privilege escalation, read-only root, no capabilities, RuntimeDefault seccomp, keys not world-readable', () => {
      expect(podHardeningProblems(deployment().spec.template.spec)).toEqual([]);
    });

    it('the NetworkPolicy admits xDS only from Envoy pods and ops only from the scraper; egress only DNS, the control plane, HTTPS', () => {
      const spec = deployment().spec.template.spec;
      expect(upstreamPort(spec)).toBe('8001');
      expect(networkPolicyProblems(policy(), deployment().spec.template.metadata.labels, upstreamPort(spec))).toEqual([]);
      // The LEADER_TARGET_TEMPLATE's pods answer on the same port the policy opens.
      expect(envOf(spec)['LEADER_TARGET_TEMPLATE']).toMatch(new RegExp(`:${upstreamPort(spec)}$`));
    });

    it('the checks above can fail: a weakened pod, TLS and policy are each reported', () => {
      const spec = structuredClone(deployment().spec.template.spec);
      const container = spec.containers[0] as Container;
      container.securityContext = { ...container.securityContext, allowPrivilegeEscalation: true, readOnlyRootFilesystem: false, capabilities: { drop: [], add: ['NET_ADMIN'] } };
      spec.securityContext = { ...spec.securityContext, runAsNonRoot: false };
      (container.volumeMounts ?? [])[0]!.readOnly = false;
      (spec.volumes ?? [])[0]!.secret!.defaultMode = 0o644;
      container.env = [...(container.env ?? []).filter((e) => e.name !== 'UPSTREAM_TLS_KEY' && e.name !== 'XDS_LISTEN_TLS_REQUIRE_CLIENT_CERT'), { name: 'INSECURE_PLAINTEXT', value: 'true' }];
      expect(podHardeningProblems(spec)).toEqual([
        'pod: runAsNonRoot is not true',
        'container gateway: allowPrivilegeEscalation is not false',
        'container gateway: readOnlyRootFilesystem is not true',
        'container gateway: capabilities not dropped',
        'container gateway: adds capabilities',
        'container gateway: Secret xds-gateway-tls mounted writable',
        'Secret xds-gateway-tls: files readable by others (defaultMode 644)',
      ]);
      expect(tlsProblems(spec)).toEqual([
        'XDS_LISTEN_TLS_CERT: /etc/xds-gateway/tls is writable',
        'XDS_LISTEN_TLS_KEY: /etc/xds-gateway/tls is writable',
        'XDS_LISTEN_TLS_CLIENT_CA: /etc/xds-gateway/tls is writable',
        'UPSTREAM_TLS_KEY is not set',
        'client certificates are not required (mTLS off)',
        'INSECURE_PLAINTEXT is set',
      ]);
      const open = structuredClone(policy());
      open.ingress = [{ ports: [{ port: 'xds' }, { port: 'ops' }] }];
      open.egress = [...(open.egress ?? []), {}];
      open.policyTypes = ['Ingress'];
      expect(networkPolicyProblems(open, deployment().spec.template.metadata.labels, '8001')).toEqual([
        'Egress not in policyTypes',
        'ingress[0]: xds and ops share a rule (the scraper would reach xDS)',
        'ingress[0]: from everywhere',
        'egress[3]: open to every port or peer',
      ]);
      expect(networkPolicyProblems(policy(), { 'app.kubernetes.io/name': 'something-else' }, '18000')).toEqual([
        'does not select the gateway pods',
        'egress[1]: unexpected ports 8001/TCP',
        'no egress rule for 18000/TCP',
      ]);
    });
  });

  it('the gateway may only read (tracked kinds and Leases); the status writer may only get objects and patch their status', () => {
    const rules = (kind: string, name: string): PolicyRule[] => (find(kind, name) as KubeDoc & { rules: PolicyRule[] }).rules;
    for (const rule of [...rules('ClusterRole', 'xds-programmed-gateway'), ...rules('Role', 'xds-programmed-gateway-leases')]) {
      expect(rule.verbs.every((verb) => ['get', 'list', 'watch'].includes(verb))).toBe(true);
    }
    expect(rules('Role', 'xds-programmed-gateway-leases')).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'watch'] }]);
    for (const rule of rules('ClusterRole', 'xds-programmed-status-writer')) {
      for (const verb of rule.verbs) {
        if (verb === 'patch') expect(rule.resources.every((r) => r.endsWith('/status'))).toBe(true);
        else expect(verb).toBe('get');
      }
      if (rule.apiGroups.includes('apiextensions.k8s.io')) expect(rule.resourceNames?.length).toBeGreaterThan(0);
    }
    for (const { doc } of docs) {
      for (const rule of ((doc as { rules?: PolicyRule[] }).rules ?? [])) {
        expect([...rule.apiGroups, ...rule.resources, ...rule.verbs]).not.toContain('*');
      }
    }
    // Bindings point at roles and subjects that exist here.
    const binding = find('ClusterRoleBinding', 'xds-programmed-gateway') as KubeDoc & { roleRef: { name: string }; subjects: { name: string; namespace: string }[] };
    expect(binding.roleRef.name).toBe('xds-programmed-gateway');
    expect(binding.subjects[0]).toMatchObject({ name: 'xds-gateway', namespace: 'xds-programmed' });
  });

  describe('against the local API server', () => {
    let kube: TestServer;
    beforeAll(async () => {
      kube = await startTestServer();
    });
    afterAll(async () => {
      await kube.cleanup();
    });

    it('kubectl kustomize builds the base without CRDs, and with the cert-manager component issues exactly the Secrets the gateway mounts', async () => {
      const base = await kubectl(kube, ['kustomize', KUBE_DIR]);
      expect(base.stderr).toBe('');
      const built = parseAllDocuments(base.stdout).map((d) => d.toJS() as KubeDoc);
      expect(built.map((d) => d.kind).sort()).toEqual(docs.map(({ doc }) => doc.kind).sort());
      const overlay = mkdtempSync(join(kube.dir, 'overlay-'));
      try {
        const from = relative(overlay, KUBE_DIR);
        writeFileSync(join(overlay, 'kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [${from}]\ncomponents: [${from}/components/cert-manager]\n`);
        const withCerts = await kubectl(kube, ['kustomize', overlay]);
        expect(withCerts.stderr).toBe('');
        const certificates = parseAllDocuments(withCerts.stdout)
          .map((d) => d.toJS() as KubeDoc & { spec: { secretName: string; usages: string[]; dnsNames?: string[]; issuerRef: { kind: string } } })
          .filter((d) => d.kind === 'Certificate');
        const deployment = find('Deployment', 'xds-gateway') as KubeDoc & { spec: { template: { spec: PodSpec } } };
        const mounted = (deployment.spec.template.spec.volumes ?? []).flatMap((v) => (v.secret === undefined ? [] : [v.secret.secretName]));
        expect(certificates.map((c) => c.spec.secretName).sort()).toEqual(mounted.sort());
        const serving = certificates.find((c) => c.spec.secretName === 'xds-gateway-tls');
        // `contour`: the name Contour-bootstrapped Envoys check; the Service name: infra/envoy's bootstraps.
        expect(serving?.spec.dnsNames).toEqual(expect.arrayContaining(['contour', 'xds-gateway.xds-programmed.svc.cluster.local']));
        expect(serving?.spec.usages).toContain('server auth');
        expect(certificates.find((c) => c.spec.secretName === 'xds-gateway-upstream-tls')?.spec.usages).toContain('client auth');
        for (const certificate of certificates) expect(certificate.metadata.namespace).toBe('xds-programmed');
      } finally {
        rmSync(overlay, { recursive: true, force: true });
      }
    });

    it('kubectl applies the Namespace', async () => {
      const applied = await kubectl(kube, ['apply', '-f', join(KUBE_DIR, 'namespace.yaml')]);
      expect(applied.stderr).toBe('');
      expect(applied.stdout).toContain('namespace/xds-programmed created');
      const got = await kubectl(kube, ['get', 'namespace', 'xds-programmed', '-o', 'jsonpath={.metadata.labels.app\\.kubernetes\\.io/part-of}']);
      expect(got.stdout).toBe('xds-programmed');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Envoy bootstraps against envoy.config.bootstrap.v3.Bootstrap

const WELL_KNOWN_SCALARS = new Set([
  'google.protobuf.Duration', 'google.protobuf.Timestamp', 'google.protobuf.UInt32Value', 'google.protobuf.UInt64Value',
  'google.protobuf.Int32Value', 'google.protobuf.Int64Value', 'google.protobuf.BoolValue', 'google.protobuf.StringValue',
  'google.protobuf.DoubleValue', 'google.protobuf.FloatValue', 'google.protobuf.Struct', 'google.protobuf.Value',
]);

function loadEnvoyRoot(): protobuf.Root {
  const includeDirs = xdsProtoIncludeDirs();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    for (const dir of includeDirs) {
      const candidate = join(dir, target);
      try {
        readFileSync(candidate);
        return candidate;
      } catch {
        // try the next include dir
      }
    }
    return target;
  };
  root.loadSync(['envoy/config/bootstrap/v3/bootstrap.proto', 'envoy/extensions/upstreams/http/v3/http_protocol_options.proto', 'envoy/extensions/transport_sockets/tls/v3/tls.proto'], { keepCase: true });
  root.resolveAll();
  return root;
}

/** Every key must be a field of its message (recursively, through Any's @type); enums by a known name. */
function validateMessage(root: protobuf.Root, type: protobuf.Type, value: unknown, at: string, problems: string[]): void {
  if (WELL_KNOWN_SCALARS.has(type.fullName.replace(/^\./, ''))) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${at}: expected a ${type.name} object`);
    return;
  }
  let target = type;
  const entries = Object.entries(value as Record<string, unknown>);
  if (type.fullName === '.google.protobuf.Any') {
    const typeUrl = (value as Record<string, unknown>)['@type'];
    if (typeof typeUrl !== 'string') {
      problems.push(`${at}: Any without @type`);
      return;
    }
    target = root.lookupType(typeUrl.replace(/^type\.googleapis\.com\//, ''));
  }
  for (const [key, fieldValue] of entries) {
    if (key === '@type') continue;
    const field = target.fields[key];
    if (field === undefined) {
      problems.push(`${at}.${key}: no such field in ${target.fullName}`);
      continue;
    }
    field.resolve();
    const items = field.repeated ? (Array.isArray(fieldValue) ? fieldValue : [Symbol('not a list')]) : field.map ? Object.values(fieldValue as object) : [fieldValue];
    items.forEach((item, index) => {
      const where = `${at}.${key}${field.repeated ? `[${index}]` : ''}`;
      if (field.resolvedType instanceof protobuf.Type) validateMessage(root, field.resolvedType, item, where, problems);
      else if (field.resolvedType instanceof protobuf.Enum) {
        if (typeof item !== 'string' || !(item in field.resolvedType.values)) problems.push(`${where}: ${String(item)} is not a ${field.resolvedType.name}`);
      } else if (typeof item === 'symbol') problems.push(`${where}: expected a list`);
    });
  }
}

describe('infra/envoy bootstraps', () => {
  const root = loadEnvoyRoot();
  const bootstrapType = root.lookupType('envoy.config.bootstrap.v3.Bootstrap');
  const files = readdirSync(ENVOY_DIR).filter((f) => f.startsWith('bootstrap') && f.endsWith('.yaml'));

  it('finds both variants', () => {
    expect(files.sort()).toEqual(['bootstrap-ads.yaml', 'bootstrap-per-type.yaml']);
  });

  it('the validator catches a misspelt field (it can fail)', () => {
    const problems: string[] = [];
    const typedOptions = { '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions', explicit_http_config: { http2_protocol_option: {} } };
    const broken = {
      dynamic_resources: { ads_confg: {}, ads_config: { api_type: 'GRCP' } },
      static_resources: { clusters: [{ name: 'x', typed_extension_protocol_options: { h2: typedOptions } }] },
    };
    validateMessage(root, bootstrapType, broken, 'bootstrap', problems);
    expect(problems).toEqual([
      'bootstrap.dynamic_resources.ads_confg: no such field in .envoy.config.bootstrap.v3.Bootstrap.DynamicResources',
      'bootstrap.dynamic_resources.ads_config.api_type: GRCP is not a ApiType',
      'bootstrap.static_resources.clusters[0].typed_extension_protocol_options.explicit_http_config.http2_protocol_option: no such field in .envoy.extensions.upstreams.http.v3.HttpProtocolOptions.ExplicitHttpConfig',
    ]);
  });

  it.each(['bootstrap-ads.yaml', 'bootstrap-per-type.yaml'])('%s is a valid Bootstrap whose xDS cluster points at the gateway Service over mTLS', (file) => {
    const bootstrap = parse(readFileSync(join(ENVOY_DIR, file), 'utf8')) as {
      dynamic_resources: Record<string, { api_config_source?: { grpc_services: { envoy_grpc: { cluster_name: string } }[] }; ads?: object; grpc_services?: { envoy_grpc: { cluster_name: string } }[] }>;
      static_resources: { clusters: { name: string; load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string; port_value: number } } } }[] }[] } }[] };
    };
    const problems: string[] = [];
    validateMessage(root, bootstrapType, bootstrap, 'bootstrap', problems);
    expect(problems).toEqual([]);
    const referenced = new Set<string>();
    for (const config of Object.values(bootstrap.dynamic_resources)) {
      for (const service of [...(config.grpc_services ?? []), ...(config.api_config_source?.grpc_services ?? [])]) referenced.add(service.envoy_grpc.cluster_name);
    }
    expect(referenced.size).toBe(1);
    const cluster = bootstrap.static_resources.clusters.find((c) => referenced.has(c.name));
    const address = cluster?.load_assignment.endpoints[0]?.lb_endpoints[0]?.endpoint.address.socket_address;
    expect(address).toEqual({ address: 'xds-gateway.xds-programmed.svc.cluster.local', port_value: 8001 });
    // The shipped gateway refuses plaintext and clients without a certificate: the bootstrap speaks
    // mTLS, checking the gateway's name.
    const tls = (cluster as { transport_socket?: { name: string; typed_config: { sni?: string; common_tls_context?: { tls_certificates?: unknown[]; validation_context?: { trusted_ca?: unknown } } } } } | undefined)?.transport_socket;
    expect(tls?.name).toBe('envoy.transport_sockets.tls');
    expect(tls?.typed_config.sni).toBe('xds-gateway.xds-programmed.svc.cluster.local');
    expect(tls?.typed_config.common_tls_context?.tls_certificates).toHaveLength(1);
    expect(tls?.typed_config.common_tls_context?.validation_context?.trusted_ca).toBeDefined();
    if (file === 'bootstrap-per-type.yaml') {
      // Contour's generated EDS/RDS config sources name the cluster "contour".
      expect([...referenced]).toEqual(['contour']);
      expect(bootstrap.dynamic_resources['ads_config']).toBeUndefined();
    } else {
      expect(bootstrap.dynamic_resources['cds_config']?.ads).toEqual({});
    }
  });
});

