// Verbs on resources: GET, LIST, WATCH, CREATE (POST), UPDATE (PUT), PATCH, DELETE,
// DELETECOLLECTION. Anything else is a 405; unknown subresources are 404.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { errors } from './errors';
import { mediaTypeOf, parseJsonBody, parseYamlBody, readBody, requireJsonObject, sendJson } from './http';
import { deepCopy, isJsonObject, metadataOf, type Json, type JsonObject } from './json';
import type { ApiObjects, WriteOptions } from './objects';
import { applyPatchBody, patchTypeOf } from './patch';
import { decodeKubernetesProtobuf } from './protobuf';
import { apiVersionOf, BUILT_IN_TYPES, resourceKey, type ResourceType } from './resources';
import {
  decodeDeleteOptions,
  decodeListOptions,
  decodePatchOptions,
  decodeWriteOptions,
  parseResourceVersion,
  prettyOf,
  type DeleteOptions,
  type ListOptions,
  type QueryValues,
  type WriteParameters,
} from './query';
import { matchesFields, matchesLabels } from './selectors';
import { namespaceOf, type ObjectStore } from './store';
import { startWatch, type ActiveWatch, type WatchStart } from './watch';

export interface ResourceRequest {
  group: string;
  version: string;
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

export interface HandlerContext {
  store: ObjectStore;
  objects: ApiObjects;
  logger: Logger;
  maxBodyBytes: number;
  bookmarkIntervalMs: number;
  maxWatchTimeoutSeconds: number;
  maxWatchBufferBytes: number;
  watches: Set<ActiveWatch>;
  /** Injected watch lag per resource key (KubeApiServer.setWatchLag). */
  watchLagMs: Map<string, number>;
}

export async function handleResource(ctx: HandlerContext, req: IncomingMessage, res: ServerResponse, query: QueryValues, request: ResourceRequest): Promise<void> {
  const { type, name, subresource } = request;
  const method = req.method ?? 'GET';
  if (subresource !== undefined && !(subresource === 'status' && type.hasStatusSubresource)) {
    throw errors.pathNotFound(`${type.plural}/${subresource}`);
  }
  if (type.namespaced && request.namespace === undefined && name !== undefined) {
    throw errors.pathNotFound(`${type.kind} is namespaced: use /namespaces/<namespace>/${type.plural}/${name}`);
  }
  if (!type.namespaced && request.namespace !== undefined) throw errors.pathNotFound(`${type.kind} is cluster-scoped`);
  const render = (object: JsonObject): JsonObject => ({ ...object, apiVersion: apiVersionOf(request.group, request.version) });
  const pretty = prettyOf(query);
  const send = (code: number, body: Json, warnings: string[] = []): void => sendJson(res, code, body, warnings, pretty);

  if (name === undefined) {
    switch (method) {
      case 'GET': {
        const options = decodeListOptions(query, type.selectableFields);
        if (options.watch) return watch(ctx, res, options, request, render);
        return send(200, list(ctx, options, request, render));
      }
      case 'POST': {
        const parameters = writeParameters(decodeWriteOptions(query, 'CreateOptions'));
        const body = requireJsonObject(await readJson(ctx, req), 'the object');
        checkKindAndVersion(body, request);
        const created = ctx.objects.create(type, request.namespace, body, parameters);
        return send(201, render(created), parameters.warnings);
      }
      case 'DELETE': {
        // As in Kubernetes, deletecollection of a namespaced kind exists only per namespace.
        if (type.namespaced && request.namespace === undefined) throw errors.methodNotAllowed(`delete ${type.plural} in one namespace at a time`);
        const listOptions = decodeListOptions(query, type.selectableFields);
        const deleteOptions = await readDeleteOptions(ctx, req, query);
        return send(200, deleteCollection(ctx, listOptions, deleteOptions, request, render));
      }
      default:
        throw errors.methodNotAllowed(`${method} is not supported on a ${type.kind} collection`);
    }
  }

  switch (method) {
    case 'GET':
      // GetOptions carry only resourceVersion, and this server always serves the latest state.
      // kube-apiserver ignores `watch` on an object's own path too: it answers the object.
      return send(200, render(ctx.objects.get(type, request.namespace, name)));
    case 'PUT': {
      const parameters = writeParameters(decodeWriteOptions(query, 'UpdateOptions'));
      const body = requireJsonObject(await readJson(ctx, req), 'the object');
      checkKindAndVersion(body, request);
      const updated = ctx.objects.update(type, request.namespace, name, body, statusOrMain(subresource), parameters);
      return send(200, render(updated), parameters.warnings);
    }
    case 'PATCH': {
      const patchType = patchTypeOf(req.headers['content-type'], type);
      const parameters = writeParameters(decodePatchOptions(query));
      const raw = await readBody(req, ctx.maxBodyBytes);
      const patch = parseJsonBody(raw);
      const current = render(ctx.objects.get(type, request.namespace, name));
      const patched = applyPatchBody(current, patch, patchType);
      const updated = ctx.objects.update(type, request.namespace, name, patched, statusOrMain(subresource), parameters);
      return send(200, render(updated), parameters.warnings);
    }
    case 'DELETE': {
      if (subresource !== undefined) throw errors.methodNotAllowed('DELETE is not supported on a subresource');
      const options = await readDeleteOptions(ctx, req, query);
      const deleted = ctx.objects.delete(type, request.namespace, name, options.preconditions);
      return send(200, render(deleted));
    }
    default:
      throw errors.methodNotAllowed(`${method} is not supported on ${type.kind} objects`);
  }
}

/** Validated write parameters, as the object layer takes them; a dry run is refused, never faked. */
function writeParameters(parameters: WriteParameters): WriteOptions {
  refuseDryRun(parameters.dryRun);
  return { fieldValidation: parameters.fieldValidation, warnings: [] };
}

function refuseDryRun(dryRun: readonly string[]): void {
  if (dryRun.length > 0) throw errors.notImplemented('dryRun is not implemented by this local API server');
}

/**
 * DeleteOptions from the body when there is one, else from the query (query.ts). Without a
 * garbage collector, propagationPolicy and orphanDependents change nothing here once valid, and
 * gracePeriodSeconds neither: custom resources, Namespaces and Leases have no graceful deletion.
 */
async function readDeleteOptions(ctx: HandlerContext, req: IncomingMessage, query: QueryValues): Promise<DeleteOptions> {
  const raw = await readBody(req, ctx.maxBodyBytes);
  const options = decodeDeleteOptions(query, raw.length === 0 ? undefined : parseJsonBody(raw));
  refuseDryRun(options.dryRun);
  return options;
}

function statusOrMain(subresource: string | undefined): 'status' | undefined {
  return subresource === 'status' ? 'status' : undefined;
}

async function readJson(ctx: HandlerContext, req: IncomingMessage): Promise<Json> {
  // kube-apiserver decodes a body without Content-Type with its first media type, JSON;
  // python-kubernetes sends creates and replaces of custom objects without one.
  const mediaType = mediaTypeOf(req) || 'application/json';
  if (mediaType === 'application/yaml') return parseYamlBody(await readBody(req, ctx.maxBodyBytes));
  if (mediaType === 'application/vnd.kubernetes.protobuf') return decodeKubernetesProtobuf(await readBody(req, ctx.maxBodyBytes));
  if (mediaType !== 'application/json') {
    // Drain the body so the connection stays usable, then refuse the format.
    await readBody(req, ctx.maxBodyBytes).catch(() => undefined);
    throw errors.unsupportedMediaType(
      `the body of the request was in an unknown format (${mediaType || 'no content type'}) - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (Namespace, Lease, Event, Secret, ConfigMap and Ingress only)`,
    );
  }
  return parseJsonBody(await readBody(req, ctx.maxBodyBytes));
}

function checkKindAndVersion(body: JsonObject, request: ResourceRequest): void {
  const kind = body['kind'];
  const apiVersion = body['apiVersion'];
  const expected = apiVersionOf(request.group, request.version);
  if (BUILT_IN_TYPES.includes(request.type) && kind === undefined && apiVersion === undefined) {
    // Built-in types are decoded with the endpoint's group/version/kind as defaults (typed
    // decoding); custom resources are decoded as unstructured objects, which need both.
    body['kind'] = request.type.kind;
    body['apiVersion'] = expected;
    return;
  }
  if (typeof kind !== 'string' || kind === '') throw errors.badRequest("Object 'Kind' is missing in the request body");
  if (kind !== request.type.kind) throw errors.badRequest(`the kind of the object (${kind}) does not match the resource ${request.type.kind}`);
  if (apiVersion !== expected) {
    throw errors.badRequest(`the apiVersion of the object (${String(apiVersion)}) does not match the request path (${expected})`);
  }
}

interface ContinueToken {
  after: string;
}

function parseContinue(token: string): ContinueToken | undefined {
  if (!token) return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (isJsonObject(decoded as Json) && typeof (decoded as JsonObject)['after'] === 'string') return { after: String((decoded as JsonObject)['after']) };
  } catch {
    // fall through to the error below
  }
  throw errors.badRequest('invalid continue token: continue key is not valid');
}

