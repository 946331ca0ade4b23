// PATCH bodies by content type, as the apiserver accepts them:
// - application/json-patch+json (RFC 6902), application/merge-patch+json (RFC 7386);
// - application/strategic-merge-patch+json only for built-in types whose fields have no
//   merge-key lists and only when the patch uses no `$` directives: there strategic merge is
//   exactly a JSON merge patch. Otherwise 415 (what Kubernetes answers for custom resources).
// - application/apply-patch+yaml (server-side apply) is not implemented: 415, never faked.
import { applyPatch, type Operation } from 'fast-json-patch';
import { z } from 'zod';
import { ApiError, errors } from './errors';
import { deepCopy, isJsonObject, type Json, type JsonObject } from './json';
import type { ResourceType } from './resources';

export type PatchType = 'json' | 'merge' | 'strategic';

export function patchTypeOf(contentType: string | undefined, type: ResourceType): PatchType {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  switch (mediaType) {
    case 'application/json-patch+json':
      return 'json';
    case 'application/merge-patch+json':
      return 'merge';
    case 'application/strategic-merge-patch+json':
      if (!type.strategicMergeAsMergePatch) {
        throw errors.unsupportedMediaType(
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (strategic merge patch is not supported for ${type.kind})`,
        );
      }
      return 'strategic';
    case 'application/apply-patch+yaml':
    case 'application/apply-patch+cbor':
      throw errors.unsupportedMediaType(
        'server-side apply is not implemented by this local API server; use client-side apply (kubectl apply without --server-side) or a merge patch',
      );
    default:
      throw errors.unsupportedMediaType(
        `the body of the request was in an unknown format (${mediaType || 'no content type'}) - accepted media types include: application/json-patch+json, application/merge-patch+json${type.strategicMergeAsMergePatch ? ', application/strategic-merge-patch+json' : ''}`,
      );
  }
}

/** RFC 7386: objects merge recursively, `null` deletes, anything else replaces. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isJsonObject(patch)) return deepCopy(patch);
  const result: JsonObject = isJsonObject(target) ? deepCopy(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    // defineProperty: a key named "__proto__" stays a plain field, never a prototype change.
    else Object.defineProperty(result, key, { value: applyMergePatch(result[key] ?? null, value), enumerable: true, writable: true, configurable: true });
  }
  return result;
}

const operationSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('add'), path: z.string(), value: z.unknown() }),
  z.object({ op: z.literal('replace'), path: z.string(), value: z.unknown() }),
  z.object({ op: z.literal('test'), path: z.string(), value: z.unknown() }),
  z.object({ op: z.literal('remove'), path: z.string() }),
  z.object({ op: z.literal('move'), path: z.string(), from: z.string() }),
  z.object({ op: z.literal('copy'), path: z.string(), from: z.string() }),
]);
const jsonPatchSchema = z.array(operationSchema);

// Strategic merge differs from merge patch on lists with a merge key; these are the ones an
// object of our built-in types can carry (metadata.finalizers/ownerReferences have
// patchStrategy=merge in ObjectMeta).
const STRATEGIC_LIST_FIELDS = new Set(['finalizers', 'ownerReferences', 'managedFields']);

function checkStrategicPatchIsMergePatch(patch: JsonObject): void {
  const visit = (value: Json, path: string): void => {
    if (!isJsonObject(value)) return;
    for (const [key, child] of Object.entries(value)) {
      if (key.startsWith('$')) {
        throw errors.unsupportedMediaType(`strategic merge patch directive "${key}" at ${path || '<root>'} is not supported by this local API server; use a merge patch`);
      }
      visit(child, path === '' ? key : `${path}.${key}`);
    }
  };
  visit(patch, '');
  const metadata = patch['metadata'];
  if (isJsonObject(metadata)) {
    for (const key of Object.keys(metadata)) {
      if (STRATEGIC_LIST_FIELDS.has(key)) {
        throw errors.unsupportedMediaType(`strategic merge of metadata.${key} is not supported by this local API server; use a merge patch`);
      }
    }
  }
}

/** Applies a parsed PATCH body to a copy of `current`. */
export function applyPatchBody(current: JsonObject, body: Json, patchType: PatchType): JsonObject {
  if (patchType === 'json') {
    const operations = jsonPatchSchema.safeParse(body);
    if (!operations.success) throw errors.badRequest(`invalid JSON patch: ${operations.error.issues[0]?.message ?? 'not a list of operations'}`);
    try {
      const result = applyPatch(deepCopy(current), operations.data as Operation[], true, false, true).newDocument;
      if (!isJsonObject(result)) throw errors.badRequest('JSON patch replaced the object with a non-object');
      return result as JsonObject;
    } catch (error) {
      if (error instanceof ApiError) throw error;
      // Kubernetes answers 422 when a well-formed JSON patch cannot be applied (failed test, missing path).
      throw new ApiError(422, 'Invalid', `the JSON patch could not be applied: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
  }
  if (!isJsonObject(body)) throw errors.badRequest('a merge patch must be a JSON object');
  if (patchType === 'strategic') checkStrategicPatchIsMergePatch(body);
  const result = applyMergePatch(current, body);
  return result as JsonObject;
}
