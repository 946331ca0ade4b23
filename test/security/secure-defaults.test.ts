// Secure defaults of the gateway process (docs/SECURITY.md, "Transport" and "Network"): it refuses to
// start without TLS on either xDS hop unless plaintext is asked for by name, refuses an opt-in next
// to TLS, warns at every start about each plaintext hop, and serves its ops endpoints on loopback
// unless told otherwise. The warnings and the bind address are checked on real gateways (local
// dynamo, the reference control plane, a throwaway PKI), chained so that each hop is seen plaintext
// and TLS: control plane → A (TLS to Envoys, plaintext upstream) → B (TLS upstream to A, plaintext to Envoys).
import net from 'node:net';

import type { ControlPlane } from '../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../infra/local/control-plane/route-source';
import type { LocalDynamo } from '../../infra/local/dynamo';
import { parseGatewayConfig } from '../../xds-gateway/ops/config';
import { startGateway, type Gateway } from '../../xds-gateway/ops/gateway';
import { createTestPki, type TestPki } from '../integration/gateway-security/certs';
import { captureLogger, type CapturedLogger } from '../integration/gateway-security/log-capture';
import { gatewayConfig, startDynamoAndControlPlane } from '../integration/gateway/helpers';

const REQUIRED = ['--upstream', 'cp:8001', '--table', 'events', '--instance-id', 'gw-1'];

function errorOf(argv: string[], env: Record<string, string> = {}): string {
  const parsed = parseGatewayConfig(argv, env);
  return parsed.kind === 'error' ? parsed.message : `not refused (${parsed.kind})`;
}

describe('gateway configuration: plaintext only when asked for', () => {
  it('without TLS and without the opt-ins it refuses to start, naming both ways out for each hop', () => {
    const message = errorOf(REQUIRED);
    expect(message).toContain('--insecure-plaintext (INSECURE_PLAINTEXT): downstream xDS has no TLS: give --listen-tls-cert and --listen-tls-key, or --insecure-plaintext to serve Envoys in plaintext');
    expect(message).toContain('--upstream-insecure-plaintext (UPSTREAM_INSECURE_PLAINTEXT): the control plane connection has no TLS: give --upstream-tls-ca, or --upstream-insecure-plaintext to subscribe in plaintext');
    // One hop's opt-in does not cover the other.
    expect(errorOf([...REQUIRED, '--insecure-plaintext'])).toContain('--upstream-insecure-plaintext (UPSTREAM_INSECURE_PLAINTEXT)');
    expect(errorOf([...REQUIRED, '--upstream-insecure-plaintext'])).toContain('--insecure-plaintext (INSECURE_PLAINTEXT)');
    expect(errorOf([...REQUIRED, '--insecure-plaintext', 'false', '--upstream-insecure-plaintext', 'false'])).toContain('downstream xDS has no TLS');
  });

  it('the opt-ins as bare flags, with a value, or from the environment', () => {
    for (const [argv, env] of [
      [[...REQUIRED, '--insecure-plaintext', '--upstream-insecure-plaintext'], {}],
      [[...REQUIRED, '--insecure-plaintext', 'true', '--upstream-insecure-plaintext', '1'], {}],
      [REQUIRED, { INSECURE_PLAINTEXT: 'true', UPSTREAM_INSECURE_PLAINTEXT: '1' }],
    ] as const) {
      const parsed = parseGatewayConfig([...argv], env);
      expect(parsed.kind === 'ok' && [parsed.config.insecurePlaintext, parsed.config.upstreamInsecurePlaintext]).toEqual([true, true]);
    }
  });

  it('an opt-in next to TLS is refused, so it cannot linger once TLS is on', () => {
    expect(errorOf([...REQUIRED, '--upstream-insecure-plaintext', '--insecure-plaintext', '--listen-tls-cert', '/c.pem', '--listen-tls-key', '/k.pem'])).toContain(
      '--insecure-plaintext (INSECURE_PLAINTEXT): --insecure-plaintext contradicts --listen-tls-cert: drop one',
    );
    expect(errorOf([...REQUIRED, '--insecure-plaintext'], { UPSTREAM_TLS_CA: '/ca.pem', UPSTREAM_INSECURE_PLAINTEXT: 'true' })).toContain(
      '--upstream-insecure-plaintext (UPSTREAM_INSECURE_PLAINTEXT): --upstream-insecure-plaintext contradicts --upstream-tls-ca: drop one',
    );
    // TLS on both hops needs no opt-in at all.
    const tls = parseGatewayConfig([...REQUIRED, '--listen-tls-cert', '/c.pem', '--listen-tls-key', '/k.pem', '--upstream-tls-ca', '/ca.pem'], {});
    expect(tls.kind === 'ok' && [tls.config.insecurePlaintext, tls.config.upstreamInsecurePlaintext]).toEqual([false, false]);
  });

  it('ops endpoints default to loopback; xDS to all interfaces (Envoys in other pods)', () => {
    const parsed = parseGatewayConfig([...REQUIRED, '--insecure-plaintext', '--upstream-insecure-plaintext'], {});
    expect(parsed.kind === 'ok' && { ops: parsed.config.opsHost, xds: parsed.config.listenHost }).toEqual({ ops: '127.0.0.1', xds: '0.0.0.0' });
  });
});

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const plaintextWarnings = (logs: CapturedLogger): string[] =>
  logs
    .lines()
    .filter((line) => line['level'] === 40 && typeof line['msg'] === 'string' && line['msg'].includes('PLAINTEXT'))
    .map((line) => String(line['msg']));

