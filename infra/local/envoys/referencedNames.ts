// What a simulated Envoy (or gRPC client) reads out of the resources it accepts to decide what to
// subscribe to next: a Listener's route configuration names (HttpConnectionManager
// `rds.route_config_name`), a Cluster's endpoint assignment name (`eds_cluster_config.service_name`,
// else the cluster's name, for `type: EDS` clusters) and, for gRPC clients, the clusters a route
// configuration's matching virtual host points at. docs/ENVOY-FLEET.md ("Subscription models") has the
// rules and where they come from.
//
// Why the caches: every Envoy of a group accepts the same responses, and decoding a Listener or a
// Cluster with protobufjs costs tens of microseconds; 5,000 Envoys x 1,000 clusters per fleet-wide
// push would be minutes of CPU. So each distinct resource is decoded once per process:
// - by object: the SotW hand decoder (sotw-response-decoder.ts) hands every Envoy the same array of
//   the same Any objects for equal bytes, so a WeakMap lookup finds the answer;
// - by content: anything else (Delta responses are decoded per Envoy by protobufjs; a list that is
//   not the decoder's last one for its type) is looked up by its type URL and bytes.
// The answers are frozen and shared by every Envoy that accepted the same resource.
import { referencesOf, virtualHostFor, type ResourceReferences, type VirtualHostReferences } from '../../../common/xds/references';
import { sotwResourceName } from './resourceNames';

export interface AnyLike {
  type_url?: string;
  value?: Uint8Array;
}

/** One virtual host of a route configuration: the domains it serves and the clusters its routes use. */
export interface VirtualHostRefs {
  readonly domains: readonly string[];
  readonly clusters: readonly string[];
}

export interface RouteTableRefs {
  readonly name: string;
  readonly virtualHosts: readonly VirtualHostRefs[];
}

export interface ListenerRefs {
  readonly name: string;
  /** `rds.route_config_name` of every HttpConnectionManager in the listener (filter chains and api_listener). */
  readonly routeNames: readonly string[];
  /** HttpConnectionManagers with an inline `route_config` (no RDS): gRPC reads their clusters directly. */
  readonly inlineRoutes: readonly RouteTableRefs[];
}

export interface ClusterRefs {
  readonly name: string;
  /** The ClusterLoadAssignment name an EDS cluster subscribes to; undefined for other cluster types. */
  readonly edsName: string | undefined;
}

/** `referencesOf` for the sim's shapes; throws when the bytes do not decode as their type. */
function references(any: AnyLike): ResourceReferences {
  return referencesOf({ type_url: any.type_url ?? '', value: any.value ?? new Uint8Array() });
}

/** The resource's name (field 1 of every xDS resource, inside the discovery wrapper if any). */
function nameOf(any: AnyLike): string {
  return sotwResourceName({ type_url: any.type_url ?? '', value: any.value ?? new Uint8Array() }).name;
}

const frozenHosts = (hosts: readonly VirtualHostReferences[]): readonly VirtualHostRefs[] =>
  Object.freeze(hosts.map((host) => Object.freeze({ domains: Object.freeze([...host.domains]), clusters: Object.freeze([...host.clusters]) })));

/**
 * Decodes a Listener's references (common/xds/references.ts, which the gateway uses too). Envoy
 * ignores API listeners that arrive over LDS; they are read anyway because the local control plane
 * serves every HTTP listener as one (infra/local/control-plane/translate.ts, for the gRPC clients),
 * and an Envoy-model client that skipped them would subscribe to no routes at all.
 */
export function decodeListenerRefs(any: AnyLike): ListenerRefs {
  const refs = references(any);
  const inlineRoutes: RouteTableRefs[] = refs.virtualHosts.length === 0 ? [] : [Object.freeze({ name: '', virtualHosts: frozenHosts(refs.virtualHosts) })];
  return Object.freeze({ name: nameOf(any), routeNames: Object.freeze([...refs.RDS]), inlineRoutes: Object.freeze(inlineRoutes) });
}

