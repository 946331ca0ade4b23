// What a simulated Envoy behind the gateway holds, by content: every ACKed response it accepted
// (SimEnvoyOptions.onAccepted), kept per type and name as the Envoy applies it, and from that the
// view test/truth/client-content.ts judges a True condition by: can the Envoy route the object's
// fqdn (listener → route configuration → virtual host → clusters → endpoints, all held), and which
// generation does its route encode. Contour stamps no generations, so the tests encode one in the
// spec: the route's prefix `/gen-<G>` (the samples start at `/`, generation 1).
import { unpackAny, type AnyResource } from '../../../common/xds';
import { referencesOf, virtualHostFor } from '../../../common/xds/references';
import { CDS_TYPE_URL, EDS_TYPE_URL, LDS_TYPE_URL, RDS_TYPE_URL } from '../../../common/xds';
import type { AcceptedContent } from '../../../infra/local/envoys';
import type { AnyLike } from '../../../infra/local/envoys/referencedNames';
import type { ClientUnderCheck, RoutableView } from '../../truth/client-content';

const DISCOVERY_RESOURCE_WRAPPER = 'type.googleapis.com/envoy.service.discovery.v3.Resource';
/** Listener and Cluster are state of the world: a SotW response replaces them; others are by name. */
const STATE_OF_THE_WORLD = new Set([LDS_TYPE_URL, CDS_TYPE_URL]);
/** The HTTP listener Contour serves every virtual host on (RDS name too). */
export const CONTOUR_HTTP_LISTENER = 'ingress_http';

type Json = Record<string, unknown>;
const record = (value: unknown): Json | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

function asAny(any: AnyLike): AnyResource | undefined {
  if (any.type_url === undefined || any.value === undefined) return undefined;
  const resource = { type_url: any.type_url, value: any.value };
  if (resource.type_url !== DISCOVERY_RESOURCE_WRAPPER) return resource;
  const inner = record(unpackAny(resource)['resource']);
  return inner && typeof inner['type_url'] === 'string' && inner['value'] instanceof Uint8Array ? { type_url: inner['type_url'], value: inner['value'] } : undefined;
}

function nameOf(typeUrl: string, decoded: Json): string {
  return String((typeUrl === EDS_TYPE_URL ? decoded['cluster_name'] : decoded['name']) ?? '');
}

/** The generation a route prefix encodes: `/gen-<G>`, or `/` for the samples' generation 1. */
export function generationOfPrefix(prefix: string | undefined): number | undefined {
  if (prefix === '/') return 1;
  const match = /^\/gen-(\d+)$/.exec(prefix ?? '');
  return match ? Number(match[1]) : undefined;
}

interface Entry {
  any: AnyResource;
  decoded: Json;
}

/** One Envoy's held resources per type, updated at each ACK, and the views it has had per object. */
export class HeldConfig {
  private readonly types = new Map<string, Map<string, Entry>>();
  private readonly history = new Map<string, { at: number; view: RoutableView }[]>();

  constructor(
    readonly nodeId: string,
    /** Object name (`sample-0`) → the fqdn its virtual host serves. */
    private readonly objects: ReadonlyMap<string, string>,
    /** The listener serving those hosts (Contour's Gateway API listeners are named `<protocol>-<port>`). */
    private readonly listenerName: string = CONTOUR_HTTP_LISTENER,
  ) {}

  /** SimEnvoyOptions.onAccepted. */
  readonly accept = (accepted: AcceptedContent): void => {
    const held = this.types.get(accepted.typeUrl) ?? new Map<string, Entry>();
    this.types.set(accepted.typeUrl, held);
    const upsert = (any: AnyLike | undefined): void => {
      const resource = any === undefined ? undefined : asAny(any);
      if (resource === undefined) return;
      const decoded = unpackAny(resource);
      held.set(nameOf(accepted.typeUrl, decoded), { any: resource, decoded });
    };
    if (accepted.sotw !== undefined) {
      if (STATE_OF_THE_WORLD.has(accepted.typeUrl)) held.clear();
      for (const any of accepted.sotw) upsert(any);
    }
    if (accepted.delta !== undefined) {
      for (const upserted of accepted.delta.upserts) upsert(upserted.resource);
      for (const name of accepted.delta.removed) held.delete(name);
    }
    for (const [object, fqdn] of this.objects) {
      const view = this.view(fqdn);
      const views = this.history.get(object) ?? [];
      this.history.set(object, views);
      const last = views[views.length - 1]?.view;
      if (last === undefined || JSON.stringify(last) !== JSON.stringify(view)) views.push({ at: accepted.at, view });
    }
  };

