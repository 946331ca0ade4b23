// Create / update / delete with the apiserver's semantics for the fields that matter to this
// project: server-owned metadata (uid, creationTimestamp, generation, resourceVersion),
// generation bumped only when the spec (for CRs: anything outside metadata/status) changes,
// the status subresource as the only way to change status, optimistic concurrency (a stale
// resourceVersion is a 409 Conflict), no-op updates that write nothing, finalizers holding a
// deletion, and structural pruning for custom resources.
import { randomUUID } from 'node:crypto';
import { applyBuiltInStrategy } from './builtin-strategies';
import { acceptedCrdStatus, resourceTypeFromCrd } from './crd';
import { ApiError, errors } from './errors';
import { deepCopy, isJsonObject, jsonEqual, metadataOf, stringField, type JsonObject } from './json';
import type { ResourceRegistry } from './registry';
import { apiVersionOf, BUILT_IN_TYPES, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, resourceKey, type ResourceType } from './resources';
import { validateObjectMeta } from './metadata';
import { pruneAndValidate } from './schema';
import { nameOf, objectKeyOf, type ObjectStore } from './store';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export interface WriteOptions {
  fieldValidation: FieldValidation;
  /** Warnings to return in `Warning` headers (fieldValidation=Warn). */
  warnings: string[];
}

