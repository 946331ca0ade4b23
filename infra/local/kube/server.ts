// A local Kubernetes API server over plain HTTP, for tests and `npm start`.
// It serves enough of the API for the real kubectl, client-go, python-kubernetes and
// @kubernetes/client-node: discovery, Namespaces, Leases, CustomResourceDefinitions and the custom
// resources they define; with `ingressControllerKinds`, also what an unmodified Contour reads and
// writes (Services, Secrets, ConfigMaps, Events, EndpointSlices, Ingresses: docs/CONTOUR.md).
// What is deliberately not implemented answers a clear Status error: see docs/LOCAL-KUBERNETES.md.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { apiGroup, apiGroupList, apiResourceList, coreApiVersions, versionDocument } from './discovery';
import { ApiError, errors } from './errors';
import { handleResource, type HandlerContext } from './handlers';
import { sendError, sendJson } from './http';
import { writeKubeconfig } from './kubeconfig';
import { ApiObjects } from './objects';
import { openApiV3GroupVersion, openApiV3Root } from './openapi';
import { loadState, StateWriter } from './persistence';
import { ResourceRegistry } from './registry';
import { CUSTOM_RESOURCE_DEFINITIONS, INGRESS_CONTROLLER_TYPES, NAMESPACES, PROJECT_TYPES, resourceKey } from './resources';
import { QueryValues } from './query';
import { parseRoute } from './routes';
import { ObjectStore } from './store';
import type { ActiveWatch } from './watch';

export interface KubeApiServerOptions {
  port?: number;
  host?: string;
  /** JSON file holding every object; loaded at start, rewritten after changes. */
  stateFile?: string;
  logger?: Logger;
  /** Largest accepted request body; the apiserver's limit is 3 MiB. */
  maxBodyBytes?: number;
  /** Watch events kept for resuming watches; older resourceVersions get 410 Gone. */
  watchHistoryLimit?: number;
  bookmarkIntervalMs?: number;
  /** Upper bound (and default) of a watch's lifetime. */
  maxWatchTimeoutSeconds?: number;
  /** Unsent bytes a slow watcher may accumulate before its watch is ended (default 16 MiB). */
  maxWatchBufferBytes?: number;
  /** Delay that coalesces state-file writes. */
  persistDelayMs?: number;
  /**
   * Also serve the built-in kinds an ingress controller needs (Services, Secrets, ConfigMaps,
   * Events, EndpointSlices, Ingresses), as an unmodified Contour does (docs/CONTOUR.md). Off by
   * default: the project's own components use only Namespaces, Leases and CRDs, and discovery
   * then lists exactly those.
   */
  ingressControllerKinds?: boolean;
  now?: () => Date;
}

export interface KubeApiServer {
  url: string;
  port: number;
  /** Writes `<dir>/kubeconfig` pointing at this server and returns its path. */
  kubeconfigPath(dir: string): string;
  /**
   * Fault injection: from now on, watch events of `resource` (`<plural>` or `<plural>.<group>`,
   * e.g. `leases.coordination.k8s.io`) reach watchers `ms` late, in order; 0 ends the lag. Reads
   * and writes are unaffected, as when one of kube-apiserver's watch caches falls behind.
   */
  setWatchLag(resource: string, ms: number): void;
  /** Ends all watches and connections, writes the state file, stops listening. */
  close(): Promise<void>;
}

