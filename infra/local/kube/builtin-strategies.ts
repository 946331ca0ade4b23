// What kube-apiserver's registry strategies and defaulting do to the built-in kinds an ingress
// controller reads (Service, Secret, ConfigMap, EndpointSlice, Ingress, Event), to the extent a
// controller can see it: defaults that land in the stored object (a Service port's protocol and
// targetPort, an EndpointSlice port's protocol, a Secret's type), allocated values (a Service's
// clusterIP and nodePorts, kept across updates that leave them out), write-only fields (a Secret's
// stringData merged into data), immutability, and the validation that a client would otherwise
// only meet on a real cluster. Called by objects.ts after pruning, with the stored object on
// update. Everything not listed here is stored as sent (docs/LOCAL-KUBERNETES.md).
import { ApiError } from './errors';
import { isJsonObject, jsonEqual, type Json, type JsonObject } from './json';
import type { FieldProblem } from './metadata';
import { CONFIG_MAPS, ENDPOINT_SLICES, EVENTS, INGRESSES, SECRETS, SERVICES, type ResourceType } from './resources';

export interface StrategyContext {
  /** Every stored object of `type`, in all namespaces (for cluster-wide allocations). */
  allOf(type: ResourceType): JsonObject[];
}

/**
 * Defaults, allocates and validates `object` (the candidate of a create, or of an update when
 * `previous` is given) in place. Returns the field problems (a 422); throws a 400 for a body the
 * apiserver could not even decode (a Secret's data that is not base64).
 */
