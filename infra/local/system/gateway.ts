// The xDS gateway, in-process through its own start function (xds-gateway/ops/gateway.ts) with a
// configuration parsed by its own parser, so npm start exercises exactly the flags a deployment uses.
// Readiness: the gateway's /readyz checks (control plane reachable, store answered).
import type { Logger } from 'pino';
import { parseGatewayConfig } from '../../../xds-gateway/ops/config';
import { startGateway, type Gateway } from '../../../xds-gateway/ops/gateway';
import type { Component } from './component';

export interface GatewayComponent extends Component {
  gateway: Gateway;
  xdsAddress: string;
  opsUrl: string;
  metricsUrl: string;
}

export interface GatewayComponentOptions {
  upstream: string;
  xdsPort: number;
  opsPort: number;
  tableName: string;
  dynamodbEndpoint: string;
  region: string;
  ackTimeoutMs: number;
  /** Collect process metrics (off when several systems share a process, e.g. tests). */
  defaultMetrics: boolean;
  logger: Logger;
}

export async function startGatewayComponent(opts: GatewayComponentOptions): Promise<GatewayComponent> {
  const args: Record<string, string> = {
    'listen-host': '127.0.0.1',
    'listen-port': String(opts.xdsPort),
    'ops-host': '127.0.0.1',
    'ops-port': String(opts.opsPort),
    upstream: opts.upstream,
    'instance-id': 'gw-local',
    table: opts.tableName,
    'dynamodb-endpoint': opts.dynamodbEndpoint,
    region: opts.region,
    'ack-timeout-ms': String(opts.ackTimeoutMs),
    // Provenance watermarks are exact with any control-plane replica (docs/PROVENANCE.md); the
    // barrier would need the gateway to follow the status-writing leader.
    watermarks: 'provenance',
    'flush-interval-ms': '50',
    'lineage-heartbeat-ms': '5000',
    'envoy-heartbeat-ms': '30000',
    'shutdown-grace-ms': '200',
    'flush-timeout-ms': '5000',
  };
  const parsed = parseGatewayConfig(
    Object.entries(args).flatMap(([key, value]) => [`--${key}`, value]),
    {},
  );
  if (parsed.kind !== 'ok') throw new Error(`gateway configuration: ${parsed.kind === 'error' ? parsed.message : 'help requested'}`);
  const gateway = await startGateway(parsed.config, opts.logger.child({ component: 'gateway' }), { defaultMetrics: opts.defaultMetrics });
  const opsUrl = `http://127.0.0.1:${gateway.opsPort}`;
  try {
    const deadline = Date.now() + 20_000;
    while (!gateway.ready()) {
      if (Date.now() > deadline) {
        const readyz = await fetch(`${opsUrl}/readyz`).then((r) => r.text(), (e: unknown) => String(e));
        throw new Error(`gateway not ready after 20 s: ${readyz}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await gateway.close();
    throw error;
  }
  return {
    name: 'gateway',
    gateway,
    xdsAddress: `127.0.0.1:${gateway.xdsPort}`,
    opsUrl,
    metricsUrl: `${opsUrl}/metrics`,
    close: () => gateway.close(),
  };
}
