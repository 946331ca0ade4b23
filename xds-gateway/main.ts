// The gateway process: `node --import tsx xds-gateway/main.ts --upstream cp:8001 --table t ...`
// (`--help` lists every flag and its environment variable; without TLS flags it also needs
// --insecure-plaintext / --upstream-insecure-plaintext, docs/SECURITY.md). Prints one JSON line with the bound
// ports on stdout once serving (logs are pino JSON on stderr), and shuts down gracefully on
// SIGTERM/SIGINT: not-ready, relay closed (Envoys reconnect elsewhere), recorder flushed, exit 0.
import pino from 'pino';
import { parseGatewayConfig } from './ops/config';
import { startGateway } from './ops/gateway';

async function main(): Promise<number> {
  const parsed = parseGatewayConfig(process.argv.slice(2), process.env);
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text);
    return 0;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`xds-gateway: ${parsed.message}\n(see --help)\n`);
    return 2;
  }
  const config = parsed.config;
  const logger = pino({ level: config.logLevel, base: { service: 'xds-gateway' } }, pino.destination(2));
  const gateway = await startGateway(config, logger);
  process.stdout.write(`${JSON.stringify({ xdsPort: gateway.xdsPort, opsPort: gateway.opsPort, bootId: gateway.bootId })}\n`);

  return new Promise<number>((resolve) => {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (signalled) {
        logger.warn({ signal }, 'second signal: exiting without waiting');
        resolve(1);
        return;
      }
      signalled = true;
      logger.info({ signal }, 'signal received');
      gateway.close().then(
        () => resolve(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // Started by a parent with an IPC channel (the local system's child mode): the channel closing means
    // the parent is gone, so shut down as on SIGTERM rather than linger on its ports.
    if (process.send !== undefined) process.on('disconnect', () => onSignal('SIGTERM'));
    // One bad message must never take the gateway down; a bug that escapes is logged, not fatal.
    process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection'));
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`xds-gateway: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
