// Read-only informers on the tracked kinds: every add/update goes to the barrier with the kind's
// "processed" signal, and its spec to NACK attribution's ownership; deletes are forgotten. A failed
// watch is restarted (client-node informers stop on error); a malformed object is logged and skipped.
import { CustomObjectsApi, makeInformer, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ObservedGenerationBarrier } from './barrier';
import type { ObjectOwnership } from './nack-attribution';
import { kindPath, observeObject, type TrackedKind } from './tracked-kinds';

export interface ObjectWatcherOptions {
  kubeConfig: KubeConfig;
  kinds: readonly TrackedKind[];
  barrier: Pick<ObservedGenerationBarrier, 'observe' | 'forget'>;
  /** Told every object's spec, so NACKs can be blamed on the objects owning the rejected resources. */
  ownership?: Pick<ObjectOwnership, 'observe' | 'forget'>;
  logger: Logger;
  restartMs?: number;
}

export class ObjectWatcher {
  private readonly informers: Array<ReturnType<typeof makeInformer<KubernetesObject>>> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly options: ObjectWatcherOptions) {}

  async start(): Promise<void> {
    const custom = this.options.kubeConfig.makeApiClient(CustomObjectsApi);
    for (const kind of this.options.kinds) {
      const informer = makeInformer<KubernetesObject>(
        this.options.kubeConfig,
        kindPath(kind),
        () => custom.listClusterCustomObject({ group: kind.group, version: kind.version, plural: kind.plural }) as Promise<KubernetesListObject<KubernetesObject>>,
      );
      const seen = (object: KubernetesObject): void => {
        const observed = observeObject(kind, object);
        if (observed === undefined) {
          this.options.logger.warn({ kind: kind.kind, name: object.metadata?.name }, 'tracked object without name or generation; skipped');
          return;
        }
        this.options.ownership?.observe(kind, observed.ref, object);
        this.options.barrier.observe(observed, kind.signal);
      };
      informer.on('add', seen);
      informer.on('update', seen);
      informer.on('delete', (object) => {
        const observed = observeObject(kind, object);
        if (observed === undefined) return;
        this.options.ownership?.forget(observed.ref);
        this.options.barrier.forget(observed.ref);
      });
      informer.on('error', (error: unknown) => {
        if (this.stopped) return;
        this.options.logger.warn({ kind: kind.kind, err: String(error) }, 'watch failed; restarting');
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (!this.stopped) void informer.start().catch(() => undefined);
        }, this.options.restartMs ?? 1000);
        this.timers.add(timer);
      });
      this.informers.push(informer);
      await informer.start();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    for (const informer of this.informers) await informer.stop();
  }
}
