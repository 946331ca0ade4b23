// The deployment manifests (infra/kubernetes) and Envoy bootstraps (infra/envoy), checked without a
// cluster: every Kubernetes document parsed and cross-checked (selectors, ports, least-privilege
// RBAC, secure defaults: TLS from mounted Secrets, a hardened pod, a NetworkPolicy that admits only
// what the gateway needs), the Namespace applied with the real kubectl to the local API server (the
// only manifest kind it serves), the kustomization built by the real kubectl with and without the
// cert-manager component, and each bootstrap validated field by field against Envoy's own Bootstrap
// proto. Then what the real `kubectl kustomize` renders, the base and the base with the Contour
// overlay (infra/kubernetes/overlays/contour, its patch on a stand-in for Contour's Envoy DaemonSet):
// every Deployment sized, probed on the routes the real ops server serves, hardened, running the
// image's ENTRYPOINT as the Dockerfile's USER; the patched Envoy bootstrap aimed at the gateway
// Service's xDS port.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import * as protobuf from 'protobufjs';
import '@grpc/proto-loader'; // registers descriptor.proto & co. that Envoy's annotation protos import
import { parseAllDocuments, parse, stringify } from 'yaml';

import { xdsProtoIncludeDirs } from '../../../common/xds/protos';
import { FLAGS, parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { startOpsServer } from '../../../xds-gateway/ops/ops-server';
import { kubectl, startTestServer, type TestServer } from '../kube/helpers';
import { readDockerfile, runtimeImage, type RuntimeImage } from './dockerfile';

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

// ---------------------------------------------------------------------------------------------
// Rendered by kubectl kustomize: every Deployment, and the Contour overlay's Envoy bootstrap

const OVERLAY_DIR = join(KUBE_DIR, 'overlays', 'contour');

/** The ops server's routes the kubelet probes (xds-gateway/ops/ops-server.ts; served for real below). */
const OPS_ROUTES = { readiness: '/readyz', liveness: '/healthz' } as const;

interface HttpProbe { httpGet?: { path?: string; port?: string | number } }
interface RenderedContainer extends Container {
  image?: string;
  command?: string[];
  args?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: HttpProbe;
  livenessProbe?: HttpProbe;
}
interface RenderedPodSpec extends PodSpec {
  containers: RenderedContainer[];
  initContainers?: RenderedContainer[];
  securityContext?: PodSpec['securityContext'] & { runAsGroup?: number; fsGroup?: number };
}
type Workload = KubeDoc & { spec: { selector?: { matchLabels?: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: RenderedPodSpec } } };
type ServiceDoc = KubeDoc & { spec: { ports: { name: string; port: number; targetPort: string | number }[] } };

function renderedDocs(yamlText: string): KubeDoc[] {
  return parseAllDocuments(yamlText).map((d) => {
    if (d.errors.length > 0) throw new Error(d.errors.map((e) => e.message).join('; '));
    return d.toJS() as KubeDoc;
  });
}

/** A container's variables, a fieldRef INSTANCE_ID (the pod name) standing in as a lineage part. */
function containerEnv(container: RenderedContainer): Record<string, string> {
  return Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? (e.name === 'INSTANCE_ID' ? 'xds-gateway-7d9f-abcde' : '')]));
}

/**
 * What keeps a rendered gateway Deployment from being deployable as the image runs: requests (cpu,
 * memory) and a memory limit; readiness and liveness on the ops server's routes, at the port the
 * gateway's own configuration (xds-gateway/ops/config.ts) gives its ops server, on an address the
 * kubelet reaches; the pod hardening above; the image's USER as the pod's user and group; the
 * image's ENTRYPOINT and CMD not overridden. [] when nothing.
 */
