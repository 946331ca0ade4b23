// Structural schema pruning and a subset of OpenAPI v3 validation for custom resources.
// Kubernetes rule (apiextensions, "Field pruning"): fields not specified in the structural schema
// are dropped on create/update, unless `x-kubernetes-preserve-unknown-fields: true`; apiVersion,
// kind and metadata are always kept at the root. Pruned paths are reported so the server can
// honour `fieldValidation=Strict|Warn|Ignore` like the real apiserver.
import { isJsonObject, type Json, type JsonObject } from './json';
import type { StructuralSchema } from './resources';

export interface SchemaResult {
  pruned: string[];
  /** `typeMismatch`: the value has the wrong JSON type (a decode error for typed built-in kinds). */
  violations: { field: string; message: string; typeMismatch?: true }[];
}

const OBJECT_META_FIELDS = new Set([
  'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation',
  'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations',
  'ownerReferences', 'finalizers', 'managedFields',
]);

/** Prunes `object` in place against `schema` and collects type violations. */
export function pruneAndValidate(object: JsonObject, schema: StructuralSchema): SchemaResult {
  const result: SchemaResult = { pruned: [], violations: [] };
  const properties = isJsonObject(schema['properties']) ? schema['properties'] : {};
  for (const key of Object.keys(object)) {
    if (key === 'apiVersion' || key === 'kind') continue;
    if (key === 'metadata') {
      const metadata = object[key];
      if (isJsonObject(metadata)) {
        for (const metaKey of Object.keys(metadata)) {
          if (!OBJECT_META_FIELDS.has(metaKey)) {
            delete metadata[metaKey];
            result.pruned.push(`metadata.${metaKey}`);
          }
        }
      }
      continue;
    }
    const child = properties[key];
    if (isJsonObject(child)) {
      walk(object, key, child, key, result);
    } else if (schema['x-kubernetes-preserve-unknown-fields'] !== true) {
      delete object[key];
      result.pruned.push(key);
    }
  }
  checkRequired(object, schema, '', result);
  return result;
}

function walk(container: JsonObject | Json[], key: string | number, schema: JsonObject, path: string, result: SchemaResult): void {
  const value = (container as Record<string | number, Json | undefined>)[key];
  if (value === undefined) return;
  if (value === null) {
    if (schema['nullable'] !== true) {
      // Kubernetes drops nulls for non-nullable fields during defaulting rather than rejecting them.
      if (Array.isArray(container)) result.violations.push({ field: path, message: 'Invalid value: "null": must not be null' });
      else delete container[key as string];
    }
    return;
  }
  if (!typeMatches(value, schema)) {
    result.violations.push({ field: path, message: `Invalid value: ${describe(value)}: must be of type ${String(schema['type'])}`, typeMismatch: true });
    return;
  }
  const allowed = schema['enum'];
  if (Array.isArray(allowed) && !allowed.some((option) => JSON.stringify(option) === JSON.stringify(value))) {
    result.violations.push({
      field: path,
      message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((option) => JSON.stringify(option)).join(', ')}`,
    });
  }
  if (Array.isArray(value)) {
    const items = schema['items'];
    if (isJsonObject(items)) value.forEach((_item, index) => walk(value, index, items, `${path}[${index}]`, result));
    return;
  }
  if (!isJsonObject(value)) return;
  if (schema['x-kubernetes-embedded-resource'] === true) {
    // Embedded objects keep apiVersion/kind/metadata like a root object.
    const nested = pruneAndValidate(value, schema);
    result.pruned.push(...nested.pruned.map((p) => `${path}.${p}`));
    result.violations.push(...nested.violations.map((v) => ({ ...v, field: `${path}.${v.field}` })));
    return;
  }
  const properties = isJsonObject(schema['properties']) ? schema['properties'] : undefined;
  const additional = schema['additionalProperties'];
  const preserveUnknown = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const childKey of Object.keys(value)) {
    const childSchema = properties?.[childKey];
    const childPath = `${path}.${childKey}`;
    if (isJsonObject(childSchema)) walk(value, childKey, childSchema, childPath, result);
    else if (isJsonObject(additional)) walk(value, childKey, additional, childPath, result);
    else if (additional === true || preserveUnknown) continue;
    else {
      delete value[childKey];
      result.pruned.push(childPath);
    }
  }
  checkRequired(value, schema, path, result);
}

function checkRequired(value: JsonObject, schema: JsonObject, path: string, result: SchemaResult): void {
  const required = schema['required'];
  if (!Array.isArray(required)) return;
  for (const name of required) {
    if (typeof name === 'string' && value[name] === undefined) {
      result.violations.push({ field: path === '' ? name : `${path}.${name}`, message: 'Required value' });
    }
  }
}

function typeMatches(value: Json, schema: JsonObject): boolean {
  if (schema['x-kubernetes-int-or-string'] === true) {
    return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
  }
  switch (schema['type']) {
    case 'object':
      return isJsonObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    default:
      return true; // no type: only allowed with preserve-unknown-fields / int-or-string in structural schemas
  }
}

function describe(value: Json): string {
  if (typeof value === 'string') return `"${value}"`;
  if (Array.isArray(value)) return '"array"';
  if (isJsonObject(value)) return '"object"';
  return `${JSON.stringify(value)}`;
}
