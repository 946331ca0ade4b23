// The one status writer (Contour's pattern): for an object, re-read it, run the pure mutator
// (common/core/status-update.ts), skip no-ops, and write the whole conditions list with a JSON merge
// patch that carries the resourceVersion it was computed from. A merge patch replaces lists wholesale
// (RFC 7386), so the resourceVersion precondition is what keeps a competing writer's conditions:
// if anything changed since our read the API server answers 409 Conflict and we re-read and
// re-apply (the optimistic-concurrency rule of the Kubernetes API conventions).
import { ApiException, PatchStrategy, setHeaderOptions, type CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';

import { conditionChanged, STATUS_CONTROLLER_NAME, type Condition, type ConditionDraft, type ObjectRef } from '../../common/core';
import { planConditionWrite, type MessageRefresh, type StatusSkipReason } from '../../common/core/status-update';
import type { KubeAccess, KubeClients } from './access';
import type { ConditionPlacement, TrackedKind } from '../../common/tracked-kinds';
import { placementOf, TrackedKinds } from './tracked-kinds';

export type WriteOutcome =
  /** `refresh`: only the message changed (the refresh rule let it through). */
  | { outcome: 'written'; condition: Condition; previous: Condition | undefined; resourceVersion: string | undefined; conflicts: number; refresh?: boolean }
  /**
   * `current`: our condition as the object holds it (when there is one). `superseded`: the
   * revalidation found the stored decision no longer to be written (a newer generation exists).
   */
  | { outcome: 'skipped'; reason: StatusSkipReason | 'superseded'; detail: string; current?: Condition }
  /** The object does not exist (deleted): nothing to write, ever, for this decision. */
  | { outcome: 'notFound' }
  /** We must not or cannot write on this kind (not configured, no conditions in its schema, or the API server refused the content). */
  | { outcome: 'unsupported'; detail: string };

/**
 * Asked for the draft to write when the object already holds our condition for the draft's generation
 * and the draft would change it to something other than True: the draft came from a record that may
 * be older than what the object now shows (an older stream image processed after another writer
 * applied a newer decision). Returns the draft the stored, current decision gives, or undefined when
 * nothing is to be written any more. See `needsRevalidation` for why True drafts are not asked about.
 */
export type DraftRevalidator = (held: Condition) => Promise<ConditionDraft | undefined>;

export interface WriteOptions {
  revalidate?: DraftRevalidator;
  /**
   * The message refresh rule for this object generation (core `MessageRefresh`: the interval and our
   * last write's time, from its OBJECT item). Absent: message-only changes are not written (resync).
   */
  refresh?: MessageRefresh;
}

/**
 * Whether a planned write must first be checked against the stored decision. Only a change of our
 * condition at the same generation can undo another writer's newer work: a condition for an older
 * generation (or none) is replaced anyway, and a concurrent writer's patch makes ours fail with 409.
 * A True draft needs no check: it comes from a Programmed decision, which is final for its generation
 * (docs/CONVERGENCE.md, "Decision freshness"), so no newer decision of that generation can say less.
 */
export function needsRevalidation(held: Condition | undefined, draft: ConditionDraft): held is Condition {
  return held !== undefined && held.observedGeneration === draft.observedGeneration && draft.status !== 'True';
}

/** Why a kind can (not) hold our condition, found once per container from its CRD. */
export type KindSupport = { supported: true; verified: boolean; note?: string } | { supported: false; detail: string };

/** Raised when retries are exhausted: the stream record fails and Lambda redelivers it later. */
export class StatusWriteError extends Error {
  constructor(message: string, readonly retryable: boolean) {
    super(message);
    this.name = 'StatusWriteError';
  }
}

export interface StatusWriterOptions {
  access: KubeAccess;
  kinds: TrackedKinds;
  logger: Logger;
  now?: () => number;
  /** Re-reads after 409 before giving up on this record (default 8). */
  maxConflictRetries?: number;
  /** Attempts per request on 5xx, 429 or network errors (default 3). */
  maxServerErrorAttempts?: number;
  /** Backoff before retry `attempt` (1-based), ms. Default: full jitter on 100 ms · 2^attempt. */
  backoffMs?: (attempt: number) => number;
  sleep?: (ms: number) => Promise<void>;
  writeOnMessageChange?: boolean;
  /** Field manager recorded by the API server for our writes. */
  fieldManager?: string;
}

interface ObjectStatusView {
  metadata?: { generation?: number; resourceVersion?: string };
  spec?: { parentRefs?: unknown };
  status?: { conditions?: unknown; parents?: unknown };
}

/** Gateway API's cap on `status.parents` entries (RouteStatus maxItems). */
export const MAX_PARENT_STATUSES = 32;

type ParentEntry = Record<string, unknown> & { controllerName?: unknown; conditions?: unknown };

/** Our conditions as the object holds them at the kind's placement (parents: our first entry's). */
export function ourConditions(object: ObjectStatusView, placement: ConditionPlacement): unknown {
  if (placement === 'conditions') return object.status?.conditions;
  const parents = Array.isArray(object.status?.parents) ? (object.status.parents as ParentEntry[]) : [];
  return parents.find((entry) => entry.controllerName === STATUS_CONTROLLER_NAME)?.conditions;
}

/**
 * The `status` of the merge patch that sets our conditions, or why it cannot be written. For
 * `parents`: every other controller's entry as read (the resourceVersion precondition keeps them
 * current), then one entry of ours per `spec.parentRefs` entry, each with our conditions, within
 * Gateway API's 32 entries.
 */
export function statusPatchFor(object: ObjectStatusView, placement: ConditionPlacement, conditions: readonly Record<string, unknown>[]): { status: Record<string, unknown> } | { problem: string } {
  if (placement === 'conditions') return { status: { conditions } };
  const parentRefs = object.spec?.parentRefs;
  if (!Array.isArray(parentRefs) || parentRefs.length === 0) return { problem: 'spec.parentRefs is empty: the route is attached to nothing, so status.parents has no entry for our condition' };
  const others = (Array.isArray(object.status?.parents) ? (object.status.parents as ParentEntry[]) : []).filter((entry) => entry.controllerName !== STATUS_CONTROLLER_NAME);
  const room = MAX_PARENT_STATUSES - others.length;
  if (room <= 0) return { problem: `status.parents already holds ${others.length} entries of other controllers (at most ${MAX_PARENT_STATUSES})` };
  const ours = parentRefs.slice(0, room).map((parentRef: unknown) => ({ parentRef, controllerName: STATUS_CONTROLLER_NAME, conditions }));
  return { status: { parents: [...others, ...ours] } };
}

function errorCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  return undefined;
}