function deploymentProblems(doc: Workload, image: RuntimeImage): string[] {
  const problems: string[] = [];
  const spec = doc.spec.template.spec;
  const at = `Deployment ${doc.metadata.namespace ?? ''}/${doc.metadata.name}`;
  problems.push(...podHardeningProblems(spec).map((problem) => `${at}: ${problem}`));
  const pod = spec.securityContext ?? {};
  if (pod.runAsUser !== image.user.uid || pod.runAsGroup !== image.user.gid) problems.push(`${at}: runs as ${String(pod.runAsUser)}:${String(pod.runAsGroup)}, the image's USER is ${image.user.uid}:${image.user.gid}`);
  for (const container of spec.containers) {
    const where = `${at} container ${container.name}`;
    const requests = container.resources?.requests ?? {};
    for (const resource of ['cpu', 'memory']) if (requests[resource] === undefined) problems.push(`${where}: no ${resource} request`);
    if (container.resources?.limits?.['memory'] === undefined) problems.push(`${where}: no memory limit`);
    if (container.command !== undefined || container.args !== undefined) problems.push(`${where}: overrides the image's ENTRYPOINT/CMD (${[...(container.command ?? []), ...(container.args ?? [])].join(' ')})`);
    const parsed = parseGatewayConfig(container.args ?? [], containerEnv(container));
    if (parsed.kind !== 'ok') {
      problems.push(`${where}: the gateway would not start: ${parsed.kind === 'error' ? parsed.message : 'help'}`);
      continue;
    }
    if (/^(127\.|localhost$|::1$)/.test(parsed.config.opsHost)) problems.push(`${where}: ops server on loopback (${parsed.config.opsHost}): the kubelet cannot reach it`);
    for (const [kind, path] of Object.entries(OPS_ROUTES) as [keyof typeof OPS_ROUTES, string][]) {
      const probe = container[`${kind}Probe`]?.httpGet;
      if (probe === undefined) {
        problems.push(`${where}: no ${kind} httpGet probe`);
        continue;
      }
      if (probe.path !== path) problems.push(`${where}: ${kind} probe path ${String(probe.path)}, the ops server serves ${path}`);
      const port = typeof probe.port === 'number' ? probe.port : container.ports?.find((p) => p.name === probe.port)?.containerPort;
      if (port !== parsed.config.opsPort) problems.push(`${where}: ${kind} probe port ${String(probe.port)} (${String(port)}) is not the ops port ${parsed.config.opsPort}`);
    }
  }
  return problems;
}

/** The value of `--flag=value` in a `contour bootstrap` argument list. */
const flagValue = (args: readonly string[], flag: string): string | undefined => args.find((arg) => arg.startsWith(`${flag}=`))?.slice(flag.length + 1);

/**
 * What keeps Contour's patched Envoy DaemonSet from bootstrapping against the gateway: its
 * `contour bootstrap` init container must name the gateway Service (by its cluster DNS name) and
 * that Service's xDS port, whose target is the container port the gateway listens on; the
 * gateway's NetworkPolicy must admit these Envoy pods to that port. [] when nothing.
 */
function envoyBootstrapProblems(envoy: Workload, service: ServiceDoc, gateway: Workload, policy: NetworkPolicySpec): string[] {
  const problems: string[] = [];
  const init = envoy.spec.template.spec.initContainers?.find((c) => c.args?.[0] === 'bootstrap');
  if (init === undefined) return ['no `contour bootstrap` init container'];
  const args = init.args ?? [];
  const address = flagValue(args, '--xds-address');
  const serviceName = `${service.metadata.name}.${service.metadata.namespace ?? ''}.svc.cluster.local`;
  if (address !== serviceName) problems.push(`--xds-address is ${String(address)}, not the gateway Service ${serviceName}`);
  const xds = service.spec.ports.find((p) => p.name === 'xds');
  if (xds === undefined) return [...problems, 'the gateway Service has no xds port'];
  if (flagValue(args, '--xds-port') !== String(xds.port)) problems.push(`--xds-port is ${String(flagValue(args, '--xds-port'))}, the Service's xds port is ${xds.port}`);
  const container = gateway.spec.template.spec.containers[0];
  const target = typeof xds.targetPort === 'number' ? xds.targetPort : container?.ports?.find((p) => p.name === xds.targetPort)?.containerPort;
  const listen = container === undefined ? undefined : containerEnv(container)['XDS_LISTEN_PORT'];
  if (String(target) !== listen) problems.push(`the Service's xds port targets ${String(target)}, the gateway listens on ${String(listen)}`);
  const labels = envoy.spec.template.metadata.labels;
  const admitted = (policy.ingress ?? []).some(
    (rule) =>
      portsOf(rule.ports).includes('xds/TCP') &&
      (rule.from ?? []).some((peer) => selects(peer.podSelector?.matchLabels, labels) && peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === envoy.metadata.namespace),
  );
  if (!admitted) problems.push(`the gateway's NetworkPolicy does not admit ${envoy.metadata.namespace ?? ''} pods ${JSON.stringify(labels)} to xds`);
  return problems;
}

