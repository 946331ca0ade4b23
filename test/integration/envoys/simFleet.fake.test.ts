// Simulated Envoys against a minimal fake xDS server (fakeXdsServer.ts): protocol behaviour the
// fleet must have regardless of which control plane it talks to.
import {
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  packAny,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
} from '../../../common/xds';
import { Fleet, parseBehaviour } from '../../../infra/local/envoys';
import { FakeXdsServer, type FakeResource } from './fakeXdsServer';

const clusters = (version: string, names: string[]): FakeResource[] =>
  names.map((name) => ({ name, version, any: packAny(CLUSTER_TYPE_URL, { name, type: 'EDS' }) }));
const listeners = (version: string, names: string[]): FakeResource[] =>
  names.map((name) => ({ name, version, any: packAny(LISTENER_TYPE_URL, { name }) }));

describe('simulated Envoys against a fake xDS server', () => {
  let server: FakeXdsServer;
  let fleet: Fleet;
  let target: string;

  beforeEach(async () => {
    server = new FakeXdsServer();
    target = await server.start();
    server.setResources(CLUSTER_TYPE_URL, 'c1', clusters('c1', ['a', 'b']));
    server.setResources(LISTENER_TYPE_URL, 'l1', listeners('l1', ['http']));
    fleet = new Fleet({ target, channels: 2 });
  });

  afterEach(async () => {
    fleet.close();
    await server.stop();
  });

  const sotwRequestsOf = (nodeStream: number): DiscoveryRequest[] =>
    server.requests.filter((r) => r.stream === nodeStream && r.kind === 'sotw').map((r) => r.request as DiscoveryRequest);

  test('ADS SotW: ACKs echo version and nonce, node on every request, ground truth records names', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }, { typeUrl: LISTENER_TYPE_URL }],
      node: () => ({ id: 'e1', cluster: 'edge', metadata: { zone: 'z1' } }),
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1' && envoy.acceptedVersion(LISTENER_TYPE_URL) === 'l1', { timeoutMs: 10_000 });
    // The Envoy counts an acceptance when it sends the ACK; wait for the server to read both.
    await fleet.waitFor(() => sotwRequestsOf(1).length >= 4, { timeoutMs: 10_000 });
    const requests = sotwRequestsOf(1);
    // Two initial requests and two ACKs, all on one stream.
    expect(requests).toHaveLength(4);
    for (const request of requests) expect(request.node?.id).toBe('e1');
    expect(requests[0]?.node?.cluster).toBe('edge');
    const ack = requests.find((r) => r.type_url === CLUSTER_TYPE_URL && r.response_nonce);
    expect(ack?.version_info).toBe('c1');
    expect(ack?.error_detail).toBeUndefined();
    const accepted = fleet.truth.latestAccepted('e1', CLUSTER_TYPE_URL);
    expect(accepted?.resources.map((r) => r.name)).toEqual(['a', 'b']);
    expect(accepted?.nonce).toBe(ack?.response_nonce);

    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a']));
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c2', { timeoutMs: 10_000 });
    expect(fleet.truth.acceptedVersions('e1', CLUSTER_TYPE_URL).map((a) => a.versionInfo)).toEqual(['c1', 'c2']);
    expect([...envoy!.heldResources(CLUSTER_TYPE_URL).keys()]).toEqual(['a']);
  });

  test('per-type SotW with node only on the first request of each stream', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'per-type',
      protocol: 'sotw',
      nodeOnEveryRequest: false,
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }, { typeUrl: LISTENER_TYPE_URL }],
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1' && envoy.acceptedVersion(LISTENER_TYPE_URL) === 'l1', { timeoutMs: 10_000 });
    expect(envoy?.openStreams).toBe(2);
    await fleet.waitFor(() => server.requests.length >= 4, { timeoutMs: 10_000 });
    const streams = new Set(server.requests.map((r) => r.stream));
    expect(streams.size).toBe(2);
    for (const stream of streams) {
      const requests = sotwRequestsOf(stream);
      expect(requests.length).toBeGreaterThanOrEqual(2);
      expect(new Set(requests.map((r) => r.type_url)).size).toBe(1);
      expect(requests[0]?.node?.id).toBe('sim-0');
      for (const later of requests.slice(1)) expect(later.node).toBeUndefined();
    }
  });

  test('NACK rule: error_detail sent with the last good version, nothing recorded as accepted', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }],
      behaviour: parseBehaviour({ nackRules: [{ resourceName: '^bad-', message: 'cluster validation failed' }] }),
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a', 'bad-1']));
    await fleet.waitFor(() => fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL).length === 1, { timeoutMs: 10_000 });
    await fleet.waitFor(() => sotwRequestsOf(1).some((r) => r.error_detail), { timeoutMs: 10_000 });
    const nackRequest = sotwRequestsOf(1).find((r) => r.error_detail);
    expect(nackRequest?.version_info).toBe('c1');
    expect(nackRequest?.error_detail?.code).toBe(3);
    expect(nackRequest?.error_detail?.message).toBe('cluster validation failed (resource bad-1)');
    expect(fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL).map((a) => a.versionInfo)).toEqual(['c1']);
    expect(fleet.truth.acceptedAt('sim-0', CLUSTER_TYPE_URL, 'c2')).toBeUndefined();
    expect(envoy?.acceptedVersion(CLUSTER_TYPE_URL)).toBe('c1');
    expect(fleet.truth.nacks('sim-0', CLUSTER_TYPE_URL)[0]).toMatchObject({ versionInfo: 'c2', message: 'cluster validation failed (resource bad-1)' });
  });

  test('responses queued behind an ACK delay are decided in order: the NACK names the version just accepted', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }],
      behaviour: parseBehaviour({ ackDelayMs: 100, nackRules: [{ resourceName: '^bad$', message: 'bad' }] }),
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a']));
    server.setResources(CLUSTER_TYPE_URL, 'c3', clusters('c3', ['a', 'bad']));
    await fleet.waitFor(() => sotwRequestsOf(1).some((r) => r.error_detail), { timeoutMs: 10_000 });
    const answers = sotwRequestsOf(1).filter((r) => r.response_nonce);
    expect(answers.map((r) => [r.version_info, r.error_detail ? 'nack' : 'ack'])).toEqual([
      ['c1', 'ack'],
      ['c2', 'ack'],
      ['c2', 'nack'],
    ]);
    expect(envoy?.acceptedVersion(CLUSTER_TYPE_URL)).toBe('c2');
  });

  test('subscribe() changes the names on an open SotW stream and the new set is accepted', async () => {
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: CLUSTER_TYPE_URL, resourceNames: ['a'] }] });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    expect([...envoy!.heldResources(CLUSTER_TYPE_URL).keys()]).toEqual(['a']);
    envoy?.subscribe(CLUSTER_TYPE_URL, ['a', 'b']);
    await fleet.waitFor(() => envoy!.heldResources(CLUSTER_TYPE_URL).size === 2, { timeoutMs: 10_000 });
    const change = sotwRequestsOf(1).find((r) => (r.resource_names ?? []).length === 2);
    expect(change?.version_info).toBe('c1');
    expect(change?.response_nonce).toBeTruthy();
    expect(() => envoy?.subscribe(LISTENER_TYPE_URL, ['x'])).toThrow(/not subscribed/);
  });

  test('bad input: an unrequested type is ignored, an undecodable resource is NACKed, the stream lives on', async () => {
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }] });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    server.pushRawSotw({ version_info: 'x1', nonce: 'stray', type_url: LISTENER_TYPE_URL, resources: listeners('x1', ['l']).map((r) => r.any) });
    server.pushRawSotw({
      version_info: 'c-garbage',
      nonce: 'garbage',
      type_url: CLUSTER_TYPE_URL,
      resources: [{ type_url: CLUSTER_TYPE_URL, value: Buffer.from([0x0a, 0x40, 0x61]) }],
    });
    await fleet.waitFor(() => sotwRequestsOf(1).some((r) => r.response_nonce === 'garbage'), { timeoutMs: 10_000 });
    const nack = sotwRequestsOf(1).find((r) => r.response_nonce === 'garbage');
    expect(nack?.error_detail?.message).toMatch(/could not be decoded: truncated/);
    expect(nack?.version_info).toBe('c1');
    expect(sotwRequestsOf(1).some((r) => r.response_nonce === 'stray')).toBe(false);
    expect(fleet.truth.envoyTruth('sim-0')?.types.has(LISTENER_TYPE_URL)).toBe(false);
    // Still connected and still taking config.
    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a']));
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c2', { timeoutMs: 10_000 });
    expect(envoy?.openStreams).toBe(1);
  });

  test('hang: responses are received but never ACKed until the hang is lifted', async () => {
    const hung = parseBehaviour({ hang: true });
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }], behaviour: hung });
    fleet.connectAll();
    await fleet.waitFor(() => fleet.truth.envoyTruth('sim-0')?.types.get(CLUSTER_TYPE_URL)?.lastReceived !== undefined, { timeoutMs: 10_000 });
    // Give a would-be ACK every chance to leave: the scheduler runs and the server sees only the initial request.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sotwRequestsOf(1)).toHaveLength(1);
    expect(fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL)).toHaveLength(0);
    envoy?.setBehaviour(parseBehaviour({}));
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
  });

  test('ACK delay holds the ACK back without reordering', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }],
      behaviour: parseBehaviour({ ackDelayMs: 150 }),
    });
    fleet.connectAll();
    await fleet.waitFor(() => fleet.truth.envoyTruth('sim-0')?.types.get(CLUSTER_TYPE_URL)?.lastReceived !== undefined, { timeoutMs: 10_000 });
    const receivedAt = fleet.truth.envoyTruth('sim-0')?.types.get(CLUSTER_TYPE_URL)?.lastReceived?.at ?? 0;
    server.setResources(CLUSTER_TYPE_URL, 'c2', clusters('c2', ['a']));
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c2', { timeoutMs: 10_000 });
    const accepted = fleet.truth.acceptedVersions('sim-0', CLUSTER_TYPE_URL);
    expect(accepted.map((a) => a.versionInfo)).toEqual(['c1', 'c2']);
    // Lower bound only (with 10 ms slack for clock granularity): the delay was applied, however slow the machine.
    expect(accepted[0]!.acceptedAt - receivedAt).toBeGreaterThanOrEqual(140);
  });

  test('ADS Delta: reconnect sends initial_resource_versions from what was accepted', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'delta',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }],
      reconnectOnError: false,
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    expect(Object.fromEntries(envoy!.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c1', b: 'c1' });
    server.setResources(CLUSTER_TYPE_URL, 'c2', [...clusters('c2', ['a']), ...clusters('c1', ['b']).slice(0, 0), ...clusters('c2', ['c'])]);
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c2', { timeoutMs: 10_000 });
    expect(Object.fromEntries(envoy!.heldResources(CLUSTER_TYPE_URL))).toEqual({ a: 'c2', c: 'c2' });
    expect(fleet.truth.latestAccepted('sim-0', CLUSTER_TYPE_URL)?.removed).toEqual(['b']);

    envoy?.disconnect();
    await fleet.waitFor(() => server.openStreams === 0, { timeoutMs: 10_000 });
    const before = server.requests.length;
    envoy?.connect();
    await fleet.waitFor(() => server.requests.length > before, { timeoutMs: 10_000 });
    const reconnect = server.requests[before]?.request as DeltaDiscoveryRequest;
    expect(reconnect.response_nonce ?? '').toBe('');
    expect(reconnect.initial_resource_versions).toEqual({ a: 'c2', c: 'c2' });
    expect(reconnect.node?.id).toBe('sim-0');
    const kinds = fleet.truth.envoyTruth('sim-0')?.connections.map((c) => c.kind);
    expect(kinds).toEqual(['connected', 'disconnected', 'connected']);
  });

  test('server drops the stream: the Envoy reconnects by itself; vanish never returns', async () => {
    const [envoy] = fleet.addMany(1, {
      transport: 'ads',
      protocol: 'sotw',
      subscriptions: [{ typeUrl: CLUSTER_TYPE_URL }],
      reconnectDelayMs: 50,
    });
    fleet.connectAll();
    await fleet.waitFor(() => envoy?.acceptedVersion(CLUSTER_TYPE_URL) === 'c1', { timeoutMs: 10_000 });
    server.dropAllStreams();
    await fleet.waitFor(() => server.requests.some((r) => r.stream > 1), { timeoutMs: 10_000 });
    const reopened = server.requests.find((r) => r.stream > 1)?.request as DiscoveryRequest;
    // SotW reconnect: the last accepted version, no nonce (nonces do not outlive a stream).
    expect(reopened.version_info).toBe('c1');
    expect(reopened.response_nonce ?? '').toBe('');
    expect(fleet.truth.envoyTruth('sim-0')?.connections.map((c) => c.kind)).toEqual(['connected', 'stream-error', 'connected']);
    envoy?.vanish();
    expect(envoy?.status).toBe('vanished');
    expect(() => envoy?.connect()).toThrow(/vanished/);
    await fleet.waitFor(() => server.openStreams === 0, { timeoutMs: 10_000 });
  });
});
