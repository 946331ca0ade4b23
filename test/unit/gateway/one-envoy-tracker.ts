// A tracker with one Envoy on one ADS SotW stream, driven by hand (no relay, no gRPC): the control
// plane's content applied per type, responses sent at the type's current version, and the Envoy's
// requests. What the tracker hands the recorder is collected, state and names-hold relief together.
import pino, { type Logger } from 'pino';
import { encodeVersion, type EnvoyState, type LineageState, type NamesHoldRelief, type RequestClass } from '../../../common/core';
import type { AnyResource } from '../../../common/xds';
import { EnvoyTracker } from '../../../xds-gateway/tracking/envoy-tracker';
import type { Recorder } from '../../../xds-gateway/tracking/recorder';

const STREAM = 's-1';

/** Collects what the tracker enqueues; the tracker itself is synchronous in-memory logic. */
export class CollectingRecorder {
  readonly written: Array<{ state: EnvoyState; relief: NamesHoldRelief | undefined }> = [];
  enqueueEnvoyState(state: EnvoyState, relief?: NamesHoldRelief): void {
    this.written.push({ state, relief });
  }
  enqueueEvent(): void {}
  enqueueLineageState(_state: LineageState): void {}
  forgetEnvoy(): boolean {
    return true;
  }
}

export interface OneEnvoyOptions {
  lineage: string;
  group: string;
  node: string;
  logger?: Logger;
  namesHoldRelief?: boolean;
}

export function oneEnvoyTracker(options: OneEnvoyOptions) {
  const { lineage, group, node } = options;
  let now = 1_000;
  const recorder = new CollectingRecorder();
  const tracker = new EnvoyTracker({
    recorder: recorder as unknown as Recorder,
    logger: options.logger ?? pino({ level: 'silent' }),
    clock: { now: () => now },
    stuckCheckIntervalMs: 3_600_000,
    lineageHeartbeatMs: 3_600_000,
    envoyHeartbeatMs: 3_600_000,
    ...(options.namesHoldRelief === undefined ? {} : { namesHoldRelief: options.namesHoldRelief }),
  });
  let seq = 0;
  const versions = new Map<string, number>();
  const nonces = new Map<string, number>();
  /** The control plane's content of a type changes: the next seq. */
  const apply = (typeUrl: string, resources: Array<{ name: string; resource: AnyResource }>): number => {
    seq += 1;
    versions.set(typeUrl, seq);
    tracker.upstreamApplied({ group, lineage, typeUrl, seq, changed: true, upstreamVersion: `u${seq}`, upstreamEpoch: 1, resources: resources.map(({ name, resource }) => ({ name, value: resource.value as Buffer })), at: now++ });
    return seq;
  };
  const request = (typeUrl: string, classification: RequestClass, names: string[]): void =>
    tracker.requestClassified({ streamId: STREAM, nodeId: node, typeUrl, lineage, classification, resourceNames: names, at: now++ });
  /** The gateway sends the type's current version; returns the nonce. */
  const send = (typeUrl: string): string => {
    const nonce = String((nonces.get(typeUrl) ?? 0) + 1);
    nonces.set(typeUrl, Number(nonce));
    tracker.responseSent({ streamId: STREAM, nodeId: node, typeUrl, version: { lineage, seq: versions.get(typeUrl) ?? 0 }, nonce, resourceCount: 1, at: now++ });
    return nonce;
  };
  const ack = (typeUrl: string, nonce: string, names: string[]): void => request(typeUrl, { kind: 'ack', nonce, version: encodeVersion({ lineage, seq: versions.get(typeUrl) ?? 0 }) }, names);
  const sendAndAck = (typeUrl: string, names: string[]): void => ack(typeUrl, send(typeUrl), names);
  const through = (): number | undefined => tracker.envoyState(node)?.programmedThrough;
  /** First requests of each type with their names, each answered at the current version and ACKed. */
  const subscribeAll = (subscriptions: ReadonlyArray<readonly [string, readonly string[]]>): void => {
    for (const [typeUrl, names] of subscriptions) {
      request(typeUrl, { kind: 'initial', versionInfo: '' }, [...names]);
      sendAndAck(typeUrl, [...names]);
    }
  };
  /** The nonce of the type's latest response. */
  const nonce = (typeUrl: string): string => String(nonces.get(typeUrl) ?? 0);
  /** The latest state handed to the recorder, with its relief. */
  const last = () => recorder.written[recorder.written.length - 1] as { state: EnvoyState; relief: NamesHoldRelief | undefined };
  tracker.streamOpened({ streamId: STREAM, node: { nodeId: node, cluster: group, metadata: {}, locality: {} } as never, group, lineage, protocol: 'sotw', service: 'ads', at: now++ });
  const advance = (ms: number): number => (now += ms);
  return { tracker, recorder, apply, request, send, ack, sendAndAck, through, subscribeAll, nonce, last, advance };
}
