// Gateway hardening at the relay's edge, with real TLS (throwaway PKI from openssl) and raw grpc-js
// clients: TLS and mTLS downstream, TLS/mTLS upstream (a second relay whose control plane is the
// first relay), the per-connection stream limit, the per-stream request rate limit, and that logs
// never carry key material.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, CLUSTER_TYPE_URL, createDiscoveryClient, openAdsSotw, type DiscoveryRequest, type DiscoveryResponse } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { REDACTED } from '../../../xds-gateway/ops/logging';
import type { Relay } from '../../../xds-gateway/relay';
import { startLocalDynamo } from '../../../infra/local/dynamo';
import { envoyEvents, eventually, startTestGateway } from '../gateway/helpers';
import { newSource, RecordingObserver, startTestControlPlane, startTestRelay, testLogger } from '../gateway-relay/helpers';
import { StreamReader } from '../gateway-relay/stream-reader';
import { createTestPki, issueServerCert, type TestPki } from './certs';
import { captureLogger, type CapturedLogger } from './log-capture';

type Reader = StreamReader<DiscoveryRequest, DiscoveryResponse>;

const node = (id: string): DiscoveryRequest['node'] => ({ id, cluster: 'secure' });

describe('gateway security: TLS, mTLS, limits, redaction', () => {
  let pki: TestPki;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let tlsRelay: Relay;
  let mtlsRelay: Relay;
  let logs: CapturedLogger;
  const clients: grpc.Client[] = [];
  const readers: Reader[] = [];
  const extraRelays: Relay[] = [];

  const client = (port: number, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions = {}): grpc.Client => {
    // Own subchannel per client: one test's connection must not be reused by another.
    const created = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${port}`, credentials, { 'grpc.use_local_subchannel_pool': 1, 'grpc.ssl_target_name_override': 'localhost', ...options });
    clients.push(created);
    return created;
  };
  const open = (from: grpc.Client): Reader => {
    const reader = new StreamReader(openAdsSotw(from));
    readers.push(reader);
    return reader;
  };
  const askClusters = (reader: Reader, id: string): void => reader.send({ node: node(id), type_url: CLUSTER_TYPE_URL, resource_names: [] });

  beforeAll(async () => {
    pki = createTestPki();
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    logs = captureLogger();
    tlsRelay = await startTestRelay(controlPlane.address, new RecordingObserver(), {
      logger: logs.logger,
      listen: { host: '127.0.0.1', port: 0, tls: { certChain: pki.server.cert, privateKey: pki.server.key, requireClientCert: false } },
    });
    mtlsRelay = await startTestRelay(controlPlane.address, new RecordingObserver(), {
      bootId: 'boot-mtls',
      logger: logs.logger,
      listen: { host: '127.0.0.1', port: 0, tls: { certChain: pki.server.cert, privateKey: pki.server.key, rootCerts: pki.ca.cert, requireClientCert: true } },
      limits: { maxStreamsPerConnection: 2, requestRate: { ratePerSecond: 1, burst: 5 } },
    });
  });

  afterAll(async () => {
    for (const reader of readers) reader.close();
    for (const created of clients) created.close();
    for (const relay of extraRelays) await relay.control.close();
    await mtlsRelay.control.close();
    await tlsRelay.control.close();
    await controlPlane.close();
    await source.close();
    pki.remove();
  });

  test('TLS: a client trusting the CA is served; a plaintext client is not', async () => {
    const secure = open(client(tlsRelay.port, grpc.credentials.createSsl(pki.ca.cert)));
    askClusters(secure, 'tls-ok');
    const response = await secure.next();
    expect(response.type_url).toBe(CLUSTER_TYPE_URL);
    expect(response.resources?.length).toBeGreaterThan(0);

    const plain = open(client(tlsRelay.port, grpc.credentials.createInsecure()));
    askClusters(plain, 'tls-plain');
    const status = await plain.status;
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
  });

  test('mTLS: a client certificate from the CA is served; none, or one from another CA, is refused', async () => {
    const good = open(client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert)));
    askClusters(good, 'mtls-ok');
    expect((await good.next()).resources?.length).toBeGreaterThan(0);

    const noCert = open(client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert)));
    askClusters(noCert, 'mtls-none');
    const rogue = open(client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.rogueClient.key, pki.rogueClient.cert)));
    askClusters(rogue, 'mtls-rogue');
    for (const refused of [noCert, rogue]) {
      const status = await refused.status;
      expect(status.code).toBe(grpc.status.UNAVAILABLE);
      expect(await refused.silentFor(50)).toBe(true);
    }
  });

  test('upstream TLS/mTLS: a relay whose control plane is the mTLS relay gets and serves its config', async () => {
    const downstream = await startTestRelay(`localhost:${mtlsRelay.port}`, new RecordingObserver(), {
      bootId: 'boot-chained',
      instanceId: 'gw-chained',
      upstream: { tls: { rootCerts: pki.ca.cert, privateKey: pki.client.key, certChain: pki.client.cert } },
    });
    extraRelays.push(downstream);
    const reader = open(client(downstream.port, grpc.credentials.createInsecure()));
    askClusters(reader, 'chained');
    const response = await reader.next(20_000);
    expect(response.resources?.length).toBeGreaterThan(0);
    expect(downstream.control.groups()[0]?.currentSeq).toBeGreaterThan(0);

    // Without a client certificate the same upstream refuses: no config ever arrives.
    const noCert = await startTestRelay(`localhost:${mtlsRelay.port}`, new RecordingObserver(), {
      bootId: 'boot-nocert',
      instanceId: 'gw-nocert',
      upstream: { tls: { rootCerts: pki.ca.cert } },
    });
    extraRelays.push(noCert);
    const starved = open(client(noCert.port, grpc.credentials.createInsecure()));
    askClusters(starved, 'starved');
    expect(await starved.silentFor(1500)).toBe(true);
  });

  test('upstream TLS server name: a control plane whose certificate names a Service, dialled by address, is accepted only with --upstream-tls-server-name', async () => {
    // As when following Contour's leader by its pod address: the certificate names the Service.
    const named = issueServerCert(pki, 'contour-service', ['contour.projectcontour']);
    const upstream = await startTestRelay(`127.0.0.1:${controlPlane.port}`, new RecordingObserver(), {
      bootId: 'boot-named',
      instanceId: 'gw-named',
      listen: { host: '127.0.0.1', port: 0, tls: { certChain: named.cert, privateKey: named.key, requireClientCert: false } },
    });
    extraRelays.push(upstream);
    const withName = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), {
      bootId: 'boot-with-name',
      instanceId: 'gw-with-name',
      upstream: { tls: { rootCerts: pki.ca.cert, serverName: 'contour.projectcontour' } },
    });
    extraRelays.push(withName);
    const served = open(client(withName.port, grpc.credentials.createInsecure()));
    askClusters(served, 'named-ok');
    expect((await served.next(20_000)).resources?.length).toBeGreaterThan(0);

    const withoutName = await startTestRelay(`127.0.0.1:${upstream.port}`, new RecordingObserver(), {
      bootId: 'boot-without-name',
      instanceId: 'gw-without-name',
      upstream: { tls: { rootCerts: pki.ca.cert } },
    });
    extraRelays.push(withoutName);
    const starved = open(client(withoutName.port, grpc.credentials.createInsecure()));
    askClusters(starved, 'named-starved');
    expect(await starved.silentFor(1500)).toBe(true);
  });

  test('at most maxStreamsPerConnection streams are served per connection; another connection is not affected', async () => {
    const connection = client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert));
    const first = open(connection);
    const second = open(connection);
    askClusters(first, 'streams-1');
    askClusters(second, 'streams-2');
    await first.next();
    await second.next();
    const third = open(connection);
    askClusters(third, 'streams-3');
    // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: the third stream is never opened on this connection
    // while the two others are (refused or held by the client, depending on timing).
    expect(await third.silentFor(1000)).toBe(true);

    const other = open(client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert)));
    askClusters(other, 'streams-other');
    expect((await other.next()).resources?.length).toBeGreaterThan(0);
  });

  test('a stream over its request rate ends RESOURCE_EXHAUSTED; other streams keep being served', async () => {
    const connection = client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert));
    const flooder = open(connection);
    askClusters(flooder, 'flood');
    await flooder.next();
    // Burst 5 at 1/s: 20 requests at once cannot all pass.
    for (let i = 0; i < 20; i += 1) flooder.send({ type_url: CLUSTER_TYPE_URL, resource_names: [], response_nonce: 'not-a-nonce', version_info: String(i) });
    const status = await flooder.status;
    expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(status.details).toMatch(/request rate above 1\/s \(burst 5\)/);

    const calm = open(client(mtlsRelay.port, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert)));
    askClusters(calm, 'calm');
    expect((await calm.next()).resources?.length).toBeGreaterThan(0);
  });

  test('logs carry no key material, and the redact config censors it if a log call ever passes it', () => {
    const keyBody = pki.server.key.toString().split('\n')[1] ?? '';
    expect(keyBody.length).toBeGreaterThan(20);
    const before = logs.text();
    expect(before).toContain('relay: listening');
    expect(before).not.toContain(keyBody);
    logs.logger.info({ tls: { privateKey: pki.server.key.toString(), certChain: 'x' }, env: { AWS_SECRET_ACCESS_KEY: 'hunter2' }, headers: { authorization: 'Bearer t0ken' } }, 'oops');
    const after = logs.text().slice(before.length);
    expect(after).toContain(REDACTED);
    expect(after).not.toContain(keyBody);
    expect(after).not.toContain('hunter2');
    expect(after).not.toContain('t0ken');
  });

  test('startGateway wires the TLS flags: mTLS Envoys are served and recorded, others refused', async () => {
    const dynamo = await startLocalDynamo({ logger: testLogger });
    const gateway = await startTestGateway({
      upstream: controlPlane.address,
      table: 'gw-tls',
      'dynamodb-endpoint': dynamo.endpoint,
      'listen-tls-cert': pki.server.certPath,
      'listen-tls-key': pki.server.keyPath,
      'listen-tls-client-ca': pki.ca.certPath,
      'listen-tls-require-client-cert': 'true',
      'instance-id': 'gw-tls',
    });
    try {
      const good = open(client(gateway.xdsPort, grpc.credentials.createSsl(pki.ca.cert, pki.client.key, pki.client.cert)));
      askClusters(good, 'gw-mtls-ok');
      const response = await good.next();
      expect(response.resources?.length).toBeGreaterThan(0);
      good.send({ type_url: CLUSTER_TYPE_URL, resource_names: [], response_nonce: response.nonce ?? '', version_info: response.version_info ?? '' });
      await eventually(async () => (await envoyEvents(gateway.store, 'gw-mtls-ok')).some((e) => e.outcome === 'ACK'), 'the ACK over mTLS is stored');
      const noCert = open(client(gateway.xdsPort, grpc.credentials.createSsl(pki.ca.cert)));
      askClusters(noCert, 'gw-mtls-none');
      expect((await noCert.status).code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      await gateway.close();
      await dynamo.close();
    }
  });

  test('config: TLS and limit flags are validated and read from the environment', () => {
    // Upstream plaintext is asked for; downstream TLS comes from the flags or environment below.
    const base = ['--upstream', 'cp:8001', '--table', 'tbl', '--instance-id', 'gw', '--upstream-insecure-plaintext'];
    const bad = parseGatewayConfig([...base, '--listen-tls-cert', '/c.pem', '--listen-tls-require-client-cert', 'true'], {});
    expect(bad.kind).toBe('error');
    if (bad.kind === 'error') {
      expect(bad.message).toContain('--listen-tls-cert and --listen-tls-key go together');
      expect(bad.message).toContain('--listen-tls-require-client-cert (XDS_LISTEN_TLS_REQUIRE_CLIENT_CERT): --listen-tls-require-client-cert needs --listen-tls-client-ca');
    }
    const good = parseGatewayConfig(base, {
      XDS_LISTEN_TLS_CERT: '/c.pem',
      XDS_LISTEN_TLS_KEY: '/k.pem',
      XDS_LISTEN_TLS_CLIENT_CA: '/ca.pem',
      XDS_LISTEN_TLS_REQUIRE_CLIENT_CERT: 'true',
      MAX_STREAMS_PER_CONNECTION: '8',
      MAX_REQUESTS_PER_SECOND: '5',
      REQUEST_BURST: '10',
      QUEUE_HIGH_WATER: '100',
      QUEUE_LOW_WATER: '40',
    });
    expect(good.kind).toBe('ok');
    if (good.kind === 'ok') {
      expect(good.config).toMatchObject({ listenTlsCert: '/c.pem', listenTlsKey: '/k.pem', listenTlsClientCa: '/ca.pem', listenTlsRequireClientCert: true });
      expect(good.config).toMatchObject({ maxStreamsPerConnection: 8, maxRequestsPerSecond: 5, requestBurst: 10, queueLowWater: 40, pauseOnBackpressure: true });
    }
    const lowAboveHigh = parseGatewayConfig([...base, '--queue-high-water', '10', '--queue-low-water', '10'], {});
    expect(lowAboveHigh.kind === 'error' && lowAboveHigh.message).toContain('must be below --queue-high-water');
  });
});
