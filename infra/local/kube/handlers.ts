// Verbs on resources: GET, LIST, WATCH, CREATE (POST), UPDATE (PUT), PATCH, DELETE,
// DELETECOLLECTION. Anything else is a 405; unknown subresources are 404.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ApiError, errors } from './errors';
import { mediaTypeOf, parseJsonBody, parseYamlBody, readBody, requireJsonObject, sendJson } from './http';
import { deepCopy, isJsonObject, metadataOf, stringField, type Json, type JsonObject } from './json';
import type { ApiObjects, DeletePreconditions, FieldValidation, WriteOptions } from './objects';
import { applyPatchBody, patchTypeOf } from './patch';
import { decodeKubernetesProtobuf } from './protobuf';
import { apiVersionOf, BUILT_IN_TYPES, resourceKey, type ResourceType } from './resources';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors';
import { namespaceOf, type ObjectStore } from './store';
import { isWatchRequest, startWatch, type ActiveWatch } from './watch';

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
}

export async function handleResource(ctx: HandlerContext, req: IncomingMessage, res: ServerResponse, query: URLSearchParams, request: ResourceRequest): Promise<void> {
  const { type, name, subresource } = request;
  const method = req.method ?? 'GET';
  if (subresource !== undefined && !(subresource === 'status' && type.hasStatusSubresource)) {
    throw errors.pathNotFound(`${type.plural}/${subresource}`);
  }
  if (type.namespaced && request.namespace === undefined && name !== undefined) {
    throw errors.pathNotFound(`${type.kind} is namespaced: use /namespaces/<namespace>/${type.plural}/${name}`);
  }
  if (!type.namespaced && request.namespace !== undefined) throw errors.pathNotFound(`${type.kind} is cluster-scoped`);
  if (query.get('dryRun')) throw errors.notImplemented('dryRun is not implemented by this local API server');
  const render = (object: JsonObject): JsonObject => ({ ...object, apiVersion: apiVersionOf(request.group, request.version) });

  if (name === undefined) {
    switch (method) {
      case 'GET':
        if (isWatchRequest(query)) return watch(ctx, res, query, request, render);
        return sendJson(res, 200, list(ctx, query, request, render));
      case 'POST': {
        const body = requireJsonObject(await readJson(ctx, req), 'the object');
        checkKindAndVersion(body, request);
        const options = writeOptions(query);
        const created = ctx.objects.create(type, request.namespace, body, options);
        return sendJson(res, 201, render(created), options.warnings);
      }
      case 'DELETE':
        // As in Kubernetes, deletecollection of a namespaced kind exists only per namespace.
        if (type.namespaced && request.namespace === undefined) throw errors.methodNotAllowed(`delete ${type.plural} in one namespace at a time`);
        return sendJson(res, 200, deleteCollection(ctx, query, request, render));
      default:
        throw errors.methodNotAllowed(`${method} is not supported on a ${type.kind} collection`);
    }
  }

  switch (method) {
    case 'GET':
      if (isWatchRequest(query)) throw errors.badRequest('watch a single object with a fieldSelector metadata.name=<name> on the collection');
      return sendJson(res, 200, render(ctx.objects.get(type, request.namespace, name)));
    case 'PUT': {
      const body = requireJsonObject(await readJson(ctx, req), 'the object');
      checkKindAndVersion(body, request);
      const options = writeOptions(query);
      const updated = ctx.objects.update(type, request.namespace, name, body, statusOrMain(subresource), options);
      return sendJson(res, 200, render(updated), options.warnings);
    }
    case 'PATCH': {
      const patchType = patchTypeOf(req.headers['content-type'], type);
      const raw = await readBody(req, ctx.maxBodyBytes);
      const patch = parseJsonBody(raw);
      const current = render(ctx.objects.get(type, request.namespace, name));
      const patched = applyPatchBody(current, patch, patchType);
      const options = writeOptions(query);
      const updated = ctx.objects.update(type, request.namespace, name, patched, statusOrMain(subresource), options);
      return sendJson(res, 200, render(updated), options.warnings);
    }
    case 'DELETE': {
      if (subresource !== undefined) throw errors.methodNotAllowed('DELETE is not supported on a subresource');
      const raw = await readBody(req, ctx.maxBodyBytes);
      const preconditions = raw.length === 0 ? {} : deletePreconditions(parseJsonBody(raw));
      const deleted = ctx.objects.delete(type, request.namespace, name, preconditions);
      return sendJson(res, 200, render(deleted));
    }
    default:
      throw errors.methodNotAllowed(`${method} is not supported on ${type.kind} objects`);
  }
}

