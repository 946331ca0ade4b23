// RouteSource backed by a Kubernetes API server through @kubernetes/client-node informers (list, then
// watch with resourceVersion; the informer re-lists on 410 Gone). HTTPProxies are always read from
// Kubernetes. Endpoints and TLS Secrets come either from Kubernetes (core/v1 informers: a real cluster)
// or from another RouteSource (the local API server serves only CRDs, Leases and Namespaces; tests
// and `npm start` then pass an InMemoryRouteSource holding the endpoints).
// Gateway API HTTPRoutes are read alongside when their CRD is served at start (gateway-api.ts); a
// cluster without it simply has no routes (logged once), as Contour runs without Gateway API CRDs.
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  type ObjectCache,
  type V1Endpoints,
  type V1Secret,
  makeInformer,
} from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { HTTPROUTE_CRD_NAME, HTTPROUTE_GROUP, HTTPROUTE_PLURAL, HTTPROUTE_VERSION, type HTTPRouteObject, httpRouteObjectSchema } from './gateway-api';
import {
  type EndpointsObject,
  HTTPPROXY_GROUP,
  HTTPPROXY_PLURAL,
  type HTTPProxyObject,
  type RouteInputs,
  type TlsSecretObject,
  endpointsObjectSchema,
  httpProxyObjectSchema,
  objectKeyString,
  tlsSecretObjectSchema,
} from './model';
import type { RouteSource } from './route-source';

export interface KubeRouteSourceOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** Where Endpoints and TLS Secrets come from. */
  endpointsAndSecrets: 'kubernetes' | RouteSource;
  /** Watch gateway.networking.k8s.io/v1 HTTPRoutes if their CRD is served (default true). */
  httpRoutes?: boolean;
}

type ListResult<T> = { items: T[]; metadata?: { resourceVersion?: string } };
type InformerEvent = 'add' | 'update' | 'delete';

type ObjectInput<T> = { ok: true; value: T } | { ok: false; issues: unknown };

/**
 * What translation reads of an HTTPProxy or HTTPRoute: its metadata without resourceVersion, and its
 * spec. Status and resourceVersion change on every status write; neither is input to translation,
 * and keeping them would make each status write look like a route change.
 */
function objectInput<S extends typeof httpProxyObjectSchema | typeof httpRouteObjectSchema>(schema: S, object: KubernetesObject): ObjectInput<z.infer<S>> {
  const parsed = schema.safeParse(object);
  if (!parsed.success) return { ok: false, issues: parsed.error.issues };
  const { resourceVersion: _resourceVersion, ...metadata } = parsed.data.metadata;
  return { ok: true, value: { metadata, spec: parsed.data.spec } as z.infer<S> };
}

