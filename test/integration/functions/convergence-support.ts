// Shared plumbing of the convergence / expire / resync tests: the local DynamoDB with its stream, a
// table, a "gateway" writer (the real store adapter writing Envoy states, lineage states and
// watermarks as the xDS gateway does, through the core's transitions), and readers for decisions
// and aggregates.
import pino from 'pino';

import {
  applyAck,
  applyNack,
  applySent,
  applySubscribe,
  CDS_TYPE_URL,
  LDS_TYPE_URL,
  newEnvoyState,
  recount,
  withProgrammedThrough,
  type AggregateShard,
  type Decision,
  type EnvoyState,
  type LineageState,
  type ObjectRef,
} from '../../../common/core';
import { openTable, type DynamoAggregateStore, type DynamoEventStore, type TableAccess } from '../../../common/store';
import { createStreamDelivery, startLocalDynamo, type LocalDynamo, type StreamDelivery, type StreamHandler } from '../../../infra/local/dynamo';
import { handleConvergence } from '../../../functions/convergence';
import { buildFunctionContext, type FunctionContext } from '../../../functions/lib/context';
import { waitFor as pollWaitFor } from '../../support/eventually';

export const silentLogger = pino({ level: 'silent' });
export const CDS = CDS_TYPE_URL;
export const LDS = LDS_TYPE_URL;
export const SHARDS = 4;

export interface World {
  dynamo: LocalDynamo;
  tableName: string;
  /** The gateway's store (a separate client from the functions'). */
  store: DynamoEventStore;
  /** The table's ports on the gateway's client: tests plant and read items through `table.rawItems`. */
  table: TableAccess;
  /** Reader of the aggregates for assertions. */
  aggregates: DynamoAggregateStore;
  /** Environment for the functions. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startWorld(prefix: string, ttlMs = 60_000): Promise<World> {
  const dynamo = await startLocalDynamo({ logger: silentLogger, shardCount: 2 });
  const tableName = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  const table = openTable({
    tableName,
    client: { region: 'us-east-1', endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 10 },
    logger: silentLogger,
  });
  await table.ensureTable();
  const env = {
    TABLE_NAME: tableName,
    AWS_REGION: 'us-east-1',
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    DYNAMODB_MAX_ATTEMPTS: '10',
    ENVOY_TTL_MS: String(ttlMs),
    ACK_TIMEOUT_MS: '30000',
    AGGREGATE_SHARDS: String(SHARDS),
    // The shard path, which these worlds feed (Envoy states); a test of PROGRESS sets 'true'.
    PROGRESS_EVALUATION: 'false',
    LOG_LEVEL: 'silent',
  };
  return {
    dynamo,
    tableName,
    store: table.store,
    table,
    aggregates: table.aggregates,
    env,
    async close() {
      table.close();
      await dynamo.close();
    },
  };
}

export function deliver(world: World, handler: StreamHandler, retries = 5): StreamDelivery {
  return createStreamDelivery({
    source: world.dynamo.tableStreams.get(world.tableName),
    handler,
    batchSize: 50,
    maximumBatchingWindowMs: 0,
    maximumRetryAttempts: retries,
    bisectBatchOnFunctionError: false,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    logger: silentLogger,
  });
}

/** A world whose functions run on a clock the test moves by hand (`clock.now`), the convergence function on its stream. */
export interface HandClockedWorld {
  world: World;
  delivery: StreamDelivery;
  clock: { now: number };
  /** A function context on the hand clock, with the world's settings (closed with the world). */
  context(): FunctionContext;
  close(): Promise<void>;
}

export async function startHandClockedWorld(prefix: string, ttlMs: number, env: Record<string, string> = {}): Promise<HandClockedWorld> {
  const world = await startWorld(prefix, ttlMs);
  const clock = { now: 0 };
  const contexts: FunctionContext[] = [];
  const context = (): FunctionContext => {
    const created = buildFunctionContext({ ...world.env, ENVOY_TTL_MS: String(ttlMs), ...env }, silentLogger, () => clock.now);
    contexts.push(created);
    return created;
  };
  const convergence = context();
  const delivery = deliver(world, (event) => handleConvergence(event, convergence));
  return {
    world,
    delivery,
    clock,
    context,
    close: async () => {
      for (const created of contexts.splice(0)) created.close();
      await delivery.stop();
      await world.close();
    },
  };
}

/** A gateway lineage: its counter, per-type history, heartbeat. Writes LINEAGE#<l>/STATE. */
export class FakeGateway {
  state: LineageState;
  private stored: number | undefined;

  constructor(private readonly world: World, readonly lineage: string, now: number) {
    this.state = {
      lineage,
      instanceId: lineage.split('.')[0] ?? 'gw',
      bootId: 'boot',
      group: 'edge',
      currentSeq: 0,
      typeHistory: {},
      historyStart: 0,
      startedAt: now,
      heartbeatAt: now,
      rev: 0,
    };
  }

  /** A config change of `typeUrl`: takes the next seq. */
  change(typeUrl: string): number {
    const seq = this.state.currentSeq + 1;
    this.state = { ...this.state, currentSeq: seq, typeHistory: { ...this.state.typeHistory, [typeUrl]: [...(this.state.typeHistory[typeUrl] ?? []), seq] } };
    return seq;
  }

  version(typeUrl: string): number {
    const history = this.state.typeHistory[typeUrl] ?? [];
    return history[history.length - 1] ?? 0;
  }

  /** Node ids this gateway has counted (envoysRecorded), like the real recorder. */
  private readonly recorded = new Set<string>();

  /** Write-ahead of the denominator, as the real recorder does: count a new node, store the count. */
  async recordEnvoy(nodeId: string): Promise<void> {
    if (this.recorded.has(nodeId)) return;
    this.recorded.add(nodeId);
    await this.save(this.state.heartbeatAt);
  }

