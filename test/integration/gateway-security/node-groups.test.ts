// Node groups against Envoys that come and go or lie about themselves: a group nobody uses any more
// is freed (its upstream subscriptions cancelled), and comes back on a new lineage, never the old one
// with its seqs restarted; a stream joining within the idle time keeps it. The control plane sees a
// node made from the group, not whatever the first Envoy to join sent.
import { parseVersion } from '../../../common/core';
import { CLUSTER_TYPE_URL, type DiscoveryResponse } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { LineageRetirement, Relay } from '../../../xds-gateway/relay/relay';
import { eventually, newSource, RecordingObserver, sleep, startTestControlPlane, startTestRelay } from '../gateway-relay/helpers';
import { AdsClients, RecordingUpstream } from './hostile-helpers';

const lineageOf = (response: DiscoveryResponse): string => {
  const parsed = parseVersion(response.version_info ?? '');
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value.lineage;
};

describe('node groups: freed when idle, recreated on a new lineage', () => {
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let relay: Relay;
  const clients = new AdsClients();
  const retired: { group: string; lineage: string; cause: LineageRetirement }[] = [];
  const IDLE_MS = 400;

  beforeAll(async () => {
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    relay = await startTestRelay(controlPlane.address, new RecordingObserver(), {
      groupIdleMs: IDLE_MS,
      onLineageRetired: (group, lineage, cause) => retired.push({ group, lineage, cause }),
    });
  });

  afterAll(async () => {
    clients.close();
    await relay.control.close();
    await controlPlane.close();
    await source.close();
  });

  /** Upstream streams of the group that the control plane saw opened and closed. */
  const upstreamStreams = (group: string): { opened: Set<number>; closed: Set<number> } => {
    const opened = new Set<number>();
    const closed = new Set<number>();
    for (const event of controlPlane.xdsEvents.all()) {
      if (event.stream.nodeId !== `xds-gateway.gw-test.${group}`) continue;
      if (event.event === 'request') opened.add(event.stream.streamId);
      if (event.event === 'stream-closed' || event.event === 'stream-error') closed.add(event.stream.streamId);
    }
    return { opened, closed };
  };

  test('a group without streams for the idle time is freed: upstream cancelled, lineage retired, next Envoy on a new lineage', async () => {
    const connection = clients.connection(relay.port);
    const first = clients.askClusters(connection, { id: 'idle-1', cluster: 'idle-a' });
    const firstLineage = lineageOf(await first.next());
    expect(firstLineage).toBe('gw-test.boot-1.idle-a');
    first.close();

    await eventually(() => !relay.control.groups().some((g) => g.group === 'idle-a'), 'the idle group freed', 5000);
    expect(retired).toContainEqual({ group: 'idle-a', lineage: firstLineage, cause: 'idle' });
    // Its upstream subscription is gone, not left running for nobody.
    await eventually(() => {
      const { opened, closed } = upstreamStreams('idle-a');
      return opened.size === 1 && closed.size === 1;
    }, 'the control plane saw the group\'s upstream stream end');

    // The same group again: a new lineage, so its seqs (starting over) can never be confused with
    // versions the old lineage already served.
    const again = clients.askClusters(connection, { id: 'idle-1', cluster: 'idle-a' });
    const secondLineage = lineageOf(await again.next());
    expect(secondLineage).not.toBe(firstLineage);
    expect(secondLineage).toMatch(/^gw-test\.boot-1-l[0-9]+\.idle-a$/);
    expect(relay.control.groups().find((g) => g.group === 'idle-a')?.lineage).toBe(secondLineage);
  });

  test('a stream joining within the idle time keeps the group: same lineage, same upstream stream', async () => {
    const connection = clients.connection(relay.port);
    const first = clients.askClusters(connection, { id: 'busy-1', cluster: 'idle-b' });
    const lineage = lineageOf(await first.next());
    const openedBefore = relay.upstreamStreamsOpened()['idle-b'];
    first.close();
    await sleep(IDLE_MS / 2);
    const second = clients.askClusters(connection, { id: 'busy-2', cluster: 'idle-b' });
    expect(lineageOf(await second.next())).toBe(lineage);
    // Well past the idle time from the first stream's close: the join cancelled the timer.
    await sleep(IDLE_MS * 2);
    expect(relay.control.groups().find((g) => g.group === 'idle-b')?.lineage).toBe(lineage);
    expect(relay.upstreamStreamsOpened()['idle-b']).toEqual(openedBefore);
    expect(retired.some((r) => r.group === 'idle-b')).toBe(false);
    expect(upstreamStreams('idle-b').closed.size).toBe(0);
  });
});

