// Drives an EnvoyTracker's synchronous callbacks as the relay would, without gRPC: upstream versions
// applied, Envoys opening ADS SotW streams, responses sent and ACKed. The benches that measure the
// tracker's own work per ACK (tracker-references.ts, ack-path.ts) share it.
import type { EnvoyState, RequestClass } from '../../common/core';
import { encodeVersion } from '../../common/core';
import { packAny, ROUTE_CONFIGURATION_TYPE_URL, type AnyResource } from '../../common/xds';
import type { EnvoyTracker } from '../../xds-gateway/tracking/envoy-tracker';

/** The tracker's recorder port (and the records tee's), counting the states it is handed. */
export class CountingRecorder {
  states = 0;
  enqueueEnvoyState(_state: EnvoyState): void {
    this.states++;
  }
  enqueueEvent(): void {}
  enqueueLineageState(): void {}
  enqueueWatermark(): void {}
  enqueueNotObservable(): void {}
  enqueueRejectedByController(): void {}
  hasQueuedEnvoyState(): boolean {
    return false;
  }
  forgetEnvoy(): boolean {
    return true;
  }
}

/** One route configuration naming every cluster (one virtual host each, matching `prefix`). */
export function routesNaming(clusters: readonly string[], prefix = '/'): AnyResource {
  return packAny(ROUTE_CONFIGURATION_TYPE_URL, {
    name: 'routes',
    virtual_hosts: clusters.map((cluster, index) => ({ name: `host-${index}`, domains: [`host-${index}.example.com`], routes: [{ match: { prefix }, route: { cluster } }] })),
  });
}

export function namedResources(names: readonly string[], make: (name: string) => AnyResource): Array<{ name: string; resource: AnyResource }> {
  return names.map((name) => ({ name, resource: make(name) }));
}

export class TrackerDriver {
  /** ACKs sent so far. */
  acks = 0;
  private seq = 0;
  private readonly versions = new Map<string, number>();
  private readonly nonces = new Map<string, number>();

  constructor(
    private readonly tracker: EnvoyTracker,
    private readonly lineage: string,
    private readonly clock: { now: number },
  ) {}

  /** The latest seq applied. */
  get latestSeq(): number {
    return this.seq;
  }

  /** The control plane's new version of `typeUrl`; `report` false hides the resources (nothing is known to reference anything). */
  apply(typeUrl: string, resources: ReadonlyArray<{ name: string; resource: AnyResource }>, report = true): void {
    this.seq += 1;
    this.versions.set(typeUrl, this.seq);
    const reported = report ? resources.map(({ name, resource }) => ({ name, value: resource.value as Buffer })) : [];
    this.tracker.upstreamApplied({ group: 'edge', lineage: this.lineage, typeUrl, seq: this.seq, changed: true, upstreamVersion: `u${this.seq}`, upstreamEpoch: 1, resources: reported, at: this.clock.now++ });
  }

  /** An Envoy's ADS SotW stream opens (stream id = node id) and subscribes to each type: initial request, response, ACK. */
  open(id: string, subscriptions: ReadonlyArray<readonly [string, readonly string[]]>): void {
    this.tracker.streamOpened({ streamId: id, node: { nodeId: id, cluster: 'edge', metadata: {}, locality: {} } as never, group: 'edge', lineage: this.lineage, protocol: 'sotw', service: 'ads', at: this.clock.now++ });
    for (const [typeUrl, names] of subscriptions) {
      this.request(id, typeUrl, { kind: 'initial', versionInfo: '' }, names);
      this.sendAndAck(id, typeUrl, names);
    }
  }

  request(id: string, typeUrl: string, classification: RequestClass, names: readonly string[]): void {
    this.tracker.requestClassified({ streamId: id, nodeId: id, typeUrl, lineage: this.lineage, classification, resourceNames: names, at: this.clock.now++ });
  }

  /** The latest version of `typeUrl` sent to the Envoy, and its ACK. */
  sendAndAck(id: string, typeUrl: string, names: readonly string[]): void {
    const key = `${id}|${typeUrl}`;
    const nonce = String((this.nonces.get(key) ?? 0) + 1);
    this.nonces.set(key, Number(nonce));
    const version = { lineage: this.lineage, seq: this.versions.get(typeUrl) ?? 0 };
    this.tracker.responseSent({ streamId: id, nodeId: id, typeUrl, version, nonce, resourceCount: 1, at: this.clock.now++ });
    this.request(id, typeUrl, { kind: 'ack', nonce, version: encodeVersion(version) }, names);
    this.acks++;
  }

  /** The nonce of the last response of `typeUrl` sent to the Envoy. */
  lastNonce(id: string, typeUrl: string): string {
    return String(this.nonces.get(`${id}|${typeUrl}`) ?? 0);
  }
}
