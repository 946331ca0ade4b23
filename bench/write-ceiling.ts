// How many Envoy state writes per second the local write path carries, with nothing else running: the
// ceiling under the anchor's last ACK → True (docs/bench/README.md). A writer process (the gateway's own store
// code: one conditional put per Envoy state, `--concurrency` in flight, default the gateway's 64)
// writes states shaped like the ones written when an Envoy reaches a watermark (~1.3 KB, four ACK
// events carried), through the local front (stream capture) and, for comparison, straight to dynalite.
// Reported per path: writes/s and CPU milliseconds per write in each process (writer, front, dynalite).
// bench/e2e.ts runs the same measurement against its own system after the change (E2eResult.writeCeiling).
//   npm run bench -- write-ceiling [--writes 1000] [--concurrency 64] [--repeats 2]
import { fork } from 'node:child_process';
import path from 'node:path';
import { Command } from 'commander';
import pino from 'pino';

import { openTable } from '../common/store';
import { startLocalDynamo } from '../infra/local/dynamo';
import { describeExit, watchStderr } from '../infra/local/child-process';
import { cpuSecondsNow, type ChildPids, type CpuReading } from './support/proc';
import { round } from './support/stats';
import { writerReplySchema, type WriterOptions } from './support/state-writer-child';
import { positiveInteger } from './support/args';

const WRITER_ENTRY = path.join(__dirname, 'support', 'state-writer-child.ts');
const REPO_ROOT = path.resolve(__dirname, '..');
/** Extra Node flags for the writer, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const WRITER_EXEC_ARGV_ENV = 'BENCH_WRITER_EXEC_ARGV';
/** The gateway's default --state-write-concurrency (xds-gateway/ops/config.ts). */
export const GATEWAY_STATE_WRITE_CONCURRENCY = 64;

export interface WriteCeilingOptions {
  endpoint: string;
  tableName: string;
  writes: number;
  /** Writes before the timed ones (default min(200, writes)). */
  warmup?: number;
  concurrency?: number;
  /** dynalite's own process, when it runs in a child: its CPU per write is reported too. */
  dynalitePid?: number;
  /** Whether this process hosts the endpoint (the front): its CPU per write is reported too. */
  frontInThisProcess?: boolean;
  /** The writer's lineage (default a fixed bench lineage). */
  lineage?: string;
}

export interface WriteCeilingResult {
  writes: number;
  concurrency: number;
  wallMs: number;
  writesPerSecond: number;
  /** CPU per timed write, per process; absent where not measured. */
  cpuMsPerWrite: { writer: number; front?: number; dynalite?: number };
}

let runCounter = 0;

