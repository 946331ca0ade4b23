// Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection rules:
//  - the holder renews `renewTime` every `retryPeriodMs`; others try to acquire on the same period;
//  - a lease is expired when its record (holder, renewTime) has not changed for leaseDurationSeconds of
//    *our* clock since we first observed it (client-go compares observed time, not the remote renewTime,
//    so clock skew between replicas does not matter);
//  - every write is a replace carrying the resourceVersion we read: a concurrent writer gets 409 and
//    loses that round (optimistic concurrency, no lost update);
//  - a leader that cannot renew within renewDeadlineMs steps down; on stop it releases the lease
//    (holderIdentity cleared, leaseDurationSeconds 1) so a successor need not wait for expiry
//    (client-go's ReleaseOnCancel), unless told not to (a crashed pod releases nothing: the Lease
//    expires);
//  - an elector can be started again after stop(): it forgets what it observed and competes afresh,
//    like a new process (client-go builds a new LeaderElector per run; the seam lets tests and the
//    truth checker model a pod that lost leadership and came back).
import { ApiException, CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { LeaderElector } from './leader-election';

/**
 * Annotation the holder writes on the Lease with its xDS address, so a gateway that must follow the
 * status writer (design brief §3.3, observed-generation barrier) can find it from the Lease alone
 * (Contour's holderIdentity is a pod name, which the gateway would resolve instead).
 */
export const XDS_ADDRESS_ANNOTATION = 'xds-programmed.dev/xds-address';

/**
 * The three Lease calls the elector makes. The default is the Kubernetes API; a wrapper can inject
 * API-server errors on one replica's calls (the truth checker's leader step-down: renewals fail, the
 * leader steps down at its renew deadline and another replica takes over once the Lease expires).
 * Failures must be thrown as `ApiException` (404 on read means "no Lease", 409 on write a lost race).
 */
export interface LeaseClient {
  read(namespace: string, name: string): Promise<V1Lease>;
  create(namespace: string, body: V1Lease): Promise<V1Lease>;
  replace(namespace: string, name: string, body: V1Lease): Promise<V1Lease>;
}

export function kubeLeaseClient(kubeConfig: KubeConfig): LeaseClient {
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  return {
    read: (namespace, name) => api.readNamespacedLease({ name, namespace }),
    create: (namespace, body) => api.createNamespacedLease({ namespace, body }),
    replace: (namespace, name, body) => api.replaceNamespacedLease({ name, namespace, body }),
  };
}

export interface KubeLeaseElectorOptions {
  kubeConfig: KubeConfig;
  /** Replaces the API client built from `kubeConfig` (fault injection). */
  leaseClient?: LeaseClient;
  namespace: string;
  leaseName: string;
  identity: string;
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  logger: Logger;
  now?: () => number;
}

export class KubeLeaseElector implements LeaderElector {
  private readonly api: LeaseClient;
  private readonly leaseDurationSeconds: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly now: () => number;
  private readonly listeners: Array<(leader: boolean) => void> = [];
  private leader = false;
  private lastRenewAt = 0;
  private observedRecord = '';
  private observedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private active = false;
  private advertisedAddress: string | undefined;

  constructor(private readonly options: KubeLeaseElectorOptions) {
    this.api = options.leaseClient ?? kubeLeaseClient(options.kubeConfig);
    this.leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.now = options.now ?? Date.now;
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** The xDS address written in the Lease annotation while this replica holds it. */
  advertise(address: string): void {
    this.advertisedAddress = address;
  }

  private annotated(metadata: V1Lease['metadata']): V1Lease['metadata'] {
    if (this.advertisedAddress === undefined) return metadata;
    return { ...metadata, annotations: { ...(metadata?.annotations ?? {}), [XDS_ADDRESS_ANNOTATION]: this.advertisedAddress } };
  }

  onLeadershipChange(listener: (leader: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Runs the first attempt now, then every retry period. Also restarts an elector after stop(). */
  async start(): Promise<void> {
    if (this.active) return; // already running: never two retry loops
    this.active = true;
    this.stopped = false;
    // A fresh start knows nothing: expiry is judged from what this run observes (client-go's
    // observedTime starts at zero in a new elector), never from before the stop.
    this.observedRecord = '';
    this.observedAt = 0;
    this.lastRenewAt = 0;
    await this.tick();
  }

  /**
   * Stops trying. If held, the Lease is released (holder cleared) so a successor takes over at its
   * next attempt; with `release: false` it is left as is and expires (a crashed replica).
   */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.active = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    if (this.leader && options.release === false) {
      this.setLeader(false);
    } else if (this.leader) {
      try {
        const lease = await this.read();
        if (lease?.spec?.holderIdentity === this.options.identity) {
          await this.api.replace(this.options.namespace, this.options.leaseName, {
            ...lease,
            spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new Date(this.now()) },
          });
        }
      } catch (error) {
        this.options.logger.warn({ err: error }, 'could not release the lease; it will expire');
      }
      this.setLeader(false);
    }
  }

  private tick(): Promise<void> {
    this.running = this.tryAcquireOrRenew()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'leader election attempt failed'))
      .finally(() => {
        if (this.leader && this.now() - this.lastRenewAt > this.renewDeadlineMs) {
          this.options.logger.warn('could not renew the lease within the renew deadline; stepping down');
          this.setLeader(false);
        }
        if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.retryPeriodMs);
      });
    return this.running;
  }

  private async read(): Promise<V1Lease | undefined> {
    try {
      return await this.api.read(this.options.namespace, this.options.leaseName);
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  private async tryAcquireOrRenew(): Promise<void> {
    if (this.stopped) return;
    const { identity, leaseName, namespace } = this.options;
    const nowMs = this.now();
    const lease = await this.read();
    if (lease === undefined) {
      const body: V1Lease = {
        metadata: this.annotated({ name: leaseName, namespace }),
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: this.leaseDurationSeconds,
          acquireTime: new Date(nowMs),
          renewTime: new Date(nowMs),
          leaseTransitions: 0,
        },
      };
      try {
        await this.api.create(namespace, body);
      } catch (error) {
        if (error instanceof ApiException && error.code === 409) return; // someone else created it first
        throw error;
      }
      this.renewed(nowMs);
      return;
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}|${spec.renewTime ? new Date(spec.renewTime).toISOString() : ''}`;
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = nowMs;
    }
    const durationMs = (spec.leaseDurationSeconds ?? this.leaseDurationSeconds) * 1000;
    const heldByOther = holder !== '' && holder !== identity;
    if (heldByOther && nowMs < this.observedAt + durationMs) {
      this.setLeader(false);
      return;
    }
    const takingOver = holder !== identity;
    const body: V1Lease = {
      ...lease,
      metadata: this.annotated(lease.metadata),
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: this.leaseDurationSeconds,
        renewTime: new Date(nowMs),
        ...(takingOver ? { acquireTime: new Date(nowMs), leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
      },
    };
    try {
      // `lease.metadata.resourceVersion` is sent back: a concurrent write makes this a 409.
      await this.api.replace(namespace, leaseName, body);
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) {
        this.options.logger.debug('lease changed while we wrote it; retrying next period');
        return;
      }
      throw error;
    }
    this.renewed(nowMs);
  }

  private renewed(at: number): void {
    this.lastRenewAt = at;
    this.setLeader(true);
  }

  private setLeader(leader: boolean): void {
    if (leader === this.leader) return;
    this.leader = leader;
    this.options.logger.info({ identity: this.options.identity, leader }, 'leadership changed');
    for (const listener of this.listeners) listener(leader);
  }
}
