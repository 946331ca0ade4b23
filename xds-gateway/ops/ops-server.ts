// The ops HTTP server: /healthz (the process runs), /readyz (the upstream has answered, the store
// took a write, the recorder is below its high-water mark, not shutting down), /metrics (Prometheus).
// Plain node:http; nothing here touches xDS streams.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface ReadinessCheck {
  name: string;
  ok(): boolean;
}

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  readiness: readonly ReadinessCheck[];
  logger: Logger;
}): Promise<OpsServer> {
  const server = http.createServer((request, response) => {
    const url = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/healthz') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (url === '/readyz') {
      const failing = options.readiness.filter((check) => !safeOk(check));
      if (failing.length === 0) response.writeHead(200, { 'content-type': 'text/plain' }).end('ready\n');
      else response.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready: ${failing.map((c) => c.name).join(', ')}\n`);
      return;
    }
    if (url === '/metrics') {
      options.registry
        .metrics()
        .then((text) => response.writeHead(200, { 'content-type': options.registry.contentType }).end(text))
        .catch((error: unknown) => {
          options.logger.error({ err: String(error) }, 'metrics collection failed');
          response.writeHead(500).end();
        });
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function safeOk(check: ReadinessCheck): boolean {
  try {
    return check.ok();
  } catch {
    return false;
  }
}
