// The expire function's tick against the local DynamoDB, as the lineage registry grows with the
// system's history: each gateway start is a lineage, and a tick reads the shards of every lineage the
// registry names (functions/lib/expire-run.ts). A tick that takes longer than the table clock's stall
// bound is a gap, and the time of a gap counts towards no Envoy's age (core table-clock.ts), so a slow
// tick slows expiry. The registry now forgets lineages silent for PRUNE_AFTER_TTLS × TTL with no live
// member (core lineage-registry.ts): the first tick below reads them all and prunes them (what every
// tick cost before), the second is the steady state.
// Run: `npm run bench -- expire [--dead-lineages 0,100,300] [--members 4] [--repeat 3]`.
import { Command } from 'commander';
import pino from 'pino';

import { applyMember, emptyShard, shardOf, PRUNE_AFTER_TTLS } from '../common/core';
import { openTable, registerLineageHeartbeats } from '../common/store';
import { buildFunctionContext } from '../functions/lib/context';
import { runExpire } from '../functions/lib/expire-run';
import { startLocalDynamo } from '../infra/local/dynamo';
import { positiveInteger } from './support/args';
import { summarize } from './support/stats';

const TTL_MS = 4_000;
const SHARDS = 16;
const logger = pino({ level: 'silent' });

interface ExpireRow {
  deadLineages: number;
  /** Median ms of a tick with the dead lineages in the registry (it prunes them). */
  tickWithHistoryMs: number;
  /** Median ms of the next tick (the registry holds the live lineage only). */
  tickAfterPruneMs: number;
  lineagesPruned: number;
}

async function measure(deadLineages: number, members: number, repeat: number): Promise<ExpireRow> {
  const dynamo = await startLocalDynamo({ logger, shardCount: 2, dynaliteProcess: 'child' });
  const withHistory: number[] = [];
  const afterPrune: number[] = [];
  let pruned = 0;
  try {
    for (let round = 0; round < repeat; round++) {
      const tableName = `expire-bench-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const env = { TABLE_NAME: tableName, AWS_REGION: dynamo.region, DYNAMODB_ENDPOINT: dynamo.endpoint, ENVOY_TTL_MS: String(TTL_MS), AGGREGATE_SHARDS: String(SHARDS), PROGRESS_EVALUATION: 'false', LOG_LEVEL: 'silent' };
      const table = openTable({ tableName, logger, client: { region: dynamo.region, endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } });
      await table.ensureTable();
      const now = Date.now();
      const silentSince = now - (PRUNE_AFTER_TTLS + 2) * TTL_MS;
      const heartbeats = new Map<string, number>([['live.boot.edge', now]]);
      for (let i = 0; i < deadLineages; i++) {
        const lineage = `gone-${i}.boot.edge`;
        heartbeats.set(lineage, silentSince);
        // Members an earlier tick expired (live: false), spread over the shards as node ids fall.
        const shards = new Map<number, ReturnType<typeof emptyShard>>();
        for (let m = 0; m < members; m++) {
          const nodeId = `envoy-${i}-${m}`;
          const index = shardOf(nodeId, SHARDS);
          shards.set(index, applyMember(shards.get(index) ?? emptyShard(lineage, index), nodeId, { t: 0, r: 1, live: false, s: silentSince }).shard);
        }
        for (const shard of shards.values()) await table.aggregates.putShard(shard, undefined);
      }
      await registerLineageHeartbeats(table.aggregates, heartbeats);
      const context = buildFunctionContext({ ...env, EXPIRE_STALL_MS: String(60_000) }, logger);
      try {
        const first = performance.now();
        const report = await runExpire(context.deps);
        withHistory.push(performance.now() - first);
        pruned = report.lineagesPruned;
        const second = performance.now();
        await runExpire(context.deps);
        afterPrune.push(performance.now() - second);
      } finally {
        context.close();
        table.close();
      }
    }
  } finally {
    await dynamo.close();
  }
  return { deadLineages, tickWithHistoryMs: Math.round(summarize(withHistory).p50), tickAfterPruneMs: Math.round(summarize(afterPrune).p50), lineagesPruned: pruned };
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .name('expire')
    .option('--dead-lineages <list>', 'lineages silent past the pruning bound, comma-separated', '0,100,300')
    .option('--members <n>', 'expired members per dead lineage', positiveInteger, 4)
    .option('--repeat <n>', 'rounds per row (median reported)', positiveInteger, 3)
    .parse(argv, { from: 'user' });
  const opts = program.opts<{ deadLineages: string; members: number; repeat: number }>();
  const sizes = opts.deadLineages.split(',').map((value) => Number.parseInt(value, 10));
  if (sizes.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`--dead-lineages: expected non-negative integers, got "${opts.deadLineages}"`);
  const rows: ExpireRow[] = [];
  for (const n of sizes) rows.push(await measure(n, opts.members, opts.repeat));
  console.log('| dead lineages in the registry | tick with them (ms, prunes them) | next tick (ms) | pruned |');
  console.log('|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.deadLineages} | ${row.tickWithHistoryMs} | ${row.tickAfterPruneMs} | ${row.lineagesPruned} |`);
  const base = rows.find((row) => row.deadLineages === 0);
  const largest = rows.at(-1);
  if (base !== undefined && largest !== undefined && largest !== base) {
    console.log(`\ntick with ${largest.deadLineages} dead lineages ÷ tick with none: ${(largest.tickWithHistoryMs / Math.max(1, base.tickWithHistoryMs)).toFixed(1)}×; after pruning: ${(largest.tickAfterPruneMs / Math.max(1, base.tickAfterPruneMs)).toFixed(1)}×`);
  }
  console.log(`(TTL ${TTL_MS} ms as in the truth checker: its stall bound is ${TTL_MS / 2} ms; a tick slower than that, or than the expire period, delays expiry)`);
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
