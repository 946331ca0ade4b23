// Whom an Envoy's NACK blames (docs/CONVERGENCE.md, "NACK attribution"). The gateway sees every
// rejected response and the Envoy's error_detail; from the resource names the message quotes (Envoy:
// "Error adding/updating cluster(s) <name>: …", gRPC: "resource <name>: …"), or else the resources
// that changed in the rejected response, and from which tracked objects own those resources, it
// finds the objects the rejection is about. Convergence then says Rejected only for those objects,
// and BlockedByOtherObject for an object whose change is merely caught in the same response.
//
// The rule is conservative: a NACK gets a blame only when every resource it is about has a known
// owner, and at most MAX_BLAMED of them; otherwise it carries none and, as before attribution, it
// counts as a rejection of every object (convergence.ts nackBlocker). Either way it blocks.
import type { ObjectRef } from './identity';
import { formatObjectRef } from './identity';

/** Most objects a blame names (more: not attributed) and resources it lists (more: the first ones). */
export const MAX_BLAMED = 8;
/** Longest resource name kept in a blame (longer names are cut, ending in `…`). */
export const MAX_BLAMED_NAME_LENGTH = 256;

export interface NackBlameResult {
  basis: 'named' | 'changed';
  objects: string[];
  resources: string[];
}

/**
 * Characters that continue a resource name, so a quoted name must not sit inside a longer one. Not
 * `:`, which follows the name in Envoy's and C-core's messages (`<name>: <error>`).
 */
const NAME_CHARACTER = /[A-Za-z0-9_.\-/]/;

/**
 * The candidate names the message quotes, each as a whole word (so `default/app-1` is not found in
 * `default/app-10/8080`). Longest first, so a name that is part of a longer quoted one is not also
 * reported when only the longer one is quoted.
 */
export function resourcesNamedIn(message: string, candidates: Iterable<string>): string[] {
  const found: string[] = [];
  const sorted = [...new Set(candidates)].filter((name) => name.length > 0).sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  const covered: Array<[number, number]> = [];
  for (const name of sorted) {
    let from = 0;
    for (;;) {
      const at = message.indexOf(name, from);
      if (at < 0) break;
      const end = at + name.length;
      const before = at === 0 ? '' : message.charAt(at - 1);
      const after = message.charAt(end);
      const whole = (before === '' || !NAME_CHARACTER.test(before)) && (after === '' || !NAME_CHARACTER.test(after));
      if (whole && !covered.some(([start, stop]) => at >= start && end <= stop)) {
        found.push(name);
        covered.push([at, end]);
        break;
      }
      from = at + 1;
    }
  }
  return found.sort();
}

export interface NackBlameInput {
  /** The Envoy's error_detail message. */
  message: string;
  /** Names in the rejected response (or the type's current content, a superset for matching). */
  responseNames: Iterable<string>;
  /** Names that changed between what the Envoy holds and the rejected response; undefined: unknown. */
  changedNames: readonly string[] | undefined;
  /** The objects owning a resource; empty or undefined: no known owner. */
  ownersOf(resourceName: string): readonly string[] | undefined;
  /** The objects whose own host names (virtual host domains) the message quotes. */
  hostOwnersIn?(message: string): readonly string[];
}

function capName(name: string): string {
  return name.length <= MAX_BLAMED_NAME_LENGTH ? name : `${name.slice(0, MAX_BLAMED_NAME_LENGTH - 1)}…`;
}

/** Every owner of `resources`, or undefined when one of them has none (the NACK cannot be placed). */
function ownersOfAll(resources: readonly string[], ownersOf: NackBlameInput['ownersOf']): Set<string> | undefined {
  const owners = new Set<string>();
  for (const resource of resources) {
    const found = ownersOf(resource);
    if (found === undefined || found.length === 0) return undefined;
    for (const owner of found) owners.add(owner);
  }
  return owners;
}

