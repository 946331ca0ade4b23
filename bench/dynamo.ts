// Benchmark of the local DynamoDB front (infra/local/dynamo): batched writes/s through the front vs
// straight to dynalite, and stream-delivery lag (write acknowledged -> handler receives).
//   npx tsx bench/dynamo.ts [--writers 4] [--batches 40] [--puts 200] [--dynalite-process child|inline]
//   (or npm run bench -- dynamo)
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { CDS_TYPE_URL } from '../common/core';
import { envoyEventKey, envoyStateKey, openTable, type TableAccess } from '../common/store';
import { createStreamDelivery, startLocalDynamo } from '../infra/local/dynamo';
import { silentLogger } from '../test/support/dynamo-local';

export interface DynamoBenchOptions {
  /** Concurrent BatchWriteItem loops. */
  writers?: number;
  /** BatchWriteItem calls per writer (25 items each). */
  batchesPerWriter?: number;
  /** Sequential single PutItems for the unloaded lag measurement. */
  lightLoadPuts?: number;
  /** Where dynalite runs (default inline). */
  dynaliteProcess?: 'child' | 'inline';
}

export interface LagStats {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface DynamoBenchResult {
  items: number;
  directItemsPerSec: number;
  frontItemsPerSec: number;
  /** front / direct: the share of dynalite's batched write rate the front keeps. */
  frontToDirectRatio: number;
  /**
   * Lag per item while writers run flat out, from the ack of the item's BatchWriteItem. Negative when
   * the handler had the record before the client had its response: the front appends the record
   * before it answers, and delivery invokes at once (batching window 0).
   */
  lagUnderLoad: LagStats;
  /** The same from the moment the BatchWriteItem was sent. */
  lagUnderLoadFromSend: LagStats;
  /** Lag of sequential single puts (from the ack of the put). */
  lagLightLoad: LagStats;
  /** The same from the moment the put was sent. */
  lagLightLoadFromSend: LagStats;
}

const ITEMS_PER_BATCH = 25; // BatchWriteItem's limit
/** The event the written items stand for (their content is never read back, only their stream records' keys). */
const BENCH_VERSION = { lineage: 'bench.boot.group', seq: 1 };
const BENCH_TYPE_URL = CDS_TYPE_URL;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

function lagStats(lags: number[]): LagStats {
  const sorted = [...lags].sort((a, b) => a - b);
  return { samples: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted[sorted.length - 1] ?? Number.NaN };
}

/** Runs `writers` loops of BatchWriteItem; returns items/s and each item's ack time. */
async function batchedWrites(
  table: TableAccess,
  writers: number,
  batches: number,
): Promise<{ itemsPerSec: number; ackedAt: Map<string, number>; sentAt: Map<string, number> }> {
  const ackedAt = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let b = 0; b < batches; b++) {
        const keys = Array.from({ length: ITEMS_PER_BATCH }, (_, i) => envoyEventKey(`w${w}-b${b}-i${i}`, BENCH_VERSION, BENCH_TYPE_URL, 'ACK'));
        const sent = performance.now();
        for (const { pk } of keys) sentAt.set(pk, sent);
        await table.rawItems.batchWriteItems(keys.map((key) => ({ ...key, at: Date.now(), outcome: 'ACK' })));
        const now = performance.now();
        for (const { pk } of keys) ackedAt.set(pk, now);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { itemsPerSec: (writers * batches * ITEMS_PER_BATCH) / seconds, ackedAt, sentAt };
}

export async function runDynamoBench(opts: DynamoBenchOptions = {}): Promise<DynamoBenchResult> {
  const writers = opts.writers ?? 4;
  const batches = opts.batchesPerWriter ?? 40;
  const lightPuts = opts.lightLoadPuts ?? 200;
  const dynamo = await startLocalDynamo({ logger: silentLogger, dynaliteProcess: opts.dynaliteProcess ?? 'inline' });
  const open = (endpoint: string, tableName: string): TableAccess =>
    openTable({ tableName, logger: silentLogger, client: { region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 3 } });
  const frontTables = { direct: open(dynamo.endpoint, 'bench-direct'), front: open(dynamo.endpoint, 'bench-front'), light: open(dynamo.endpoint, 'bench-light') };
  const direct = open(dynamo.dynaliteEndpoint, 'bench-direct');
  const receivedAt = new Map<string, number>();
  const handler = async (event: DynamoDBStreamEvent): Promise<void> => {
    const now = performance.now();
    for (const record of event.Records) {
      const pk = record.dynamodb?.Keys?.['pk']?.S;
      if (pk) receivedAt.set(pk, now);
    }
  };
  try {
    for (const table of Object.values(frontTables)) await table.ensureTable();
    // Warm-up: connections, dynalite's first-write paths.
    await batchedWrites(direct, 1, 2);

    const directRun = await batchedWrites(direct, writers, batches);

    const delivery = createStreamDelivery({ source: dynamo.tableStreams.get('bench-front'), handler, batchSize: 100, logger: silentLogger });
    const frontRun = await batchedWrites(frontTables.front, writers, batches);
    await delivery.stop({ drainTimeoutMs: 60_000 });
    const lagsFrom = (times: Map<string, number>): number[] => [...times].map(([pk, t]) => (receivedAt.get(pk) ?? Number.NaN) - t);

    const lightDelivery = createStreamDelivery({ source: dynamo.tableStreams.get('bench-light'), handler, batchSize: 100, logger: silentLogger });
    const lightAcked = new Map<string, number>();
    const lightSent = new Map<string, number>();
    for (let i = 0; i < lightPuts; i++) {
      const key = envoyStateKey(`light-${i}`);
      const pk = key.pk;
      lightSent.set(pk, performance.now());
      await frontTables.light.rawItems.putItem({ ...key });
      lightAcked.set(pk, performance.now());
      await lightDelivery.idle();
    }
    await lightDelivery.stop();

    return {
      items: writers * batches * ITEMS_PER_BATCH,
      directItemsPerSec: directRun.itemsPerSec,
      frontItemsPerSec: frontRun.itemsPerSec,
      frontToDirectRatio: frontRun.itemsPerSec / directRun.itemsPerSec,
      lagUnderLoad: lagStats(lagsFrom(frontRun.ackedAt)),
      lagUnderLoadFromSend: lagStats(lagsFrom(frontRun.sentAt)),
      lagLightLoad: lagStats(lagsFrom(lightAcked)),
      lagLightLoadFromSend: lagStats(lagsFrom(lightSent)),
    };
  } finally {
    for (const table of Object.values(frontTables)) table.close();
    direct.close();
    await dynamo.close();
  }
}

export function formatDynamoBench(r: DynamoBenchResult): string {
  const f = (n: number, digits = 1): string => n.toFixed(digits);
  const lagRow = (name: string, l: LagStats): string[] => [`${name} p50 / p99 / max (ms, n=${l.samples})`, `${f(l.p50Ms)} / ${f(l.p99Ms)} / ${f(l.maxMs)}`];
  const rows = [
    ['measure', 'value'],
    ['items written per run', String(r.items)],
    ['BatchWriteItem direct to dynalite (items/s)', f(r.directItemsPerSec, 0)],
    ['BatchWriteItem through the front (items/s)', f(r.frontItemsPerSec, 0)],
    ['front / direct', f(r.frontToDirectRatio, 2)],
    lagRow('lag under load, from ack', r.lagUnderLoad),
    lagRow('lag under load, from send', r.lagUnderLoadFromSend),
    lagRow('lag light load, from ack', r.lagLightLoad),
    lagRow('lag light load, from send', r.lagLightLoadFromSend),
  ];
  const width = Math.max(...rows.map((row) => (row[0] ?? '').length));
  return rows.map(([k, v]) => `${(k ?? '').padEnd(width)}  ${v ?? ''}`).join('\n');
}

function flag(argv: string[], name: string): number | undefined {
  const i = argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(argv[i + 1]) : Number.NaN;
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/** Entry for `npm run bench -- dynamo [--writers N] [--batches N] [--puts N] [--dynalite-process child|inline]`. */
export async function run(argv: string[]): Promise<void> {
  const writers = flag(argv, 'writers');
  const batches = flag(argv, 'batches');
  const puts = flag(argv, 'puts');
  const modeIndex = argv.indexOf('--dynalite-process');
  const mode = modeIndex >= 0 ? argv[modeIndex + 1] : 'inline';
  if (mode !== 'child' && mode !== 'inline') throw new Error(`--dynalite-process must be child or inline, got ${String(mode)}`);
  const result = await runDynamoBench({
    ...(writers ? { writers } : {}),
    ...(batches ? { batchesPerWriter: batches } : {}),
    ...(puts ? { lightLoadPuts: puts } : {}),
    dynaliteProcess: mode,
  });
  console.log(`dynalite: ${mode === 'child' ? 'child process' : 'in-process'}`);
  console.log(formatDynamoBench(result));
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
