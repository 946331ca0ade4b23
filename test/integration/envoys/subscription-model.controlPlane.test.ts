// Simulated clients against the reference control plane, subscribing the way real ones do
// (docs/ENVOY-FLEET.md, "Subscription models"): an Envoy-model Envoy asks RDS and EDS for the names
// its accepted listeners and clusters reference, at the moment it applies them (with the ACK of the
// referencing response), and starts LDS only once its clusters are warm; a gRPC-model client asks
// everything by name from its target down, each request after the ACK that revealed the name. What
// the server received, in order, is read from its own event log.
import pino from 'pino';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { XdsEvent } from '../../../infra/local/control-plane/xds-events';
import { Fleet, parseBehaviour, type FleetEnvoySpec, type SimEnvoy } from '../../../infra/local/envoys';
import { endpointsOf, httpProxy } from '../gateway-relay/helpers';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const ALL = TYPES.map((typeUrl) => ({ typeUrl }));
const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const ACK_DELAY_MS = 150;
const SHORT: Record<string, string> = {
  [CLUSTER_TYPE_URL]: 'CDS',
  [CLUSTER_LOAD_ASSIGNMENT_TYPE_URL]: 'EDS',
  [LISTENER_TYPE_URL]: 'LDS',
  [ROUTE_CONFIGURATION_TYPE_URL]: 'RDS',
};

type StreamEvent = Extract<XdsEvent, { event: 'request' | 'response' }>;

