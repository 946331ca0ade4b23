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
type InformerEvent = 'add' | 'update' | 'delete';

/**
 * What translation reads of an HTTPProxy: its metadata without resourceVersion, and its spec. Status and
 * resourceVersion change on every status write; neither is input to translation, and keeping them
 * would make each status write look like a route change.
 */
function proxyInput(object: KubernetesObject): { ok: true; value: HTTPProxyObject } | { ok: false; issues: unknown } {
  const parsed = httpProxyObjectSchema.safeParse(object);
  if (!parsed.success) return { ok: false, issues: parsed.error.issues };
  const { resourceVersion: _resourceVersion, ...metadata } = parsed.data.metadata;
  return { ok: true, value: { metadata, spec: parsed.data.spec } };
}
type CachingInformer<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export class KubeRouteSource implements RouteSource {
  private readonly informers: Array<Informer<KubernetesObject>> = [];
  private readonly listeners = new Set<() => void>();
  private readonly endpointGenerations = new Map<string, { subsets: unknown; generation: number }>();
  /** Per HTTPProxy (namespace/name): its translation input as JSON, to tell input changes from status writes. */
  private readonly proxyInputs = new Map<string, string>();
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
    this.track(proxies, 'httpproxies', (event, object) => this.proxyInputChanged(event, object));

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

  /**
   * Whether an HTTPProxy event changes the translation input `list()` builds from it. Why: every status
   * write (this control plane's own Valid condition and the status function's EnvoyProgrammed
   * condition, two or three per object per generation) comes back as an informer update. Each one
   * used to schedule a full rebuild (list, translate, pack and hash every object: ~45 ms at 1,000
   * objects here, up to 4 per second under the holdoff) that found nothing changed. Contour likewise
   * ignores HTTPProxy updates that change neither generation nor annotations. An object whose input
   * cannot be read (invalid metadata) always counts, as before.
   */
  private proxyInputChanged(event: InformerEvent, object: KubernetesObject): boolean {
    const key = `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
    if (event === 'delete') {
      this.proxyInputs.delete(key);
      return true;
    }
    const input = proxyInput(object);
    if (!input.ok) {
      this.proxyInputs.delete(key);
      return true;
    }
    const fingerprint = JSON.stringify(input.value);
    if (this.proxyInputs.get(key) === fingerprint) return false;
    this.proxyInputs.set(key, fingerprint);
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