export interface DeletePreconditions {
  uid?: string;
  resourceVersion?: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const GENERATE_NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Fields the server owns: copied from the stored object, whatever the client sends. */
const SERVER_OWNED_METADATA = ['uid', 'creationTimestamp', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink'];

export class ApiObjects {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly store: ObjectStore,
    private readonly now: () => Date,
  ) {}

  get(type: ResourceType, namespace: string | undefined, name: string): JsonObject {
    const object = this.store.get(resourceKey(type.group, type.plural), objectKeyOf(namespace, name));
    if (!object) throw errors.notFound(type, name);
    return object;
  }

  create(type: ResourceType, namespace: string | undefined, body: JsonObject, options: WriteOptions): JsonObject {
    const object = deepCopy(body);
    const metadata = metadataOf(object);
    if (metadata['resourceVersion'] !== undefined && metadata['resourceVersion'] !== '') {
      throw errors.badRequest('resourceVersion should not be set on objects to be created');
    }
    let name = stringField(metadata, 'name') ?? '';
    const generateName = stringField(metadata, 'generateName');
    if (name === '' && generateName) {
      name = `${generateName}${this.randomSuffix()}`;
      metadata['name'] = name;
    }
    this.validateName(type, name);
    if (type.namespaced) {
      if (!namespace) throw errors.badRequest(`${type.kind} is namespaced: create it under /namespaces/<namespace>/`);
      const sentNamespace = stringField(metadata, 'namespace');
      if (sentNamespace !== undefined && sentNamespace !== '' && sentNamespace !== namespace) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      this.requireNamespace(namespace);
      metadata['namespace'] = namespace;
    } else {
      delete metadata['namespace'];
    }
    const key = resourceKey(type.group, type.plural);

    for (const field of SERVER_OWNED_METADATA) delete metadata[field];
    delete metadata['managedFields'];
    metadata['uid'] = randomUUID();
    metadata['creationTimestamp'] = this.timestamp();
    if (type.generationRule !== 'none') metadata['generation'] = 1;
    // Kubernetes rule: with a status subresource, create cannot set status (it is reset).
    if (type.hasStatusSubresource) delete object['status'];
    if (type === NAMESPACES) object['status'] = { phase: 'Active' };
    this.checkSchema(type, object, options);
    this.applyStrategy(type, object, undefined);
    // kube-apiserver finds a name taken only in storage, after decoding and validation: a create
    // that is also malformed or invalid is answered with that (400/422), not with AlreadyExists.
    if (this.store.get(key, objectKeyOf(namespace, name))) throw errors.alreadyExists(type, name);
    if (type === CUSTOM_RESOURCE_DEFINITIONS) this.establishCrd(object);

    metadata['resourceVersion'] = String(this.store.nextResourceVersion());
    this.store.put(key, 'ADDED', object);
    return deepCopy(object);
  }

  /**
   * PUT (or the result of a PATCH) on the main resource (`subresource` undefined) or on /status.
   * `candidate` is the full desired object.
   */
  update(type: ResourceType, namespace: string | undefined, name: string, candidate: JsonObject, subresource: 'status' | undefined, options: WriteOptions): JsonObject {
    const current = this.get(type, namespace, name);
    const candidateMeta = metadataOf(candidate);
    const sentName = stringField(candidateMeta, 'name');
    if (sentName !== undefined && sentName !== name) {
      throw errors.badRequest(`the name of the object (${sentName}) does not match the name on the URL (${name})`);
    }
    const sentNamespace = stringField(candidateMeta, 'namespace');
    if (type.namespaced && sentNamespace !== undefined && sentNamespace !== '' && sentNamespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const currentMeta = metadataOf(current);
    const sentVersion = stringField(candidateMeta, 'resourceVersion');
    if (sentVersion !== undefined && sentVersion !== '' && sentVersion !== currentMeta['resourceVersion']) {
      throw errors.conflict(type, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }

    let next: JsonObject;
    if (subresource === 'status') {
      // Kubernetes rule: an update through /status changes only status; the rest is ignored.
      next = deepCopy(current);
      if (candidate['status'] === undefined) delete next['status'];
      else next['status'] = deepCopy(candidate['status']);
    } else {
      next = deepCopy(candidate);
      const nextMeta = metadataOf(next);
      for (const field of SERVER_OWNED_METADATA) {
        if (currentMeta[field] === undefined) delete nextMeta[field];
        else nextMeta[field] = deepCopy(currentMeta[field]);
      }
      delete nextMeta['managedFields'];
      nextMeta['name'] = name;
      if (type.namespaced && namespace) nextMeta['namespace'] = namespace;
      else delete nextMeta['namespace'];
      // Kubernetes rule: with a status subresource, the main resource ignores status changes.
      if (type.hasStatusSubresource) {
        if (current['status'] === undefined) delete next['status'];
        else next['status'] = deepCopy(current['status']);
      }
      const nextKind = next['kind'];
      const nextApiVersion = next['apiVersion'];
      if (nextKind !== undefined && nextKind !== type.kind) throw errors.badRequest(`kind ${String(nextKind)} does not match the resource ${type.kind}`);
      if (typeof nextApiVersion === 'string' && !type.versions.some((v) => apiVersionOf(type.group, v) === nextApiVersion)) {
        throw errors.badRequest(`apiVersion ${nextApiVersion} is not served for ${type.kind}`);
      }
    }
    // Validate against the schema of the version the client wrote (handlers make the
    // candidate's apiVersion the request's), then store under the object's stored apiVersion.
    next['apiVersion'] = typeof candidate['apiVersion'] === 'string' ? candidate['apiVersion'] : (current['apiVersion'] ?? '');
    next['kind'] = type.kind;
    this.checkSchema(type, next, options);
    if (subresource === undefined) this.applyStrategy(type, next, current);
    next['apiVersion'] = current['apiVersion'] ?? apiVersionOf(type.group, type.versions[0] ?? 'v1');
    if (type === CUSTOM_RESOURCE_DEFINITIONS && subresource === undefined) this.establishCrd(next, current);

    const nextMeta = metadataOf(next);
    nextMeta['resourceVersion'] = currentMeta['resourceVersion'] ?? '';
    if (type.generationRule === 'allButMetadataAndStatus' && specChanged(current, next)) {
      nextMeta['generation'] = (typeof currentMeta['generation'] === 'number' ? currentMeta['generation'] : 0) + 1;
    }
    // Kubernetes rule: an update that changes nothing is not written (no new resourceVersion, no event).
    if (jsonEqual(withoutResourceVersion(current), withoutResourceVersion(next))) return current;

    nextMeta['resourceVersion'] = String(this.store.nextResourceVersion());
    const key = resourceKey(type.group, type.plural);
    if (nextMeta['deletionTimestamp'] !== undefined && finalizersOf(next).length === 0) {
      // The last finalizer is gone from an object being deleted: it is deleted now.
      this.removeWithDependents(type, key, next);
      return deepCopy(next);
    }
    this.store.put(key, 'MODIFIED', next);
    return deepCopy(next);
  }

  delete(type: ResourceType, namespace: string | undefined, name: string, preconditions: DeletePreconditions): JsonObject {
    const current = this.get(type, namespace, name);
    const metadata = metadataOf(current);
    if (preconditions.uid !== undefined && preconditions.uid !== metadata['uid']) {
      throw errors.conflict(type, name, `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${String(metadata['uid'])}`);
    }
    if (preconditions.resourceVersion !== undefined && preconditions.resourceVersion !== metadata['resourceVersion']) {
      throw errors.conflict(type, name, `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${String(metadata['resourceVersion'])}`);
    }
    const key = resourceKey(type.group, type.plural);
    if (finalizersOf(current).length > 0) {
      // Kubernetes rule: finalizers hold the object; deletion only marks it.
      if (metadata['deletionTimestamp'] !== undefined) return current;
      metadata['deletionTimestamp'] = this.timestamp();
      metadata['deletionGracePeriodSeconds'] = 0;
      metadata['resourceVersion'] = String(this.store.nextResourceVersion());
      this.store.put(key, 'MODIFIED', current);
      return current;
    }
    this.removeWithDependents(type, key, current);
    return current;
  }

  /** Registers the types of CRDs restored from a state file. */
  registerRestoredCrd(crd: JsonObject): void {
    const parsed = resourceTypeFromCrd(crd);
    if (parsed.ok) this.registry.register(parsed.type);
  }

  /**
   * Removes an object. Its dependents go first, so watchers see them DELETED before the thing
   * that contained them: the objects of a CRD (then its type is unregistered and watches on it
   * end), the contents of a Namespace (standing in for the namespace controller, immediately:
   * finalizers of contained objects are not waited for).
   */
  private removeWithDependents(type: ResourceType, key: string, object: JsonObject): void {
    let crdType: ResourceType | undefined;
    if (type === CUSTOM_RESOURCE_DEFINITIONS) {
      const parsed = resourceTypeFromCrd(object);
      if (parsed.ok) {
        crdType = parsed.type;
        this.removeAll(resourceKey(crdType.group, crdType.plural));
      }
    }
    if (type === NAMESPACES) {
      for (const other of this.registry.all()) {
        if (other.namespaced) this.removeAll(resourceKey(other.group, other.plural), nameOf(object));
      }
    }
    metadataOf(object)['resourceVersion'] = String(this.store.nextResourceVersion());
    this.store.remove(key, object);
    if (crdType) this.registry.unregister(crdType.group, crdType.plural);
  }

  private removeAll(key: string, namespace?: string): void {
    for (const { object } of this.store.list(key, namespace)) {
      metadataOf(object)['resourceVersion'] = String(this.store.nextResourceVersion());
      this.store.remove(key, object);
    }
  }

  private establishCrd(crd: JsonObject, previous?: JsonObject): void {
    const parsed = resourceTypeFromCrd(crd);
    if (!parsed.ok) throw errors.invalid(CUSTOM_RESOURCE_DEFINITIONS, nameOf(crd), parsed.errors);
    if (previous) {
      const before = resourceTypeFromCrd(previous);
      if (before.ok && (before.type.group !== parsed.type.group || before.type.plural !== parsed.type.plural || before.type.namespaced !== parsed.type.namespaced)) {
        throw errors.invalid(CUSTOM_RESOURCE_DEFINITIONS, nameOf(crd), [{ field: 'spec', message: 'group, names.plural and scope are immutable' }]);
      }
    }
    const status = acceptedCrdStatus(previous ?? crd, parsed.type, this.timestamp());
    const oldStatus = previous?.['status'];
    if (isJsonObject(oldStatus) && Array.isArray(oldStatus['conditions'])) {
      // Keep lastTransitionTime: the conditions did not transition.
      status['conditions'] = oldStatus['conditions'];
    }
    crd['status'] = status;
    this.registry.register(parsed.type);
  }

  private checkSchema(type: ResourceType, object: JsonObject, options: WriteOptions): void {
    const metadataProblems = validateObjectMeta(object);
    if (metadataProblems.length > 0) throw errors.invalid(type, nameOf(object), metadataProblems);
    const version = String(object['apiVersion'] ?? '').split('/').pop() ?? '';
    const schema = type.schemas.get(version) ?? type.schemas.get(type.versions[0] ?? '');
    if (!schema) return;
    const result = pruneAndValidate(object, schema);
    // A built-in kind is decoded into its Go type before anything is validated: a field of the wrong
    // JSON type is a decode error (400 "cannot be handled as"), as the Secret's base64 data is in
    // builtin-strategies.ts. Custom resources are decoded as unstructured objects: theirs is a 422.
    const typeErrors = BUILT_IN_TYPES.includes(type) ? result.violations.filter((violation) => violation.typeMismatch === true) : [];
    if (typeErrors.length > 0) {
      throw errors.badRequest(`${type.kind} in version "${version}" cannot be handled as a ${type.kind}: ${typeErrors.map((v) => `${v.field}: ${v.message}`).join(', ')}`);
    }
    if (result.violations.length > 0) throw errors.invalid(type, nameOf(object), result.violations);
    if (result.pruned.length === 0) return;
    if (options.fieldValidation === 'Strict') {
      throw new ApiError(400, 'BadRequest', `strict decoding error: ${result.pruned.map((path) => `unknown field "${path}"`).join(', ')}`);
    }
    if (options.fieldValidation === 'Warn') options.warnings.push(...result.pruned.map((path) => `unknown field "${path}"`));
  }

  /** Defaulting, allocation and validation of the built-in kinds (builtin-strategies.ts). */
  private applyStrategy(type: ResourceType, object: JsonObject, previous: JsonObject | undefined): void {
    const problems = applyBuiltInStrategy(type, object, previous, { allOf: (of) => this.store.list(resourceKey(of.group, of.plural)).map(({ object: o }) => o) });
    if (problems.length > 0) throw errors.invalid(type, nameOf(object), problems);
  }

  private validateName(type: ResourceType, name: string): void {
    if (name === '') throw errors.invalid(type, name, [{ field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
    const isNamespace = type === NAMESPACES;
    const pattern = isNamespace ? DNS_LABEL : DNS_SUBDOMAIN;
    const limit = isNamespace ? 63 : 253;
    if (!pattern.test(name) || name.length > limit) {
      throw errors.invalid(type, name, [
        {
          field: 'metadata.name',
          message: `Invalid value: "${name}": a lowercase RFC 1123 ${isNamespace ? 'label' : 'subdomain'} must consist of lower case alphanumeric characters, '-'${isNamespace ? '' : " or '.'"}, and must start and end with an alphanumeric character (at most ${limit} characters)`,
        },
      ]);
    }
  }

  private requireNamespace(namespace: string): void {
    const found = this.store.get(resourceKey(NAMESPACES.group, NAMESPACES.plural), namespace);
    if (!found) throw errors.notFound(NAMESPACES, namespace);
    if (isJsonObject(found['metadata']) && found['metadata']['deletionTimestamp'] !== undefined) {
      throw new ApiError(403, 'Forbidden', `unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  private randomSuffix(): string {
    let suffix = '';
    for (let i = 0; i < 5; i += 1) suffix += GENERATE_NAME_ALPHABET[Math.floor(Math.random() * GENERATE_NAME_ALPHABET.length)];
    return suffix;
  }

  private timestamp(): string {
    // Kubernetes serialises metav1.Time as RFC 3339 with second precision.
    return `${this.now().toISOString().slice(0, 19)}Z`;
  }
}

function finalizersOf(object: JsonObject): string[] {
  const finalizers = metadataOf(object)['finalizers'];
  return Array.isArray(finalizers) ? finalizers.filter((f): f is string => typeof f === 'string') : [];
}

function specChanged(before: JsonObject, after: JsonObject): boolean {
  const strip = (object: JsonObject): JsonObject => {
    const rest = { ...object };
    delete rest['metadata'];
    delete rest['status'];
    delete rest['apiVersion'];
    delete rest['kind'];
    return rest;
  };
  return !jsonEqual(strip(before), strip(after));
}

function withoutResourceVersion(object: JsonObject): JsonObject {
  const copy = deepCopy(object);
  delete metadataOf(copy)['resourceVersion'];
  return copy;
}