  async save(heartbeatAt: number): Promise<void> {
    const next = { ...this.state, heartbeatAt, envoysRecorded: this.recorded.size, rev: this.stored === undefined ? 0 : this.stored + 1 };
    const result = await this.world.store.putLineageState(next, this.stored);
    if (!result.ok) throw new Error(`lineage write conflict for ${this.lineage}`);
    this.stored = next.rev;
    this.state = next;
  }

  /** W(X, G) on this lineage at the current seq. */
  async watermark(ref: ObjectRef, generation: number, at: number): Promise<void> {
    const types = Object.fromEntries(Object.keys(this.state.typeHistory).map((typeUrl) => [typeUrl, this.version(typeUrl)]));
    await this.world.store.putWatermark(ref, generation, this.lineage, { seq: this.state.currentSeq, types, at });
  }
}

/** One Envoy as the gateway records it: transitions from the core, conditional writes on rev. */
export class FakeEnvoy {
  state: EnvoyState;
  private stored: number | undefined;

  constructor(private readonly world: World, readonly gateway: FakeGateway, nodeId: string, now: number, types: readonly string[] = [CDS, LDS]) {
    let state = newEnvoyState({ identity: { nodeId, cluster: 'edge', metadata: {} }, group: 'edge', lineage: gateway.lineage, now });
    for (const typeUrl of types) state = applySubscribe(state, { typeUrl, lineage: gateway.lineage, now });
    this.state = state;
  }

  private async save(next: EnvoyState): Promise<void> {
    const computed = withProgrammedThrough(next, this.gateway.state.typeHistory, { currentSeq: this.gateway.state.currentSeq });
    const toWrite = { ...computed, rev: this.stored === undefined ? 0 : this.stored + 1 };
    if (toWrite.lineage === this.gateway.lineage) await this.gateway.recordEnvoy(toWrite.nodeId);
    const result = await this.world.store.updateEnvoyState(toWrite, this.stored);
    if (!result.ok) throw new Error(`envoy write conflict for ${next.nodeId}`);
    this.stored = toWrite.rev;
    this.state = toWrite;
  }

  /** Sent and ACKed the current version of every subscribed type. */
  async ackAll(now: number): Promise<void> {
    let state = this.state;
    for (const typeUrl of Object.keys(state.types)) {
      const version = { lineage: this.gateway.lineage, seq: this.gateway.version(typeUrl) };
      state = applyAck(applySent(state, { typeUrl, version, now }), { typeUrl, version, now });
    }
    await this.save(state);
  }

  async nack(typeUrl: string, message: string, now: number): Promise<void> {
    const version = { lineage: this.gateway.lineage, seq: this.gateway.version(typeUrl) };
    await this.save(applyNack(applySent(this.state, { typeUrl, version, now }), { typeUrl, version, message, now }));
  }

  /** Sent the current version of a type, no answer yet. */
  async send(typeUrl: string, now: number): Promise<void> {
    const version = { lineage: this.gateway.lineage, seq: this.gateway.version(typeUrl) };
    await this.save(applySent(this.state, { typeUrl, version, now }));
  }

  async write(change: (state: EnvoyState) => EnvoyState): Promise<void> {
    await this.save(change(this.state));
  }

  get rev(): number | undefined {
    return this.stored;
  }

  /** Re-read from the table (another writer, e.g. expire, may have changed it). */
  async refresh(): Promise<void> {
    const read = await this.world.store.getEnvoyState(this.state.nodeId);
    if (read.status !== 'found') throw new Error(`state of ${this.state.nodeId} is ${read.status}`);
    this.state = read.value;
    this.stored = read.value.rev;
  }
}

export async function decisionOf(world: World, ref: ObjectRef, generation: number): Promise<Decision | undefined> {
  const read = await world.store.getObjectGeneration(ref, generation);
  return read.status === 'found' ? read.value.decision : undefined;
}

export function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  return pollWaitFor(what, probe, { timeoutMs, intervalMs: 25 });
}

/** Waits until the decision satisfies `predicate`; returns it. */
export async function waitForDecision(world: World, ref: ObjectRef, generation: number, predicate: (decision: Decision) => boolean, what: string): Promise<Decision> {
  let last: Decision | undefined;
  try {
    return await waitFor(what, async () => {
      last = await decisionOf(world, ref, generation);
      return last !== undefined && predicate(last) ? last : undefined;
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}; last decision: ${JSON.stringify(last)}`);
  }
}

export async function shardsOf(world: World, lineage: string): Promise<AggregateShard[]> {
  return (await world.aggregates.getLineageShards(lineage)).shards;
}

/** Live members counted by the aggregates of a lineage, and a check that counts equal a recount. */
export async function liveCount(world: World, lineage: string): Promise<number> {
  let live = 0;
  for (const shard of await shardsOf(world, lineage)) {
    expect({ counts: shard.counts, live: shard.live }).toEqual(recount(shard.members));
    live += shard.live;
  }
  return live;
}

export function objectRef(name: string): ObjectRef {
  return { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'default', name };
}

/**
 * A stream mapping on the world's table as the status tests need one: small batches, no batching
 * window, quick retries, and only what happens from now on (a mapping added later does not replay
 * the table's history).
 */
export function streamDeliveryFor(world: World, handler: StreamHandler): StreamDelivery {
  return createStreamDelivery({
    source: world.dynamo.tableStreams.get(world.tableName),
    handler,
    batchSize: 50,
    maximumBatchingWindowMs: 0,
    maximumRetryAttempts: 5,
    bisectBatchOnFunctionError: false,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    startingPosition: 'LATEST',
    logger: silentLogger,
  });
}
