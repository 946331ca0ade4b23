// CLI: starts the local DynamoDB (dynalite behind the capturing front) and prints the endpoint.
//   npx tsx infra/local/dynamo/main.ts [--port 8000] [--path ./data] [--ttl-sweep-ms 1000] [--dynalite-process child|inline]
// The first stdout line is `DYNAMODB_ENDPOINT=<url>` so scripts can read it. Stream delivery is
// in-process: whoever needs the stream (npm start) imports startLocalDynamo instead.
import { Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { startLocalDynamo } from './index';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

const program = new Command()
  .name('local-dynamo')
  .description('dynalite behind an HTTP front that records every write as a DynamoDB stream record')
  .option('--host <host>', 'interface to listen on', '127.0.0.1')
  .option('--port <port>', 'port of the front (the DynamoDB endpoint); 0 = random', port, 0)
  .option('--path <dir>', 'LevelDB directory for persistence (default: in memory)')
  .option('--shards <n>', 'shards per table stream', positive, 4)
  .option('--ttl-sweep-ms <ms>', 'enable local TTL on attribute `ttl`, sweeping at this interval', positive)
  .addOption(new Option('--dynalite-process <mode>', 'run dynalite in a child process (its own core) or inline').choices(['child', 'inline']).default('child'))
  .parse();

const opts = program.opts<{ host: string; port: number; path?: string; shards: number; ttlSweepMs?: number; dynaliteProcess: 'child' | 'inline' }>();

async function main(): Promise<void> {
  const dynamo = await startLocalDynamo({
    // Logs go to stderr so stdout carries only the endpoint line.
    logger: pino({ name: 'local-dynamo', level: process.env['LOG_LEVEL'] ?? 'info' }, pino.destination(2)),
    host: opts.host,
    port: opts.port,
    shardCount: opts.shards,
    dynaliteProcess: opts.dynaliteProcess,
    ...(opts.path ? { path: opts.path } : {}),
    ...(opts.ttlSweepMs ? { ttl: { sweepIntervalMs: opts.ttlSweepMs } } : {}),
  });
  process.stdout.write(`DYNAMODB_ENDPOINT=${dynamo.endpoint}\n`);
  const shutdown = (): void => {
    dynamo.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