const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const logger = options.logger ?? pino({ name: 'local-kube', level: process.env['LOG_LEVEL'] ?? 'info' });
  const host = options.host ?? '127.0.0.1';
  const now = options.now ?? (() => new Date());
  const registry = new ResourceRegistry(options.ingressControllerKinds ? [...PROJECT_TYPES, ...INGRESS_CONTROLLER_TYPES] : PROJECT_TYPES);
  const snapshot = options.stateFile ? loadState(options.stateFile) : undefined;
  const store = new ObjectStore(options.watchHistoryLimit ?? 10_000, snapshot?.resourceVersion ?? 1, (error, event) =>
    logger.error({ err: error, resource: event.resourceKey, resourceVersion: event.resourceVersion }, 'a watch listener failed'),
  );
  const objects = new ApiObjects(registry, store, now);

  if (snapshot) {
    // CRDs first, so their types exist before their objects are restored.
    const crdKey = resourceKey(CUSTOM_RESOURCE_DEFINITIONS.group, CUSTOM_RESOURCE_DEFINITIONS.plural);
    for (const crd of snapshot.objects[crdKey] ?? []) {
      store.restore(crdKey, crd);
      objects.registerRestoredCrd(crd);
    }
    for (const [key, items] of Object.entries(snapshot.objects)) {
      if (key === crdKey) continue;
      if (!registry.byResourceKey(key)) {
        logger.warn({ resource: key, count: items.length }, 'state file holds objects of an unknown resource; skipped');
        continue;
      }
      for (const item of items) store.restore(key, item);
    }
    logger.info({ stateFile: options.stateFile, resourceVersion: snapshot.resourceVersion }, 'state restored');
  }
  for (const name of INITIAL_NAMESPACES) {
    if (!store.get(resourceKey(NAMESPACES.group, NAMESPACES.plural), name)) {
      objects.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { fieldValidation: 'Strict', warnings: [] });
    }
  }

  const stateWriter = options.stateFile
    ? new StateWriter(options.stateFile, () => store.snapshot(), options.persistDelayMs ?? 50, (error) =>
        logger.error({ err: error, stateFile: options.stateFile }, 'writing the state file failed'),
      )
    : undefined;
  const unsubscribePersistence = stateWriter ? store.subscribe(() => stateWriter.changed()) : () => undefined;
  stateWriter?.flush();

  const watches = new Set<ActiveWatch>();
  const ctx: HandlerContext = {
    store,
    objects,
    logger,
    maxBodyBytes: options.maxBodyBytes ?? 3 * 1024 * 1024,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
    maxWatchTimeoutSeconds: options.maxWatchTimeoutSeconds ?? 1800,
    maxWatchBufferBytes: options.maxWatchBufferBytes ?? 16 * 1024 * 1024,
    watches,
    watchLagMs: new Map(),
  };
  let serverAddress = '';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = splitRequestTarget(req.url ?? '/');
    const route = parseRoute(url.pathname, registry);
    const method = req.method ?? 'GET';
    const readOnly = (): void => {
      if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed(`${method} is not allowed on ${url.pathname}`);
    };
    switch (route.kind) {
      case 'version':
        readOnly();
        return sendJson(res, 200, versionDocument());
      case 'health':
        readOnly();
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      case 'coreVersions':
        readOnly();
        return sendJson(res, 200, coreApiVersions(serverAddress));
      case 'groupList':
        readOnly();
        return sendJson(res, 200, apiGroupList(registry));
      case 'group': {
        readOnly();
        const document = apiGroup(registry, route.group);
        if (!document) throw errors.pathNotFound(url.pathname);
        return sendJson(res, 200, document);
      }
      case 'resourceList': {
        readOnly();
        const document = apiResourceList(registry, route.group, route.version);
        if (!document) throw errors.pathNotFound(url.pathname);
        return sendJson(res, 200, document);
      }
      case 'openapiV3Root':
        readOnly();
        return sendJson(res, 200, openApiV3Root(registry));
      case 'openapiV3GroupVersion': {
        readOnly();
        const document = openApiV3GroupVersion(registry, route.group, route.version);
        if (!document) throw errors.pathNotFound(url.pathname);
        return sendJson(res, 200, document);
      }
      case 'openapiMissing':
        // No OpenAPI v2: kubectl tolerates its absence (see openapi.ts).
        throw errors.pathNotFound(url.pathname);
      case 'unknownResource':
        throw errors.pathNotFound(`${route.plural} in ${route.group === '' ? '' : `${route.group}/`}${route.version}`);
      case 'notFound':
        throw errors.pathNotFound(url.pathname);
      case 'resource':
        return handleResource(ctx, req, res, url.query, route);
    }
  };

  const server = createServer((req, res) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      // The body's media type too: tests check which clients write protobuf (docs/CONTOUR.md).
      const contentType = req.headers['content-type'];
      logger.debug(
        { method: req.method, url: req.url, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6, ...(contentType ? { contentType } : {}) },
        'request',
      );
    });
    handle(req, res).catch((error: unknown) => {
      if (error instanceof ApiError) {
        if (error.code >= 500) logger.error({ method: req.method, url: req.url, err: error }, 'request failed');
        else logger.info({ method: req.method, url: req.url, code: error.code, reason: error.reason, message: error.message }, 'request refused');
        // Drain an unread body so the connection stays usable for the next request.
        req.resume();
        sendError(res, error);
        return;
      }
      logger.error({ method: req.method, url: req.url, err: error }, 'unexpected error while serving a request');
      req.resume();
      sendError(res, new ApiError(500, 'InternalError', `internal error: ${error instanceof Error ? error.message : String(error)}`));
    });
  });
  server.on('clientError', (error, socket) => {
    logger.info({ err: error }, 'malformed HTTP request');
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  serverAddress = `${urlHost}:${port}`;
  logger.info({ url, stateFile: options.stateFile }, 'local Kubernetes API server listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    kubeconfigPath: (dir: string) => writeKubeconfig(dir, url),
    setWatchLag: (resource: string, ms: number) => {
      if (ms > 0) ctx.watchLagMs.set(resource, ms);
      else ctx.watchLagMs.delete(resource);
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const watch of [...watches]) watch.close();
        unsubscribePersistence();
        stateWriter?.flush();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/**
 * Path and query of an HTTP request target, split by hand: `new URL()` would read a path
 * starting with `//` as a host name (and throw on a malformed one). The query is read with Go's
 * rules, as kube-apiserver reads it (query.ts).
 */
function splitRequestTarget(target: string): { pathname: string; query: QueryValues } {
  const queryStart = target.indexOf('?');
  return {
    pathname: queryStart >= 0 ? target.slice(0, queryStart) : target,
    query: QueryValues.parse(queryStart >= 0 ? target.slice(queryStart + 1) : ''),
  };
}
