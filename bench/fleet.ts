// Fleet bench: N simulated Envoys against the reference control plane running in a child process
// (so this process's memory is the fleet's alone). Prints connect time, time for all to ACK a
// change, and RSS / heap per simulated Envoy.
//
//   npx tsx bench/fleet.ts --envoys 1000
//   node --expose-gc --import tsx bench/fleet.ts --envoys 5000 --protocol delta --channels 16
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import pino from 'pino';
import { z } from 'zod';
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../common/xds';
import { Fleet, parseBehaviour } from '../infra/local/envoys';
import { formatMeasurement, measureFleet } from '../infra/local/envoys/fleetScenario';
import { positiveInteger } from './support/args';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];
const CHANGED_TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];

const optionsSchema = z.object({
  envoys: z.number().int().min(1).max(100_000),
  channels: z.number().int().min(1).max(1024),
  transport: z.enum(['ads', 'per-type']),
  protocol: z.enum(['sotw', 'delta']),
  nodeOnce: z.boolean(),
  ackDelayMs: z.number().int().min(0),
  timeoutMs: z.number().int().min(1),
  truthOut: z.string().min(1).optional(),
  routes: z.number().int().min(1).max(10_000),
});

/**
 * `routes` HTTPProxies, each with its Endpoints. The change moves app-0's backend port, which changes
 * one cluster, its endpoints and the route pointing at it (CDS, EDS and RDS change; LDS does not).
 */
function routesYaml(routes: number, firstPort: number): string {
  const documents: string[] = [];
  for (let index = 0; index < routes; index++) {
    const port = index === 0 ? firstPort : 8080;
    documents.push(
      [
        'kind: HTTPProxy',
        'apiVersion: projectcontour.io/v1',
        `metadata: {name: app-${index}, namespace: default}`,
        'spec:',
        `  virtualhost: {fqdn: app-${index}.example.com}`,
        `  routes: [{services: [{name: app-${index}, port: ${port}}]}]`,
        '---',
        'kind: Endpoints',
        `metadata: {name: app-${index}, namespace: default}`,
        `subsets: [{addresses: [{ip: 10.0.${Math.floor(index / 250)}.${(index % 250) + 1}}], ports: [{port: ${port}}]}]`,
      ].join('\n'),
    );
  }
  return documents.join('\n---\n') + '\n';
}

async function startControlPlaneProcess(routesFile: string): Promise<{ child: ChildProcess; address: string }> {
  const script = path.join(__dirname, '..', 'infra', 'local', 'control-plane', 'main.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--port', '0', '--routes-file', routesFile, '--holdoff-ms', '10', '--holdoff-max-ms', '50'], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const address = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`control plane exited with ${code}`)));
    lines.on('line', (line) => {
      try {
        const parsed = z.object({ listening: z.string() }).safeParse(JSON.parse(line));
        if (parsed.success) resolve(parsed.data.listening);
      } catch {
        // Not our JSON line (a log line): ignore.
      }
    });
  });
  return { child, address };
}

async function main(): Promise<void> {
  const program = new Command()
    .name('bench/fleet')
    .option('--envoys <n>', 'simulated Envoys', positiveInteger, 1000)
    .option('--channels <n>', 'gRPC channels (HTTP/2 connections) shared by the fleet', positiveInteger, 8)
    .option('--transport <t>', 'ads | per-type', 'ads')
    .option('--protocol <p>', 'sotw | delta', 'sotw')
    .option('--node-once', 'send node only on the first request of a stream', false)
    .option('--ack-delay-ms <ms>', 'ACK delay per response', (v) => Number(v), 0)
    .option('--timeout-ms <ms>', 'give up after', positiveInteger, 300_000)
    .option('--routes <n>', 'HTTPProxies in the config (size of every response)', positiveInteger, 1)
    .option('--truth-out <file>', 'write the fleet ground truth export (JSON) here')
    .parse();
  const options = optionsSchema.parse(program.opts());
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-'));
  const routesFile = path.join(dir, 'routes.yaml');
  writeFileSync(routesFile, routesYaml(options.routes, 8080));
  const { child, address } = await startControlPlaneProcess(routesFile);
  const fleet = new Fleet({ target: address, channels: options.channels, logger: pino({ level: 'warn' }) });
  try {
    const behaviour = parseBehaviour({ ackDelayMs: options.ackDelayMs });
    const measurement = await measureFleet({
      fleet,
      typeUrls: TYPES,
      changedTypeUrls: CHANGED_TYPES,
      timeoutMs: options.timeoutMs,
      create: () =>
        fleet.addMany(options.envoys, {
          transport: options.transport,
          protocol: options.protocol,
          nodeOnEveryRequest: !options.nodeOnce,
          behaviour,
          subscriptions: TYPES.map((typeUrl) => ({ typeUrl })),
        }),
      change: async () => {
        writeFileSync(routesFile, routesYaml(options.routes, 9090));
        child.kill('SIGHUP');
      },
    });
    console.log(
      `${options.transport} ${options.protocol}${options.nodeOnce ? ' node-once' : ''}, ${options.channels} channels, ${options.routes} routes, ` +
        `gc ${typeof (globalThis as { gc?: unknown }).gc === 'function' ? 'forced' : 'not exposed (run with node --expose-gc for steadier numbers)'}`,
    );
    console.log(formatMeasurement(measurement));
    if (options.truthOut) {
      writeFileSync(options.truthOut, JSON.stringify(fleet.truth.exportTruth()));
      console.log(`ground truth written to ${options.truthOut}`);
    }
  } finally {
    fleet.close();
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