export function applyBuiltInStrategy(type: ResourceType, object: JsonObject, previous: JsonObject | undefined, ctx: StrategyContext): FieldProblem[] {
  switch (type) {
    case SERVICES:
      return service(object, previous, ctx);
    case SECRETS:
      return secret(object, previous);
    case CONFIG_MAPS:
      return configMap(object, previous);
    case ENDPOINT_SLICES:
      return endpointSlice(object, previous);
    case INGRESSES:
      return ingress(object, previous);
    case EVENTS:
      return event(object);
    default:
      return [];
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const IANA_SVC_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];

function objectAt(object: JsonObject, key: string): JsonObject {
  const value = object[key];
  if (isJsonObject(value)) return value;
  const created: JsonObject = {};
  object[key] = created;
  return created;
}

function objectsIn(value: Json | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

function isPort(value: Json | undefined): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function unsupported(field: string, value: Json | undefined, allowed: string[]): FieldProblem {
  return { field, message: `Unsupported value: ${JSON.stringify(value ?? '')}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}` };
}

function immutable(field: string): FieldProblem {
  return { field, message: 'Invalid value: field is immutable' };
}

// ---------------------------------------------------------------------------------------------
// Service: SetDefaults_Service, the ClusterIP and NodePort allocators, and the parts of
// ValidateService a client meets first.

const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'];
/** The conventional service CIDR (kube-apiserver's default 10.96.0.0/12); .1 is the `kubernetes` Service's. */
const CLUSTER_IP_BASE = (10 << 24) | (96 << 16);
const CLUSTER_IP_COUNT = 1 << 20;
const NODE_PORT_RANGE = { first: 30000, last: 32767 };

function ipv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

function service(object: JsonObject, previous: JsonObject | undefined, ctx: StrategyContext): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const spec = objectAt(object, 'spec');
  const before = previous && isJsonObject(previous['spec']) ? previous['spec'] : undefined;
  // PrepareForCreate resets status; its Go zero value serialises as an empty loadBalancer.
  if (!previous) object['status'] = { loadBalancer: {} };
  if (spec['type'] === undefined || spec['type'] === '') spec['type'] = 'ClusterIP';
  const serviceType = spec['type'];
  if (typeof serviceType !== 'string' || !SERVICE_TYPES.includes(serviceType)) return [unsupported('spec.type', serviceType, SERVICE_TYPES)];
  if (spec['sessionAffinity'] === undefined || spec['sessionAffinity'] === '') spec['sessionAffinity'] = 'None';
  if (spec['sessionAffinity'] === 'None') delete spec['sessionAffinityConfig'];
  else if (spec['sessionAffinity'] === 'ClientIP') {
    const config = objectAt(spec, 'sessionAffinityConfig');
    const clientIP = objectAt(config, 'clientIP');
    if (clientIP['timeoutSeconds'] === undefined) clientIP['timeoutSeconds'] = 10800;
  } else problems.push(unsupported('spec.sessionAffinity', spec['sessionAffinity'], ['ClientIP', 'None']));

  const ports = objectsIn(spec['ports']);
  for (const port of ports) {
    if (port['protocol'] === undefined || port['protocol'] === '') port['protocol'] = 'TCP';
    if (port['targetPort'] === undefined || port['targetPort'] === 0 || port['targetPort'] === '') port['targetPort'] = port['port'] ?? 0;
  }
  const externallyAccessible = serviceType === 'NodePort' || serviceType === 'LoadBalancer' || (Array.isArray(spec['externalIPs']) && spec['externalIPs'].length > 0);
  if (externallyAccessible && (spec['externalTrafficPolicy'] === undefined || spec['externalTrafficPolicy'] === '')) spec['externalTrafficPolicy'] = 'Cluster';
  if (serviceType !== 'ExternalName' && spec['internalTrafficPolicy'] === undefined) spec['internalTrafficPolicy'] = 'Cluster';
  if (serviceType === 'LoadBalancer' && spec['allocateLoadBalancerNodePorts'] === undefined) spec['allocateLoadBalancerNodePorts'] = true;

  if (serviceType === 'ExternalName') {
    // dropTypeDependentFields: an ExternalName Service holds no allocations.
    for (const field of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']) delete spec[field];
    if (typeof spec['externalName'] !== 'string' || spec['externalName'] === '') problems.push({ field: 'spec.externalName', message: 'Required value' });
  } else {
    problems.push(...allocateClusterIP(object, spec, before, ctx));
  }
  const headless = spec['clusterIP'] === 'None';
  if (ports.length === 0 && serviceType !== 'ExternalName' && !headless) problems.push({ field: 'spec.ports', message: 'Required value' });

  const seenNames = new Set<string>();
  const seenPorts = new Set<string>();
  ports.forEach((port, index) => {
    const where = `spec.ports[${index}]`;
    const name = port['name'];
    if (ports.length > 1 && (name === undefined || name === '')) problems.push({ field: `${where}.name`, message: 'Required value' });
    if (typeof name === 'string' && name !== '') {
      if (!DNS_LABEL.test(name) || name.length > 63) problems.push({ field: `${where}.name`, message: `Invalid value: "${name}": must be a DNS label` });
      if (seenNames.has(name)) problems.push({ field: `${where}.name`, message: `Duplicate value: "${name}"` });
      seenNames.add(name);
    }
    if (!isPort(port['port'])) problems.push({ field: `${where}.port`, message: `Invalid value: ${JSON.stringify(port['port'] ?? 0)}: must be between 1 and 65535, inclusive` });
    if (typeof port['protocol'] !== 'string' || !PROTOCOLS.includes(port['protocol'])) problems.push(unsupported(`${where}.protocol`, port['protocol'], PROTOCOLS));
    const key = `${String(port['port'])}/${String(port['protocol'])}`;
    if (seenPorts.has(key)) problems.push({ field: where, message: `Duplicate value: {"port":${String(port['port'])},"protocol":"${String(port['protocol'])}"}` });
    seenPorts.add(key);
    const target = port['targetPort'];
    const targetOk = typeof target === 'string' ? IANA_SVC_NAME.test(target) && target.length <= 15 : isPort(target);
    if (!targetOk) problems.push({ field: `${where}.targetPort`, message: `Invalid value: ${JSON.stringify(target ?? 0)}: must be a port number (1-65535) or an IANA service name` });
  });
  if (problems.length === 0) problems.push(...allocateNodePorts(object, spec, before, ctx));
  return problems;
}

function allocateClusterIP(object: JsonObject, spec: JsonObject, before: JsonObject | undefined, ctx: StrategyContext): FieldProblem[] {
  const sentIP = typeof spec['clusterIP'] === 'string' ? spec['clusterIP'] : '';
  const sentIPs = Array.isArray(spec['clusterIPs']) ? spec['clusterIPs'].filter((ip): ip is string => typeof ip === 'string') : [];
  let ip = sentIP !== '' ? sentIP : (sentIPs[0] ?? '');
  const previousIP = before && before['type'] !== 'ExternalName' && typeof before['clusterIP'] === 'string' ? before['clusterIP'] : '';
  if (ip === '' && previousIP !== '') ip = previousIP; // an update that leaves it out keeps it (patchAllocatedValues)
  if (previousIP !== '' && ip !== previousIP) return [{ field: 'spec.clusterIPs[0]', message: `Invalid value: ${JSON.stringify([ip])}: may not change once set` }];
  if (ip === '') ip = freeClusterIP(ctx, object);
  else if (ip !== 'None') {
    const parsed = parseIPv4(ip);
    if (parsed === undefined || parsed < CLUSTER_IP_BASE || parsed >= CLUSTER_IP_BASE + CLUSTER_IP_COUNT) {
      return [{ field: 'spec.clusterIPs', message: `Invalid value: ${JSON.stringify([ip])}: failed to allocate IP ${ip}: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12` }];
    }
    if (previousIP === '' && clusterIPsInUse(ctx, object).has(ip)) {
      return [{ field: 'spec.clusterIPs', message: `Invalid value: ${JSON.stringify([ip])}: failed to allocate IP ${ip}: provided IP is already allocated` }];
    }
  }
  spec['clusterIP'] = ip;
  spec['clusterIPs'] = [ip];
  if (spec['ipFamilies'] === undefined) spec['ipFamilies'] = ['IPv4'];
  if (spec['ipFamilyPolicy'] === undefined) spec['ipFamilyPolicy'] = 'SingleStack';
  return [];
}

function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

/** Other Services' allocations: the object being written is excluded by namespace and name. */
function otherServices(ctx: StrategyContext, object: JsonObject): JsonObject[] {
  const self = isJsonObject(object['metadata']) ? `${String(object['metadata']['namespace'])}/${String(object['metadata']['name'])}` : '';
  return ctx.allOf(SERVICES).filter((other) => !isJsonObject(other['metadata']) || `${String(other['metadata']['namespace'])}/${String(other['metadata']['name'])}` !== self);
}

function clusterIPsInUse(ctx: StrategyContext, object: JsonObject): Set<string> {
  return new Set(otherServices(ctx, object).map((s) => (isJsonObject(s['spec']) ? s['spec']['clusterIP'] : undefined)).filter((ip): ip is string => typeof ip === 'string'));
}

function freeClusterIP(ctx: StrategyContext, object: JsonObject): string {
  const used = clusterIPsInUse(ctx, object);
  // The lowest free address past .1 (kube-apiserver picks at random; tests want stable values).
  for (let offset = 2; offset < CLUSTER_IP_COUNT - 1; offset += 1) {
    const candidate = ipv4(CLUSTER_IP_BASE + offset);
    if (!used.has(candidate)) return candidate;
  }
  throw new ApiError(500, 'InternalError', 'failed to allocate a clusterIP: the range 10.96.0.0/12 is full');
}

function allocateNodePorts(object: JsonObject, spec: JsonObject, before: JsonObject | undefined, ctx: StrategyContext): FieldProblem[] {
  const wantsNodePorts = spec['type'] === 'NodePort' || (spec['type'] === 'LoadBalancer' && spec['allocateLoadBalancerNodePorts'] !== false);
  const ports = objectsIn(spec['ports']);
  if (!wantsNodePorts) {
    if (spec['type'] === 'ClusterIP' || spec['type'] === 'ExternalName') for (const port of ports) delete port['nodePort'];
    return [];
  }
  const previous = new Map(objectsIn(before?.['ports']).map((p) => [`${String(p['port'])}/${String(p['protocol'] ?? 'TCP')}`, p['nodePort']]));
  const used = new Set<number>();
  for (const other of otherServices(ctx, object)) {
    for (const port of objectsIn(isJsonObject(other['spec']) ? other['spec']['ports'] : undefined)) if (typeof port['nodePort'] === 'number') used.add(port['nodePort']);
  }
  const problems: FieldProblem[] = [];
  ports.forEach((port, index) => {
    if (port['nodePort'] === undefined || port['nodePort'] === 0) {
      const kept = previous.get(`${String(port['port'])}/${String(port['protocol'])}`);
      if (typeof kept === 'number') port['nodePort'] = kept;
    }
    const nodePort = port['nodePort'];
    if (typeof nodePort === 'number' && nodePort !== 0) {
      if (nodePort < NODE_PORT_RANGE.first || nodePort > NODE_PORT_RANGE.last) {
        problems.push({ field: `spec.ports[${index}].nodePort`, message: `Invalid value: ${nodePort}: provided port is not in the valid range. The range of valid ports is 30000-32767` });
      } else if (used.has(nodePort)) {
        problems.push({ field: `spec.ports[${index}].nodePort`, message: `Invalid value: ${nodePort}: provided port is already allocated` });
      }
      used.add(nodePort);
      return;
    }
    for (let candidate = NODE_PORT_RANGE.first; candidate <= NODE_PORT_RANGE.last; candidate += 1) {
      if (!used.has(candidate)) {
        port['nodePort'] = candidate;
        used.add(candidate);
        return;
      }
    }
    problems.push({ field: `spec.ports[${index}].nodePort`, message: 'Internal error: the node port range is full' });
  });
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Secret and ConfigMap.

const SECRET_REQUIRED_KEYS: Record<string, string[]> = {
  'kubernetes.io/tls': ['tls.crt', 'tls.key'],
  'kubernetes.io/basic-auth': [],
  'kubernetes.io/ssh-auth': ['ssh-privatekey'],
  'kubernetes.io/dockerconfigjson': ['.dockerconfigjson'],
  'kubernetes.io/dockercfg': ['.dockercfg'],
};
const MAX_SECRET_BYTES = 1024 * 1024;

/** Go's encoding/json decodes []byte with base64.StdEncoding (padding required; CR/LF skipped). */
function decodeBase64(value: string): Buffer | undefined {
  const text = value.replace(/[\r\n]/g, '');
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

function byteMap(object: JsonObject, field: string, kind: string): Map<string, Buffer> {
  const map = new Map<string, Buffer>();
  const value = object[field];
  if (!isJsonObject(value)) return map;
  for (const [key, encoded] of Object.entries(value)) {
    const bytes = typeof encoded === 'string' ? decodeBase64(encoded) : undefined;
    if (!bytes) throw new ApiError(400, 'BadRequest', `${kind} in version "v1" cannot be handled as a ${kind}: illegal base64 data in ${field}["${key}"]`);
    map.set(key, bytes);
  }
  return map;
}

function checkKeys(keys: Iterable<string>, field: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const key of keys) {
    if (!CONFIG_KEY.test(key) || key.length > 253 || key === '.' || key === '..') {
      problems.push({ field: `${field}[${key}]`, message: `Invalid value: "${key}": a valid config key must consist of alphanumeric characters, '-', '_' or '.'` });
    }
  }
  return problems;
}

function secret(object: JsonObject, previous: JsonObject | undefined): FieldProblem[] {
  const data = byteMap(object, 'data', 'Secret');
  // Convert_v1_Secret_To_core_Secret: stringData is write-only, merged over data.
  if (isJsonObject(object['stringData'])) {
    for (const [key, text] of Object.entries(object['stringData'])) if (typeof text === 'string') data.set(key, Buffer.from(text, 'utf8'));
  }
  delete object['stringData'];
  if (data.size > 0) object['data'] = Object.fromEntries([...data].map(([key, bytes]) => [key, bytes.toString('base64')]));
  else delete object['data'];
  if (object['type'] === undefined || object['type'] === '') object['type'] = 'Opaque';

  const problems = checkKeys(data.keys(), 'data');
  const secretType = String(object['type']);
  for (const key of SECRET_REQUIRED_KEYS[secretType] ?? []) if (!data.has(key)) problems.push({ field: `data[${key}]`, message: 'Required value' });
  const total = [...data].reduce((sum, [key, bytes]) => sum + key.length + bytes.length, 0);
  if (total > MAX_SECRET_BYTES) problems.push({ field: 'data', message: `Too long: must have at most ${MAX_SECRET_BYTES} bytes` });
  if (previous) {
    if (previous['type'] !== object['type']) problems.push(immutable('type'));
    if (previous['immutable'] === true) {
      if (object['immutable'] !== true) problems.push(immutable('immutable'));
      if (!jsonEqual(previous['data'], object['data'])) problems.push({ field: 'data', message: 'Forbidden: field is immutable when `immutable` is set' });
    }
  }
  return problems;
}

function configMap(object: JsonObject, previous: JsonObject | undefined): FieldProblem[] {
  const binary = byteMap(object, 'binaryData', 'ConfigMap');
  const data = isJsonObject(object['data']) ? Object.keys(object['data']) : [];
  const problems = [...checkKeys(data, 'data'), ...checkKeys(binary.keys(), 'binaryData')];
  for (const key of data) if (binary.has(key)) problems.push({ field: `data[${key}]`, message: `Invalid value: "${key}": duplicate of key present in binaryData` });
  // ValidateConfigMap: keys and values of data and binaryData together, at most the Secret limit.
  const dataBytes = isJsonObject(object['data']) ? Object.entries(object['data']).reduce((sum, [key, value]) => sum + key.length + (typeof value === 'string' ? Buffer.byteLength(value) : 0), 0) : 0;
  const total = dataBytes + [...binary].reduce((sum, [key, bytes]) => sum + key.length + bytes.length, 0);
  if (total > MAX_SECRET_BYTES) problems.push({ field: '[]', message: `Too long: must have at most ${MAX_SECRET_BYTES} bytes` });
  if (previous?.['immutable'] === true) {
    if (object['immutable'] !== true) problems.push(immutable('immutable'));
    if (!jsonEqual(previous['data'], object['data']) || !jsonEqual(previous['binaryData'], object['binaryData'])) {
      problems.push({ field: 'data', message: 'Forbidden: field is immutable when `immutable` is set' });
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// EndpointSlice: SetDefaults_EndpointPort and the parts of ValidateEndpointSlice that a
// translator like Contour's relies on (address type, addresses, ports).

const ADDRESS_TYPES = ['IPv4', 'IPv6', 'FQDN'];

function endpointSlice(object: JsonObject, previous: JsonObject | undefined): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const addressType = object['addressType'];
  if (addressType === undefined) problems.push({ field: 'addressType', message: 'Required value' });
  else if (typeof addressType !== 'string' || !ADDRESS_TYPES.includes(addressType)) problems.push(unsupported('addressType', addressType, ADDRESS_TYPES));
  if (previous && previous['addressType'] !== addressType) problems.push(immutable('addressType'));
  // The Go type's endpoints and ports are non-omitempty lists: JSON readers see [] rather than null.
  if (!Array.isArray(object['endpoints'])) object['endpoints'] = [];
  if (!Array.isArray(object['ports'])) object['ports'] = [];
  const endpoints = objectsIn(object['endpoints']);
  if (endpoints.length > 1000) problems.push({ field: 'endpoints', message: 'Too many: must have at most 1000 items' });
  endpoints.forEach((endpoint, index) => {
    const addresses = Array.isArray(endpoint['addresses']) ? endpoint['addresses'] : [];
    if (addresses.length < 1 || addresses.length > 100) problems.push({ field: `endpoints[${index}].addresses`, message: 'Invalid value: must contain at least 1 and at most 100 addresses' });
    addresses.forEach((address, a) => {
      const ok = typeof address === 'string' && (addressType === 'IPv4' ? parseIPv4(address) !== undefined : addressType === 'IPv6' ? address.includes(':') : address !== '');
      if (!ok) problems.push({ field: `endpoints[${index}].addresses[${a}]`, message: `Invalid value: ${JSON.stringify(address)}: must be a valid ${String(addressType)} address` });
    });
  });
  const ports = objectsIn(object['ports']);
  if (ports.length > 100) problems.push({ field: 'ports', message: 'Too many: must have at most 100 items' });
  const names = new Set<string>();
  ports.forEach((port, index) => {
    if (port['name'] === undefined) port['name'] = '';
    if (port['protocol'] === undefined) port['protocol'] = 'TCP';
    const name = String(port['name']);
    if (name !== '' && (!DNS_LABEL.test(name) || name.length > 63)) problems.push({ field: `ports[${index}].name`, message: `Invalid value: "${name}": must be a DNS label` });
    if (names.has(name)) problems.push({ field: `ports[${index}].name`, message: `Duplicate value: "${name}"` });
    names.add(name);
    if (typeof port['protocol'] !== 'string' || !PROTOCOLS.includes(port['protocol'])) problems.push(unsupported(`ports[${index}].protocol`, port['protocol'], PROTOCOLS));
    if (port['port'] !== undefined && !isPort(port['port'])) problems.push({ field: `ports[${index}].port`, message: `Invalid value: ${JSON.stringify(port['port'])}: must be between 1 and 65535, inclusive` });
  });
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Ingress (networking.k8s.io/v1) and Event (core/v1).

const PATH_TYPES = ['Exact', 'Prefix', 'ImplementationSpecific'];

function ingress(object: JsonObject, previous: JsonObject | undefined): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!previous) object['status'] = { loadBalancer: {} };
  const spec = isJsonObject(object['spec']) ? object['spec'] : {};
  const backendProblems = (backend: Json | undefined, where: string): void => {
    if (!isJsonObject(backend)) return;
    const hasService = isJsonObject(backend['service']);
    if (hasService === isJsonObject(backend['resource'])) problems.push({ field: where, message: 'Invalid value: cannot set both service and resource backends, or neither' });
    const port = hasService && isJsonObject(backend['service']) ? backend['service']['port'] : undefined;
    if (isJsonObject(port) && (port['name'] === undefined) === (port['number'] === undefined)) {
      problems.push({ field: `${where}.service.port`, message: 'Invalid value: cannot set both port name & port number, or neither' });
    }
  };
  backendProblems(spec['defaultBackend'], 'spec.defaultBackend');
  const rules = objectsIn(spec['rules']);
  if (rules.length === 0 && !isJsonObject(spec['defaultBackend'])) problems.push({ field: 'spec.rules', message: 'Required value: either `defaultBackend` or `rules` must be specified' });
  rules.forEach((rule, r) => {
    const http = isJsonObject(rule['http']) ? rule['http'] : undefined;
    objectsIn(http?.['paths']).forEach((path, p) => {
      const where = `spec.rules[${r}].http.paths[${p}]`;
      if (!PATH_TYPES.includes(String(path['pathType']))) problems.push(unsupported(`${where}.pathType`, path['pathType'], PATH_TYPES));
      if ((path['pathType'] === 'Exact' || path['pathType'] === 'Prefix') && !String(path['path'] ?? '').startsWith('/')) {
        problems.push({ field: `${where}.path`, message: `Invalid value: ${JSON.stringify(path['path'] ?? '')}: must be an absolute path` });
      }
      backendProblems(path['backend'], `${where}.backend`);
    });
  });
  return problems;
}

function event(object: JsonObject): FieldProblem[] {
  // ValidateEventCreate for core/v1 Events written by client-go's recorder: the involved object
  // lives in the event's namespace (or is cluster-scoped, with the event in "default").
  const involved = isJsonObject(object['involvedObject']) ? object['involvedObject'] : undefined;
  const namespace = isJsonObject(object['metadata']) ? object['metadata']['namespace'] : undefined;
  const involvedNamespace = involved?.['namespace'];
  if (typeof involvedNamespace === 'string' && involvedNamespace !== '' && involvedNamespace !== namespace) {
    return [{ field: 'involvedObject.namespace', message: `Invalid value: "${involvedNamespace}": does not match event.namespace` }];
  }
  return [];
}