function selectedObjects(ctx: HandlerContext, options: ListOptions, request: ResourceRequest): { key: string; object: JsonObject }[] {
  return ctx.store
    .list(resourceKey(request.type.group, request.type.plural), request.namespace)
    .filter(({ object }) => matchesLabels(object, options.labelSelector) && matchesFields(object, options.fieldSelector));
}

/**
 * LIST. Pages (limit/continue) are cut from the current state, keyed by namespace/name, not from
 * a snapshot at the first page's resourceVersion as etcd would: objects changed between pages
 * can appear at their newer version (documented in docs/LOCAL-KUBERNETES.md).
 */
function list(ctx: HandlerContext, options: ListOptions, request: ResourceRequest, render: (o: JsonObject) => JsonObject): JsonObject {
  // The storage layer's checks (k8s.io/apiserver storage.ValidateListOptions), in its order.
  const cont = parseContinue(options.continue);
  if (cont && options.resourceVersion !== '' && options.resourceVersion !== '0') {
    throw errors.badRequest('specifying resource version is not allowed when using continue');
  }
  if (!cont) {
    const parsed = parseResourceVersion(options.resourceVersion);
    if (!parsed.ok) throw errors.badRequest(parsed.message);
  }
  if (options.resourceVersionMatch === 'Exact') throw errors.notImplemented('resourceVersionMatch=Exact is not implemented: this server lists only the latest state');
  let selected = selectedObjects(ctx, options, request);
  if (cont) selected = selected.filter(({ key }) => key > cont.after);
  const metadata: JsonObject = { resourceVersion: String(ctx.store.currentResourceVersion()) };
  if (options.limit > 0 && selected.length > options.limit) {
    const page = selected.slice(0, options.limit);
    const last = page[page.length - 1];
    if (last) metadata['continue'] = Buffer.from(JSON.stringify({ after: last.key })).toString('base64url');
    metadata['remainingItemCount'] = selected.length - options.limit;
    selected = page;
  }
  return {
    kind: request.type.listKind,
    apiVersion: apiVersionOf(request.group, request.version),
    metadata,
    items: selected.map(({ object }) => render(object)),
  };
}

