// RouteSource backed by a Kubernetes API server through @kubernetes/client-node informers (list, then
// watch with resourceVersion; the informer re-lists on 410 Gone). HTTPProxies are always read from
// Kubernetes. Endpoints and TLS Secrets come either from Kubernetes (core/v1 informers: a real cluster)
// or from another RouteSource (the local API server serves only CRDs, Leases and Namespaces; tests
// and `npm start` then pass an InMemoryRouteSource holding the endpoints).
import {
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
}

type ListResult<T> = { items: T[]; metadata?: { resourceVersion?: string } };
type CachingInformer<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export class KubeRouteSource implements RouteSource {
  private readonly informers: Array<Informer<KubernetesObject>> = [];
  private readonly listeners = new Set<() => void>();
  private readonly endpointGenerations = new Map<string, { subsets: unknown; generation: number }>();
  private unwatchAuxiliary: (() => void) | undefined;
  private proxyInformer: CachingInformer<KubernetesObject> | undefined;
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
    this.track(proxies, 'httpproxies');

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
      const parsed = httpProxyObjectSchema.safeParse(object);
      if (parsed.success) {
        // Status and resourceVersion change on every status write; neither is input to translation, and
        // keeping them would make each of our own status writes look like a route change (Contour
        // likewise ignores updates that do not change generation or annotations).
        const { resourceVersion: _resourceVersion, ...metadata } = parsed.data.metadata;
        proxies.push(structuredClone({ metadata, spec: parsed.data.spec }));
      }
      else this.options.logger.warn({ object: object.metadata?.name, issues: parsed.error.issues }, 'HTTPProxy with invalid metadata skipped');
    }
    const auxiliary = this.options.endpointsAndSecrets;
    if (auxiliary !== 'kubernetes') {
      const { endpoints, secrets } = auxiliary.list();
      return { proxies, endpoints, secrets };
    }
    return {
      proxies,
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

  private track(informer: Informer<KubernetesObject>, what: string): void {
    this.informers.push(informer);
    for (const event of ['add', 'update', 'delete'] as const) informer.on(event, () => this.notify());
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
