// Benchmark of the local DynamoDB front (infra/local/dynamo): batched writes/s through the front vs
// straight to dynalite, and stream-delivery lag (write acknowledged -> handler receives).
//   npx tsx bench/dynamo.ts [--writers 4] [--batches 40] [--puts 200] [--dynalite-process child|inline]
//   (or npm run bench -- dynamo)
import { BatchWriteItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { createStreamDelivery, startLocalDynamo } from '../infra/local/dynamo';
import { clientFor, createTestTable, silentLogger } from '../test/support/dynamo-local';

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
  client: DynamoDBClient,
  table: string,
  writers: number,
  batches: number,
): Promise<{ itemsPerSec: number; ackedAt: Map<string, number>; sentAt: Map<string, number> }> {
  const ackedAt = new Map<string, number>();
  const sentAt = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let b = 0; b < batches; b++) {
        const keys = Array.from({ length: ITEMS_PER_BATCH }, (_, i) => `ENVOY#w${w}-b${b}-i${i}`);
        const sent = performance.now();
        for (const pk of keys) sentAt.set(pk, sent);
        await client.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [table]: keys.map((pk) => ({
                PutRequest: { Item: { pk: { S: pk }, sk: { S: 'EVENT#lineage#1#type#ACK' }, at: { N: String(Date.now()) }, outcome: { S: 'ACK' } } },
              })),
            },
          }),
        );
        const now = performance.now();
        for (const pk of keys) ackedAt.set(pk, now);
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
  const front = clientFor(dynamo.endpoint);
  const direct = clientFor(dynamo.dynaliteEndpoint);
  const receivedAt = new Map<string, number>();
  const handler = async (event: DynamoDBStreamEvent): Promise<void> => {
    const now = performance.now();
    for (const record of event.Records) {
      const pk = record.dynamodb?.Keys?.['pk']?.S;
      if (pk) receivedAt.set(pk, now);
    }
  };
  try {
    await createTestTable(front, 'bench-direct');
    await createTestTable(front, 'bench-front');
    await createTestTable(front, 'bench-light');
    // Warm-up: connections, dynalite's first-write paths.
    await batchedWrites(direct, 'bench-direct', 1, 2);

    const directRun = await batchedWrites(direct, 'bench-direct', writers, batches);

    const delivery = createStreamDelivery({ source: dynamo.tableStreams.get('bench-front'), handler, batchSize: 100, logger: silentLogger });
    const frontRun = await batchedWrites(front, 'bench-front', writers, batches);
    await delivery.stop({ drainTimeoutMs: 60_000 });
    const lagsFrom = (times: Map<string, number>): number[] => [...times].map(([pk, t]) => (receivedAt.get(pk) ?? Number.NaN) - t);

    const lightDelivery = createStreamDelivery({ source: dynamo.tableStreams.get('bench-light'), handler, batchSize: 100, logger: silentLogger });
    const lightAcked = new Map<string, number>();
    const lightSent = new Map<string, number>();
    for (let i = 0; i < lightPuts; i++) {
      const pk = `LIGHT#${i}`;
      lightSent.set(pk, performance.now());
      await front.send(new PutItemCommand({ TableName: 'bench-light', Item: { pk: { S: pk }, sk: { S: 'STATE' } } }));
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
    front.destroy();
    direct.destroy();
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
