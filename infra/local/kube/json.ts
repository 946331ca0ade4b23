// JSON values as they travel through the API server. Objects are stored as plain JSON (like the
// unstructured objects of the real apiserver), so every helper here works on these types.
export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function deepCopy<T extends Json>(value: T): T {
  return structuredClone(value);
}

/** Structural equality of two JSON values (key order does not matter, as in Kubernetes). */
export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const aKeys = Object.keys(a);
    if (aKeys.length !== Object.keys(b).length) return false;
    return aKeys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

/** The object's `metadata`, created empty when missing or not an object. */
export function metadataOf(object: JsonObject): JsonObject {
  const metadata = object['metadata'];
  if (isJsonObject(metadata)) return metadata;
  const created: JsonObject = {};
  object['metadata'] = created;
  return created;
}

export function stringField(object: JsonObject | undefined, key: string): string | undefined {
  const value = object?.[key];
  return typeof value === 'string' ? value : undefined;
}

export function stringMap(value: Json | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  if (!isJsonObject(value)) return result;
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'string') result[key] = item;
  }
  return result;
}