function describe(error: unknown): string {
  if (error instanceof ApiException) {
    const body = error.body as { message?: unknown } | string | undefined;
    const message = typeof body === 'object' && body !== null && typeof body.message === 'string' ? body.message : String(body ?? '');
    return `HTTP ${error.code}: ${message.slice(0, 500)}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** 5xx, 429 and transport errors (no HTTP status) are worth retrying; other 4xx are not. */
function isRetryable(error: unknown): boolean {
  const code = errorCode(error);
  return code === undefined || code === 429 || code >= 500;
}

export class StatusWriter {
  private readonly support = new Map<string, KindSupport>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly backoffMs: (attempt: number) => number;

  constructor(private readonly options: StatusWriterOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.backoffMs = options.backoffMs ?? ((attempt) => Math.random() * 100 * 2 ** attempt);
  }

  /**
   * Reads each tracked kind's CRD once and logs what it finds: a kind whose schema cannot hold
   * `status.conditions` (or has no status subresource) is never written to, rather than having the
   * API server prune our condition silently or store something its users cannot read.
   */
  async checkKinds(): Promise<Map<string, KindSupport>> {
    for (const kind of this.options.kinds.kinds) await this.kindSupport(kind);
    return new Map(this.support);
  }

  private async kindSupport(kind: TrackedKind): Promise<KindSupport> {
    const name = TrackedKinds.crdName(kind);
    const known = this.support.get(name);
    if (known !== undefined) return known;
    let support: KindSupport;
    try {
      const crd = await this.withRetries(`read CRD`, name, ({ apiextensions }) => apiextensions.readCustomResourceDefinition({ name }));
      support = crd === 'notFound' ? { supported: true, verified: false, note: `CRD ${name} not found; its schema is unchecked` } : crdSupport(crd, kind);
    } catch (error) {
      if (error instanceof StatusWriteError) throw error;
      // 403: we may lack RBAC to read CRDs; writing still works if the kind is fine, so go on.
      support = { supported: true, verified: false, note: `could not read CRD ${name} (${describe(error)}); its schema is unchecked` };
    }
    if (!support.supported) this.options.logger.error({ crd: name, detail: support.detail }, 'tracked kind cannot hold our condition; no status will be written for it');
    else if (!support.verified) this.options.logger.warn({ crd: name, note: support.note }, 'tracked kind not verified');
    else this.options.logger.info({ crd: name, placement: placementOf(kind) }, 'tracked kind holds our condition');
    this.support.set(name, support);
    return support;
  }

  /**
   * Writes `draft` onto the object (if it changes anything a reader acts on). With `revalidate`, a
   * draft that would change our condition at the same generation is first checked against the stored
   * decision (`needsRevalidation`), so an older record never undoes a newer write (the status
   * function processing a stale image after convergence's handoff already wrote True).
   */
  async write(ref: ObjectRef, requested: ConditionDraft, options: WriteOptions = {}): Promise<WriteOutcome> {
    let draft = requested;
    const kind = this.options.kinds.find(ref);
    if (kind === undefined) return { outcome: 'unsupported', detail: `kind ${ref.group}/${ref.kind} is not in TRACKED_KINDS` };
    if (kind.namespaced !== (ref.namespace !== '')) {
      return { outcome: 'unsupported', detail: `${ref.kind} is ${kind.namespaced ? 'namespaced' : 'cluster-scoped'} but the reference has namespace ${JSON.stringify(ref.namespace)}` };
    }
    const support = await this.kindSupport(kind);
    if (!support.supported) return { outcome: 'unsupported', detail: support.detail };
    const maxConflicts = this.options.maxConflictRetries ?? 8;
    for (let conflicts = 0; ; conflicts++) {
      const object = await this.withRetries('get', formatRef(ref), ({ customObjects }) => getObject(customObjects, kind, ref));
      if (object === 'notFound') return { outcome: 'notFound' };
      const placement = placementOf(kind);
      const shapeProblem = statusShapeProblem((object as { status?: unknown }).status, placement);
      if (shapeProblem !== undefined) return { outcome: 'unsupported', detail: shapeProblem };
      const target = { generation: object.metadata?.generation, conditions: ourConditions(object, placement) };
      const planOptions = { writeOnMessageChange: this.options.writeOnMessageChange ?? false, ...(options.refresh === undefined ? {} : { refresh: options.refresh }) };
      let plan = planConditionWrite(target, draft, this.now(), planOptions);
      if (plan.action === 'write' && options.revalidate !== undefined && needsRevalidation(plan.previous, draft)) {
        const current = await options.revalidate(plan.previous);
        if (current === undefined) return { outcome: 'skipped', reason: 'superseded', detail: `the stored decision for generation ${draft.observedGeneration} is no longer to be written`, current: plan.previous };
        if (conditionChanged(current, draft)) {
          this.options.logger.info({ object: formatRef(ref), requested: { status: draft.status, reason: draft.reason }, stored: { status: current.status, reason: current.reason }, held: { status: plan.previous.status, reason: plan.previous.reason } }, 'record was older than the stored decision; writing the stored one');
          draft = current;
          plan = planConditionWrite(target, draft, this.now(), planOptions);
        }
      }
      if (plan.action === 'skip') return { outcome: 'skipped', reason: plan.reason, detail: plan.detail, ...(plan.current === undefined ? {} : { current: plan.current }) };
      const resourceVersion = object.metadata?.resourceVersion;
      const patch = statusPatchFor(object, placement, withoutDuplicatesOf(draft.type, plan.conditions));
      if ('problem' in patch) return { outcome: 'unsupported', detail: patch.problem };
      const body = { metadata: resourceVersion === undefined ? {} : { resourceVersion }, status: patch.status };
      try {
        const written = await this.withRetries('patch', formatRef(ref), ({ customObjects }) =>
          patchStatus(customObjects, kind, ref, body, this.options.fieldManager ?? 'xds-programmed'),
        );
        if (written === 'notFound') return { outcome: 'notFound' };
        return { outcome: 'written', condition: plan.condition, previous: plan.previous, resourceVersion: written.metadata?.resourceVersion, conflicts, refresh: plan.refresh };
      } catch (error) {
        const code = errorCode(error);
        if (code === 409) {
          if (conflicts >= maxConflicts) throw new StatusWriteError(`${formatRef(ref)}: still conflicting after ${conflicts + 1} attempts`, true);
          this.options.logger.debug({ object: formatRef(ref), conflicts: conflicts + 1 }, 'status conflict; re-reading');
          await this.sleep(this.backoffMs(Math.min(conflicts + 1, 5)) / 4);
          continue;
        }
        if (code === 422 || code === 400) {
          return { outcome: 'unsupported', detail: `the API server refused our condition: ${describe(error)}` };
        }
        throw error;
      }
    }
  }

  /** Runs one request, retrying 5xx/429/network errors with backoff; 404 becomes 'notFound'; 409 and other 4xx are rethrown. */
  private async withRetries<T>(what: string, target: string, request: (clients: KubeClients) => Promise<T>): Promise<T | 'notFound'> {
    const attempts = Math.max(1, this.options.maxServerErrorAttempts ?? 3);
    for (let attempt = 1; ; attempt++) {
      try {
        return await request(await this.options.access.clients());
      } catch (error) {
        if (errorCode(error) === 404) return 'notFound';
        if (!isRetryable(error)) throw error;
        if (attempt >= attempts) throw new StatusWriteError(`${what} ${target} failed after ${attempt} attempts: ${describe(error)}`, true);
        this.options.logger.warn({ target, attempt, error: describe(error) }, `${what} failed; retrying`);
        await this.sleep(this.backoffMs(attempt));
      }
    }
  }
}

/**
 * Conditions are a list map keyed by `type` (API conventions): more than one entry of our type (left
 * by another writer) would let a reader see a stale one. The planner writes ours in place of the
 * first, so later entries of our type are dropped; other types are kept as they are.
 */
export function withoutDuplicatesOf<T extends Record<string, unknown>>(type: string, conditions: readonly T[]): T[] {
  let seen = false;
  return conditions.filter((entry) => {
    if (entry['type'] !== type) return true;
    if (seen) return false;
    seen = true;
    return true;
  });
}

function formatRef(ref: ObjectRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

async function getObject(api: CustomObjectsApi, kind: TrackedKind, ref: ObjectRef): Promise<ObjectStatusView> {
  const base = { group: kind.group, version: kind.version, plural: kind.plural, name: ref.name };
  const object: unknown = kind.namespaced ? await api.getNamespacedCustomObject({ ...base, namespace: ref.namespace }) : await api.getClusterCustomObject(base);
  return (typeof object === 'object' && object !== null ? object : {}) as ObjectStatusView;
}

async function patchStatus(api: CustomObjectsApi, kind: TrackedKind, ref: ObjectRef, body: object, fieldManager: string): Promise<ObjectStatusView> {
  const base = { group: kind.group, version: kind.version, plural: kind.plural, name: ref.name, body, fieldManager };
  // client-node defaults PATCH to JSON patch; ours is a merge patch (a document, not operations).
  const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const object: unknown = kind.namespaced
    ? await api.patchNamespacedCustomObjectStatus({ ...base, namespace: ref.namespace }, options)
    : await api.patchClusterCustomObjectStatus(base, options);
  return (typeof object === 'object' && object !== null ? object : {}) as ObjectStatusView;
}

interface CrdView {
  spec?: { versions?: { name?: string; subresources?: { status?: object }; schema?: { openAPIV3Schema?: SchemaView } }[] };
}
interface SchemaView {
  properties?: Record<string, SchemaView>;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  /** How client-node 1.4's typed read (V1JSONSchemaProps) names the field above. */
  x_kubernetes_preserve_unknown_fields?: boolean;
  type?: string;
}

function preservesUnknownFields(schema: SchemaView | undefined): boolean {
  return schema?.['x-kubernetes-preserve-unknown-fields'] === true || schema?.x_kubernetes_preserve_unknown_fields === true;
}

/**
 * Why our condition cannot be added to this stored status without destroying someone else's data,
 * or undefined when it can. A JSON merge patch replaces a non-object status and the whole conditions
 * value (RFC 7386), so a status that is not an object, conditions that are not a list, or list
 * entries that are not objects (which the planner would drop) are refused, not overwritten.
 */
export function statusShapeProblem(status: unknown, placement: ConditionPlacement = 'conditions'): string | undefined {
  if (status === undefined || status === null) return undefined;
  if (typeof status !== 'object' || Array.isArray(status)) return `status is not an object (${Array.isArray(status) ? 'a list' : typeof status}); not overwriting it`;
  if (placement === 'parents') {
    const parents = (status as { parents?: unknown }).parents;
    if (parents === undefined || parents === null) return undefined;
    if (!Array.isArray(parents)) return `status.parents is not a list (${typeof parents}); not overwriting it`;
    const badParent = parents.findIndex((entry) => typeof entry !== 'object' || entry === null || Array.isArray(entry));
    if (badParent >= 0) return `status.parents[${badParent}] is not an object; not overwriting the list`;
    const ours = (parents as ParentEntry[]).find((entry) => entry.controllerName === STATUS_CONTROLLER_NAME)?.conditions;
    if (ours !== undefined && !Array.isArray(ours)) return `our status.parents entry's conditions are not a list; not overwriting them`;
    return undefined;
  }
  const conditions = (status as { conditions?: unknown }).conditions;
  if (conditions === undefined || conditions === null) return undefined;
  if (!Array.isArray(conditions)) return `status.conditions is not a list (${typeof conditions}); not overwriting it`;
  const bad = conditions.findIndex((entry) => typeof entry !== 'object' || entry === null || Array.isArray(entry));
  return bad >= 0 ? `status.conditions[${bad}] is not an object; not overwriting the list` : undefined;
}

