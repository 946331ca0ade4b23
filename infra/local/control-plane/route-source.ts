// The input port: a RouteSource lists the current HTTPProxies, HTTPRoutes, Endpoints and TLS Secrets and tells the
// control plane when anything changed. Implementations: InMemoryRouteSource (tests, npm start) and
// KubeRouteSource (informers on a Kubernetes API server).
import { isDeepStrictEqual } from 'node:util';
import { type HTTPRouteObject, httpRouteObjectSchema } from './gateway-api';
import {
  type EndpointsObject,
  type HTTPProxyObject,
  type ObjectKey,
  type RouteInputs,
  type TlsSecretObject,
  endpointsObjectSchema,
  httpProxyObjectSchema,
  objectKeyString,
  tlsSecretObjectSchema,
} from './model';

export interface RouteSource {
  /** Resolves once the initial list is loaded (informers synced). */
  start(): Promise<void>;
  /** The current inputs (a consistent copy; the caller may keep it). */
  list(): RouteInputs;
  /** Calls `onChange` after any change; returns the unsubscribe function. */
  watch(onChange: () => void): () => void;
  close(): Promise<void>;
}

/**
 * In-memory source for tests. `applyProxy` behaves like the Kubernetes API for generation: it starts at
 * 1 and increments only when `spec` changes (metadata/annotation edits do not bump it, exactly as for
 * CRDs with the status subresource), so tests exercise the same generation rules as a cluster.
 */
export class InMemoryRouteSource implements RouteSource {
  private readonly proxies = new Map<string, HTTPProxyObject>();
  private readonly endpoints = new Map<string, EndpointsObject>();
  private readonly secrets = new Map<string, TlsSecretObject>();
  private readonly httpRoutes = new Map<string, HTTPRouteObject>();
  private readonly listeners = new Set<() => void>();

  async start(): Promise<void> {}

  list(): RouteInputs {
    return structuredClone({
      proxies: [...this.proxies.values()],
      endpoints: [...this.endpoints.values()],
      secrets: [...this.secrets.values()],
      httpRoutes: [...this.httpRoutes.values()],
    });
  }

  watch(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }

  /** Creates or updates an HTTPProxy (validated metadata; spec as given). Returns its generation. */
  applyProxy(object: unknown): number {
    const proxy = httpProxyObjectSchema.parse(object);
    const key = objectKeyString(proxy.metadata);
    const previous = this.proxies.get(key);
    const generation = generationAfter(previous, proxy.spec);
    this.proxies.set(key, { ...proxy, metadata: { ...proxy.metadata, generation } });
    this.notify();
    return generation;
  }

  deleteProxy(key: ObjectKey): void {
    if (this.proxies.delete(objectKeyString(key))) this.notify();
  }

  /** Creates or updates an HTTPRoute; generation as for `applyProxy`. Returns its generation. */
  applyHTTPRoute(object: unknown): number {
    const route = httpRouteObjectSchema.parse(object);
    const key = objectKeyString(route.metadata);
    const previous = this.httpRoutes.get(key);
    const generation = generationAfter(previous, route.spec);
    this.httpRoutes.set(key, { ...route, metadata: { ...route.metadata, generation } });
    this.notify();
    return generation;
  }

  deleteHTTPRoute(key: ObjectKey): void {
    if (this.httpRoutes.delete(objectKeyString(key))) this.notify();
  }

  /** Creates or updates Endpoints; generation counts content changes (Kubernetes Endpoints have none). */
  applyEndpoints(object: unknown): number {
    const endpoints = endpointsObjectSchema.parse(object);
    const key = objectKeyString(endpoints.metadata);
    const previous = this.endpoints.get(key);
    const previousGeneration = previous?.metadata.generation ?? 0;
    const generation =
      previous === undefined
        ? 1
        : isDeepStrictEqual(previous.subsets, endpoints.subsets)
          ? previousGeneration
          : previousGeneration + 1;
    this.endpoints.set(key, { ...endpoints, metadata: { ...endpoints.metadata, generation } });
    this.notify();
    return generation;
  }

  deleteEndpoints(key: ObjectKey): void {
    if (this.endpoints.delete(objectKeyString(key))) this.notify();
  }

  applySecret(object: unknown): void {
    const secret = tlsSecretObjectSchema.parse(object);
    this.secrets.set(objectKeyString(secret.metadata), secret);
    this.notify();
  }

  deleteSecret(key: ObjectKey): void {
    if (this.secrets.delete(objectKeyString(key))) this.notify();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** metadata.generation after an apply, as the API server counts it: +1 only when the spec changed. */
function generationAfter(previous: { metadata: { generation?: number | undefined }; spec: unknown } | undefined, spec: unknown): number {
  if (previous === undefined) return 1;
  const generation = previous.metadata.generation ?? 0;
  return isDeepStrictEqual(previous.spec, spec) ? generation : generation + 1;
}