/** The blame of one NACK, or undefined when it cannot be placed on objects (see the file comment). */
export function blameNack(input: NackBlameInput): NackBlameResult | undefined {
  const changed = input.changedNames;
  const named = resourcesNamedIn(input.message, [...input.responseNames, ...(changed ?? [])]);
  let basis: NackBlameResult['basis'];
  let resources: string[];
  let owners: Set<string> | undefined;
  if (named.length > 0) {
    basis = 'named';
    resources = named;
    owners = ownersOfAll(named, input.ownersOf);
  } else if (changed !== undefined && changed.length > 0) {
    basis = 'changed';
    resources = [...changed].sort();
    owners = ownersOfAll(resources, input.ownersOf);
  } else {
    return undefined;
  }
  // A quoted resource nobody owns (a shared listener or route configuration): the message may still
  // quote the host name of the object it is about (Envoy names duplicate domains, for one).
  if (owners === undefined && basis === 'named' && input.hostOwnersIn !== undefined) {
    const hosts = input.hostOwnersIn(input.message);
    if (hosts.length > 0) owners = new Set(hosts);
  }
  if (owners === undefined || owners.size === 0 || owners.size > MAX_BLAMED) return undefined;
  return { basis, objects: [...owners].sort(), resources: resources.slice(0, MAX_BLAMED).map(capName) };
}

// --- which resources an object owns, by control-plane naming

/**
 * What an object's spec says it routes to: Services (`namespace/name`) and host names. Contour names
 * clusters `namespace/service/port/<hash>` and ClusterLoadAssignments `namespace/service/port`, as our
 * local control plane does (`namespace/service/port`): a resource whose name starts with the Service's
 * `namespace/name/` belongs to every object routing to that Service.
 */
export interface ResourceClaims {
  services: string[];
  hosts: string[];
}

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json | undefined => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined);
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asName = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 && value.length <= 253 && !value.includes('/') ? value : undefined);

/** The claims of one object of a kind we know the shape of (HTTPProxy, Ingress, HTTPRoute); none otherwise. */
export function resourceClaimsOf(kind: { group: string; kind: string }, object: unknown): ResourceClaims {
  const metadata = asObject(asObject(object)?.['metadata']);
  const spec = asObject(asObject(object)?.['spec']);
  const namespace = typeof metadata?.['namespace'] === 'string' ? metadata['namespace'] : '';
  const services = new Set<string>();
  const hosts = new Set<string>();
  const service = (name: unknown, inNamespace: unknown = namespace): void => {
    const serviceName = asName(name);
    const serviceNamespace = typeof inNamespace === 'string' && inNamespace.length > 0 ? inNamespace : namespace;
    if (serviceName !== undefined && serviceNamespace.length > 0) services.add(`${serviceNamespace}/${serviceName}`);
  };
  const host = (name: unknown): void => {
    if (typeof name === 'string' && name.length > 0 && name.length <= 253) hosts.add(name.toLowerCase());
  };
  if (spec === undefined) return { services: [], hosts: [] };
  if (kind.group === 'projectcontour.io' && kind.kind === 'HTTPProxy') {
    host(asObject(spec['virtualhost'])?.['fqdn']);
    for (const route of asArray(spec['routes'])) for (const s of asArray(asObject(route)?.['services'])) service(asObject(s)?.['name']);
    for (const s of asArray(asObject(spec['tcpproxy'])?.['services'])) service(asObject(s)?.['name']);
  } else if (kind.group === 'networking.k8s.io' && kind.kind === 'Ingress') {
    service(asObject(asObject(spec['defaultBackend'])?.['service'])?.['name']);
    for (const rule of asArray(spec['rules'])) {
      host(asObject(rule)?.['host']);
      for (const path of asArray(asObject(asObject(rule)?.['http'])?.['paths'])) service(asObject(asObject(asObject(path)?.['backend'])?.['service'])?.['name']);
    }
  } else if (kind.group === 'gateway.networking.k8s.io' && (kind.kind === 'HTTPRoute' || kind.kind === 'GRPCRoute')) {
    for (const name of asArray(spec['hostnames'])) host(name);
    for (const rule of asArray(spec['rules'])) {
      for (const backend of asArray(asObject(rule)?.['backendRefs'])) {
        const ref = asObject(backend);
        const refKind = ref?.['kind'];
        if (refKind === undefined || refKind === 'Service') service(ref?.['name'], ref?.['namespace']);
      }
    }
  }
  return { services: [...services].sort(), hosts: [...hosts].sort() };
}

/** `namespace/name` of the Service a resource named after it belongs to (its first two segments). */
export function serviceOfResourceName(name: string): string | undefined {
  const parts = name.split('/');
  if (parts.length < 2 || parts[0] === '' || parts[1] === '') return undefined;
  return `${parts[0]}/${parts[1]}`;
}

/** The key a blame names an object by. */
export function blameKey(ref: ObjectRef): string {
  return formatObjectRef(ref);
}