/** Whether the CRD's version `kind.version` has a status subresource and a schema that keeps `status.conditions`. */
export function crdSupport(crd: unknown, kind: TrackedKind): KindSupport {
  const versions = (crd as CrdView).spec?.versions ?? [];
  const version = versions.find((v) => v.name === kind.version);
  if (version === undefined) return { supported: false, detail: `CRD ${TrackedKinds.crdName(kind)} does not serve version ${kind.version}` };
  if (version.subresources?.status === undefined) return { supported: false, detail: `CRD ${TrackedKinds.crdName(kind)} ${kind.version} has no status subresource` };
  const root = version.schema?.openAPIV3Schema;
  const status = root?.properties?.['status'];
  if (status === undefined && !preservesUnknownFields(root)) {
    return { supported: false, detail: `CRD ${TrackedKinds.crdName(kind)} ${kind.version} has no status in its schema` };
  }
  if (placementOf(kind) === 'parents') {
    if (status !== undefined && status.properties?.['parents'] === undefined && !preservesUnknownFields(status)) {
      return { supported: false, detail: `CRD ${TrackedKinds.crdName(kind)} ${kind.version} has no status.parents in its schema (the API server would prune our entries)` };
    }
    return { supported: true, verified: true };
  }
  if (status !== undefined && status.properties?.['conditions'] === undefined && !preservesUnknownFields(status)) {
    return { supported: false, detail: `CRD ${TrackedKinds.crdName(kind)} ${kind.version} has no status.conditions in its schema (the API server would prune our condition)` };
  }
  return { supported: true, verified: true };
}
