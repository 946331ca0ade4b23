// Stream admission's side of the recorder (docs/GATEWAY.md, "Stream admission"): per node, how many
// states were enqueued, the enqueue count of the last one written, and who waits for a write. A
// written state is counted by its lineage's stored `envoysRecorded` (write-ahead: denominator.ts), so
// the relay waits on whenWritten before a new stream's first response: no Envoy ever holds config from
// a lineage whose count leaves it out (invariant 1 at start-up).

/** whenStateWritten's rejection: the node's state can never be stored (the reason names what is wrong). */
export class UnrecordableEnvoyError extends Error {
  override readonly name = 'UnrecordableEnvoyError';
}

interface StateWaiter {
  target: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class StateAdmission {
  private readonly enqueues = new Map<string, number>();
  private readonly written = new Map<string, number>();
  private readonly waiters = new Map<string, StateWaiter[]>();

  /** A state of the node was enqueued. */
  noteEnqueued(nodeId: string): void {
    this.enqueues.set(nodeId, (this.enqueues.get(nodeId) ?? 0) + 1);
  }

  /** The node's enqueue count now: what a write of its queued state confirms (noteWritten). */
  enqueueCount(nodeId: string): number {
    return this.enqueues.get(nodeId) ?? 0;
  }

  /**
   * Resolves once a state of `nodeId` enqueued no earlier than this call is durably written (the
   * latest one queued now, or a later one that superseded it). Rejects only with
   * UnrecordableEnvoyError (the state can never be stored: the stream must end, it never gets config);
   * pending waiters are dropped when the recorder is closed (the relay ends its streams).
   */
  whenWritten(nodeId: string): Promise<void> {
    const target = this.enqueues.get(nodeId) ?? 0;
    const written = this.written.get(nodeId) ?? 0;
    if (target === 0 || written >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiters = this.waiters.get(nodeId) ?? [];
      waiters.push({ target, resolve, reject });
      this.waiters.set(nodeId, waiters);
    });
  }

  /** The node's state taken at enqueue count `enqueued` is written (undefined: not a queued state). */
  noteWritten(nodeId: string, enqueued: number | undefined): void {
    if (enqueued === undefined) return;
    const written = Math.max(this.written.get(nodeId) ?? 0, enqueued);
    this.written.set(nodeId, written);
    const waiters = this.waiters.get(nodeId);
    if (waiters === undefined) return;
    const due = waiters.filter((waiter) => waiter.target <= written);
    const left = waiters.filter((waiter) => waiter.target > written);
    if (left.length === 0) this.waiters.delete(nodeId);
    else this.waiters.set(nodeId, left);
    for (const waiter of due) waiter.resolve();
  }

  /** The node's state can never be stored: every waiter is rejected with the reason. */
  refuse(nodeId: string, reason: string): void {
    const waiters = this.waiters.get(nodeId) ?? [];
    this.waiters.delete(nodeId);
    for (const waiter of waiters) waiter.reject(new UnrecordableEnvoyError(reason));
  }

  /** A stream admission waits for the node's state (its state is urgent). */
  isAwaited(nodeId: string): boolean {
    return this.waiters.has(nodeId);
  }

  /** Forgets the node's counters (Recorder.forgetEnvoy; only while nobody waits). */
  forget(nodeId: string): void {
    this.enqueues.delete(nodeId);
    this.written.delete(nodeId);
  }
}
