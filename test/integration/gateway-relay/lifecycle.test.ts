// Relay lifecycle: Envoys reconnecting with versions of another lineage, the upstream going away and
// coming back, the observed-generation barrier (reopenUpstream), and following a new upstream target.
import * as grpc from '@grpc/grpc-js';
import { encodeVersion, parseVersion } from '../../../common/core';
import {
  ADS_SERVICE,
  createDiscoveryClient,
  openAdsSotw,
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { Fleet, type SimEnvoy } from '../../../infra/local/envoys';
import type { Relay } from '../../../xds-gateway/relay';
import {
  endpointsOf,
  eventually,
  httpProxy,
  newSource,
  RecordingObserver,
  startTestControlPlane,
  startTestRelay,
  testLogger,
  upstreamStreamsByType,
} from './helpers';
import { StreamReader } from './stream-reader';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const WILDCARD_ALL = TYPES.map((typeUrl) => ({ typeUrl }));
const RELAY_NODE = /^xds-gateway\.gw-test\./;

function change(source: InMemoryRouteSource, port: number): void {
  source.applyEndpoints(endpointsOf('app', '10.0.0.1', port));
  source.applyProxy(httpProxy('app', 'app.example.com', port));
}

describe('relay lifecycle', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const typeVersion = (relay: Relay, typeUrl: string): string | undefined => {
    const info = relay.control.groups().find((g) => g.group === 'sim');
    const seq = info?.typeHistory[typeUrl]?.at(-1);
    return info === undefined || seq === undefined ? undefined : encodeVersion({ lineage: info.lineage, seq });
  };
  const atRelayVersions = (relay: Relay, envoy: SimEnvoy): boolean =>
    TYPES.every((t) => typeVersion(relay, t) !== undefined && envoy.acceptedVersion(t) === typeVersion(relay, t));

  async function stack(bootId = 'boot-1'): Promise<{ source: InMemoryRouteSource; controlPlane: ControlPlane; observer: RecordingObserver; relay: Relay; fleet: Fleet }> {
    const source = newSource();
    const controlPlane = await startTestControlPlane(source);
    cleanups.push(() => controlPlane.close());
    const observer = new RecordingObserver();
    const relay = await startTestRelay(controlPlane.address, observer, { bootId });
    cleanups.push(() => relay.control.close());
    const fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 1, logger: testLogger });
    cleanups.push(() => fleet.close());
    return { source, controlPlane, observer, relay, fleet };
  }

  test.each(['sotw', 'delta'] as const)('%s: a reconnect carrying versions of another lineage is treated as unknown (full send)', async (protocol) => {
    const { controlPlane, relay, fleet } = await stack('boot-1');
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol, subscriptions: WILDCARD_ALL, reconnectOnError: true, reconnectDelayMs: 50 });
    envoy!.connect();
    await fleet.waitFor(() => atRelayVersions(relay, envoy!), { timeoutMs: 20_000 });
    const oldVersion = envoy!.acceptedVersion(CLUSTER_TYPE_URL) as string;
    expect(parseVersion(oldVersion)).toMatchObject({ ok: true, value: { lineage: 'gw-test.boot-1.sim' } });

    // The gateway restarts (new bootId → new lineage) on the same port; the Envoy reconnects.
    await relay.control.close({ graceMs: 100 });
    const observer2 = new RecordingObserver();
    const relay2 = await startTestRelay(controlPlane.address, observer2, { bootId: 'boot-2', listen: { host: '127.0.0.1', port: relay.port } });
    cleanups.push(() => relay2.control.close());
    await fleet.waitFor(() => atRelayVersions(relay2, envoy!), { timeoutMs: 20_000 });

    const initial = observer2.requests('sim-0', CLUSTER_TYPE_URL)[0];
    expect(initial?.classification.kind).toBe('initial');
    if (protocol === 'sotw') expect(initial?.classification).toEqual({ kind: 'initial', versionInfo: oldVersion });
    // Full send: every cached resource of every type went out on the new stream.
    for (const typeUrl of TYPES) {
      const served = controlPlane.currentSnapshot()?.[typeUrl as typeof CLUSTER_TYPE_URL].resources.size;
      expect(observer2.responses('sim-0', typeUrl)[0]?.resourceCount).toBe(served);
    }
    for (const version of envoy!.heldResources(CLUSTER_TYPE_URL).values()) {
      if (protocol === 'delta') expect(parseVersion(version)).toMatchObject({ ok: true, value: { lineage: 'gw-test.boot-2.sim' } });
    }
  });

  test('upstream down: Envoys are still served from the cache; the relay reconnects when it is back', async () => {
    const { source, controlPlane, observer, relay, fleet } = await stack();
    const [first] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    first!.connect();
    await fleet.waitFor(() => atRelayVersions(relay, first!), { timeoutMs: 20_000 });
    const port = controlPlane.port;
    await controlPlane.close();
    await eventually(() => observer.of('upstreamState').at(-1)?.state === 'unavailable', 'upstream unavailable');

    // A new Envoy connecting now gets the cached config.
    const [second] = fleet.addMany(1, { transport: 'ads', protocol: 'delta', subscriptions: WILDCARD_ALL });
    second!.connect();
    await fleet.waitFor(() => atRelayVersions(relay, second!), { timeoutMs: 20_000 });
    expect(second!.heldResources(CLUSTER_TYPE_URL).has('default/app/8080')).toBe(true);

    // The control plane comes back on the same address with newer config.
    change(source, 9095);
    const restarted = await startTestControlPlane(source, { port });
    cleanups.push(() => restarted.close());
    await eventually(() => observer.of('upstreamState').at(-1)?.state === 'ready', 'upstream ready again');
    await fleet.waitFor(
      () => [first!, second!].every((e) => e.heldResources(CLUSTER_TYPE_URL).has('default/app/9095') && atRelayVersions(relay, e)),
      { timeoutMs: 20_000 },
    );
    const streams = upstreamStreamsByType(restarted, RELAY_NODE);
    for (const typeUrl of TYPES) expect(streams.get(typeUrl)?.size).toBe(1);
  });

  test('reopenUpstream resolves after the first response on new streams and batches concurrent calls', async () => {
    const { source, controlPlane, observer, relay, fleet } = await stack();
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    envoy!.connect();
    await fleet.waitFor(() => atRelayVersions(relay, envoy!), { timeoutMs: 20_000 });
    await expect(relay.control.reopenUpstream('no-such-group')).rejects.toThrow(/no node group/);

    // The controller has processed the change (snapshot set) before the barrier is taken.
    change(source, 9096);
    await controlPlane.rebuildNow();
    const a = relay.control.reopenUpstream('sim');
    const b = relay.control.reopenUpstream('sim');
    expect(b).toBe(a);
    const result = await a;
    const appliedAtResolution = observer.of('upstreamApplied');
    // Every type's first response on the new streams (epoch 2) was applied before it resolved.
    for (const typeUrl of TYPES) {
      const applied = appliedAtResolution.filter((e) => e.typeUrl === typeUrl && e.upstreamEpoch === 2);
      expect(applied.length).toBeGreaterThanOrEqual(1);
      expect(result.types[typeUrl]).toBe(applied[0]?.seq);
    }
    const cds = appliedAtResolution.filter((e) => e.typeUrl === CLUSTER_TYPE_URL && e.upstreamEpoch === 2)[0];
    // The old cluster is still served beside the new one: the served route references it until the
    // RDS of this rebuild is applied (make-before-break keeps it until clients moved off it).
    expect(cds?.resources.map((r) => r.name)).toEqual(['default/app/9096', 'default/app/8080']);
    expect(result.lineage).toBe('gw-test.boot-1.sim');
    expect(result.seq).toBeGreaterThanOrEqual(Math.max(...Object.values(result.types)));
    // One re-open for both calls: two streams per type in total at the control plane.
    const streams = upstreamStreamsByType(controlPlane, RELAY_NODE);
    for (const typeUrl of TYPES) expect(streams.get(typeUrl)?.size).toBe(2);

    // A call made after a re-open has started gets its own (its moment is later than those requests).
    const c = relay.control.reopenUpstream('sim');
    await new Promise((resolve) => setImmediate(resolve));
    const d = relay.control.reopenUpstream('sim');
    expect(d).not.toBe(c);
    await Promise.all([c, d]);
    const epochs = new Set(observer.of('upstreamApplied').map((e) => e.upstreamEpoch));
    expect([...epochs].sort()).toEqual([1, 2, 3, 4]);
    await fleet.waitFor(() => atRelayVersions(relay, envoy!) && envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9096'), { timeoutMs: 20_000 });
  });

  test('an observer that throws is logged and never breaks a stream', async () => {
    const source = newSource();
    const controlPlane = await startTestControlPlane(source);
    cleanups.push(() => controlPlane.close());
    const explode = (): void => {
      throw new Error('observer bug');
    };
    const relay = await startTestRelay(controlPlane.address, {
      streamOpened: explode,
      requestClassified: explode,
      responseSent: explode,
      streamClosed: explode,
      upstreamApplied: explode,
      upstreamState: explode,
    });
    cleanups.push(() => relay.control.close());
    const fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 1, logger: testLogger });
    cleanups.push(() => fleet.close());
    const envoys = fleet.addMany(2, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    fleet.connectAll();
    await fleet.waitFor(() => envoys.every((e) => atRelayVersions(relay, e)), { timeoutMs: 20_000 });
    change(source, 9099);
    await controlPlane.rebuildNow();
    await fleet.waitFor(() => envoys.every((e) => e.heldResources(CLUSTER_TYPE_URL).has('default/app/9099') && atRelayVersions(relay, e)), { timeoutMs: 20_000 });
  });

  test('close ends every downstream stream with UNAVAILABLE (Envoys reconnect elsewhere) and reports it', async () => {
    const { relay, observer } = await stack();
    const client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${relay.port}`);
    cleanups.push(() => client.close());
    const stream = new StreamReader(openAdsSotw(client));
    stream.send({ node: { id: 'closing-1', cluster: 'sim' }, type_url: LISTENER_TYPE_URL });
    await stream.next();
    expect(relay.openStreams()).toBe(1);
    await relay.control.close({ graceMs: 200 });
    expect(await stream.status).toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'relay shutting down' });
    expect(observer.of('streamClosed')).toEqual([expect.objectContaining({ nodeId: 'closing-1', reason: 'relay shutting down' })]);
    expect(relay.openStreams()).toBe(0);
  });

  test('setUpstreamTarget moves the subscriptions to the new control plane', async () => {
    const { relay, fleet, observer } = await stack();
    const [envoy] = fleet.addMany(1, { transport: 'ads', protocol: 'sotw', subscriptions: WILDCARD_ALL });
    envoy!.connect();
    await fleet.waitFor(() => atRelayVersions(relay, envoy!), { timeoutMs: 20_000 });
    const otherSource = newSource(9097);
    const leader = await startTestControlPlane(otherSource, { replicaId: 'cp-leader' });
    cleanups.push(() => leader.close());
    relay.control.setUpstreamTarget(leader.address);
    await fleet.waitFor(() => envoy!.heldResources(CLUSTER_TYPE_URL).has('default/app/9097') && atRelayVersions(relay, envoy!), { timeoutMs: 20_000 });
    const streams = upstreamStreamsByType(leader, RELAY_NODE);
    for (const typeUrl of TYPES) expect(streams.get(typeUrl)?.size).toBe(1);
    expect(observer.of('upstreamState').filter((e) => e.state === 'ready').at(-1)?.target).toBe(leader.address);
  });
});
