// Convergence function cost against the local DynamoDB (dynalite behind the stream front):
//   1. items read per stream batch (100 Envoy STATE records) at 1,000 vs 10,000 Envoys: must be flat,
//      since evaluation reads the lineage's shards, not the fleet;
//   2. decision latency: from the write of the last blocking Envoy's state to the Programmed
//      decision on the OBJECT item, through the real stream delivery and handler.
// Run: `npx tsx bench/convergence.ts [--fleets 1000,10000] [--batch-size 100[,500,1000]] [--repeat 3]
//   [--pending 20] [--shards 16] [--dynalite-process inline|child]`
// or `npm run bench -- convergence`. Numbers are for this machine and dynalite, not DynamoDB.
// `--batch-size` takes a list to compare stream batch sizes in one session (the Lambda mapping's
// batchSize; infra/local/system/functions.ts and serverless.yml are set from it); each batch is
// processed `--repeat` times (fresh records each time) and the median is reported.
import type { AttributeValue as LambdaAttributeValue, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';

import {
  applyMember,
  CDS_TYPE_URL,
  emptyShard,
  LDS_TYPE_URL,
  memberFromEnvoyState,
  shardOf,
  type AggregateShard,
  type EnvoyState,
  type ObjectRef,
} from '../common/core';
import { envoyStateKey, openTable, streamImageOf, toEnvoyStateItem, type DocumentOperations } from '../common/store';
import { processConvergenceBatch, type ConvergenceDeps } from '../functions/lib/convergence-batch';
import { lineageStateFor } from '../xds-gateway/tracking/lineage-mirror';
import { createStreamDelivery, startLocalDynamo } from '../infra/local/dynamo';
import { positiveInteger, positiveIntegers } from './support/args';

const LINEAGE = 'bench.boot.edge';
const logger = pino({ level: 'silent' });

export interface ConvergenceBenchOptions {
  fleets: number[];
  /** Envoy STATE records per stream batch (the mapping's batchSize). */
  batch: number;
  pending: number;
  shards: number;
  /** Batches measured per row (median reported; default 1). */
  repeat?: number;
  /** Where dynalite runs (default inline: the bench process then holds both, as the e2e did before). */
  dynaliteProcess?: 'child' | 'inline';
}

export interface ConvergenceBenchRow {
  envoys: number;
  recordsPerBatch: number;
  itemsReadPerBatch: number;
  requestsPerBatch: number;
  batchMs: number;
  /** recordsPerBatch / batchMs: what one stream shard's convergence invocations can consume. */
  recordsPerSec: number;
  decisionLatencyMs: number;
  dynalite: 'child' | 'inline';
}

/** Counts items returned and requests made, for every read the functions do. */
function counting(operations: DocumentOperations): DocumentOperations & { items: number; requests: number } {
  const counter = {
    items: 0,
    requests: 0,
    batchWrite: operations.batchWrite,
    put: operations.put,
    delete: operations.delete,
    update: operations.update,
    get: async (input: Parameters<DocumentOperations['get']>[0]) => {
      counter.requests++;
      const output = await operations.get(input);
      if (output.Item !== undefined) counter.items++;
      return output;
    },
    batchGet: async (input: Parameters<DocumentOperations['batchGet']>[0]) => {
      counter.requests++;
      const output = await operations.batchGet(input);
      for (const items of Object.values(output.Responses ?? {})) counter.items += items.length;
      return output;
    },
    query: async (input: Parameters<DocumentOperations['query']>[0]) => {
      counter.requests++;
      const output = await operations.query(input);
      counter.items += output.Items?.length ?? 0;
      return output;
    },
    scan: async (input: Parameters<DocumentOperations['scan']>[0]) => {
      counter.requests++;
      const output = await operations.scan(input);
      counter.items += output.Items?.length ?? 0;
      return output;
    },
  };
  return counter;
}

function envoyState(nodeId: string, acked: number, rev: number, now: number): EnvoyState {
  return {
    nodeId,
    cluster: 'edge',
    group: 'edge',
    metadata: {},
    lineage: LINEAGE,
    status: 'CONNECTED',
    connectedAt: now,
    lastSeenAt: now,
    types: { [CDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked }, [LDS_TYPE_URL]: { lineage: LINEAGE, subscribed: true, acked: 1 } },
    programmedThrough: acked,
    rev,
  };
}

function streamRecord(oldState: EnvoyState, newState: EnvoyState, sequence: number): DynamoDBRecord {
  const image = (state: EnvoyState): Record<string, LambdaAttributeValue> => streamImageOf(toEnvoyStateItem(state));
  return {
    eventID: `bench-${sequence}`,
    eventName: 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      Keys: streamImageOf({ ...envoyStateKey(newState.nodeId) }),
      OldImage: image(oldState),
      NewImage: image(newState),
      SequenceNumber: String(sequence).padStart(21, '0'),
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

async function measureFleet(envoys: number, options: ConvergenceBenchOptions): Promise<ConvergenceBenchRow> {
  const dynaliteProcess = options.dynaliteProcess ?? 'inline';
  const dynamo = await startLocalDynamo({ logger, shardCount: 2, dynaliteProcess });
  const tableName = `bench-convergence-${envoys}`;
  // Every read the functions do is counted: openTable wraps the operations all its ports share.
  const wrapped: { operations?: ReturnType<typeof counting> } = {};
  const table = openTable(
    { tableName, logger, client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 10 } },
    { wrapOperations: (plain) => (wrapped.operations = counting(plain)) },
  );
  const operations = wrapped.operations;
  if (operations === undefined) throw new Error('openTable did not wrap the document operations');
  try {
    await table.ensureTable();
    const { store, aggregates } = table;
    const now = Date.now();
    const deps: ConvergenceDeps = { aggregates, store, logger, now: () => Date.now(), policy: { ttlMs: 3_600_000, ackTimeoutMs: 30_000 }, shardCount: options.shards };

    // Seed: every Envoy programmed through seq 1; the generations under test have watermarks at 2.
    const shards = new Map<number, AggregateShard>();
    for (let i = 0; i < envoys; i++) {
      const nodeId = `envoy-${i}`;
      const index = shardOf(nodeId, options.shards);
      shards.set(index, applyMember(shards.get(index) ?? emptyShard(LINEAGE, index), nodeId, memberFromEnvoyState(envoyState(nodeId, 1, 0, now))).shard);
    }
    for (const shard of shards.values()) await aggregates.putShard(shard, undefined);
    await aggregates.putLineageRegistry({ v: 1, lineages: { [LINEAGE]: now + 3_600_000 } }, undefined);
    // The gateway's count (docs/CONVERGENCE.md, "The denominator"): the seeded Envoys and envoy-last.
    await store.putLineageState({ ...lineageStateFor(LINEAGE, 'edge', now), envoysRecorded: envoys + 1 }, undefined);
    const refs: ObjectRef[] = Array.from({ length: options.pending }, (_, i) => ({ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'bench', name: `route-${i}` }));
    for (const ref of refs) {
      await store.putWatermark(ref, 1, LINEAGE, { seq: 2, types: { [CDS_TYPE_URL]: 2, [LDS_TYPE_URL]: 1 }, at: now });
      await aggregates.putPending({ lineage: LINEAGE, seq: 2, object: ref, generation: 1 });
    }

    // 1. A stream batch of Envoys ACKing the next seq, processed by the handler's batch function;
    // repetition r moves the same Envoys from seq 1+r to 2+r (rev r to r+1), so every batch changes
    // every member it names. envoy-last is counted but not yet in the shards, so the pending
    // generations stay pending and every repetition evaluates all of them.
    if (options.batch > envoys) throw new Error(`--batch-size ${options.batch} is larger than the fleet (${envoys})`);
    const repeat = Math.max(1, options.repeat ?? 1);
    const batchTimes: number[] = [];
    let itemsReadPerBatch = 0;
    let requestsPerBatch = 0;
    for (let r = 0; r < repeat; r++) {
      const records = Array.from({ length: options.batch }, (_, i) =>
        streamRecord(envoyState(`envoy-${i}`, 1 + r, r, now), envoyState(`envoy-${i}`, 2 + r, r + 1, now), r * options.batch + i + 1),
      );
      operations.items = 0;
      operations.requests = 0;
      const started = performance.now();
      const { report } = await processConvergenceBatch({ Records: records } as DynamoDBStreamEvent, deps);
      batchTimes.push(performance.now() - started);
      if (report.failed > 0) throw new Error(`bench batch had ${report.failed} failures`);
      // Reads of the first batch (later ones hit the decision cache when it is configured).
      if (r === 0) {
        itemsReadPerBatch = operations.items;
        requestsPerBatch = operations.requests;
      }
    }
    const batchMs = median(batchTimes);

    // 2. Decision latency through the stream: all but one Envoy at seq 2 (written straight into the
    // shards), then the last one's state is written as the gateway would, and we wait for the decision.
    for (const [index, seeded] of shards) {
      const read = await aggregates.getShard(LINEAGE, index);
      let next: AggregateShard = read.status === 'found' ? read.value : seeded;
      const expected = next.v;
      for (const nodeId of Object.keys(next.members)) {
        if (nodeId === 'envoy-last') continue;
        next = applyMember(next, nodeId, memberFromEnvoyState(envoyState(nodeId, 2, repeat + 5, now))).shard;
      }
      await aggregates.putShard({ ...next, v: expected + 1 }, read.status === 'found' ? expected : undefined);
    }
    const lastRef = refs[0] as ObjectRef;
    const delivery = createStreamDelivery({
      source: dynamo.tableStreams.get(tableName),
      handler: async (event) => (await processConvergenceBatch(event, deps)).response,
      batchSize: options.batch,
      maximumBatchingWindowMs: 0,
      startingPosition: 'LATEST',
      logger,
    });
    try {
      await store.updateEnvoyState(envoyState('envoy-last', 1, 0, Date.now()), undefined);
      await delivery.idle(60_000);
      const written = performance.now();
      await store.updateEnvoyState(envoyState('envoy-last', 2, 1, Date.now()), 0);
      for (;;) {
        const read = await store.getObjectGeneration(lastRef, 1);
        if (read.status === 'found' && read.value.decision?.state === 'Programmed' && read.value.decision.total === envoys + 1) break;
        if (performance.now() - written > 60_000) throw new Error('no Programmed decision within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const decisionLatencyMs = performance.now() - written;
      return {
        envoys,
        recordsPerBatch: options.batch,
        itemsReadPerBatch,
        requestsPerBatch,
        batchMs: Math.round(batchMs),
        recordsPerSec: Math.round((options.batch * 1000) / batchMs),
        decisionLatencyMs: Math.round(decisionLatencyMs),
        dynalite: dynaliteProcess,
      };
    } finally {
      await delivery.stop();
    }
  } finally {
    table.close();
    await dynamo.close();
  }
}

export async function runConvergenceBench(options: ConvergenceBenchOptions): Promise<ConvergenceBenchRow[]> {
  const rows: ConvergenceBenchRow[] = [];
  for (const envoys of options.fleets) rows.push(await measureFleet(envoys, options));
  return rows;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

export async function run(argv: string[]): Promise<void> {
  const program = new Command()
    .option('--fleets <list>', 'fleet sizes, comma-separated', positiveIntegers, [1000, 10000])
    .option('--batch-size <list>', 'Envoy STATE records per stream batch (the mapping\'s batchSize), comma-separated to compare', positiveIntegers)
    .option('--batch <n>', 'same as --batch-size with one value (kept for earlier command lines)', positiveInteger)
    .option('--repeat <n>', 'batches measured per row (median)', positiveInteger, 1)
    .option('--pending <n>', 'pending object generations', positiveInteger, 20)
    .option('--shards <n>', 'aggregate shards per lineage', positiveInteger, 16)
    .addOption(new Option('--dynalite-process <list>', 'dynalite inline (in the bench process) or in a child process; "inline,child" runs both').default('inline'))
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const opts = program.opts<{ fleets: number[]; batchSize?: number[]; batch?: number; repeat: number; pending: number; shards: number; dynaliteProcess: string }>();
  const modes = opts.dynaliteProcess.split(',').map((m) => m.trim());
  for (const mode of modes) if (mode !== 'child' && mode !== 'inline') throw new InvalidArgumentError(`--dynalite-process: not child or inline: ${mode}`);
  const rows: ConvergenceBenchRow[] = [];
  for (const batch of opts.batchSize ?? [opts.batch ?? 100]) {
    // A batch names distinct Envoys, so it cannot be larger than the fleet: such rows are skipped.
    const fleets = opts.fleets.filter((envoys) => envoys >= batch);
    if (fleets.length === 0) continue;
    for (const mode of modes as Array<'child' | 'inline'>) {
      rows.push(...(await runConvergenceBench({ fleets, batch, repeat: opts.repeat, pending: opts.pending, shards: opts.shards, dynaliteProcess: mode })));
    }
  }
  console.table(rows);
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