describe('subscription models against the reference control plane', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let fleet: Fleet;

  beforeEach(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpointsOf('app', '10.0.0.1', 8080));
    source.applyProxy(httpProxy('app', 'app.example.com', 8080));
    controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-models', source, holdoffMs: 10, holdoffMaxMs: 50, logger: quiet });
    fleet = new Fleet({ target: controlPlane.address, channels: 1, logger: quiet });
  });

  afterEach(async () => {
    fleet.close();
    await controlPlane.close();
  });

  const snapshotOf = (typeUrl: string): { version: string; resources: ReadonlyMap<string, { name: string; version: string }> } => {
    const type = controlPlane.currentSnapshot()?.[typeUrl as typeof CLUSTER_TYPE_URL];
    if (!type) throw new Error(`no snapshot for ${typeUrl}`);
    return type;
  };
  /** The Envoy holds, for every type it asks for, exactly what the server serves of what it asked for. */
  const current = (envoy: SimEnvoy): boolean =>
    TYPES.every((typeUrl) => {
      const names = envoy.subscribedNames(typeUrl);
      if (names === undefined) return false;
      const served = [...snapshotOf(typeUrl).resources.values()].filter((r) => names.length === 0 || names.includes(r.name));
      const held = envoy.heldResources(typeUrl);
      if (envoy.acceptedVersion(typeUrl) === undefined || held.size !== served.length) return false;
      return served.every((r) => held.has(r.name) && (envoy.protocol === 'sotw' || held.get(r.name) === r.version));
    });
  /** Requests and responses of one node's streams, in the order the server saw them. */
  const streamEvents = (nodeId: string): StreamEvent[] =>
    controlPlane.xdsEvents.all().flatMap((e) => ((e.event === 'request' || e.event === 'response') && e.stream.nodeId === nodeId ? [e] : []));
  const describeEvent = (e: StreamEvent): string =>
    e.event === 'response' ? `<- ${SHORT[e.typeUrl]} ${e.nonce} [${e.resourceNames.join(',')}]` : `-> ${SHORT[e.typeUrl]} ${e.kind} ${e.nonce} [${e.resourceNames.join(',')}]`;
  const indexOf = (events: readonly StreamEvent[], predicate: (e: StreamEvent) => boolean, from = 0): number => {
    for (let index = from; index < events.length; index++) if (predicate(events[index] as StreamEvent)) return index;
    return -1;
  };

  const connect = async (spec: FleetEnvoySpec): Promise<SimEnvoy> => {
    const [envoy] = fleet.addMany(1, spec);
    fleet.connectAll();
    await fleet.waitFor(() => current(envoy as SimEnvoy), { timeoutMs: 20_000 }, () => `sim-0 at the current snapshot\n${streamEvents('sim-0').map(describeEvent).join('\n')}`);
    return envoy as SimEnvoy;
  };

  /** A new backend port: a new cluster and endpoints, and the route moved to it (CDS, EDS, RDS change). */
  const moveBackend = async (port: number): Promise<void> => {
    source.applyEndpoints(endpointsOf('app', '10.0.0.1', port));
    source.applyProxy(httpProxy('app', 'app.example.com', port));
    await controlPlane.rebuildNow();
  };

  /**
   * Asserts Envoy's order for a request that asks `childType` for `name`: it comes after the response of
   * `parentType` carrying the referencing resource, and is immediately followed by that response's ACK
   * (Envoy sends the requests an update causes while applying it, then the ACK).
   */
  const expectRequestedWithAckOf = (events: readonly StreamEvent[], childType: string, name: string, parentType: string, parentResource: string, from = 0): void => {
    const text = events.map(describeEvent).join('\n');
    const parent = indexOf(events, (e) => e.event === 'response' && e.typeUrl === parentType && e.resourceNames.includes(parentResource), from);
    expect({ parent, text }).toEqual({ parent: expect.any(Number), text });
    expect(parent).toBeGreaterThanOrEqual(0);
    const request = indexOf(events, (e) => e.event === 'request' && e.typeUrl === childType && e.resourceNames.includes(name), from);
    // Never before the response revealing the name.
    expect({ request, after: request > parent, text }).toEqual({ request, after: true, text });
    const parentNonce = (events[parent] as StreamEvent).nonce;
    // The server may answer the new request before it reads the ACK behind it: look at requests only.
    const next = nextRequest(events, request);
    expect({ next: next && describeEvent(next), text }).toEqual({ next: expect.stringMatching(new RegExp(`^-> ${SHORT[parentType]} ack ${parentNonce} `)), text });
  };
  const nextRequest = (events: readonly StreamEvent[], index: number): StreamEvent | undefined => {
    const next = indexOf(events, (e) => e.event === 'request', index + 1);
    return next < 0 ? undefined : events[next];
  };
  const previousRequest = (events: readonly StreamEvent[], index: number): StreamEvent | undefined => {
    for (let i = index - 1; i >= 0; i--) if ((events[i] as StreamEvent).event === 'request') return events[i];
    return undefined;
  };

  test('Envoy model, ADS SotW: CDS/LDS wildcard, EDS/RDS by accepted references, LDS after the clusters are warm', async () => {
    const envoy = await connect({ transport: 'ads', protocol: 'sotw', subscriptions: ALL, behaviour: parseBehaviour({ ackDelayMs: ACK_DELAY_MS }) });
    expect(envoy.subscriptionModel).toBe('envoy');
    const events = streamEvents('sim-0');
    const text = events.map(describeEvent).join('\n');
    const requests = events.filter((e): e is Extract<StreamEvent, { event: 'request' }> => e.event === 'request');
    // Wildcard types ask with no names; the first request of the stream is CDS alone.
    expect({ first: requests[0] && describeEvent(requests[0]), text }).toEqual({ first: '-> CDS initial  []', text });
    expect(requests.filter((e) => e.typeUrl === LISTENER_TYPE_URL).every((e) => e.resourceNames.length === 0)).toBe(true);
    expect(envoy.subscribedNames(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual(['default/app/8080']);
    expect(envoy.subscribedNames(ROUTE_CONFIGURATION_TYPE_URL)).toEqual(['ingress_http']);
    expect(envoy.subscribedNames(LISTENER_TYPE_URL)).toEqual([]);

    // EDS asks for the accepted cluster's service name with the CDS ACK; RDS for the route config
    // that the accepted listeners name with the LDS ACK.
    expectRequestedWithAckOf(events, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'default/app/8080', CLUSTER_TYPE_URL, 'default/app/8080');
    expectRequestedWithAckOf(events, ROUTE_CONFIGURATION_TYPE_URL, 'ingress_http', LISTENER_TYPE_URL, 'ingress_http');
    // LDS starts while the first EDS response is applied (the clusters are warm), just before its ACK.
    const firstLds = indexOf(events, (e) => e.event === 'request' && e.typeUrl === LISTENER_TYPE_URL);
    const firstEdsResponse = indexOf(events, (e) => e.event === 'response' && e.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL);
    expect({ firstLds, afterEds: firstLds > firstEdsResponse, text }).toEqual({ firstLds, afterEds: true, text });
    expect(describeEvent(nextRequest(events, firstLds) as StreamEvent)).toMatch(/^-> EDS ack /);

    // The names went out when the referencing response was applied (ACK_DELAY_MS after it arrived),
    // not when it arrived: the ground truth has them at the acceptance of CDS (LDS).
    const truth = fleet.truth;
    const connectedAt = truth.envoyTruth('sim-0')?.connections[0]?.at ?? 0;
    const edsAsked = truth.subscriptions('sim-0', CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)[0];
    expect(edsAsked?.names).toEqual(['default/app/8080']);
    expect(edsAsked?.at).toBe(truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL)[0]?.acceptedAt);
    expect(edsAsked?.at ?? 0).toBeGreaterThanOrEqual(connectedAt + ACK_DELAY_MS);
    const ldsAsked = truth.subscriptions('sim-0', LISTENER_TYPE_URL)[0];
    expect(ldsAsked?.at).toBe(truth.acceptedVersions('sim-0', CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)[0]?.acceptedAt);
    expect(truth.subscriptions('sim-0', ROUTE_CONFIGURATION_TYPE_URL)[0]?.at).toBe(truth.acceptedVersions('sim-0', LISTENER_TYPE_URL)[0]?.acceptedAt);
    expect(truth.warming('sim-0', CLUSTER_TYPE_URL)).toEqual([]);
    expect(truth.warming('sim-0', LISTENER_TYPE_URL)).toEqual([]);
  });

  test('Envoy model: a route moved to a new cluster; EDS gains it only with the CDS ACK, the cluster warms until EDS delivers', async () => {
    const envoy = await connect({ transport: 'ads', protocol: 'sotw', subscriptions: ALL, behaviour: parseBehaviour({ ackDelayMs: ACK_DELAY_MS }) });
    const from = streamEvents('sim-0').length;
    await moveBackend(9090);
    // While the new cluster is accepted but its endpoints are not, the cluster warms (the ground truth
    // says so): between the CDS ACK and the EDS ACK, at least ACK_DELAY_MS apart.
    await fleet.waitFor(() => fleet.truth.warming('sim-0', CLUSTER_TYPE_URL).includes('default/app/9090'), { timeoutMs: 20_000, pollMs: 5 }, () => 'the new cluster to warm');
    expect(envoy.heldResources(CLUSTER_TYPE_URL).has('default/app/9090')).toBe(true);
    expect(envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).has('default/app/9090')).toBe(false);
    await fleet.waitFor(() => current(envoy), { timeoutMs: 20_000 }, () => 'sim-0 at the moved backend');
    expect(fleet.truth.warming('sim-0', CLUSTER_TYPE_URL)).toEqual([]);

    const events = streamEvents('sim-0');
    expectRequestedWithAckOf(events, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, 'default/app/9090', CLUSTER_TYPE_URL, 'default/app/9090', from);
    // The old cluster's name left the EDS subscription in the same request, and the Envoy no longer
    // holds its endpoints although SotW EDS never says they were removed.
    const request = events.slice(from).find((e) => e.event === 'request' && e.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL && e.resourceNames.includes('default/app/9090'));
    expect(request?.resourceNames).toEqual(['default/app/9090']);
    expect([...envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).keys()]).toEqual(['default/app/9090']);
    // RDS names did not change (same route configuration), so RDS was not asked again.
    expect(events.slice(from).some((e) => e.event === 'request' && e.typeUrl === ROUTE_CONFIGURATION_TYPE_URL && e.kind !== 'ack')).toBe(false);
    const cdsAccepted = fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL).find((a) => a.resources.some((r) => r.name === 'default/app/9090'));
    const edsChange = fleet.truth.subscriptions('sim-0', CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).find((s) => s.names.includes('default/app/9090'));
    expect(edsChange?.at).toBe(cdsAccepted?.acceptedAt);
  });

  test('Envoy model, ADS Delta: legacy wildcard for CDS/LDS, subscribe/unsubscribe diffs for EDS', async () => {
    const envoy = await connect({ transport: 'ads', protocol: 'delta', subscriptions: ALL });
    const initial = streamEvents('sim-0').filter((e) => e.event === 'request' && e.kind === 'initial');
    // Envoy subscribes to CDS and LDS with an empty first request, not with "*".
    expect(initial.filter((e) => e.typeUrl === CLUSTER_TYPE_URL || e.typeUrl === LISTENER_TYPE_URL).map((e) => e.resourceNames)).toEqual([[], []]);
    const from = streamEvents('sim-0').length;
    await moveBackend(9091);
    await fleet.waitFor(() => current(envoy), { timeoutMs: 20_000 }, () => 'sim-0 at the moved backend');
    const events = streamEvents('sim-0');
    const text = events.slice(from).map(describeEvent).join('\n');
    const cdsResponse = indexOf(events, (e) => e.event === 'response' && e.typeUrl === CLUSTER_TYPE_URL && e.resourceNames.includes('default/app/9091'), from);
    const subscribe = indexOf(events, (e) => e.event === 'request' && e.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL && e.resourceNames.includes('default/app/9091'), from);
    expect({ subscribe, afterCds: subscribe > cdsResponse && cdsResponse >= 0, text }).toEqual({ subscribe, afterCds: true, text });
    expect((events[subscribe] as StreamEvent).resourceNames).toEqual(['default/app/9091']);
    expect(describeEvent(nextRequest(events, subscribe) as StreamEvent)).toBe(`-> CDS ack ${(events[cdsResponse] as StreamEvent).nonce} []`);
    // The unsubscribed name is dropped from what the Envoy holds (and would claim on a reconnect).
    expect([...envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).keys()]).toEqual(['default/app/9091']);
    expect(envoy.subscribedNames(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual(['default/app/9091']);
  });

  test('gRPC model: LDS by target, RDS, CDS and EDS by name, each asked right after the ACK that revealed it', async () => {
    const envoy = await connect({
      transport: 'ads',
      protocol: 'sotw',
      subscriptionModel: 'grpc',
      subscriptions: TYPES.map((typeUrl) => (typeUrl === LISTENER_TYPE_URL ? { typeUrl, resourceNames: ['app.example.com'] } : { typeUrl })),
      nodeOnEveryRequest: false,
    });
    expect(envoy.subscribedNames(LISTENER_TYPE_URL)).toEqual(['app.example.com']);
    expect(envoy.subscribedNames(ROUTE_CONFIGURATION_TYPE_URL)).toEqual(['ingress_http']);
    expect(envoy.subscribedNames(CLUSTER_TYPE_URL)).toEqual(['default/app/8080']);
    expect(envoy.subscribedNames(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual(['default/app/8080']);
    // Only the target's listener is held, although the server has others.
    expect([...envoy.heldResources(LISTENER_TYPE_URL).keys()]).toEqual(['app.example.com']);
    const from = streamEvents('sim-0').length;
    await moveBackend(9092);
    await fleet.waitFor(() => envoy.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).has('default/app/9092'), { timeoutMs: 20_000 }, () => 'the moved backend');
    const events = streamEvents('sim-0');
    const text = events.slice(from).map(describeEvent).join('\n');
    // CDS follows the route: the request for the new cluster comes right after the RDS ACK of the
    // route configuration pointing at it; EDS right after the CDS ACK of that cluster.
    const rds = indexOf(events, (e) => e.event === 'response' && e.typeUrl === ROUTE_CONFIGURATION_TYPE_URL, from);
    const cdsAsk = indexOf(events, (e) => e.event === 'request' && e.typeUrl === CLUSTER_TYPE_URL && e.resourceNames.includes('default/app/9092'), from);
    expect({ rds, cdsAsk, text }).toEqual({ rds: expect.any(Number), cdsAsk: expect.any(Number), text });
    expect(describeEvent(previousRequest(events, cdsAsk) as StreamEvent)).toBe(`-> RDS ack ${(events[rds] as StreamEvent).nonce} [ingress_http]`);
    expect((events[cdsAsk] as StreamEvent).resourceNames).toEqual(['default/app/9092']);
    const cds = indexOf(events, (e) => e.event === 'response' && e.typeUrl === CLUSTER_TYPE_URL && e.resourceNames.includes('default/app/9092'), from);
    const edsAsk = indexOf(events, (e) => e.event === 'request' && e.typeUrl === CLUSTER_LOAD_ASSIGNMENT_TYPE_URL && e.resourceNames.includes('default/app/9092'), from);
    expect({ after: edsAsk > cds && cds > cdsAsk, text }).toEqual({ after: true, text });
    expect(describeEvent(previousRequest(events, edsAsk) as StreamEvent)).toBe(`-> CDS ack ${(events[cds] as StreamEvent).nonce} [default/app/9092]`);
    // gRPC warms nothing.
    expect(envoy.warming(CLUSTER_TYPE_URL)).toEqual([]);
  });

  test('explicit wildcard model: every type asked with no names from the first request, as before', async () => {
    const envoy = await connect({ transport: 'ads', protocol: 'sotw', subscriptions: ALL, subscriptionModel: 'wildcard' });
    expect(envoy.subscriptionModel).toBe('wildcard');
    const initial = streamEvents('sim-0').filter((e) => e.event === 'request' && e.kind === 'initial');
    expect(initial.map((e) => [SHORT[e.typeUrl], e.resourceNames])).toEqual(TYPES.map((typeUrl) => [SHORT[typeUrl], []]));
    expect(fleet.truth.subscriptions('sim-0', CLUSTER_LOAD_ASSIGNMENT_TYPE_URL)).toEqual([]);
    expect(() => fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: ALL.slice(1), subscriptionModel: 'envoy' })).toThrow(/exactly CDS, EDS, LDS and RDS/);
  });
});
