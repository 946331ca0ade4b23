// StatusWriter for Kubernetes: merge-patch of the HTTPProxy `/status` subresource.
//  - Reads the object first and merges our Valid condition into its conditions, keeping every other
//    condition (a JSON merge patch replaces arrays wholesale, so the merge must happen client-side).
//  - Sends metadata.resourceVersion in the patch: the API server then rejects it with 409 Conflict if
//    the object changed since the read (optimistic concurrency); we re-read and retry.
//  - Never moves a condition backwards: if the stored Valid condition already speaks about a newer
//    generation (another writer, or a newer rebuild raced us), the write is skipped.
// HTTPRoutes (writeRouteStatus) follow the same rules for status.parents: the list is rebuilt
// client-side from every other controller's entry exactly as read plus ours (a merge patch replaces
// the list wholesale), and the resourceVersion precondition turns a concurrent writer's change, e.g.
// the status function's own entry, into a 409 and a fresh read instead of a lost entry.
import { ApiException, CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import { HTTPROUTE_GROUP, HTTPROUTE_PLURAL, HTTPROUTE_VERSION, type RouteStatusUpdate, mergeRouteParents, ourObservedGeneration } from './gateway-api';
import { HTTPPROXY_GROUP, HTTPPROXY_PLURAL } from './model';
import { type ProxyStatusUpdate, type StatusWriter, VALID_CONDITION_TYPE, contourStatusSummary, mergeValidCondition } from './status';

const storedObjectSchema = z.object({
  metadata: z.object({ resourceVersion: z.string(), generation: z.number().optional() }),
  status: z.object({ conditions: z.array(z.unknown()).optional() }).passthrough().optional(),
});

const storedRouteSchema = z.object({
  metadata: z.object({ resourceVersion: z.string() }),
  status: z.object({ parents: z.unknown().optional() }).passthrough().optional(),
});

export interface KubeStatusWriterOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  maxConflictRetries?: number;
  now?: () => Date;
}

export class KubeStatusWriter implements StatusWriter {
  private readonly api: CustomObjectsApi;
  private readonly maxConflictRetries: number;
  private readonly now: () => Date;
  /** Number of 409s seen (tests and metrics). */
  conflicts = 0;
  /** Number of successful status patches. */
  patches = 0;

  constructor(private readonly options: KubeStatusWriterOptions) {
    this.api = options.kubeConfig.makeApiClient(CustomObjectsApi);
    this.maxConflictRetries = options.maxConflictRetries ?? 5;
    this.now = options.now ?? (() => new Date());
  }

  async writeProxyStatus(update: ProxyStatusUpdate): Promise<void> {
    const object = `${update.namespace}/${update.name}`;
    const target = { group: HTTPPROXY_GROUP, version: 'v1', namespace: update.namespace, plural: HTTPPROXY_PLURAL, name: update.name };
    await this.patchStatus(target, object, 'object', (read) => {
      const stored = storedObjectSchema.parse(read);
      const existing = stored.status?.conditions ?? [];
      const storedValid = existing.find(
        (c): c is { type: string; observedGeneration?: number } =>
          typeof c === 'object' && c !== null && (c as { type?: unknown }).type === VALID_CONDITION_TYPE,
      );
      if (storedValid?.observedGeneration !== undefined && storedValid.observedGeneration > update.generation) {
        this.options.logger.info({ object, stored: storedValid.observedGeneration, update: update.generation }, 'stored status is newer; skipped');
        return undefined;
      }
      const conditions = mergeValidCondition(existing, update, this.now());
      if (existing.length !== conditions.length - (storedValid ? 0 : 1)) {
        this.options.logger.warn({ object }, 'dropped stored conditions that are not metav1.Conditions');
      }
      return { resourceVersion: stored.metadata.resourceVersion, status: { ...contourStatusSummary(update), conditions } };
    });
  }

  async writeRouteStatus(update: RouteStatusUpdate): Promise<void> {
    const object = `${update.namespace}/${update.name}`;
    if (update.parentRefs.length === 0) return;
    const target = { group: HTTPROUTE_GROUP, version: HTTPROUTE_VERSION, namespace: update.namespace, plural: HTTPROUTE_PLURAL, name: update.name };
    await this.patchStatus(target, object, 'HTTPRoute', (read) => {
      const stored = storedRouteSchema.parse(read);
      const existing = stored.status?.parents ?? [];
      // Never overwrite what we cannot read: the entries of other controllers would be lost.
      if (!Array.isArray(existing) || existing.some((entry) => entry === null || typeof entry !== 'object' || Array.isArray(entry))) {
        this.options.logger.warn({ object }, 'HTTPRoute status.parents is not a list of objects; not overwriting it');
        return undefined;
      }
      const storedGeneration = ourObservedGeneration(existing);
      if (storedGeneration !== undefined && storedGeneration > update.generation) {
        this.options.logger.info({ object, stored: storedGeneration, update: update.generation }, 'stored route status is newer; skipped');
        return undefined;
      }
      const { parents, truncated } = mergeRouteParents(existing, update, this.now());
      if (truncated > 0) this.options.logger.warn({ object, truncated }, 'status.parents is full (32 entries); some parentRefs get no entry of ours');
      return { resourceVersion: stored.metadata.resourceVersion, status: { parents } };
    });
  }

  /**
   * The one read-mutate-write loop of both kinds: read the object, let `mutate` compute the status
   * to write from it (undefined: nothing to write), merge-patch it with the resourceVersion read, and
   * on 409 (someone wrote in between) read again. A deleted object is skipped.
   */
  private async patchStatus(
    target: { group: string; version: string; namespace: string; plural: string; name: string },
    object: string,
    kindName: string,
    mutate: (stored: unknown) => { resourceVersion: string; status: Record<string, unknown> } | undefined,
  ): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      let stored: unknown;
      try {
        stored = await this.api.getNamespacedCustomObjectStatus(target);
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) {
          this.options.logger.info({ object }, `${kindName} deleted before its status was written; skipped`);
          return;
        }
        throw error;
      }
      const next = mutate(stored);
      if (next === undefined) return;
      const body = { metadata: { resourceVersion: next.resourceVersion }, status: next.status };
      try {
        await this.api.patchNamespacedCustomObjectStatus({ ...target, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        this.patches += 1;
        this.options.logger.debug({ object }, `${kindName} status written`);
        return;
      } catch (error) {
        if (error instanceof ApiException && error.code === 409 && attempt < this.maxConflictRetries) {
          this.conflicts += 1;
          continue;
        }
        throw error;
      }
    }
  }
}
