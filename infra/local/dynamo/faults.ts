// The fault seam of the front: makes requests fail the way DynamoDB fails, so the SDK's own retry
// logic runs. Default: no faults. `unreachable` is the one fault that is not a DynamoDB reply: the
// endpoint is gone (a network partition, a regional outage), so every connection is reset and the
// table's stream delivery pauses (docs/LOCAL-DYNAMO.md, "Faults").

export interface FaultSettings {
  /** Fraction of requests answered 400 ProvisionedThroughputExceededException (not applied). */
  throttleRate?: number;
  /** Fraction of requests answered 500 InternalServerError (not applied). */
  errorRate?: number;
  /**
   * Fraction of *write* requests that are applied (and streamed) but answered 500 anyway: the
   * ambiguous outcome a real client sees when a response is lost. The SDK retries, so the write is
   * applied twice; idempotent writers must not double-count.
   */
  errorAfterWriteRate?: number;
  /**
   * Fraction of BatchWriteItem requests that apply only some of their items and return the rest in
   * UnprocessedItems (each item left out with probability 1/2), as DynamoDB does when a batch is
   * partly throttled. The SDK does not retry these; the caller must. If every item would be left
   * out, the request is throttled instead, as DynamoDB does.
   */
  unprocessedRate?: number;
  /** Delay added before forwarding each request. */
  latencyMs?: number;
  /** Seed of the deterministic random source deciding which requests fail. */
  seed?: number;
  /** Only these operations are faulted (default: all). */
  operations?: string[];
  /**
   * The endpoint is unreachable: every connection to the front is reset (open ones at once, new ones
   * as they arrive), so clients see ECONNRESET, not a DynamoDB error reply, and no request reaches
   * dynalite; stream delivery pauses (records stay in the change log, as DynamoDB Streams keep them
   * 24 hours) and resumes when this ends. Applies to every operation, whatever `operations` says,
   * and wins over the hook.
   */
  unreachable?: boolean;
}

export type FaultDecision = 'throttle' | 'error' | 'errorAfterWrite' | 'unprocessed' | 'unreachable' | 'none';

export interface FaultRequest {
  operation: string;
  tableNames: string[];
}

/** A per-request hook; when set it decides instead of the rates. */
export type FaultHook = (request: FaultRequest) => FaultDecision;

export interface DynamoErrorReply {
  status: number;
  body: { __type: string; message: string };
}

// Error shapes as the DynamoDB JSON protocol returns them (`__type` namespace + name); the SDK maps
// ProvisionedThroughputExceededException to a throttling retry and any 5xx to a transient retry.
export const THROTTLE_REPLY: DynamoErrorReply = {
  status: 400,
  body: {
    __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message:
      'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
  },
};

export const INTERNAL_ERROR_REPLY: DynamoErrorReply = {
  status: 500,
  body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal server error' },
};

export interface FaultCounts {
  throttled: number;
  errored: number;
  erroredAfterWrite: number;
  /** Items returned in UnprocessedItems. */
  unprocessedItems: number;
  /** Connections reset while unreachable (open ones when it began, and each new one). */
  resetConnections: number;
}

export class FaultSeam {
  private settings: FaultSettings = {};
  private hook: FaultHook | undefined;
  private random: () => number = mulberry32(1);
  readonly counts: FaultCounts = { throttled: 0, errored: 0, erroredAfterWrite: 0, unprocessedItems: 0, resetConnections: 0 };
  private readonly unreachableListeners = new Set<(unreachable: boolean) => void>();

  set(settings: FaultSettings): void {
    for (const [name, rate] of Object.entries({ ...settings })) {
      if (name.endsWith('Rate') && (typeof rate !== 'number' || rate < 0 || rate > 1)) {
        throw new Error(`fault ${name} must be a number in [0, 1], got ${String(rate)}`);
      }
    }
    const wasUnreachable = this.unreachable;
    this.settings = { ...settings };
    this.random = mulberry32(settings.seed ?? 1);
    this.notifyIfChanged(wasUnreachable);
  }

  setHook(hook: FaultHook | undefined): void {
    this.hook = hook;
  }

  /** Back to no faults. */
  clear(): void {
    const wasUnreachable = this.unreachable;
    this.settings = {};
    this.hook = undefined;
    this.notifyIfChanged(wasUnreachable);
  }

  get latencyMs(): number {
    return this.settings.latencyMs ?? 0;
  }

  /** Whether the endpoint is unreachable now (FaultSettings.unreachable). */
  get unreachable(): boolean {
    return this.settings.unreachable === true;
  }

  /**
   * Called whenever `unreachable` turns on or off (by set or clear): the front resets its open
   * connections, the local DynamoDB pauses or resumes stream delivery. Returns the unsubscribe.
   */
  onUnreachableChange(listener: (unreachable: boolean) => void): () => void {
    this.unreachableListeners.add(listener);
    return () => this.unreachableListeners.delete(listener);
  }

  decide(request: FaultRequest, isWrite: boolean): FaultDecision {
    const decision = this.pick(request, isWrite);
    if (decision === 'throttle') this.counts.throttled++;
    if (decision === 'error') this.counts.errored++;
    if (decision === 'errorAfterWrite') this.counts.erroredAfterWrite++;
    return decision;
  }

  /** For an 'unprocessed' decision: whether to leave the next item out (seeded, p = 1/2). */
  leaveItemOut(): boolean {
    const out = this.random() < 0.5;
    if (out) this.counts.unprocessedItems++;
    return out;
  }

  private notifyIfChanged(wasUnreachable: boolean): void {
    if (this.unreachable === wasUnreachable) return;
    for (const listener of [...this.unreachableListeners]) listener(this.unreachable);
  }

  private pick(request: FaultRequest, isWrite: boolean): FaultDecision {
    if (this.unreachable) return 'unreachable';
    if (this.hook) return this.hook(request);
    const s = this.settings;
    if (s.operations && !s.operations.includes(request.operation)) return 'none';
    if (s.throttleRate && this.random() < s.throttleRate) return 'throttle';
    if (s.errorRate && this.random() < s.errorRate) return 'error';
    if (isWrite && s.errorAfterWriteRate && this.random() < s.errorAfterWriteRate) return 'errorAfterWrite';
    if (request.operation === 'BatchWriteItem' && s.unprocessedRate && this.random() < s.unprocessedRate) return 'unprocessed';
    return 'none';
  }
}

/** Small seeded PRNG (mulberry32) so a fault run can be replayed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