/** Decodes a Cluster's EDS reference (only EDS clusters subscribe to endpoints). */
export function decodeClusterRefs(any: AnyLike): ClusterRefs {
  return Object.freeze({ name: nameOf(any), edsName: references(any).EDS[0] });
}

/** Decodes a RouteConfiguration's virtual hosts and their clusters. */
export function decodeRouteTableRefs(any: AnyLike): RouteTableRefs {
  return Object.freeze({ name: nameOf(any), virtualHosts: frozenHosts(references(any).virtualHosts) });
}

/** The virtual host a gRPC client uses for `authority` (common/xds/references.ts `virtualHostFor`). */
export function matchVirtualHost(virtualHosts: readonly VirtualHostRefs[], authority: string): VirtualHostRefs | undefined {
  return virtualHostFor(virtualHosts, authority);
}

/** Past this many entries a content cache starts over: bounded memory for long runs with ever-new config. */
const CONTENT_CACHE_LIMIT = 50_000;

/** Decodes each distinct resource once (see the top of this file for why). */
export class RefsCache<T> {
  private readonly byObject = new WeakMap<object, T>();
  private readonly byContent = new Map<string, T>();
  private readonly byList = new WeakMap<readonly AnyLike[], readonly T[]>();
  private decodes = 0;

  constructor(private readonly decoder: (any: AnyLike) => T) {}

  /** The answer for one resource. Throws what the decoder throws. */
  of(any: AnyLike): T {
    const known = this.byObject.get(any);
    if (known !== undefined) return known;
    const value = any.value ?? new Uint8Array();
    const key = `${any.type_url ?? ''}\u0000${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1')}`;
    let found = this.byContent.get(key);
    if (found === undefined) {
      found = this.decoder(any);
      this.decodes += 1;
      if (this.byContent.size >= CONTENT_CACHE_LIMIT) this.byContent.clear();
      this.byContent.set(key, found);
    }
    this.byObject.set(any, found);
    return found;
  }

  /** The answers for a whole SotW list, the same array for every Envoy handed the same list. */
  ofList(resources: readonly AnyLike[]): readonly T[] {
    const known = this.byList.get(resources);
    if (known !== undefined) return known;
    const answers = Object.freeze(resources.map((any) => this.of(any)));
    this.byList.set(resources, answers);
    return answers;
  }

  /** How many resources were actually decoded (the rest were found in the caches). */
  get decoded(): number {
    return this.decodes;
  }
}

/** Process-wide caches, shared by every simulated client (their answers are exact, so sharing is safe). */
export const listenerRefs = new RefsCache(decodeListenerRefs);
export const clusterRefs = new RefsCache(decodeClusterRefs);
export const routeTableRefs = new RefsCache(decodeRouteTableRefs);

const EMPTY_NAMES: readonly string[] = Object.freeze([]);
const internedNames = new Map<string, readonly string[]>();

/**
 * A sorted, de-duplicated, frozen array of `names`, the same array for equal sets: Envoys that
 * subscribe to the same names share one array, and code keyed by array identity (the requested-name
 * filter in typeState.ts) finds its cached answer.
 */
export function internNames(names: Iterable<string>): readonly string[] {
  const sorted = [...new Set(names)].sort();
  if (sorted.length === 0) return EMPTY_NAMES;
  const key = sorted.join('\u0000');
  const existing = internedNames.get(key);
  if (existing !== undefined) return existing;
  if (internedNames.size >= CONTENT_CACHE_LIMIT) internedNames.clear();
  const frozen = Object.freeze(sorted);
  internedNames.set(key, frozen);
  return frozen;
}

/** Whether two interned (or any sorted) name arrays hold the same names. */
export function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

const nameSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** A Set of `names`, built once per array (name arrays are interned and shared by many Envoys). */
export function nameSetOf(names: readonly string[]): ReadonlySet<string> {
  let set = nameSets.get(names);
  if (set === undefined) {
    set = new Set(names);
    nameSets.set(names, set);
  }
  return set;
}
