// Leader election port. Only the leader writes status (Contour: "only the leader writes status";
// every replica serves xDS). The Kubernetes implementation is in kube-lease-elector.ts.
export interface LeaderElector {
  isLeader(): boolean;
  /** Called on every change of leadership of this replica. */
  onLeadershipChange(listener: (leader: boolean) => void): void;
}

/** Fixed leadership, for single-replica runs and tests. */
export class StaticLeaderElector implements LeaderElector {
  private readonly listeners: Array<(leader: boolean) => void> = [];
  constructor(private leader: boolean) {}

  isLeader(): boolean {
    return this.leader;
  }

  onLeadershipChange(listener: (leader: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Changes leadership (tests: simulate a failover). */
  set(leader: boolean): void {
    if (leader === this.leader) return;
    this.leader = leader;
    for (const listener of this.listeners) listener(leader);
  }
}