const proxyInput = (object: KubernetesObject): ObjectInput<HTTPProxyObject> => objectInput(httpProxyObjectSchema, object);
const routeInput = (object: KubernetesObject): ObjectInput<HTTPRouteObject> => objectInput(httpRouteObjectSchema, object);
type CachingInformer<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export class KubeRouteSource implements RouteSource {
  private readonly informers: Array<Informer<KubernetesObject>> = [];
  private readonly listeners = new Set<() => void>();
  private readonly endpointGenerations = new Map<string, { subsets: unknown; generation: number }>();
  /** Per HTTPProxy (namespace/name): its translation input as JSON, to tell input changes from status writes. */
  private readonly proxyInputs = new Map<string, string>();
  /** The same per HTTPRoute. */
  private readonly routeInputs = new Map<string, string>();
  private unwatchAuxiliary: (() => void) | undefined;
  private proxyInformer: CachingInformer<KubernetesObject> | undefined;
  private routeInformer: CachingInformer<KubernetesObject> | undefined;
  private endpointsInformer: CachingInformer<V1Endpoints> | undefined;
  private secretsInformer: CachingInformer<V1Secret> | undefined;
  private closed = false;

  constructor(private readonly options: KubeRouteSourceOptions) {}

  async start(): Promise<void> {
    const { kubeConfig, logger } = this.options;
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const proxies = makeInformer<KubernetesObject>(
      kubeConfig,
      `/apis/${HTTPPROXY_GROUP}/v1/${HTTPPROXY_PLURAL}`,
      () => custom.listClusterCustomObject({ group: HTTPPROXY_GROUP, version: 'v1', plural: HTTPPROXY_PLURAL }) as Promise<ListResult<KubernetesObject>>,
    );
    this.proxyInformer = proxies;
    this.track(proxies, 'httpproxies', (event, object) => this.inputChanged(this.proxyInputs, proxyInput, event, object));

    if (this.options.httpRoutes ?? true) {
      const listRoutes = (): Promise<ListResult<KubernetesObject>> =>
        custom.listClusterCustomObject({ group: HTTPROUTE_GROUP, version: HTTPROUTE_VERSION, plural: HTTPROUTE_PLURAL }) as Promise<ListResult<KubernetesObject>>;
      if (await this.served(listRoutes)) {
        const routes = makeInformer<KubernetesObject>(kubeConfig, `/apis/${HTTPROUTE_GROUP}/${HTTPROUTE_VERSION}/${HTTPROUTE_PLURAL}`, listRoutes);
        this.routeInformer = routes;
        this.track(routes, 'httproutes', (event, object) => this.inputChanged(this.routeInputs, routeInput, event, object));
      } else {
        // Once: without the CRD there is nothing to watch; installing it later needs a restart.
        logger.info({ crd: HTTPROUTE_CRD_NAME }, 'HTTPRoute CRD not served; HTTPRoutes are not watched');
      }
    }

    if (this.options.endpointsAndSecrets === 'kubernetes') {
      const core = kubeConfig.makeApiClient(CoreV1Api);
      this.endpointsInformer = makeInformer<V1Endpoints>(kubeConfig, '/api/v1/endpoints', () => core.listEndpointsForAllNamespaces());
      // client-node 1.4 informers take no field selector, so every Secret is cached; only
      // kubernetes.io/tls ones are used (filtered in toSecret).
      this.secretsInformer = makeInformer<V1Secret>(kubeConfig, '/api/v1/secrets', () => core.listSecretForAllNamespaces());
      this.track(this.endpointsInformer as unknown as Informer<KubernetesObject>, 'endpoints');
      this.track(this.secretsInformer as unknown as Informer<KubernetesObject>, 'secrets');
    } else {
      await this.options.endpointsAndSecrets.start();
      this.unwatchAuxiliary = this.options.endpointsAndSecrets.watch(() => this.notify());
    }
    for (const informer of this.informers) await informer.start();
    logger.info({ informers: this.informers.length }, 'Kubernetes route source synced');
  }

  list(): RouteInputs {
    const proxies: HTTPProxyObject[] = [];
    for (const object of this.proxyInformer?.list() ?? []) {
      const input = proxyInput(object);
      if (input.ok) proxies.push(structuredClone(input.value));
      else this.options.logger.warn({ object: object.metadata?.name, issues: input.issues }, 'HTTPProxy with invalid metadata skipped');
    }
    const httpRoutes: HTTPRouteObject[] = [];
    for (const object of this.routeInformer?.list() ?? []) {
      const input = routeInput(object);
      if (input.ok) httpRoutes.push(structuredClone(input.value));
      else this.options.logger.warn({ object: object.metadata?.name, issues: input.issues }, 'HTTPRoute with invalid metadata skipped');
    }
    const auxiliary = this.options.endpointsAndSecrets;
    if (auxiliary !== 'kubernetes') {
      const { endpoints, secrets } = auxiliary.list();
      return { proxies, endpoints, secrets, httpRoutes };
    }
    return {
      proxies,
      httpRoutes,
      endpoints: (this.endpointsInformer?.list() ?? []).flatMap((e) => this.toEndpoints(e)),
      secrets: (this.secretsInformer?.list() ?? []).flatMap((s) => this.toSecret(s)),
    };
  }

  watch(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.unwatchAuxiliary?.();
    for (const informer of this.informers) await informer.stop();
    if (this.options.endpointsAndSecrets !== 'kubernetes') await this.options.endpointsAndSecrets.close();
  }

  /**
   * `relevant` (default: every event counts) lets an informer drop events that change nothing
   * `list()` returns, so they cause no rebuild.
   */
  private track(informer: Informer<KubernetesObject>, what: string, relevant?: (event: InformerEvent, object: KubernetesObject) => boolean): void {
    this.informers.push(informer);
    for (const event of ['add', 'update', 'delete'] as const) {
      informer.on(event, (object: KubernetesObject) => {
        if (relevant === undefined || relevant(event, object)) this.notify();
      });
    }
    informer.on('error', (error: unknown) => {
      // client-node stops the informer on error; restart it after a pause (it re-lists).
      this.options.logger.warn({ err: error, informer: what }, 'informer error; restarting');
      setTimeout(() => {
        if (!this.closed) void informer.start().catch(() => undefined);
      }, 1000).unref();
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Whether the kind's list call works: false on 404 (CRD not installed, or not served). */
  private async served(list: () => Promise<unknown>): Promise<boolean> {
    try {
      await list();
      return true;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return false;
      throw error;
    }
  }

  /**
   * Whether an HTTPProxy (or HTTPRoute) event changes the translation input `list()` builds from it. Why: every status
   * write (this control plane's own Valid condition and the status function's EnvoyProgrammed
   * condition, two or three per object per generation) comes back as an informer update. Each one
   * used to schedule a full rebuild (list, translate, pack and hash every object: ~45 ms at 1,000
   * objects here, up to 4 per second under the holdoff) that found nothing changed. Contour likewise
   * ignores HTTPProxy updates that change neither generation nor annotations. An object whose input
   * cannot be read (invalid metadata) always counts, as before.
   */
  private inputChanged(
    inputs: Map<string, string>,
    read: (object: KubernetesObject) => ObjectInput<unknown>,
    event: InformerEvent,
    object: KubernetesObject,
  ): boolean {
    const key = `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
    if (event === 'delete') {
      inputs.delete(key);
      return true;
    }
    const input = read(object);
    if (!input.ok) {
      inputs.delete(key);
      return true;
    }
    const fingerprint = JSON.stringify(input.value);
    if (inputs.get(key) === fingerprint) return false;
    inputs.set(key, fingerprint);
    return true;
  }

  /** Endpoints have no metadata.generation: count content changes per object instead. */
  private toEndpoints(endpoints: V1Endpoints): EndpointsObject[] {
    const parsed = endpointsObjectSchema.safeParse(endpoints);
    if (!parsed.success) {
      this.options.logger.warn({ object: endpoints.metadata?.name, issues: parsed.error.issues }, 'Endpoints skipped');
      return [];
    }
    const key = objectKeyString(parsed.data.metadata);
    const previous = this.endpointGenerations.get(key);
    const generation = previous === undefined ? 1 : isDeepStrictEqual(previous.subsets, parsed.data.subsets) ? previous.generation : previous.generation + 1;
    this.endpointGenerations.set(key, { subsets: parsed.data.subsets, generation });
    return [{ ...parsed.data, metadata: { ...parsed.data.metadata, generation } }];
  }

  private toSecret(secret: V1Secret): TlsSecretObject[] {
    if (secret.type !== 'kubernetes.io/tls') return [];
    const decode = (value: string | undefined): string => (value ? Buffer.from(value, 'base64').toString('utf8') : '');
    const parsed = tlsSecretObjectSchema.safeParse({
      metadata: secret.metadata,
      certificateChain: decode(secret.data?.['tls.crt']),
      privateKey: decode(secret.data?.['tls.key']),
    });
    if (!parsed.success) {
      this.options.logger.warn({ object: secret.metadata?.name, issues: parsed.error.issues }, 'TLS Secret skipped');
      return [];
    }
    return [parsed.data];
  }
}
