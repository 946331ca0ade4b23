// A real xDS client (@grpc/grpc-js-xds) through the relay to the reference control plane: it resolves
// LDS → RDS → CDS → EDS from the relay's cache (named subscriptions), ACKs gateway versions, follows a
// config change, and NACKs a route configuration it rejects (classified nack, never ack, no resend).
import { parseVersion } from '../../../common/core';
import {
  CLUSTER_LOAD_ASSIGNMENT_TYPE_URL,
  CLUSTER_TYPE_URL,
  LISTENER_TYPE_URL,
  ROUTE_CONFIGURATION_TYPE_URL,
} from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { RealXdsClient, startEchoBackend, type EchoBackend } from '../../../infra/local/envoys/realClient';
import type { Relay } from '../../../xds-gateway/relay';
import { endpointsOf, eventually, httpProxy, RecordingObserver, sleep, startTestControlPlane, startTestRelay } from './helpers';

const TYPES = [LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL, CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL];

describe('grpc-js-xds through the relay', () => {
  let blue: EchoBackend;
  let green: EchoBackend;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let observer: RecordingObserver;
  let relay: Relay;
  const clients: RealXdsClient[] = [];

  beforeAll(async () => {
    blue = await startEchoBackend('blue');
    green = await startEchoBackend('green');
    source = new InMemoryRouteSource();
    source.applyEndpoints(endpointsOf('blue', '127.0.0.1', blue.port));
    source.applyEndpoints(endpointsOf('green', '127.0.0.1', green.port));
    source.applyProxy(httpProxy('blue', 'web.example.com', blue.port));
    controlPlane = await startTestControlPlane(source, { provenance: true });
    observer = new RecordingObserver();
    relay = await startTestRelay(controlPlane.address, observer);
  });

  afterAll(async () => {
    for (const client of clients) client.close();
    // grpc-js-xds drops its XdsClient (and its ADS stream) shortly after the last channel closes; let
    // it go before the relay ends the stream, or the client arms a reconnect timer.
    await sleep(500);
    await relay?.control.close();
    await controlPlane?.close();
    await blue?.close();
    await green?.close();
  });

  const client = (nodeId: string): RealXdsClient => {
    const created = new RealXdsClient({ xdsServerAddress: `127.0.0.1:${relay.port}`, node: { id: nodeId, cluster: 'grpc' }, listenerName: 'web.example.com' });
    clients.push(created);
    return created;
  };

  async function echoUntil(target: RealXdsClient, backend: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const reply = await target.echo('hello', 2000);
        if (reply.backend === backend) return;
      } catch {
        // Not ready yet (or between configs); retry.
      }
      if (Date.now() > deadline) throw new Error(`echo never reached ${backend}`);
      await sleep(50);
    }
  }

  test('resolves LDS → RDS → CDS → EDS through the relay and ACKs gateway versions; a change reaches it', async () => {
    const real = client('grpc-ack');
    await real.waitForReady(20_000);
    await echoUntil(real, 'blue');
    const lineage = relay.control.groups().find((g) => g.group === 'grpc')?.lineage;
    expect(lineage).toBe('gw-test.boot-1.grpc');
    for (const typeUrl of TYPES) {
      const sent = observer.responses('grpc-ack', typeUrl);
      expect(sent.length).toBeGreaterThan(0);
      await eventually(
        () => observer.requests('grpc-ack', typeUrl).some((e) => e.classification.kind === 'ack' && parseVersion(e.classification.version).ok),
        `ack of ${typeUrl}`,
      );
      const ack = observer.requests('grpc-ack', typeUrl).find((e) => e.classification.kind === 'ack');
      if (ack?.classification.kind !== 'ack') throw new Error('no ack');
      expect(parseVersion(ack.classification.version)).toMatchObject({ ok: true, value: { lineage } });
    }
    // grpc-js-xds subscribes by name, following references.
    expect(observer.requests('grpc-ack', LISTENER_TYPE_URL)[0]?.resourceNames).toEqual(['web.example.com']);
    expect(observer.requests('grpc-ack', ROUTE_CONFIGURATION_TYPE_URL).some((e) => e.resourceNames.includes('ingress_http'))).toBe(true);
    expect(observer.requests('grpc-ack').some((e) => e.classification.kind === 'nack')).toBe(false);

    // Route the vhost to the other backend: the change flows through the relay.
    source.applyProxy({ ...httpProxy('blue', 'web.example.com', green.port), spec: { virtualhost: { fqdn: 'web.example.com' }, routes: [{ services: [{ name: 'green', port: green.port }] }] } });
    await controlPlane.rebuildNow();
    await echoUntil(real, 'green');
    const rdsAcks = observer.requests('grpc-ack', ROUTE_CONFIGURATION_TYPE_URL).filter((e) => e.classification.kind === 'ack');
    expect(new Set(rdsAcks.map((e) => (e.classification.kind === 'ack' ? e.classification.version : ''))).size).toBeGreaterThanOrEqual(2);
  });

  test('NACK of a route configuration: classified nack with the message, never ack, not resent', async () => {
    source.applyProxy(httpProxy('broken', 'broken.example.com', blue.port, { 'xds-programmed.dev/force-nack': 'true' }));
    source.applyEndpoints(endpointsOf('broken', '127.0.0.1', blue.port));
    await controlPlane.rebuildNow();
    const real = client('grpc-nack');
    void real.echo('queued', 5000).catch(() => undefined);
    const nack = await eventually(
      () => observer.requests('grpc-nack', ROUTE_CONFIGURATION_TYPE_URL).find((e) => e.classification.kind === 'nack'),
      'a NACK of the route configuration',
    );
    if (nack.classification.kind !== 'nack') throw new Error('unreachable');
    expect(nack.classification.message).toMatch(/multiple wildcards/);
    const rejected = nack.classification.version;
    expect(parseVersion(rejected).ok).toBe(true);
    expect(observer.requests('grpc-nack').some((e) => e.classification.kind === 'ack' && e.classification.version === rejected && e.typeUrl === ROUTE_CONFIGURATION_TYPE_URL)).toBe(false);
    const rdsResponses = observer.responses('grpc-nack', ROUTE_CONFIGURATION_TYPE_URL).length;
    await sleep(700);
    expect(observer.responses('grpc-nack', ROUTE_CONFIGURATION_TYPE_URL).length).toBe(rdsResponses);

    // Fixing the object is a new version, sent and ACKed.
    source.applyProxy(httpProxy('broken', 'broken.example.com', blue.port));
    await controlPlane.rebuildNow();
    await eventually(
      () => observer.requests('grpc-nack', ROUTE_CONFIGURATION_TYPE_URL).some((e) => e.classification.kind === 'ack'),
      'ACK of the fixed route configuration',
    );
    // And the client now routes (this also lets grpc-js-xds settle its load balancers, whose
    // failover timer would otherwise outlive the test). The first test moved web.example.com to green.
    await echoUntil(real, 'green');
  });
});
