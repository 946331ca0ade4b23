// Simulated Envoys against the reference control plane (infra/local/control-plane): ADS SotW,
// ADS Delta, per-type SotW, node on the first request only, NACK by rule, hang, reconnect with
// initial_resource_versions. The control plane's own event log (what it classified as ACK/NACK)
// is checked against the fleet's ground truth.
import pino from 'pino';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds';
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { XdsEvent } from '../../../infra/local/control-plane/xds-events';
import { Fleet, parseBehaviour, type FleetEnvoySpec, type SimEnvoy } from '../../../infra/local/envoys';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const WILDCARD_ALL = TYPES.map((typeUrl) => ({ typeUrl }));
const quiet = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

function httpProxy(name: string, fqdn: string, port: number): Record<string, unknown> {
  return {
    apiVersion: 'projectcontour.io/v1',
    kind: 'HTTPProxy',
    metadata: { name, namespace: 'default' },
    spec: { virtualhost: { fqdn }, routes: [{ services: [{ name, port }] }] },
  };
}

function endpointsOf(name: string, ip: string, port: number): Record<string, unknown> {
  return { metadata: { name, namespace: 'default' }, subsets: [{ addresses: [{ ip }], ports: [{ port }] }] };
}

describe('simulated Envoys against the reference control plane', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let fleet: Fleet;

  beforeEach(async () => {
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpointsOf('app', '10.0.0.1', 8080));
    source.applyProxy(httpProxy('app', 'app.example.com', 8080));
    controlPlane = await startControlPlane({
      port: 0,
      replicaId: 'cp-fleet-test',
      source,
      holdoffMs: 10,
      holdoffMaxMs: 50,
      logger: quiet,
    });
    fleet = new Fleet({ target: controlPlane.address, channels: 2, logger: quiet });
  });

  afterEach(async () => {
    fleet.close();
    await controlPlane.close();
  });

  const currentVersion = (typeUrl: string): string => {
    const snapshot = controlPlane.currentSnapshot();
    const type = snapshot?.[typeUrl as keyof typeof snapshot];
    if (!type) throw new Error(`no snapshot for ${typeUrl}`);
    return type.version;
  };
  /**
   * SotW: the Envoy ACKed the type's current version_info. Delta: it holds exactly the snapshot's
   * resources at their versions. (After a Delta reconnect a type whose system version moved but whose
   * resources did not gets no response at all: initial_resource_versions already match.)
   */
  const atCurrent = (envoy: SimEnvoy, typeUrl: string): boolean => {
    if (envoy.protocol === 'sotw') return envoy.acceptedVersion(typeUrl) === currentVersion(typeUrl);
    const served = controlPlane.currentSnapshot()?.[typeUrl as typeof CLUSTER_TYPE_URL].resources;
    const held = envoy.heldResources(typeUrl);
    if (!served || envoy.acceptedVersion(typeUrl) === undefined || served.size !== held.size) return false;
    return [...served.values()].every((r) => held.get(r.name) === r.version);
  };
  const allAtCurrent = (envoys: readonly SimEnvoy[]): boolean =>
    envoys.every((envoy) => TYPES.every((typeUrl) => atCurrent(envoy, typeUrl)));
  const requestEvents = (nodeId: string): Extract<XdsEvent, { event: 'request' }>[] =>
    controlPlane.xdsEvents.all().flatMap((e) => (e.event === 'request' && e.stream.nodeId === nodeId ? [e] : []));

  /** Changes the route's backend port: a new generation touching CDS, EDS and RDS. */
  const changeBackend = async (port: number): Promise<void> => {
    source.applyEndpoints(endpointsOf('app', '10.0.0.1', port));
    source.applyProxy(httpProxy('app', 'app.example.com', port));
    await controlPlane.rebuildNow();
  };

  const connect = async (count: number, spec: FleetEnvoySpec): Promise<SimEnvoy[]> => {
    const envoys = fleet.addMany(count, spec);
    fleet.connectAll();
    await fleet.waitFor(() => allAtCurrent(envoys), { timeoutMs: 20_000 }, () => 'envoys at the current snapshot');
    return envoys;
  };

  test('ADS SotW: every type ACKed at the served version; the server classified them as ACKs', async () => {
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    // The Envoy records an acceptance when it sends the ACK; the server sees it a moment later.
    const serverSawAck = (typeUrl: string): boolean =>
      requestEvents('sim-0').some((e) => e.kind === 'ack' && e.typeUrl === typeUrl && e.version === currentVersion(typeUrl));
    await fleet.waitFor(() => TYPES.every(serverSawAck), { timeoutMs: 20_000 }, () => 'server to see the ACKs');
    for (const typeUrl of TYPES) {
      expect(fleet.truth.latestAccepted('sim-0', typeUrl)?.versionInfo).toBe(currentVersion(typeUrl));
    }
    expect(fleet.truth.latestAccepted('sim-0', LISTENER_TYPE_URL)?.resources.map((r) => r.name)).toContain('ingress_http');
    expect(envoy?.heldResources(CLUSTER_TYPE_URL).has('default/app/8080')).toBe(true);

    const before = currentVersion(CLUSTER_TYPE_URL);
    await changeBackend(9090);
    expect(currentVersion(CLUSTER_TYPE_URL)).not.toBe(before);
    await fleet.waitFor(() => allAtCurrent([envoy!]), { timeoutMs: 20_000 });
    expect(envoy?.heldResources(CLUSTER_TYPE_URL).has('default/app/9090')).toBe(true);
    expect(fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL).map((a) => a.versionInfo)).toEqual([before, currentVersion(CLUSTER_TYPE_URL)]);
  });

  test('ADS Delta: ACKs, then disconnect + reconnect sends initial_resource_versions of what was accepted', async () => {
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'delta', subscriptions: WILDCARD_ALL, reconnectOnError: false });
    const streamsBefore = new Set(requestEvents('sim-0').map((e) => e.stream.streamId));
    expect(streamsBefore.size).toBe(1);
    expect([...streamsBefore].every((id) => requestEvents('sim-0').find((e) => e.stream.streamId === id)?.stream.protocol === 'delta')).toBe(true);
    const held = Object.fromEntries(envoy!.heldResources(CLUSTER_TYPE_URL));
    expect(Object.keys(held)).toEqual(['default/app/8080']);
    // Delta resource versions come from the server (content hashes), not from the system version.
    expect(held['default/app/8080']).toBe(controlPlane.currentSnapshot()?.[CLUSTER_TYPE_URL].resources.get('default/app/8080')?.version);

    envoy?.disconnect();
    await changeBackend(9091);
    const responsesBefore = controlPlane.xdsEvents.all().filter((e) => e.event === 'response').length;
    envoy?.connect();
    await fleet.waitFor(() => allAtCurrent([envoy!]), { timeoutMs: 20_000 });
    const reconnectStream = requestEvents('sim-0').find((e) => !streamsBefore.has(e.stream.streamId));
    expect(reconnectStream?.kind).toBe('initial');
    expect(envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9091')).toBe(true);
    // Because the reconnect declared what it held (initial_resource_versions), the server sent only
    // the changed cluster and the removal of the old one, and nothing at all for unchanged listeners.
    const cdsResponses = controlPlane.xdsEvents
      .all()
      .slice(responsesBefore)
      .flatMap((e) =>
        e.event === 'response' && e.stream.nodeId === 'sim-0' && !streamsBefore.has(e.stream.streamId) && e.typeUrl === CLUSTER_TYPE_URL ? [e] : [],
      );
    expect(cdsResponses.flatMap((e) => e.resourceNames)).toEqual(['default/app/9091']);
    expect(cdsResponses.flatMap((e) => e.removedResources)).toEqual(['default/app/8080']);
    expect(fleet.truth.latestAccepted('sim-0', CLUSTER_TYPE_URL)?.removed).toEqual(['default/app/8080']);
    const ldsAfter = controlPlane.xdsEvents
      .all()
      .slice(responsesBefore)
      .filter((e) => e.event === 'response' && !streamsBefore.has(e.stream.streamId) && e.typeUrl === LISTENER_TYPE_URL);
    expect(ldsAfter).toHaveLength(0);
  });

  test('per-type SotW with node only on the first request: the server attributes all four streams', async () => {
    const [envoy] = await connect(1, {
      transport: 'per-type',
      protocol: 'sotw',
      subscriptions: WILDCARD_ALL,
      nodeOnEveryRequest: false,
      node: () => ({ id: 'contour-style', cluster: 'ingress', metadata: { pod: 'envoy-0' } }),
    });
    expect(envoy?.openStreams).toBe(4);
    await fleet.waitFor(() => requestEvents('contour-style').filter((e) => e.kind === 'ack').length >= 4, { timeoutMs: 20_000 });
    const events = requestEvents('contour-style');
    const streams = new Set(events.map((e) => e.stream.streamId));
    expect(streams.size).toBe(4);
    for (const streamId of streams) {
      const onStream = events.filter((e) => e.stream.streamId === streamId);
      expect(onStream[0]?.stream.service).toBe('per-type');
      expect(new Set(onStream.map((e) => e.typeUrl)).size).toBe(1);
      expect(onStream.some((e) => e.kind === 'ack')).toBe(true);
    }
  });

  test('per-type Delta: four Delta streams, each ACKed, and a change reaches every one', async () => {
    const [envoy] = await connect(1, { transport: 'per-type', protocol: 'delta', subscriptions: WILDCARD_ALL });
    expect(envoy?.openStreams).toBe(4);
    await changeBackend(9094);
    await fleet.waitFor(() => allAtCurrent([envoy!]), { timeoutMs: 20_000 });
    await fleet.waitFor(() => requestEvents('sim-0').filter((e) => e.kind === 'ack').length >= 7, { timeoutMs: 20_000 });
    const events = requestEvents('sim-0');
    expect(new Set(events.map((e) => e.stream.streamId)).size).toBe(4);
    expect(events.every((e) => e.stream.protocol === 'delta' && e.stream.service === 'per-type')).toBe(true);
    expect([...envoy!.heldResources(CLUSTER_LOAD_ASSIGNMENT_TYPE_URL).keys()]).toEqual(['default/app/9094']);
  });

  test('NACK rule: the server records the NACK with our message; ground truth shows no acceptance', async () => {
    const behaviour = parseBehaviour({
      nackRules: [{ typeUrl: CLUSTER_TYPE_URL, resourceName: '/9092$', message: 'cluster port rejected by simulated validation' }],
    });
    const [envoy] = await connect(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL, behaviour });
    const good = currentVersion(CLUSTER_TYPE_URL);
    await changeBackend(9092);
    const rejected = currentVersion(CLUSTER_TYPE_URL);
    await fleet.waitFor(() => fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL).length > 0, { timeoutMs: 20_000 });
    await fleet.waitFor(() => requestEvents('sim-0').some((e) => e.kind === 'nack'), { timeoutMs: 20_000 });
    const nack = requestEvents('sim-0').find((e) => e.kind === 'nack');
    expect(nack?.typeUrl).toBe(CLUSTER_TYPE_URL);
    expect(nack?.errorMessage).toBe('cluster port rejected by simulated validation (resource default/app/9092)');
    expect(fleet.truth.acceptedAt('sim-0', CLUSTER_TYPE_URL, rejected)).toBeUndefined();
    expect(envoy?.acceptedVersion(CLUSTER_TYPE_URL)).toBe(good);
    expect(fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL)[0]?.versionInfo).toBe(rejected);
    // Other types of the same change were fine and ACKed.
    await fleet.waitFor(() => envoy?.acceptedVersion(ROUTE_CONFIGURATION_TYPE_URL) === currentVersion(ROUTE_CONFIGURATION_TYPE_URL), { timeoutMs: 20_000 });
  });

  test('hang: the server sees the response go out and no ACK come back', async () => {
    const [healthy, hung] = await connect(2, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    hung?.setBehaviour(parseBehaviour({ hang: true }));
    await changeBackend(9093);
    await fleet.waitFor(() => allAtCurrent([healthy!]), { timeoutMs: 20_000 });
    const target = currentVersion(CLUSTER_TYPE_URL);
    await fleet.waitFor(() => fleet.truth.envoyTruth('sim-1')?.types.get(CLUSTER_TYPE_URL)?.lastReceived?.versionInfo === target, { timeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(requestEvents('sim-1').some((e) => e.kind === 'ack' && e.typeUrl === CLUSTER_TYPE_URL && e.version === target)).toBe(false);
    expect(fleet.truth.acceptedAt('sim-1', CLUSTER_TYPE_URL, target)).toBeUndefined();
    hung?.setBehaviour(parseBehaviour({}));
    await fleet.waitFor(() => allAtCurrent([hung!]), { timeoutMs: 20_000 });
    await fleet.waitFor(
      () => requestEvents('sim-1').some((e) => e.kind === 'ack' && e.typeUrl === CLUSTER_TYPE_URL && e.version === target),
      { timeoutMs: 20_000 },
      () => 'server to see the late ACK',
    );
  });

  test('vanish: cancel closes the stream on the server; silent leaves it open and unanswered', async () => {
    const [cancelled, silent] = await connect(2, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    const streamOf = (nodeId: string): number | undefined => requestEvents(nodeId)[0]?.stream.streamId;
    const closedOnServer = (nodeId: string): boolean =>
      controlPlane.xdsEvents.all().some((e) => e.event === 'stream-closed' && e.stream.streamId === streamOf(nodeId));
    cancelled?.vanish();
    silent?.vanish('silent');
    await fleet.waitFor(() => closedOnServer('sim-0'), { timeoutMs: 20_000 }, () => 'server to see the cancelled stream');
    await changeBackend(9095);
    const target = currentVersion(CLUSTER_TYPE_URL);
    // The server pushes the change into the silent Envoy's still-open stream; no answer ever comes.
    await fleet.waitFor(
      () => controlPlane.xdsEvents.all().some((e) => e.event === 'response' && e.stream.nodeId === 'sim-1' && e.typeUrl === CLUSTER_TYPE_URL && e.version === target),
      { timeoutMs: 20_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closedOnServer('sim-1')).toBe(false);
    expect(requestEvents('sim-1').some((e) => e.version === target)).toBe(false);
    expect(fleet.truth.acceptedAt('sim-1', CLUSTER_TYPE_URL, target)).toBeUndefined();
    expect(fleet.truth.envoyTruth('sim-1')?.connections.map((c) => [c.kind, c.detail])).toEqual([
      ['connected', undefined],
      ['vanished', 'silent'],
    ]);
    expect(silent?.status).toBe('vanished');
  });

  test('the fleet truth export validates and names each envoy, version and resource', async () => {
    await connect(3, { transport: 'ads', protocol: 'delta', subscriptions: WILDCARD_ALL });
    const exported = fleet.truth.exportTruth();
    const { fleetTruthExportSchema } = await import('../../../infra/local/envoys');
    expect(fleetTruthExportSchema.parse(JSON.parse(JSON.stringify(exported)))).toEqual(exported);
    expect(exported.envoys.map((e) => e.node)).toEqual(['sim-0', 'sim-1', 'sim-2']);
    const cds = exported.envoys[0]?.types[CLUSTER_TYPE_URL];
    expect(cds?.accepted[0]?.v).toBe(currentVersion(CLUSTER_TYPE_URL));
    expect(cds?.accepted[0]?.res[0]).toMatch(/^default\/app\/8080@/);
  });
});
