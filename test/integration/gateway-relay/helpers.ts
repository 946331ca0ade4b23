// Fixtures for the relay tests: a recording observer, the reference control plane with an in-memory
// route source, and a relay in front of it.
import pino from 'pino';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { XdsEvent } from '../../../infra/local/control-plane/xds-events';
import {
  startRelay,
  type Relay,
  type RelayObserver,
  type RelayOptions,
  type RequestClassifiedEvent,
  type ResponseSentEvent,
  type StreamClosedEvent,
  type StreamOpenedEvent,
  type UpstreamAppliedEvent,
  type UpstreamStateEvent,
} from '../../../xds-gateway/relay';
import { eventually as pollEventually } from '../../support/eventually';

export const testLogger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

export type Recorded =
  | ({ event: 'streamOpened' } & StreamOpenedEvent)
  | ({ event: 'requestClassified' } & RequestClassifiedEvent)
  | ({ event: 'responseSent' } & ResponseSentEvent)
  | ({ event: 'streamClosed' } & StreamClosedEvent)
  | ({ event: 'upstreamApplied' } & UpstreamAppliedEvent)
  | ({ event: 'upstreamState' } & UpstreamStateEvent);

/** Records every callback, in order. */
export class RecordingObserver implements RelayObserver {
  readonly events: Recorded[] = [];
  streamOpened(e: StreamOpenedEvent): void {
    this.events.push({ event: 'streamOpened', ...e });
  }
  requestClassified(e: RequestClassifiedEvent): void {
    this.events.push({ event: 'requestClassified', ...e });
  }
  responseSent(e: ResponseSentEvent): void {
    this.events.push({ event: 'responseSent', ...e });
  }
  streamClosed(e: StreamClosedEvent): void {
    this.events.push({ event: 'streamClosed', ...e });
  }
  upstreamApplied(e: UpstreamAppliedEvent): void {
    this.events.push({ event: 'upstreamApplied', ...e });
  }
  upstreamState(e: UpstreamStateEvent): void {
    this.events.push({ event: 'upstreamState', ...e });
  }
  of<K extends Recorded['event']>(kind: K): Extract<Recorded, { event: K }>[] {
    return this.events.filter((e): e is Extract<Recorded, { event: K }> => e.event === kind);
  }
  requests(nodeId: string, typeUrl?: string): RequestClassifiedEvent[] {
    return this.of('requestClassified').filter((e) => e.nodeId === nodeId && (typeUrl === undefined || e.typeUrl === typeUrl));
  }
  responses(nodeId: string, typeUrl?: string): ResponseSentEvent[] {
    return this.of('responseSent').filter((e) => e.nodeId === nodeId && (typeUrl === undefined || e.typeUrl === typeUrl));
  }
}

export function httpProxy(name: string, fqdn: string, port: number, annotations?: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: { virtualhost: { fqdn }, routes: [{ services: [{ name, port }] }] },
  };
}

export function endpointsOf(name: string, ip: string, port: number): Record<string, unknown> {
  return { metadata: { name, namespace: 'default' }, subsets: [{ addresses: [{ ip }], ports: [{ port }] }] };
}

export async function startTestControlPlane(source: InMemoryRouteSource, extra: Partial<ControlPlaneOptions> = {}): Promise<ControlPlane> {
  return startControlPlane({ port: 0, replicaId: 'cp-relay-test', source, holdoffMs: 10, holdoffMaxMs: 50, logger: testLogger, ...extra });
}

export function newSource(port = 8080): InMemoryRouteSource {
  const source = new InMemoryRouteSource();
  source.applyEndpoints(endpointsOf('app', '10.0.0.1', port));
  source.applyProxy(httpProxy('app', 'app.example.com', port));
  return source;
}

export async function startTestRelay(
  target: string,
  observer: RelayObserver,
  extra: Partial<Omit<RelayOptions, 'upstream' | 'limits'>> & { upstream?: Partial<RelayOptions['upstream']>; limits?: Partial<RelayOptions['limits']> } = {},
): Promise<Relay> {
  const { upstream, limits, ...rest } = extra;
  return startRelay({
    listen: { host: '127.0.0.1', port: 0 },
    instanceId: 'gw-test',
    bootId: 'boot-1',
    clock: { now: () => Date.now() },
    logger: testLogger,
    observer,
    ...rest,
    upstream: { target, ads: true, backoff: { initialMs: 50, maxMs: 500 }, ...upstream },
    limits: { maxMessageBytes: 4 * 1024 * 1024, ...limits },
  });
}

/** Streams the control plane saw opened by node ids matching `nodeIdPattern`, per type URL. */
export function upstreamStreamsByType(controlPlane: ControlPlane, nodeIdPattern: RegExp): Map<string, Set<number>> {
  const byType = new Map<string, Set<number>>();
  for (const event of controlPlane.xdsEvents.all() as readonly XdsEvent[]) {
    if (event.event !== 'request' || !nodeIdPattern.test(event.stream.nodeId ?? '')) continue;
    const set = byType.get(event.typeUrl) ?? new Set<number>();
    set.add(event.stream.streamId);
    byType.set(event.typeUrl, set);
  }
  return byType;
}

/** Polls (every 20 ms; a throwing probe fails at once) until `probe` returns something other than `undefined`/`false`. */
export function eventually<T>(probe: () => T | undefined | false, description: string, timeoutMs = 20_000): Promise<T> {
  return pollEventually(probe, description, { timeoutMs, intervalMs: 20 });
}

export { sleep } from '../../support/eventually';