/** One measurement: forks the writer, times its `writes` after the warm-up. */
export async function measureWriteCeiling(options: WriteCeilingOptions): Promise<WriteCeilingResult> {
  const concurrency = options.concurrency ?? GATEWAY_STATE_WRITE_CONCURRENCY;
  const writerOptions: WriterOptions = {
    endpoint: options.endpoint,
    tableName: options.tableName,
    writes: options.writes,
    warmup: options.warmup ?? Math.min(200, options.writes),
    concurrency,
    nodeIdPrefix: `ceiling-${process.pid}-${Date.now()}-${++runCounter}`,
    lineage: options.lineage ?? 'gw-bench.ceiling.ingress',
  };
  const child = fork(WRITER_ENTRY, [JSON.stringify(writerOptions)], { cwd: REPO_ROOT, execArgv: ['--import', 'tsx', ...(process.env[WRITER_EXEC_ARGV_ENV] ?? '').split(' ').filter((flag) => flag !== '')], stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
  const stderrTail = watchStderr(child);
  // CPU of the other processes is sampled when the timed writes start and when they end.
  const pids: ChildPids = options.dynalitePid === undefined ? {} : { dynalite: options.dynalitePid };
  let before: CpuReading | undefined;
  const replied = new Promise<{ wallMs: number; cpuMs: number; written: number }>((resolve, reject) => {
    child.on('message', (raw: unknown) => {
      const parsed = writerReplySchema.safeParse(raw);
      if (!parsed.success) return reject(new Error(`write-ceiling: unexpected message from the writer: ${JSON.stringify(raw).slice(0, 200)}`));
      if (parsed.data.type === 'started') before = cpuSecondsNow(pids);
      else if (parsed.data.type === 'done') resolve(parsed.data);
      else reject(new Error(`write-ceiling: the writer failed: ${parsed.data.error}`));
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`write-ceiling: the writer exited (${describeExit(code, signal)}) before reporting: ${stderrTail()}`)));
  });
  let reply: { wallMs: number; cpuMs: number; written: number };
  try {
    reply = await replied;
  } finally {
    // A writer that sent something unexpected (or failed) is not left running.
    if (child.exitCode === null && child.signalCode === null) child.kill();
  }
  const after = cpuSecondsNow(pids);
  if (reply.written !== options.writes) throw new Error(`write-ceiling: ${options.writes - reply.written} of ${options.writes} state writes were refused (each node id is new, so none should be)`);
  const perWrite = (ms: number): number => round(ms / options.writes, 3);
  const cpuMsPerWrite: WriteCeilingResult['cpuMsPerWrite'] = { writer: perWrite(reply.cpuMs) };
  if (options.frontInThisProcess === true && before !== undefined) cpuMsPerWrite.front = perWrite((after.system - before.system) * 1000);
  if (before?.dynalite !== undefined && after.dynalite !== undefined) cpuMsPerWrite.dynalite = perWrite((after.dynalite - before.dynalite) * 1000);
  return { writes: options.writes, concurrency, wallMs: round(reply.wallMs, 0), writesPerSecond: round((options.writes / reply.wallMs) * 1000, 0), cpuMsPerWrite };
}

export interface WriteCeilingRow extends WriteCeilingResult {
  path: 'front' | 'direct';
  run: number;
}

/** Standalone: a local DynamoDB as the local system runs it (dynalite in a child), each path `repeats` times, alternating. */
export async function runWriteCeiling(options: { writes: number; concurrency: number; repeats: number }): Promise<WriteCeilingRow[]> {
  const local = await startLocalDynamo({ dynaliteProcess: 'child', logger: pino({ level: 'warn' }) });
  const tableName = 'write-ceiling';
  const table = openTable({ tableName, logger: pino({ level: 'warn' }), client: { region: local.region, endpoint: local.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } });
  const rows: WriteCeilingRow[] = [];
  try {
    await table.ensureTable();
    for (let run = 1; run <= options.repeats; run++) {
      for (const via of ['front', 'direct'] as const) {
        const result = await measureWriteCeiling({
          endpoint: via === 'front' ? local.endpoint : local.dynaliteEndpoint,
          tableName,
          writes: options.writes,
          concurrency: options.concurrency,
          frontInThisProcess: via === 'front',
          ...(local.dynalite.pid === undefined ? {} : { dynalitePid: local.dynalite.pid }),
        });
        rows.push({ path: via, run, ...result });
      }
    }
  } finally {
    table.close();
    await local.close();
  }
  return rows;
}

export function formatWriteCeiling(rows: readonly WriteCeilingRow[]): string {
  const lines = ['| path | run | writes | in flight | wall ms | writes/s | CPU ms/write: writer | front | dynalite |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- |'];
  const cell = (value: number | undefined): string => (value === undefined ? '-' : String(value));
  for (const row of rows) {
    const label = row.path === 'front' ? 'through the front (as deployed locally)' : 'straight to dynalite (no stream capture)';
    lines.push(`| ${label} | ${row.run} | ${row.writes} | ${row.concurrency} | ${row.wallMs} | ${row.writesPerSecond} | ${cell(row.cpuMsPerWrite.writer)} | ${cell(row.cpuMsPerWrite.front)} | ${cell(row.cpuMsPerWrite.dynalite)} |`);
  }
  return lines.join('\n');
}

export async function run(argv: string[]): Promise<void> {
  const options = new Command()
    .name('write-ceiling')
    .option('--writes <n>', 'timed state writes per measurement', positiveInteger, 1000)
    .option('--concurrency <n>', 'writes in flight (the gateway default)', positiveInteger, GATEWAY_STATE_WRITE_CONCURRENCY)
    .option('--repeats <n>', 'measurements per path', positiveInteger, 2)
    .parse(argv, { from: 'user' })
    .opts<{ writes: number; concurrency: number; repeats: number }>();
  console.log(formatWriteCeiling(await runWriteCeiling(options)));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