/**
 * A stand-in for Contour's Envoy DaemonSet as its example deployment names it (our own minimal
 * object: the DaemonSet envoy in projectcontour, pods labelled app: envoy, the init container
 * envoy-initconfig running `contour bootstrap` against Contour's Service, the flags
 * infra/envoy/README.md lists).
 */
const CONTOUR_BOOTSTRAP_FLAGS = ['--xds-resource-version=v3', '--resources-dir=/config/resources', '--envoy-cafile=/certs/ca.crt', '--envoy-cert-file=/certs/tls.crt', '--envoy-key-file=/certs/tls.key'];
const ENVOY_STAND_IN = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'envoy', namespace: 'projectcontour', labels: { app: 'envoy' } },
  spec: {
    selector: { matchLabels: { app: 'envoy' } },
    template: {
      metadata: { labels: { app: 'envoy' } },
      spec: {
        initContainers: [
          { name: 'envoy-initconfig', image: 'contour', command: ['contour'], args: ['bootstrap', '/config/envoy.json', '--xds-address=contour', '--xds-port=8001', ...CONTOUR_BOOTSTRAP_FLAGS], volumeMounts: [{ name: 'envoy-config', mountPath: '/config' }] },
        ],
        containers: [{ name: 'envoy', image: 'envoy', args: ['-c', '/config/envoy.json'], volumeMounts: [{ name: 'envoy-config', mountPath: '/config', readOnly: true }] }],
        volumes: [{ name: 'envoy-config', emptyDir: {} }],
      },
    },
  },
};

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

    describe('rendered by kubectl kustomize: the base, and the base with the Contour overlay', () => {
      const image = runtimeImage(readDockerfile());
      let base: KubeDoc[];
      let overlayAlone: KubeDoc[];
      let withContour: KubeDoc[];
      let patchedByKubectl: Workload;
      beforeAll(async () => {
        const render = async (dir: string): Promise<KubeDoc[]> => {
          const built = await kubectl(kube, ['kustomize', dir]);
          if (built.code !== 0 || built.stderr !== '') throw new Error(`kubectl kustomize ${dir}: ${built.stderr}`);
          return renderedDocs(built.stdout);
        };
        base = await render(KUBE_DIR);
        // The two ways the overlay's kustomization.yaml describes: base and overlay in a
        // kustomization of one's own, without Contour (installed on its own) and with Contour's
        // manifests in the same build (the stand-in for its Envoy DaemonSet).
        const dir = mkdtempSync(join(kube.dir, 'contour-overlay-'));
        try {
          for (const [name, contour] of [['alone', false], ['with-contour', true]] as const) {
            const at = join(dir, name);
            mkdirSync(at);
            if (contour) writeFileSync(join(at, 'envoy.yaml'), stringify(ENVOY_STAND_IN));
            const resources = [relative(at, KUBE_DIR), ...(contour ? ['envoy.yaml'] : [])];
            writeFileSync(join(at, 'kustomization.yaml'), stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources, components: [relative(at, OVERLAY_DIR)] }));
          }
          overlayAlone = await render(join(dir, 'alone'));
          withContour = await render(join(dir, 'with-contour'));
          // The other way: kubectl patch with the overlay's patch file, on the DaemonSet as it runs.
          const patched = await kubectl(kube, ['patch', '--local', '-f', join(dir, 'with-contour', 'envoy.yaml'), '--type', 'strategic', '--patch-file', join(OVERLAY_DIR, 'envoy-xds-gateway.patch.yaml'), '-o', 'yaml']);
          if (patched.code !== 0) throw new Error(`kubectl patch --local: ${patched.stderr}`);
          patchedByKubectl = parse(patched.stdout) as Workload;
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
      const workloads = (docs: KubeDoc[], kind: string): Workload[] => docs.filter((d) => d.kind === kind) as Workload[];
      const one = <T extends KubeDoc>(docs: KubeDoc[], kind: string, name: string): T => {
        const found = docs.filter((d) => d.kind === kind && d.metadata.name === name);
        if (found.length !== 1) throw new Error(`${found.length} ${kind} ${name}`);
        return found[0] as T;
      };

      it('the overlay keeps the base\'s gateway (Deployment, Service, PDB, RBAC, NetworkPolicy) and, without Contour in the build, changes nothing', () => {
        expect(overlayAlone).toEqual(base);
        for (const [kind, name] of [['Deployment', 'xds-gateway'], ['Service', 'xds-gateway'], ['PodDisruptionBudget', 'xds-gateway'], ['ServiceAccount', 'xds-gateway'], ['ClusterRole', 'xds-programmed-gateway'], ['ClusterRoleBinding', 'xds-programmed-gateway'], ['Role', 'xds-programmed-gateway-leases'], ['NetworkPolicy', 'xds-gateway']] as const) {
          expect(one(withContour, kind, name)).toEqual(one(base, kind, name));
        }
      });

      it('every Deployment in both renders: requests and a memory limit, probes on the ops routes and port, hardened, the image\'s USER and ENTRYPOINT', () => {
        for (const docs of [base, withContour]) {
          const deployments = workloads(docs, 'Deployment');
          expect(deployments.length).toBeGreaterThan(0);
          for (const deployment of deployments) {
            expect(deploymentProblems(deployment, image)).toEqual([]);
            expect(deployment.spec.template.spec.containers[0]?.image).toMatch(/\/xds-gateway:\d+\.\d+\.\d+$/);
          }
        }
      });

      it('the probe paths are the real ops server\'s: liveness 200, readiness 200 when ready and 503 when not, anything else 404', async () => {
        let ready = true;
        const ops = await startOpsServer({ host: '127.0.0.1', port: 0, registry: new Registry(), readiness: [{ name: 'test', ok: () => ready }], logger: pino({ level: 'silent' }) });
        try {
          const status = async (path: string): Promise<number> => (await fetch(`http://127.0.0.1:${ops.port}${path}`)).status;
          const container = workloads(base, 'Deployment')[0]?.spec.template.spec.containers[0];
          const liveness = container?.livenessProbe?.httpGet?.path ?? '(none)';
          const readiness = container?.readinessProbe?.httpGet?.path ?? '(none)';
          expect(await status(liveness)).toBe(200);
          expect(await status(readiness)).toBe(200);
          ready = false;
          expect(await status(readiness)).toBe(503);
          expect(await status(liveness)).toBe(200);
          expect(await status('/ready')).toBe(404);
        } finally {
          await ops.close();
        }
      });

      it('the overlay points Contour\'s Envoy bootstrap at the gateway Service\'s xDS port, changing only --xds-address and --xds-port; kubectl patch does the same', () => {
        const envoy = one<Workload>(withContour, 'DaemonSet', 'envoy');
        const service = one<ServiceDoc>(withContour, 'Service', 'xds-gateway');
        const gateway = one<Workload>(withContour, 'Deployment', 'xds-gateway');
        const policy = one<KubeDoc & { spec: NetworkPolicySpec }>(withContour, 'NetworkPolicy', 'xds-gateway').spec;
        expect(envoyBootstrapProblems(envoy, service, gateway, policy)).toEqual([]);
        const args = envoy.spec.template.spec.initContainers?.[0]?.args ?? [];
        expect(args.filter((arg) => !/^--xds-(address|port)=/.test(arg))).toEqual(['bootstrap', '/config/envoy.json', ...CONTOUR_BOOTSTRAP_FLAGS]);
        expect(patchedByKubectl.spec.template.spec).toEqual(envoy.spec.template.spec);
        // Contour's own bootstrap checks the name `contour` on the xDS server: the base says to
        // serve contourcert (valid for it), and the cert-manager component issues it (test above).
        expect(readFileSync(join(KUBE_DIR, 'gateway.yaml'), 'utf8')).toContain('valid for the name `contour`');
      });

      it('the checks above can fail: an unsized, misprobed, overridden, root Deployment and a bootstrap aimed elsewhere are each reported', () => {
        const deployment = structuredClone(workloads(base, 'Deployment')[0] as Workload);
        const spec = deployment.spec.template.spec;
        const container = spec.containers[0] as RenderedContainer;
        container.resources = { requests: { memory: '1Gi' } };
        container.readinessProbe = { httpGet: { path: '/ready', port: 'ops' } };
        container.livenessProbe = { httpGet: { path: '/healthz', port: 'xds' } };
        // What gateway.yaml once said: as args they follow the ENTRYPOINT, so the gateway refuses them.
        container.args = ['node', '/app/xds-gateway/main.js'];
        spec.securityContext = { ...spec.securityContext, runAsUser: 1000 };
        expect(deploymentProblems(deployment, image)).toEqual([
          'Deployment xds-programmed/xds-gateway: runs as 1000:65532, the image\'s USER is 65532:65532',
          'Deployment xds-programmed/xds-gateway container gateway: no cpu request',
          'Deployment xds-programmed/xds-gateway container gateway: no memory limit',
          'Deployment xds-programmed/xds-gateway container gateway: overrides the image\'s ENTRYPOINT/CMD (node /app/xds-gateway/main.js)',
          'Deployment xds-programmed/xds-gateway container gateway: the gateway would not start: error: too many arguments. Expected 0 arguments but got 2.',
        ]);
        container.args = undefined;
        container.env = [...(container.env ?? []).filter((e) => e.name !== 'OPS_HOST'), { name: 'OPS_HOST', value: '127.0.0.1' }];
        expect(deploymentProblems(deployment, image).slice(3)).toEqual([
          'Deployment xds-programmed/xds-gateway container gateway: ops server on loopback (127.0.0.1): the kubelet cannot reach it',
          'Deployment xds-programmed/xds-gateway container gateway: readiness probe path /ready, the ops server serves /readyz',
          'Deployment xds-programmed/xds-gateway container gateway: liveness probe port xds (8001) is not the ops port 9090',
        ]);
        const service = one<ServiceDoc>(withContour, 'Service', 'xds-gateway');
        const gateway = one<Workload>(withContour, 'Deployment', 'xds-gateway');
        const policy = one<KubeDoc & { spec: NetworkPolicySpec }>(withContour, 'NetworkPolicy', 'xds-gateway').spec;
        expect(envoyBootstrapProblems(ENVOY_STAND_IN as unknown as Workload, service, gateway, policy)).toEqual(['--xds-address is contour, not the gateway Service xds-gateway.xds-programmed.svc.cluster.local']);
        const elsewhere = structuredClone(one<Workload>(withContour, 'DaemonSet', 'envoy'));
        elsewhere.metadata.namespace = 'other';
        const init = elsewhere.spec.template.spec.initContainers?.[0] as RenderedContainer;
        init.args = (init.args ?? []).map((arg) => (arg.startsWith('--xds-port=') ? '--xds-port=18000' : arg));
        expect(envoyBootstrapProblems(elsewhere, service, gateway, policy)).toEqual([
          '--xds-port is 18000, the Service\'s xds port is 8001',
          'the gateway\'s NetworkPolicy does not admit other pods {"app":"envoy"} to xds',
        ]);
      });
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

