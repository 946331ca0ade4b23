// Simulated Envoys through the relay to the reference control plane: ADS and per-type, SotW and
// Delta (Delta downstream while the relay's upstream is SotW), node on the first request only,
// NACKs, reconnects carrying versions of another lineage, and one upstream stream per type.
import { encodeVersion, parseVersion } from '../../../common/core';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { Fleet, parseBehaviour, type FleetEnvoySpec, type SimEnvoy } from '../../../infra/local/envoys';
import type { Relay } from '../../../xds-gateway/relay';
import {
  endpointsOf,
  eventually,
  httpProxy,
  newSource,
  RecordingObserver,
  sleep,
  startTestControlPlane,
  startTestRelay,
  testLogger,
  upstreamStreamsByType,
} from './helpers';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const WILDCARD_ALL = TYPES.map((typeUrl) => ({ typeUrl }));
const RELAY_NODE = /^xds-gateway\.gw-test\./;

describe('relay with simulated Envoys', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let observer: RecordingObserver;
  let relay: Relay;
  let fleet: Fleet;

  beforeEach(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    observer = new RecordingObserver();
    relay = await startTestRelay(controlPlane.address, observer);
    fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 2, logger: testLogger });
  });

  afterEach(async () => {
    fleet.close();
    await relay.control.close();
    await controlPlane.close();
  });

  const group = (name = 'sim') => {
    const found = relay.control.groups().find((g) => g.group === name);
    if (!found) throw new Error(`no group ${name}`);
    return found;
  };
  /** Make-before-break removals released, and the response carrying them answered by sim-0. */
  const removalsReleasedAndAnswered = async (): Promise<void> => {
    await eventually(() => (group().pendingRemovals === 0 ? true : undefined), 'make-before-break removals released');
    await eventually(
      () => observer.requests('sim-0', CLUSTER_TYPE_URL).find((e) => (e.classification.kind === 'nack' || e.classification.kind === 'ack') && e.classification.version === typeVersion(CLUSTER_TYPE_URL)),
      'the answer to the current CDS version',
    );
  };
  /** The type's current gateway version in the group (the seq of its last change). */
  const typeVersion = (typeUrl: string, name = 'sim'): string | undefined => {
    const info = relay.control.groups().find((g) => g.group === name);
    const seq = info?.typeHistory[typeUrl]?.at(-1);
    return info === undefined || seq === undefined ? undefined : encodeVersion({ lineage: info.lineage, seq });
  };
  const upstreamNames = (typeUrl: string): string[] | undefined => {
    const snapshot = controlPlane.currentSnapshot()?.[typeUrl as typeof CLUSTER_TYPE_URL];
    return snapshot === undefined ? undefined : [...snapshot.resources.keys()].sort();
  };
  const atCurrent = (envoy: SimEnvoy, typeUrl: string, name = 'sim'): boolean => {
    const version = typeVersion(typeUrl, name);
    if (version === undefined || envoy.acceptedVersion(typeUrl) !== version) return false;
    return JSON.stringify([...envoy.heldResources(typeUrl).keys()].sort()) === JSON.stringify(upstreamNames(typeUrl));
  };
  const allAtCurrent = (envoys: readonly SimEnvoy[], name = 'sim'): boolean => envoys.every((e) => TYPES.every((t) => atCurrent(e, t, name)));

  const connect = async (count: number, spec: FleetEnvoySpec, name = 'sim'): Promise<SimEnvoy[]> => {
    const envoys = fleet.addMany(count, spec);
    for (const envoy of envoys) envoy.connect();
    await fleet.waitFor(() => allAtCurrent(envoys, name), { timeoutMs: 20_000 }, () => 'envoys at the relay version of every type');
    return envoys;
  };

  const changeBackend = async (port: number): Promise<void> => {
    source.applyEndpoints(endpointsOf('app', '10.0.0.1', port));
    source.applyProxy(httpProxy('app', 'app.example.com', port));
    await controlPlane.rebuildNow();
  };

  test('ADS SotW: Envoys ACK gateway versions; a change reaches them with the next seq; one upstream stream per type', async () => {
    const envoys = await connect(3, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    const lineage = group().lineage;
    expect(lineage).toBe('gw-test.boot-1.sim');
    for (const typeUrl of TYPES) {
      const version = typeVersion(typeUrl) as string;
      expect(parseVersion(version)).toMatchObject({ ok: true, value: { lineage } });
      await eventually(
        () => observer.requests('sim-0', typeUrl).some((e) => e.classification.kind === 'ack' && e.classification.version === version),
        `ack of ${typeUrl} classified`,
      );
    }
    // Upstream versions never leak: what Envoys hold is ours, not the control plane's UUIDs.
    expect(envoys[0]?.acceptedVersion(CLUSTER_TYPE_URL)).not.toBe(controlPlane.currentSnapshot()?.[CLUSTER_TYPE_URL].version);

    const before = group().currentSeq;
    await changeBackend(9090);
    await fleet.waitFor(() => allAtCurrent(envoys) && upstreamNames(CLUSTER_TYPE_URL)?.includes('default/app/9090') === true, { timeoutMs: 20_000 });
    expect(envoys[1]?.heldResources(CLUSTER_TYPE_URL).has('default/app/9090')).toBe(true);
    const after = group();
    expect(after.currentSeq).toBeGreaterThan(before);
    // CDS changed, so its last change is a seq above the old counter; LDS bytes did not change
    // (Contour gave it a new UUID anyway), so its history did not grow.
    expect(after.typeHistory[CLUSTER_TYPE_URL]?.at(-1)).toBeGreaterThan(before);
    expect(after.typeHistory[LISTENER_TYPE_URL]).toHaveLength(1);
    const ldsApplied = observer.of('upstreamApplied').filter((e) => e.typeUrl === LISTENER_TYPE_URL);
    expect(ldsApplied.length).toBeGreaterThanOrEqual(2);
    expect(ldsApplied.at(-1)?.changed).toBe(false);

    const streams = upstreamStreamsByType(controlPlane, RELAY_NODE);
    expect([...streams.keys()].sort()).toEqual([...TYPES].sort());
    for (const ids of streams.values()) expect(ids.size).toBe(1);
    // And the control plane saw the relay ACK every response (never left pending).
    const relayRequests = controlPlane.xdsEvents.all().filter((e) => e.event === 'request' && RELAY_NODE.test(e.stream.nodeId ?? ''));
    expect(relayRequests.some((e) => e.event === 'request' && e.kind === 'nack')).toBe(false);
  });

  test('per-type SotW with node only on the first request: every stream attributed and ACKed', async () => {
    await connect(1, {
      transport: 'per-type',
      protocol: 'sotw',
      subscriptions: WILDCARD_ALL,
      nodeOnEveryRequest: false,
      node: () => ({ id: 'contour-style', cluster: 'ingress', metadata: { pod: 'envoy-0' } }),
    }, 'ingress');
    const opened = observer.of('streamOpened').filter((e) => e.node.nodeId === 'contour-style');
    expect(opened).toHaveLength(4);
    expect(new Set(opened.map((e) => e.service))).toEqual(new Set(TYPES));
    // The simulated Envoy's node metadata (a google.protobuf.Struct) arrives intact.
    expect(opened.every((e) => e.node.metadata['pod'] === 'envoy-0')).toBe(true);
    expect(opened.every((e) => e.group === 'ingress' && e.protocol === 'sotw')).toBe(true);
    await eventually(() => TYPES.every((t) => observer.requests('contour-style', t).some((e) => e.classification.kind === 'ack')), 'acks on all four streams');
  });

  test('per-type Delta: four streams, each served and ACKed at the relay versions', async () => {
    const [envoy] = await connect(1, { transport: 'per-type', protocol: 'delta', subscriptions: WILDCARD_ALL, nodeOnEveryRequest: false });
    expect(envoy?.openStreams).toBe(4);
    const opened = observer.of('streamOpened').filter((e) => e.node.nodeId === 'sim-0');
    expect(opened.map((e) => e.protocol)).toEqual(['delta', 'delta', 'delta', 'delta']);
    await eventually(() => TYPES.every((t) => observer.requests('sim-0', t).some((e) => e.classification.kind === 'ack')), 'acks on all four Delta streams');
    await changeBackend(9089);
    await fleet.waitFor(() => allAtCurrent([envoy!]) && envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9089'), { timeoutMs: 20_000 });
  });

  test('Delta downstream over a SotW upstream: per-resource gateway versions, and only changes are sent', async () => {
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'delta', subscriptions: WILDCARD_ALL });
    const lineage = group().lineage;
    const held = envoy!.heldResources(CLUSTER_TYPE_URL);
    expect([...held.keys()]).toEqual(['default/app/8080']);
    expect(parseVersion(held.get('default/app/8080') ?? '')).toMatchObject({ ok: true, value: { lineage } });
    const listenerVersions = new Map(envoy!.heldResources(LISTENER_TYPE_URL));

    const responsesBefore = observer.responses('sim-0').length;
    const ldsResponsesBefore = observer.responses('sim-0', LISTENER_TYPE_URL).length;
    await changeBackend(9091);
    await fleet.waitFor(() => allAtCurrent([envoy!]) && envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9091'), { timeoutMs: 20_000 });
    expect(envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/8080')).toBe(false);
    expect(fleet.truth.latestAccepted('sim-0', CLUSTER_TYPE_URL)?.removed).toEqual(['default/app/8080']);
    // Listeners did not change: same per-resource versions, and no LDS response after the change.
    expect(new Map(envoy!.heldResources(LISTENER_TYPE_URL))).toEqual(listenerVersions);
    expect(observer.responses('sim-0', LISTENER_TYPE_URL).length).toBe(ldsResponsesBefore);
    expect(observer.responses('sim-0').length).toBeGreaterThan(responsesBefore);
    // The simulated Envoy applies a response before its ACK reaches the relay: wait for the ACK.
    const deltaAck = await eventually(
      () => observer.requests('sim-0', CLUSTER_TYPE_URL).filter((e) => e.classification.kind === 'ack' && e.classification.version === typeVersion(CLUSTER_TYPE_URL)).at(-1),
      'the Delta ACK of the current CDS version',
    );
    expect(deltaAck.classification).toMatchObject({ kind: 'ack', version: typeVersion(CLUSTER_TYPE_URL) });
  });

  test('NACK: classified nack with the message, never ack, and the rejected version is not resent', async () => {
    const behaviour = parseBehaviour({
      nackRules: [{ typeUrl: CLUSTER_TYPE_URL, resourceName: '/9092$', message: 'cluster port rejected by simulated validation' }],
    });
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL, behaviour });
    const good = envoy!.acceptedVersion(CLUSTER_TYPE_URL);
    await changeBackend(9092);
    const nack = await eventually(
      () => observer.requests('sim-0', CLUSTER_TYPE_URL).find((e) => e.classification.kind === 'nack'),
      'a classified NACK',
    );
    if (nack.classification.kind !== 'nack') throw new Error('unreachable');
    const rejected = nack.classification.version;
    expect(rejected).toBe(typeVersion(CLUSTER_TYPE_URL));
    expect(nack.classification.message).toBe('cluster port rejected by simulated validation (resource default/app/9092)');
    expect(nack.classification.lastAcceptedVersionInfo).toBe(good);
    expect(observer.requests('sim-0', CLUSTER_TYPE_URL).some((e) => e.classification.kind === 'ack' && e.classification.version === rejected)).toBe(false);
    // The old cluster stays served until the route moved off it (make-before-break); its removal is a
    // new CDS version, still carrying the rejected cluster, so it is NACKed too. Then nothing more.
    await removalsReleasedAndAnswered();
    const cdsResponses = observer.responses('sim-0', CLUSTER_TYPE_URL).length;
    await sleep(500);
    expect(observer.responses('sim-0', CLUSTER_TYPE_URL).length).toBe(cdsResponses);
    expect(envoy!.acceptedVersion(CLUSTER_TYPE_URL)).toBe(good);
    // A fix is a new version, sent and ACKed.
    await changeBackend(9093);
    await fleet.waitFor(() => atCurrent(envoy!, CLUSTER_TYPE_URL) && envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9093'), { timeoutMs: 20_000 });
  });

  test('Delta NACK: classified nack with the message, the rejected resource is not resent', async () => {
    const behaviour = parseBehaviour({ nackRules: [{ typeUrl: CLUSTER_TYPE_URL, resourceName: '/9098$', message: 'delta cluster rejected' }] });
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'delta', subscriptions: WILDCARD_ALL, behaviour });
    await changeBackend(9098);
    const nack = await eventually(() => observer.requests('sim-0', CLUSTER_TYPE_URL).find((e) => e.classification.kind === 'nack'), 'a Delta NACK');
    expect(nack.classification).toMatchObject({ kind: 'nack', message: 'delta cluster rejected (resource default/app/9098)' });
    await removalsReleasedAndAnswered();
    const cdsResponses = observer.responses('sim-0', CLUSTER_TYPE_URL).length;
    await sleep(500);
    expect(observer.responses('sim-0', CLUSTER_TYPE_URL).length).toBe(cdsResponses);
    expect(envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9098')).toBe(false);
  });

  test('200 Envoys share one upstream stream per type', async () => {
    await connect(200, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    await changeBackend(9094);
    await fleet.waitFor(() => allAtCurrent(fleet.envoys()) && upstreamNames(CLUSTER_TYPE_URL)?.includes('default/app/9094') === true, { timeoutMs: 30_000 });
    const streams = upstreamStreamsByType(controlPlane, RELAY_NODE);
    expect(streams.size).toBe(4);
    for (const ids of streams.values()) expect(ids.size).toBe(1);
    // Nobody else talked to the control plane.
    const others = controlPlane.xdsEvents.all().filter((e) => e.event === 'request' && !RELAY_NODE.test(e.stream.nodeId ?? ''));
    expect(others).toHaveLength(0);
    expect(relay.upstreamStreamsOpened()).toEqual({ sim: Object.fromEntries(TYPES.map((t) => [t, 1])) });
    expect(observer.of('streamOpened')).toHaveLength(200);
  }, 60_000);
});
