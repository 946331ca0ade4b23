// The deployment manifests (infra/kubernetes) and Envoy bootstraps (infra/envoy), checked without a
// cluster: every Kubernetes document parsed and cross-checked (selectors, ports, least-privilege
// RBAC), the Namespace applied with the real kubectl to the local API server (the only manifest
// kind it serves), and each bootstrap validated field by field against Envoy's own Bootstrap proto.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as protobuf from 'protobufjs';
import '@grpc/proto-loader'; // registers descriptor.proto & co. that Envoy's annotation protos import
import { parseAllDocuments, parse } from 'yaml';

import { xdsProtoIncludeDirs } from '../../../common/xds/protos';
import { FLAGS } from '../../../xds-gateway/ops/config';
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
      expect(`${file}: ${doc.apiVersion}`).toMatch(/: (v1|apps\/v1|policy\/v1|rbac\.authorization\.k8s\.io\/v1)$/);
      expect(doc.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      if (clusterScoped.has(doc.kind)) expect(doc.metadata.namespace).toBeUndefined();
      else expect(doc.metadata.namespace).toBeDefined();
    }
    const kustomization = parse(readFileSync(join(KUBE_DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect(new Set(kustomization.resources)).toEqual(new Set(docs.map(({ file }) => file)));
    expect(docs.map(({ doc }) => doc.kind).sort()).toEqual(
      ['ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'Deployment', 'Namespace', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'Service', 'ServiceAccount'].sort(),
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
  root.loadSync(['envoy/config/bootstrap/v3/bootstrap.proto', 'envoy/extensions/upstreams/http/v3/http_protocol_options.proto'], { keepCase: true });
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

  it.each(['bootstrap-ads.yaml', 'bootstrap-per-type.yaml'])('%s is a valid Bootstrap whose xDS cluster points at the gateway Service', (file) => {
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
    if (file === 'bootstrap-per-type.yaml') {
      // Contour's generated EDS/RDS config sources name the cluster "contour".
      expect([...referenced]).toEqual(['contour']);
      expect(bootstrap.dynamic_resources['ads_config']).toBeUndefined();
    } else {
      expect(bootstrap.dynamic_resources['cds_config']?.ads).toEqual({});
    }
  });
});