describe('started gateways: warnings per plaintext hop, ops on loopback', () => {
  let pki: TestPki;
  let dynamo: LocalDynamo;
  let controlPlane: ControlPlane;
  let source: InMemoryRouteSource;
  const gateways: Gateway[] = [];
  let a: { gateway: Gateway; logs: CapturedLogger };
  let b: { gateway: Gateway; logs: CapturedLogger };

  const start = async (name: string, args: Record<string, string>): Promise<{ gateway: Gateway; logs: CapturedLogger }> => {
    const logs = captureLogger('info');
    const config = gatewayConfig({
      'listen-host': '127.0.0.1',
      'listen-port': '0',
      'ops-port': '0',
      'instance-id': name,
      table: `secure-defaults-${name}`,
      'dynamodb-endpoint': dynamo.endpoint,
      'create-table': 'true',
      'shutdown-grace-ms': '0',
      ...args,
    });
    const gateway = await startGateway(config, logs.logger, { defaultMetrics: false });
    gateways.push(gateway);
    return { gateway, logs };
  };

  beforeAll(async () => {
    pki = createTestPki();
    ({ dynamo, controlPlane, source } = await startDynamoAndControlPlane());
    // A: TLS to Envoys, plaintext to the control plane; ops on its default host.
    a = await start('gw-a', { upstream: `127.0.0.1:${controlPlane.port}`, 'upstream-insecure-plaintext': 'true', 'listen-tls-cert': pki.server.certPath, 'listen-tls-key': pki.server.keyPath });
    // B: TLS upstream (to A, whose certificate names localhost), plaintext to Envoys; ops on every interface.
    b = await start('gw-b', { upstream: `localhost:${a.gateway.xdsPort}`, 'upstream-tls-ca': pki.ca.certPath, 'insecure-plaintext': 'true', 'ops-host': '0.0.0.0' });
  }, 60_000);

  afterAll(async () => {
    for (const gateway of gateways.reverse()) await gateway.close();
    await controlPlane?.close();
    await source?.close();
    await dynamo?.close();
    pki?.remove();
  });

  it('each plaintext hop is named in a warning at start-up, with what it exposes; a TLS hop is not', () => {
    expect(plaintextWarnings(a.logs)).toEqual([
      'upstream xDS is PLAINTEXT (--upstream-insecure-plaintext): anything on the path to the control plane can read the configuration, SDS secrets included, or change what every Envoy behind this gateway receives',
    ]);
    expect(plaintextWarnings(b.logs)).toEqual([
      'downstream xDS is PLAINTEXT (--insecure-plaintext): any pod that reaches this port and names a node cluster receives that group\'s configuration, SDS secrets included, and its ACK/NACKs are recorded as that node id',
    ]);
  });

  it('ops endpoints on the default host answer on 127.0.0.1 only; --ops-host 0.0.0.0 answers on other addresses too (the probe can tell)', async () => {
    expect(await accepts('127.0.0.1', a.gateway.opsPort)).toBe(true);
    // Linux routes all of 127.0.0.0/8 to loopback: only a socket bound to every interface takes 127.0.0.2.
    expect(await accepts('127.0.0.2', a.gateway.opsPort)).toBe(false);
    expect(await accepts('127.0.0.2', b.gateway.opsPort)).toBe(true);
  });
});
