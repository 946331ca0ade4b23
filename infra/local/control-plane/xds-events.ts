// What the xDS server observed, per stream: requests classified the way the xDS protocol defines them
// (initial / ACK / NACK / stale nonce) and every response it sent. Tests and the truth checker read
// this to verify, e.g., that an ACK carried the version we sent and that a NACK was not answered by a
// resend. Callbacks are synchronous and must not throw (a throwing callback is logged and ignored).
import type { ResourceTypeUrl } from '../../../common/xds/type-urls';

export type XdsProtocol = 'sotw' | 'delta';
export type XdsServiceKind = 'ads' | 'per-type';

export interface XdsStreamInfo {
  streamId: number;
  protocol: XdsProtocol;
  service: XdsServiceKind;
  /** `node.id` from the first request that carried one (grpc-js-xds sends node only once). */
  nodeId: string | undefined;
  nodeCluster: string | undefined;
}

export type XdsRequestKind = 'initial' | 'ack' | 'nack' | 'stale' | 'subscription';

export type XdsEvent =
  | {
      event: 'request';
      stream: XdsStreamInfo;
      typeUrl: ResourceTypeUrl;
      kind: XdsRequestKind;
      /** SotW: the request's version_info. Delta: the system version of the response this nonce answered. */
      version: string;
      nonce: string;
      resourceNames: readonly string[];
      errorMessage?: string;
    }
  | {
      event: 'response';
      stream: XdsStreamInfo;
      typeUrl: ResourceTypeUrl;
      version: string;
      nonce: string;
      resourceNames: readonly string[];
      removedResources: string[];
    }
  | { event: 'stream-open' | 'stream-closed'; stream: XdsStreamInfo }
  | { event: 'stream-error'; stream: XdsStreamInfo; code: number; details: string };

export type XdsEventListener = (event: XdsEvent) => void;

/** Bounded in-memory record of events (oldest dropped first, keeping at least `capacity`). */
export class XdsEventLog {
  private readonly events: XdsEvent[] = [];
  constructor(private readonly capacity = 100_000) {}

  readonly record: XdsEventListener = (event) => {
    this.events.push(event);
    // Trim in chunks (10% of capacity) so recording stays O(1) amortized.
    if (this.events.length > this.capacity * 1.1) this.events.splice(0, this.events.length - this.capacity);
  };

  all(): readonly XdsEvent[] {
    return this.events;
  }

  clear(): void {
    this.events.length = 0;
  }
}
