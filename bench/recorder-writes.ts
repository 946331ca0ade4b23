// DynamoDB item writes per ACK at the gateway (target: ≤ 1 write per ACK, amortized: docs/GATEWAY.md, "The event log"), before
// and after the event log in one run: the real Recorder writing into dynalite, driven by the core's
// transitions for a fleet of Envoys (bench/support/recorder-workload.ts), for changes touching 1 type
// (a route: RDS) and 3 types (a new service: CDS, EDS, RDS), at 100 and 1,000 Envoys.
//   before = eventLogMode `items`: one EVENT item per ACK, written before the Envoy's STATE;
//   after  = eventLogMode `carried`: ACK events ride in the STATE write, move to event-log items
//            in groups, and a state that only records a response sent waits for its ACK.
// DynamoDB bills per item written (and per KB of it), so items are counted, with requests and an
// estimate of write units (ceil(JSON size / 1 KB) per item) beside them. Functions' writes (shards,
// OBJECT items) are not included here: bench/e2e.ts measures the whole system.
// Run: `npm run bench -- recorder-writes [--envoys 100,1000] [--types 1,3] [--changes 3]`.
import { Command } from 'commander';
import pino from 'pino';

import { connectStore } from '../common/store';
import { DynamoEventStore } from '../common/store/dynamo-store';
import { startDynalite } from '../test/support/store-dynalite';
import { countingWrites, runRecorderWorkload } from './support/recorder-workload';

export interface RecorderWritesOptions {
  envoys: number[];
  types: number[];
  changes: number;
  ackDelayMs: [number, number];
  seed: number;
}

export interface RecorderWritesRow {
  envoys: number;
  changedTypes: number;
  mode: 'items' | 'carried';
  acks: number;
  itemsPerAck: number;
  requestsPerAck: number;
  approxWriteUnitsPerAck: number;
  byKind: Record<string, number>;
  missingEvents: number;
  stateAheadOfLog: number;
  wallMs: number;
}

export const defaultRecorderWritesOptions: RecorderWritesOptions = { envoys: [100, 1000], types: [1, 3], changes: 6, ackDelayMs: [2, 250], seed: 42 };

/** A small deterministic PRNG (mulberry32) so runs are comparable. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round = (n: number): number => Math.round(n * 100) / 100;

export async function runRecorderWrites(options: RecorderWritesOptions = defaultRecorderWritesOptions): Promise<RecorderWritesRow[]> {
  const dynalite = await startDynalite();
  const connection = connectStore({ region: 'us-east-1', endpoint: dynalite.endpoint, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' }, maxAttempts: 5 });
  const logger = pino({ level: 'silent' });
  const rows: RecorderWritesRow[] = [];
  try {
    let run = 0;
    for (const envoys of options.envoys) {
      for (const changedTypes of options.types) {
        for (const mode of ['items', 'carried'] as const) {
          run++;
          const tableName = `recorder-writes-${run}`;
          await connection.ensureTable(tableName);
          const operations = countingWrites(connection.operations);
          const store = new DynamoEventStore({ tableName, operations, logger, clock: { now: () => Date.now() } });
          const result = await runRecorderWorkload({
            store,
            operations,
            logger,
            envoys,
            changedTypes,
            changes: options.changes,
            mode,
            ackDelayMs: options.ackDelayMs,
            random: seeded(options.seed + run),
          });
          rows.push({
            envoys,
            changedTypes,
            mode,
            acks: result.acks,
            itemsPerAck: round(result.writes.items / result.acks),
            requestsPerAck: round(result.writes.requests / result.acks),
            approxWriteUnitsPerAck: round(result.writes.approxWriteUnits / result.acks),
            byKind: result.writes.byKind,
            missingEvents: result.missingEvents,
            stateAheadOfLog: result.stateAheadOfLog,
            wallMs: result.wallMs,
          });
        }
      }
    }
  } finally {
    connection.close();
    await dynalite.close();
  }
  return rows;
}

export function formatRecorderWrites(rows: readonly RecorderWritesRow[]): string {
  const header = '| Envoys | types changed | event log | ACKs | item writes / ACK | write requests / ACK | ≈ write units / ACK | items by kind | ACKs not found | states ahead of log |';
  const lines = [header, '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |'];
  for (const row of rows) {
    const kinds = Object.entries(row.byKind).sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, n]) => `${kind} ${n}`).join(', ');
    const label = row.mode === 'items' ? 'before: item per event' : 'after: carried in STATE';
    lines.push(`| ${row.envoys} | ${row.changedTypes} | ${label} | ${row.acks} | ${row.itemsPerAck} | ${row.requestsPerAck} | ${row.approxWriteUnitsPerAck} | ${kinds} | ${row.missingEvents} | ${row.stateAheadOfLog} |`);
  }
  return lines.join('\n');
}

const list = (value: string): number[] => value.split(',').map((part) => {
  const n = Number(part);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`not a positive integer: ${part}`);
  return n;
});

export async function run(argv: string[]): Promise<void> {
  const opts = new Command()
    .name('recorder-writes')
    .option('--envoys <list>', 'fleet sizes', (v) => list(v), defaultRecorderWritesOptions.envoys)
    .option('--types <list>', 'types each change touches (1..4)', (v) => list(v), defaultRecorderWritesOptions.types)
    .option('--changes <n>', 'changes measured per run', (v) => list(v)[0] ?? 3, defaultRecorderWritesOptions.changes)
    .option('--seed <n>', 'PRNG seed for ACK delays', (v) => list(v)[0] ?? 42, defaultRecorderWritesOptions.seed)
    .parse(['node', 'recorder-writes', ...argv])
    .opts<{ envoys: number[]; types: number[]; changes: number; seed: number }>();
  const rows = await runRecorderWrites({ ...defaultRecorderWritesOptions, envoys: opts.envoys, types: opts.types, changes: opts.changes, seed: opts.seed });
  console.log(`gateway recorder → dynalite, ${opts.changes} changes per run, ACK delay ${defaultRecorderWritesOptions.ackDelayMs.join('–')} ms, flush window 100 ms`);
  console.log(formatRecorderWrites(rows));
  const broken = rows.filter((row) => row.missingEvents > 0 || row.stateAheadOfLog > 0);
  if (broken.length > 0) {
    console.error('event log incomplete in some runs (see the last two columns)');
    process.exitCode = 1;
  }
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