function statusOrMain(subresource: string | undefined): 'status' | undefined {
  return subresource === 'status' ? 'status' : undefined;
}

async function readJson(ctx: HandlerContext, req: IncomingMessage): Promise<Json> {
  const mediaType = mediaTypeOf(req);
  if (mediaType === 'application/yaml') return parseYamlBody(await readBody(req, ctx.maxBodyBytes));
  if (mediaType === 'application/vnd.kubernetes.protobuf') return decodeKubernetesProtobuf(await readBody(req, ctx.maxBodyBytes));
  if (mediaType !== 'application/json') {
    // Drain the body so the connection stays usable, then refuse the format.
    await readBody(req, ctx.maxBodyBytes).catch(() => undefined);
    throw errors.unsupportedMediaType(
      `the body of the request was in an unknown format (${mediaType || 'no content type'}) - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (Namespace and Lease only)`,
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

function writeOptions(query: URLSearchParams): WriteOptions {
  const raw = query.get('fieldValidation') ?? 'Warn';
  const allowed: FieldValidation[] = ['Strict', 'Warn', 'Ignore'];
  const fieldValidation = allowed.find((value) => value === raw);
  if (!fieldValidation) throw errors.badRequest(`fieldValidation must be one of Strict, Warn, Ignore (got "${raw}")`);
  return { fieldValidation, warnings: [] };
}

function deletePreconditions(body: Json): DeletePreconditions {
  const options = requireJsonObject(body, 'DeleteOptions');
  if (Array.isArray(options['dryRun']) && options['dryRun'].length > 0) throw errors.notImplemented('dryRun is not implemented by this local API server');
  const preconditions = options['preconditions'];
  if (preconditions === undefined || preconditions === null) return {};
  if (!isJsonObject(preconditions)) throw errors.badRequest('DeleteOptions.preconditions must be an object');
  const result: DeletePreconditions = {};
  const uid = stringField(preconditions, 'uid');
  const resourceVersion = stringField(preconditions, 'resourceVersion');
  if (uid !== undefined) result.uid = uid;
  if (resourceVersion !== undefined) result.resourceVersion = resourceVersion;
  return result;
}

interface ContinueToken {
  after: string;
}

function parseContinue(token: string | null): ContinueToken | undefined {
  if (!token) return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (isJsonObject(decoded as Json) && typeof (decoded as JsonObject)['after'] === 'string') return { after: String((decoded as JsonObject)['after']) };
  } catch {
    // fall through to the error below
  }
  throw errors.badRequest('continue key is not valid');
}

function parseLimit(raw: string | null): number | undefined {
  if (raw === null || raw === '' || raw === '0') return undefined;
  const limit = Number(raw);
  if (!Number.isSafeInteger(limit) || limit < 0) throw errors.badRequest(`limit must be a non-negative integer (got "${raw}")`);
  return limit;
}

function selectedObjects(ctx: HandlerContext, query: URLSearchParams, request: ResourceRequest): { key: string; object: JsonObject }[] {
  const labels = parseLabelSelector(query.get('labelSelector') ?? undefined);
  const fields = parseFieldSelector(query.get('fieldSelector') ?? undefined);
  return ctx.store
    .list(resourceKey(request.type.group, request.type.plural), request.namespace)
    .filter(({ object }) => matchesLabels(object, labels) && matchesFields(object, fields));
}

/**
 * LIST. Pages (limit/continue) are cut from the current state, keyed by namespace/name, not from
 * a snapshot at the first page's resourceVersion as etcd would: objects changed between pages
 * can appear at their newer version (documented in docs/LOCAL-KUBERNETES.md).
 */
function list(ctx: HandlerContext, query: URLSearchParams, request: ResourceRequest, render: (o: JsonObject) => JsonObject): JsonObject {
  const match = query.get('resourceVersionMatch');
  if (match === 'Exact') throw errors.notImplemented('resourceVersionMatch=Exact is not implemented: this server lists only the latest state');
  const limit = parseLimit(query.get('limit'));
  const cont = parseContinue(query.get('continue'));
  let selected = selectedObjects(ctx, query, request);
  if (cont) selected = selected.filter(({ key }) => key > cont.after);
  const metadata: JsonObject = { resourceVersion: String(ctx.store.currentResourceVersion()) };
  if (limit !== undefined && selected.length > limit) {
    const page = selected.slice(0, limit);
    const last = page[page.length - 1];
    if (last) metadata['continue'] = Buffer.from(JSON.stringify({ after: last.key })).toString('base64url');
    metadata['remainingItemCount'] = selected.length - limit;
    selected = page;
  }
  return {
    kind: request.type.listKind,
    apiVersion: apiVersionOf(request.group, request.version),
    metadata,
    items: selected.map(({ object }) => render(object)),
  };
}

function deleteCollection(ctx: HandlerContext, query: URLSearchParams, request: ResourceRequest, render: (o: JsonObject) => JsonObject): JsonObject {
  const deleted = selectedObjects(ctx, query, request).map(({ object }) =>
    ctx.objects.delete(request.type, namespaceOf(object), String(metadataOf(deepCopy(object))['name']), {}),
  );
  return {
    kind: request.type.listKind,
    apiVersion: apiVersionOf(request.group, request.version),
    metadata: { resourceVersion: String(ctx.store.currentResourceVersion()) },
    items: deleted.map(render),
  };
}

function watch(ctx: HandlerContext, res: ServerResponse, query: URLSearchParams, request: ResourceRequest, render: (o: JsonObject) => JsonObject): void {
  const sendInitialEvents = query.get('sendInitialEvents') === 'true';
  const allowBookmarks = query.get('allowWatchBookmarks') === 'true';
  if (sendInitialEvents && (!allowBookmarks || query.get('resourceVersionMatch') !== 'NotOlderThan')) {
    // Same validation as the apiserver: the initial-events-end bookmark is how the client
    // learns the initial state is complete.
    throw new ApiError(422, 'Invalid', 'sendInitialEvents requires allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan');
  }
  const rawTimeout = query.get('timeoutSeconds');
  let timeoutSeconds = ctx.maxWatchTimeoutSeconds;
  if (rawTimeout !== null && rawTimeout !== '') {
    const parsed = Number(rawTimeout);
    if (!Number.isFinite(parsed) || parsed < 0) throw errors.badRequest(`timeoutSeconds must be a non-negative number (got "${rawTimeout}")`);
    if (parsed > 0) timeoutSeconds = Math.min(parsed, ctx.maxWatchTimeoutSeconds);
  }
  const holder: { watch?: ActiveWatch } = {};
  const active = startWatch(
    res,
    ctx.store,
    {
      resourceKey: resourceKey(request.type.group, request.type.plural),
      namespace: request.namespace,
      labels: parseLabelSelector(query.get('labelSelector') ?? undefined),
      fields: parseFieldSelector(query.get('fieldSelector') ?? undefined),
      resourceVersion: query.get('resourceVersion') ?? undefined,
      sendInitialEvents,
      allowBookmarks,
      timeoutSeconds,
      bookmarkIntervalMs: ctx.bookmarkIntervalMs,
      maxBufferedBytes: ctx.maxWatchBufferBytes,
      render,
      kind: request.type.kind,
      apiVersion: apiVersionOf(request.group, request.version),
    },
    () => {
      if (holder.watch) ctx.watches.delete(holder.watch);
    },
  );
  holder.watch = active;
  if (!res.writableEnded) ctx.watches.add(active);
}
