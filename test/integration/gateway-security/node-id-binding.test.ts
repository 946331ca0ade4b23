// Optional mTLS node-id binding (--bind-node-id-to-cert): a stream's node.id must be one of its client
// certificate's DNS or URI subject alternative names, else PERMISSION_DENIED naming the node id; so a
// client holding a valid certificate for one Envoy cannot speak (or take over) as another.
import { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { startLocalDynamo } from '../../../infra/local/dynamo';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { certificateNames } from '../../../xds-gateway/relay/downstream-common';
import type { Relay } from '../../../xds-gateway/relay/relay';
import { httpGet, startTestGateway } from '../gateway/helpers';
import { newSource, RecordingObserver, startTestControlPlane, startTestRelay, testLogger } from '../gateway-relay/helpers';
import { createTestPki, type Pem, type TestPki } from './certs';
import { AdsClients, RecordingRelayMetrics, type Reader } from './hostile-helpers';
import { clientCertWithSans } from './san-certs';

const SPIFFE_ID = 'spiffe://cluster.local/ns/edge/sa/envoy-b';

describe('node id bound to the client certificate', () => {
  let pki: TestPki;
  let envoyCert: Pem;
  let commaCert: Pem;
  let source: InMemoryRouteSource;
  let controlPlane: ControlPlane;
  let relay: Relay;
  let metrics: RecordingRelayMetrics;
  const clients = new AdsClients();

  beforeAll(async () => {
    pki = createTestPki();
    envoyCert = clientCertWithSans(pki, 'envoy-ab', ['DNS.1 = envoy-a', `URI.1 = ${SPIFFE_ID}`]);
    // One DNS name whose text holds ", DNS:evil": Node quotes it, and it must not read as two names.
    commaCert = clientCertWithSans(pki, 'envoy-comma', ['DNS.1 = innocent, DNS:evil']);
    source = newSource();
    controlPlane = await startTestControlPlane(source);
    metrics = new RecordingRelayMetrics();
    relay = await startTestRelay(controlPlane.address, new RecordingObserver(), {
      metrics,
      listen: { host: '127.0.0.1', port: 0, tls: { certChain: pki.server.cert, privateKey: pki.server.key, rootCerts: pki.ca.cert, requireClientCert: true, bindNodeIdToCert: true } },
    });
  });

  afterAll(async () => {
    clients.close();
    await relay.control.close();
    await controlPlane.close();
    await source.close();
    pki.remove();
  });

  const connect = (port: number, cert: Pem): grpc.Client =>
    clients.connection(port, grpc.credentials.createSsl(pki.ca.cert, cert.key, cert.cert), { 'grpc.ssl_target_name_override': 'localhost' });
  const statusOf = async (reader: Reader): Promise<[string | undefined, string]> => {
    const status = await reader.status;
    return [grpc.status[status.code], status.details];
  };

  test('a node id that is a DNS or URI SAN of the certificate is served; any other is PERMISSION_DENIED', async () => {
    const connection = connect(relay.port, envoyCert);
    expect((await clients.askClusters(connection, { id: 'envoy-a', cluster: 'bound' }).next()).resources?.length).toBeGreaterThan(0);
    expect((await clients.askClusters(connection, { id: SPIFFE_ID, cluster: 'bound' }).next()).resources?.length).toBeGreaterThan(0);
    expect(await statusOf(clients.askClusters(connection, { id: 'envoy-c', cluster: 'bound' }))).toEqual([
      'PERMISSION_DENIED',
      'node.id "envoy-c" is not a DNS or URI subject alternative name of the client certificate',
    ]);
    // The certificate's CN is not a SAN: not accepted either.
    expect((await statusOf(clients.askClusters(connection, { id: 'envoy-ab', cluster: 'bound' })))[0]).toBe('PERMISSION_DENIED');
    expect(metrics.refused.node_id_not_in_cert).toBe(2);
  });

  test('a refused stream takes nothing over: the node id\'s own streams keep running', async () => {
    const owner = clients.askClusters(connect(relay.port, envoyCert), { id: 'envoy-a', cluster: 'bound' });
    await owner.next();
    const takeoversBefore = metrics.takeovers;
    const impostor = clients.askClusters(connect(relay.port, commaCert), { id: 'envoy-a', cluster: 'bound' });
    expect((await statusOf(impostor))[0]).toBe('PERMISSION_DENIED');
    expect(await owner.silentFor(200)).toBe(true);
    expect(owner.isEnded).toBe(false);
    expect(metrics.takeovers).toBe(takeoversBefore);
  });

  test('a SAN whose text holds a comma is one name, never two', async () => {
    const connection = connect(relay.port, commaCert);
    expect((await statusOf(clients.askClusters(connection, { id: 'evil', cluster: 'bound' })))[0]).toBe('PERMISSION_DENIED');
    expect((await statusOf(clients.askClusters(connection, { id: 'DNS:evil', cluster: 'bound' })))[0]).toBe('PERMISSION_DENIED');
    expect((await clients.askClusters(connection, { id: 'innocent, DNS:evil', cluster: 'bound' }).next()).resources?.length).toBeGreaterThan(0);
    const parsed = certificateNames({ subjectaltname: new X509Certificate(commaCert.cert).subjectAltName } as PeerCertificate);
    expect(parsed).toEqual(['innocent, DNS:evil']);
    expect(certificateNames({ subjectaltname: 'DNS:a, IP Address:10.0.0.1, URI:spiffe://x/y, email:e@x' } as PeerCertificate)).toEqual(['a', 'spiffe://x/y']);
    expect(certificateNames(undefined)).toEqual([]);
  });

  test('config: --bind-node-id-to-cert needs mTLS; startGateway wires it', async () => {
    const base = ['--upstream', 'cp:8001', '--table', 'tbl', '--instance-id', 'gw', '--upstream-insecure-plaintext'];
    const withoutMtls = parseGatewayConfig([...base, '--listen-tls-cert', '/c.pem', '--listen-tls-key', '/k.pem', '--bind-node-id-to-cert', 'true'], {});
    expect(withoutMtls.kind === 'error' && withoutMtls.message).toContain(
      '--bind-node-id-to-cert (BIND_NODE_ID_TO_CERT): --bind-node-id-to-cert needs --listen-tls-client-ca and --listen-tls-require-client-cert true (mTLS)',
    );

    const dynamo = await startLocalDynamo({ logger: testLogger });
    const gateway = await startTestGateway({
      upstream: controlPlane.address,
      table: 'gw-bind',
      'dynamodb-endpoint': dynamo.endpoint,
      'listen-tls-cert': pki.server.certPath,
      'listen-tls-key': pki.server.keyPath,
      'listen-tls-client-ca': pki.ca.certPath,
      'listen-tls-require-client-cert': 'true',
      'bind-node-id-to-cert': 'true',
      'instance-id': 'gw-bind',
    });
    try {
      const connection = connect(gateway.xdsPort, envoyCert);
      expect((await clients.askClusters(connection, { id: 'envoy-a', cluster: 'bound' }).next()).resources?.length).toBeGreaterThan(0);
      expect((await statusOf(clients.askClusters(connection, { id: 'envoy-z', cluster: 'bound' })))[0]).toBe('PERMISSION_DENIED');
      expect((await httpGet(gateway.opsPort, '/metrics')).body).toContain('xds_programmed_gateway_streams_refused_total{reason="node_id_not_in_cert"} 1');
    } finally {
      await gateway.close();
      await dynamo.close();
    }
  });
});