  /** The view in force at `from` and every later one up to `to`, oldest first. */
  viewsBetween(object: string, from: number, to: number): RoutableView[] {
    const views = this.history.get(object) ?? [];
    let first: RoutableView | undefined;
    const later: RoutableView[] = [];
    for (const entry of views) {
      if (entry.at <= from) first = entry.view;
      else if (entry.at <= to) later.push(entry.view);
    }
    return [...(first === undefined ? [] : [first]), ...later];
  }

  /** When this Envoy first held `object` at `generation` (or later) completely, after `since`. */
  firstCompleteAt(object: string, generation: number, since: number): number | undefined {
    return (this.history.get(object) ?? []).find((entry) => entry.at >= since && entry.view.complete && (entry.view.generation ?? 0) >= generation)?.at;
  }

  /** The view now. */
  current(object: string): RoutableView | undefined {
    const views = this.history.get(object) ?? [];
    return views[views.length - 1]?.view;
  }

  /** What this Envoy can route for `fqdn` with what it holds now. */
  view(fqdn: string): RoutableView {
    const missing = (what: string, clusters: string[] = [], generation?: number): RoutableView => ({ complete: false, clusters, generation, missing: what });
    const listener = this.types.get(LDS_TYPE_URL)?.get(this.listenerName);
    if (listener === undefined) return missing(`listener ${this.listenerName}`);
    const routeName = referencesOf(listener.any).RDS[0];
    const routes = routeName === undefined ? undefined : this.types.get(RDS_TYPE_URL)?.get(routeName);
    if (routes === undefined) return missing(`route configuration ${routeName ?? '(none named)'}`);
    const hosts = list(routes.decoded['virtual_hosts']).map((host) => record(host) ?? {});
    const host = virtualHostFor(hosts.map((h) => ({ domains: list(h['domains']).map(String), host: h })), fqdn)?.host;
    if (host === undefined) return missing(`virtual host ${fqdn}`);
    const route = record(list(host['routes'])[0]);
    const match = record(route?.['match']);
    const prefix = [match?.['prefix'], match?.['path_separated_prefix'], match?.['path']].find((value): value is string => typeof value === 'string' && value !== '');
    const generation = generationOfPrefix(prefix);
    const action = record(route?.['route']);
    const clusters = [
      ...(typeof action?.['cluster'] === 'string' ? [action['cluster']] : []),
      ...list(record(action?.['weighted_clusters'])?.['clusters']).map((c) => String(record(c)?.['name'] ?? '')),
    ];
    if (clusters.length === 0) return missing(`a route to a cluster for ${fqdn}`, [], generation);
    for (const cluster of clusters) {
      const held = this.types.get(CDS_TYPE_URL)?.get(cluster);
      if (held === undefined) return missing(`cluster ${cluster}`, clusters, generation);
      const edsName = referencesOf(held.any).EDS[0] ?? cluster;
      const assignment = this.types.get(EDS_TYPE_URL)?.get(edsName);
      const endpoints = list(assignment?.decoded['endpoints']).flatMap((locality) => list(record(locality)?.['lb_endpoints']));
      if (endpoints.length === 0) return missing(`endpoints ${edsName}`, clusters, generation);
    }
    return { complete: true, clusters, generation };
  }

  /** As the content check sees this Envoy for one object. */
  underCheck(object: string, sourcePrefix: string): ClientUnderCheck {
    return {
      nodeId: this.nodeId,
      client: 'sim-envoy',
      object: `${sourcePrefix}${object}`,
      // Every Envoy here connects before judging starts and is never gone longer than a reconnect.
      liveAt: () => true,
      viewsBetween: (from, to) => this.viewsBetween(object, from, to),
    };
  }
}