describe('the upstream node is made from the group, not taken from the first Envoy', () => {
  let upstream: RecordingUpstream;
  const clients = new AdsClients();
  const relays: Relay[] = [];

  beforeAll(async () => {
    upstream = new RecordingUpstream();
    await upstream.start();
  });

  afterAll(async () => {
    clients.close();
    for (const relay of relays) await relay.control.close();
    upstream.close();
  });

  const metadata = (fields: Record<string, string>) => ({ fields: Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, { stringValue: value }])) });
  const firstUpstreamNode = (nodeId: string) =>
    eventually(() => upstream.requests.find((r) => r.type_url === CLUSTER_TYPE_URL && r.node?.id === nodeId)?.node ?? undefined, `an upstream request as ${nodeId}`);

  test('grouping by cluster: the gateway\'s id, the cluster, its own user agent; nothing else of the Envoy', async () => {
    const relay = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), { instanceId: 'gw-node' });
    relays.push(relay);
    clients.askClusters(clients.connection(relay.port), {
      id: 'first-joiner',
      cluster: 'ingress',
      metadata: metadata({ pod: 'attacker', istio: 'sidecar' }),
      locality: { region: 'r', zone: 'z' },
      user_agent_name: 'envoy',
      user_agent_version: '1.30.0',
    });
    const node = await firstUpstreamNode('xds-gateway.gw-node.ingress');
    expect(node).toMatchObject({ id: 'xds-gateway.gw-node.ingress', cluster: 'ingress', user_agent_name: 'xds-gateway' });
    expect(Object.keys(node.metadata?.fields ?? {})).toEqual([]);
    expect(node.locality?.zone ?? '').toBe('');
    expect(node.user_agent_version ?? '').toBe('');
  });

  test('grouping by a metadata field: only that field; without it the key is the cluster, which is sent', async () => {
    const relay = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), { instanceId: 'gw-meta', groupBy: { by: 'metadata', field: 'pool' } });
    relays.push(relay);
    const connection = clients.connection(relay.port);
    clients.askClusters(connection, { id: 'meta-1', cluster: 'edge', metadata: metadata({ pool: 'blue', secret: 'do-not-forward' }) });
    const byField = await firstUpstreamNode('xds-gateway.gw-meta.blue');
    expect(byField.cluster ?? '').toBe('');
    expect(byField.metadata?.fields).toEqual({ pool: expect.objectContaining({ stringValue: 'blue' }) });

    clients.askClusters(connection, { id: 'meta-2', cluster: 'fallback', metadata: metadata({ secret: 'do-not-forward' }) });
    const byCluster = await firstUpstreamNode('xds-gateway.gw-meta.fallback');
    expect(byCluster.cluster).toBe('fallback');
    expect(Object.keys(byCluster.metadata?.fields ?? {})).toEqual([]);
  });

  test('upstream.node still overrides the default', async () => {
    const relay = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), {
      instanceId: 'gw-override',
      upstream: { node: (group, firstEnvoyNode) => ({ id: `custom.${group}`, cluster: firstEnvoyNode.cluster ?? '' }) },
    });
    relays.push(relay);
    clients.askClusters(clients.connection(relay.port), { id: 'override-1', cluster: 'custom-group' });
    expect(await firstUpstreamNode('custom.custom-group')).toMatchObject({ cluster: 'custom-group' });
  });
});
