// Store adapter throughput against an in-process dynalite (in memory): events written per second
// through putEvents (BatchWriteItem, 25 per call, chunks in flight), single PutItem calls per second
// for comparison (one at a time, and with several in flight), and items read per second through
// the paged listing. Run: `npx tsx bench/store.ts [--events N] [--puts N] [--page N]` or
// `npm run bench -- store`. Numbers are for this machine and dynalite, not for DynamoDB.
import { Command } from 'commander';
import pino from 'pino';

import { LDS_TYPE_URL, type EnvoyEvent } from '../common/core';
import { connectStore, toEnvoyEventItem } from '../common/store';
import { DynamoEventStore } from '../common/store/dynamo-store';
import { iteratePages } from '../common/store/listing';
import { startDynalite, startDynaliteProcess } from '../test/support/store-dynalite';

export interface StoreBenchOptions {
  /** Events written through putEvents. */
  events: number;
  /** Single PutItem calls per single-put measurement. */
  singlePuts: number;
  /** Page size for the read measurement. */
  pageSize: number;
  /** BatchWriteItem calls in flight. */
  batchConcurrency: number;
  /** PutItem calls in flight in the concurrent single-put measurement. */
  putConcurrency: number;
  /** Envoys the events are spread over (one partition each). */
  envoys: number;
  /** Run dynalite in a child process instead of this one. */
  separateProcess: boolean;
}

export interface StoreBenchRow {
  measurement: string;
  items: number;
  seconds: number;
  itemsPerSecond: number;
}

export const defaultStoreBenchOptions: StoreBenchOptions = {
  events: 10_000,
  singlePuts: 1_000,
  pageSize: 100,
  batchConcurrency: 4,
  putConcurrency: 16,
  envoys: 20,
  separateProcess: false,
};

const LINEAGE = 'bench.boot.default';

function benchEvents(count: number, envoys: number, at: number, seqOffset = 0): EnvoyEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    nodeId: `envoy-${i % envoys}`,
    outcome: 'ACK' as const,
    lineage: LINEAGE,
    seq: seqOffset + Math.floor(i / envoys) + 1,
    typeUrl: LDS_TYPE_URL,
    at,
    ttl: Math.ceil(at / 1000) + 86_400,
  }));
}

function row(measurement: string, items: number, startedMs: number): StoreBenchRow {
  const seconds = (performance.now() - startedMs) / 1000;
  return { measurement, items, seconds, itemsPerSecond: items / seconds };
}

export async function runStoreBench(overrides: Partial<StoreBenchOptions> = {}): Promise<StoreBenchRow[]> {
  const options = { ...defaultStoreBenchOptions, ...overrides };
  const dynalite = options.separateProcess ? await startDynaliteProcess() : await startDynalite();
  const connection = connectStore({
    region: 'us-east-1',
    endpoint: dynalite.endpoint,
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  try {
    const tableName = 'store-bench';
    await connection.ensureTable(tableName);
    const { operations } = connection;
    const now = Date.now();
    const store = new DynamoEventStore({
      tableName,
      operations,
      logger: pino({ level: 'warn' }),
      clock: { now: () => Date.now() },
      batch: { concurrency: options.batchConcurrency },
    });
    const rows: StoreBenchRow[] = [];

    const events = benchEvents(options.events, options.envoys, now);
    let started = performance.now();
    const written = await store.putEvents(events);
    if (written.failed.length > 0) throw new Error(`${written.failed.length} events failed: ${written.failed[0]?.error ?? ''}`);
    rows.push(row(`putEvents (BatchWriteItem x25, ${options.batchConcurrency} in flight)`, written.written, started));

    // Single puts of the same kind of item, on fresh keys so they are real inserts.
    const singles = benchEvents(options.singlePuts, options.envoys, now, 1_000_000).map((event) => toEnvoyEventItem(event));
    started = performance.now();
    for (const item of singles) await operations.put({ TableName: tableName, Item: item });
    rows.push(row('PutItem, one at a time', singles.length, started));

    const concurrentSingles = benchEvents(options.singlePuts, options.envoys, now, 2_000_000).map((event) => toEnvoyEventItem(event));
    started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: options.putConcurrency }, async () => {
        while (next < concurrentSingles.length) {
          const item = concurrentSingles[next++];
          if (item !== undefined) await operations.put({ TableName: tableName, Item: item });
        }
      }),
    );
    rows.push(row(`PutItem, ${options.putConcurrency} in flight`, concurrentSingles.length, started));

    started = performance.now();
    let read = 0;
    for (let envoy = 0; envoy < options.envoys; envoy++) {
      const nodeId = `envoy-${envoy}`;
      for await (const _event of iteratePages((cursor) =>
        store.listEnvoyEvents(nodeId, cursor === undefined ? { limit: options.pageSize, lineage: LINEAGE } : { limit: options.pageSize, lineage: LINEAGE, cursor }),
      )) {
        read++;
      }
    }
    const expectedRead = options.events + 2 * options.singlePuts;
    if (read !== expectedRead) throw new Error(`read ${read} items, expected ${expectedRead}`);
    rows.push(row(`listEnvoyEvents, pages of ${options.pageSize} (validated)`, read, started));
    return rows;
  } finally {
    connection.close();
    await dynalite.close();
  }
}

export function formatStoreBench(rows: readonly StoreBenchRow[]): string {
  const header = ['measurement', 'items', 'seconds', 'items/s'];
  const body = rows.map((r) => [r.measurement, String(r.items), r.seconds.toFixed(2), Math.round(r.itemsPerSecond).toString()]);
  const widths = header.map((title, i) => Math.max(title.length, ...body.map((cells) => (cells[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

function positiveInt(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`expected a positive integer, got ${JSON.stringify(text)}`);
  return value;
}

/** Entry point for bench/run.ts (`npm run bench -- store [options]`). */
export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('bench store')
    .option('--events <n>', 'events written through putEvents', positiveInt, defaultStoreBenchOptions.events)
    .option('--puts <n>', 'single PutItem calls per measurement', positiveInt, defaultStoreBenchOptions.singlePuts)
    .option('--page <n>', 'page size for reads', positiveInt, defaultStoreBenchOptions.pageSize)
    .option('--envoys <n>', 'Envoys (partitions) the events are spread over', positiveInt, defaultStoreBenchOptions.envoys)
    .option('--separate-process', 'run dynalite in a child process', false)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const opts = program.opts<{ events: number; puts: number; page: number; envoys: number; separateProcess: boolean }>();
  const rows = await runStoreBench({
    events: opts.events,
    singlePuts: opts.puts,
    pageSize: opts.page,
    envoys: opts.envoys,
    separateProcess: opts.separateProcess,
  });
  console.log(`dynalite ${opts.separateProcess ? 'in a child process' : 'in this process'}`);
  console.log(formatStoreBench(rows));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