/**
 * DELETECOLLECTION. As in kube-apiserver, the DeleteOptions apply to every object: preconditions
 * (from the body, or `uid`/`resourceVersion` in the query) are checked per object, and the first
 * object that fails them stops the deletion with its 409, the objects before it being deleted.
 */
function deleteCollection(ctx: HandlerContext, listOptions: ListOptions, deleteOptions: DeleteOptions, request: ResourceRequest, render: (o: JsonObject) => JsonObject): JsonObject {
  const deleted = selectedObjects(ctx, listOptions, request).map(({ object }) =>
    ctx.objects.delete(request.type, namespaceOf(object), String(metadataOf(deepCopy(object))['name']), deleteOptions.preconditions),
  );
  return {
    kind: request.type.listKind,
    apiVersion: apiVersionOf(request.group, request.version),
    metadata: { resourceVersion: String(ctx.store.currentResourceVersion()) },
    items: deleted.map(render),
  };
}

function watch(ctx: HandlerContext, res: ServerResponse, options: ListOptions, request: ResourceRequest, render: (o: JsonObject) => JsonObject): void {
  const resourceVersion = parseResourceVersion(options.resourceVersion);
  // kube-apiserver's watch cache answers a malformed resourceVersion with a 500 (its error is not
  // a Status); a client's mistake is a 400 here, worded as its LIST words it.
  if (!resourceVersion.ok) throw errors.badRequest(resourceVersion.message);
  // The watch cache's starting points (k8s.io/apiserver cacher): sendInitialEvents=true sends the
  // state first; false, or unset with a resourceVersion, replays what followed that version
  // (false without one starts from now). A version that parses to 0 ("00") means "any", as "0".
  const start: WatchStart =
    options.sendInitialEvents === true
      ? { kind: 'initialState' }
      : resourceVersion.value !== undefined && resourceVersion.value !== 0n
        ? { kind: 'since', resourceVersion: Number(resourceVersion.value) }
        : options.sendInitialEvents === false
          ? { kind: 'now' }
          : { kind: 'initialState' };
  // Unset or 0: the server's longest; negative: kube-apiserver's context has already expired, so
  // the watch ends at once.
  const requested = options.timeoutSeconds;
  const timeoutSeconds = requested === undefined || requested === 0 ? ctx.maxWatchTimeoutSeconds : Math.max(0, Math.min(requested, ctx.maxWatchTimeoutSeconds));
  const holder: { watch?: ActiveWatch } = {};
  const key = resourceKey(request.type.group, request.type.plural);
  const active = startWatch(
    res,
    ctx.store,
    {
      resourceKey: key,
      namespace: request.namespace,
      labels: options.labelSelector,
      fields: options.fieldSelector,
      start,
      // The cacher sends the initial-events-end bookmark only to a watch that allows bookmarks.
      initialEventsEndBookmark: options.sendInitialEvents === true && options.allowWatchBookmarks,
      allowBookmarks: options.allowWatchBookmarks,
      timeoutSeconds,
      bookmarkIntervalMs: ctx.bookmarkIntervalMs,
      maxBufferedBytes: ctx.maxWatchBufferBytes,
      render,
      kind: request.type.kind,
      apiVersion: apiVersionOf(request.group, request.version),
      lagMs: () => ctx.watchLagMs.get(key) ?? 0,
    },
    () => {
      if (holder.watch) ctx.watches.delete(holder.watch);
    },
  );
  holder.watch = active;
  if (!res.writableEnded) ctx.watches.add(active);
}
