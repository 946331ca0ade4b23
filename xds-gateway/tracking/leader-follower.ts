// Follows the control plane's status writer (docs/GATEWAY.md, "Watermarks"): the barrier is only sound against the
// replica that writes status, which is the holder of the control plane's leader-election Lease
// (Contour: `leader-elect` Lease; the reference control plane writes its replica id as
// `spec.holderIdentity`, infra/local/control-plane/kube-lease-elector.ts). We watch that Lease
// (read-only), map the holder to an upstream address, point the relay there, and bump an epoch so
// barriers that raced with the change are re-done. The watch can be behind the object watches the
// barrier reacts to, so the barrier also asks for a fresh read (`confirm`); observations of the Lease
// from either path are applied only if newer than the last one applied (resourceVersion), so a
// late watch event never takes the gateway back to a former leader.
// Pointing the relay at another replica moves every node group to a new lineage (relay.ts,
// setUpstreamTarget): the new leader may be behind, and its content must never be relayed at higher
// seqs of a lineage whose watermarks the old leader's content earned (docs/PROVENANCE.md §6).
import { CoordinationV1Api, makeInformer, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RelayControl } from '../relay/observer';
import type { LeaderView } from './barrier';

export interface LeaderTargetMapping {
  /**
   * A Lease annotation in which the holder advertises its xDS address (the reference control plane
   * writes `xds-programmed.dev/xds-address`). Checked first: it cannot go stale against the holder.
   */
  annotation?: string;
  /** Holder → `host:port`; a controller-runtime holder (`<pod>_<uuid>`) also matches its pod name. */
  targets?: Record<string, string>;
  /**
   * `{holder}` is replaced by the holder identity (the pod name of a controller-runtime holder),
   * e.g. `{holder}.contour.projectcontour.svc:8001`.
   */
  template?: string;
}

/**
 * controller-runtime's leader election (Contour's `leader-elect` Lease) writes `<hostname>_<uuid>`
 * as the holder: the hostname is the pod name, the UUID is new with every process start, so no
 * configuration can name the holder exactly. Such a holder is also matched by its hostname part.
 */
const CONTROLLER_RUNTIME_HOLDER = /^(.+)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The pod name (hostname) in a controller-runtime holder identity, or undefined for other holders. */
export function holderHostname(holder: string): string | undefined {
  return CONTROLLER_RUNTIME_HOLDER.exec(holder)?.[1];
}

/** The upstream address for a Lease holder, or undefined if the mapping does not know it. */
export function targetForHolder(holder: string, mapping: LeaderTargetMapping, annotations: Record<string, string> = {}): string | undefined {
  if (holder === '') return undefined;
  const advertised = mapping.annotation === undefined ? undefined : annotations[mapping.annotation];
  if (advertised !== undefined && advertised !== '') return advertised;
  const hostname = holderHostname(holder);
  const exact = mapping.targets?.[holder] ?? (hostname === undefined ? undefined : mapping.targets?.[hostname]);
  if (exact !== undefined) return exact;
  return mapping.template?.replaceAll('{holder}', hostname ?? holder);
}

export interface LeaderFollowerOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  leaseName: string;
  mapping: LeaderTargetMapping;
  relay: Pick<RelayControl, 'setUpstreamTarget'>;
  logger: Logger;
  /** Restart the watch this long after an error. */
  restartMs?: number;
}

export class LeaderFollower implements LeaderView {
  private holder = '';
  private target: string | undefined;
  private currentEpoch = 0;
  private readonly listeners: Array<() => void> = [];
  private informer: ReturnType<typeof makeInformer<V1Lease>> | undefined;
  private api: CoordinationV1Api | undefined;
  /** resourceVersion of the last Lease observation applied (watch or read). */
  private appliedVersion: string | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: LeaderFollowerOptions) {}

  epoch(): number {
    return this.currentEpoch;
  }

  trusted(): boolean {
    return this.target !== undefined;
  }

  currentHolder(): string {
    return this.holder;
  }

  currentTarget(): string | undefined {
    return this.target;
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    const { kubeConfig, namespace } = this.options;
    const api = kubeConfig.makeApiClient(CoordinationV1Api);
    this.api = api;
    // client-node 1.4 informers take no field selector: watch the namespace's Leases, use ours.
    const informer = makeInformer<V1Lease>(kubeConfig, `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, () =>
      api.listNamespacedLease({ namespace }),
    );
    this.informer = informer;
    for (const verb of ['add', 'update'] as const) informer.on(verb, (lease) => this.leaseSeen(lease));
    informer.on('delete', (lease) => {
      if (lease.metadata?.name === this.options.leaseName && this.newer(lease)) this.holderChanged('', {});
    });
    informer.on('error', (error: unknown) => {
      if (this.stopped) return;
      this.options.logger.warn({ err: String(error) }, 'lease watch failed; restarting');
      this.restartTimer = setTimeout(() => {
        if (!this.stopped) void informer.start().catch(() => undefined);
      }, this.options.restartMs ?? 1000);
    });
    await informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    await this.informer?.stop();
  }

  async confirm(): Promise<void> {
    if (this.api === undefined) throw new Error('the leader follower has not started');
    const { namespace, leaseName } = this.options;
    // A list without resourceVersion is a consistent read (the apiserver serves it at etcd's current
    // revision), unlike the watch; list (not get) keeps the gateway's Lease RBAC to list/watch.
    const found = await this.api.listNamespacedLease({ namespace, fieldSelector: `metadata.name=${leaseName}` });
    const lease = found.items.find((item) => item.metadata?.name === leaseName);
    if (lease !== undefined) this.leaseSeen(lease);
    else if (this.holder !== '') this.holderChanged('', {});
  }

  /** Whether `lease` is newer than the last observation applied; records it if so. */
  private newer(lease: V1Lease): boolean {
    const version = lease.metadata?.resourceVersion;
    if (version === undefined) return true;
    const applied = this.appliedVersion;
    // resourceVersions are etcd revisions in every apiserver; if one is not a number, do not guess.
    if (applied !== undefined && /^\d+$/.test(applied) && /^\d+$/.test(version) && BigInt(version) < BigInt(applied)) return false;
    this.appliedVersion = version;
    return true;
  }

  private leaseSeen(lease: V1Lease): void {
    if (lease.metadata?.name !== this.options.leaseName) return;
    if (!this.newer(lease)) {
      this.options.logger.debug({ resourceVersion: lease.metadata?.resourceVersion, applied: this.appliedVersion }, 'an older Lease observation arrived late; ignored');
      return;
    }
    this.holderChanged(lease.spec?.holderIdentity ?? '', lease.metadata?.annotations ?? {});
  }

  private holderChanged(holder: string, annotations: Record<string, string>): void {
    const target = targetForHolder(holder, this.options.mapping, annotations);
    if (holder === this.holder && target === this.target) return;
    this.holder = holder;
    this.currentEpoch++;
    if (holder === '') {
      // Released (leader stepping down) or deleted: nobody writes status; keep serving from the old
      // target, but trust no barrier until a new holder appears.
      this.target = undefined;
      this.options.logger.info({ lease: this.options.leaseName }, 'control plane lease has no holder; barriers paused');
    } else if (target === undefined) {
      this.target = undefined;
      this.options.logger.error({ holder }, 'no upstream target is configured for the lease holder; barriers paused');
    } else {
      this.target = target;
      this.options.logger.info({ holder, target }, 'following the control plane leader');
      this.options.relay.setUpstreamTarget(target);
    }
    for (const listener of this.listeners) listener();
  }
}
