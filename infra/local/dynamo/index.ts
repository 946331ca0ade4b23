// Local DynamoDB with streams: dynalite behind an HTTP front that captures every write, per-table
// change logs (the streams), and Lambda-style stream delivery. See docs/LOCAL-DYNAMO.md.
import pino, { type Logger } from 'pino';
import { SequenceCounter, TableChangeLog } from './change-log';
import { startDynalite, type DynaliteProcess } from './dynalite';
import { FaultSeam } from './faults';
import { startFront, type Front, type FrontStats } from './front';
import { streamFaultsFor } from './stream-faults';
import { startTtlSweeper, type TtlSweeper } from './ttl';

export { createStreamDelivery } from './delivery';
export type { StreamDelivery, StreamDeliveryOptions, DroppedBatch, StreamHandler } from './delivery';
export { fromLambdaHandler, localContext } from './lambda-handler';
export type { LocalLambdaOptions } from './lambda-handler';
export { FaultSeam } from './faults';
export type { FaultSettings, FaultHook, FaultDecision, FaultRequest } from './faults';
export { TableChangeLog, ChangeLogReader } from './change-log';
export type { StartingPosition } from './change-log';
export type { DynaliteProcess } from './dynalite';

export interface LocalDynamoOptions {
  /** Interface both servers listen on (default 127.0.0.1). */
  host?: string;
  /** Port of the front, the endpoint clients use (default 0: random). */
  port?: number;
  /** LevelDB directory for persistence (default: in memory). Change logs are never persisted. */
  path?: string;
  /** Region written into stream records and ARNs (default us-east-1). */
  region?: string;
  /** Shards per table stream (default 4). Records of one partition key always share a shard. */
  shardCount?: number;
  /** How long tables stay CREATING/DELETING/UPDATING in dynalite (default 0). */
  tableStateMs?: number;
  /** Records kept per shard while no delivery reads the stream (default 100000). */
  maxUnreadRecordsPerShard?: number;
  /** Local TTL: delete items whose `attributeName` (epoch seconds) has passed, streaming REMOVEs. */
  ttl?: { attributeName?: string; sweepIntervalMs?: number; tables?: string[] };
  logger?: Logger;
  /** Clock (ms) for record timestamps and TTL (default Date.now). */
  now?: () => number;
  /**
   * Where dynalite runs (default 'inline'). 'child': its own Node process, so its CPU runs on another
   * core than the front and the stream handlers (the local system and the e2e bench); costs ~0.1 s at
   * start, so test suites keep 'inline' (docs/LOCAL-DYNAMO.md, "dynalite in a child process").
   */
  dynaliteProcess?: DynaliteProcess;
}

/** The per-table streams of one local DynamoDB. */
export class TableStreams {
  private readonly logs = new Map<string, TableChangeLog>();
  private readonly sequence = new SequenceCounter();
  private deliveryPaused = false;

  constructor(private readonly opts: { region: string; shardCount: number; now: () => number; maxUnreadRecordsPerShard: number }) {}

  /** The change log (stream) of a table, created on first use. */
  get(tableName: string): TableChangeLog {
    let log = this.logs.get(tableName);
    if (!log) {
      log = new TableChangeLog({ tableName, sequence: this.sequence, ...this.opts });
      this.logs.set(tableName, log);
      if (this.deliveryPaused) streamFaultsFor(log).setPaused(true);
    }
    return log;
  }

  /**
   * Pauses or resumes delivery of every table's stream, tables created later included (the front's
   * `unreachable` fault: DynamoDB Streams are as unreachable as the table; their records wait).
   */
  setDeliveryPaused(paused: boolean): void {
    this.deliveryPaused = paused;
    for (const log of this.logs.values()) streamFaultsFor(log).setPaused(paused);
  }

  tableNames(): string[] {
    return [...this.logs.keys()];
  }
}

export interface LocalDynamo {
  /** The DynamoDB endpoint every client (any process) must use. */
  endpoint: string;
  region: string;
  /** dynalite itself; writes sent here bypass the streams (benchmarks only). */
  dynaliteEndpoint: string;
  tableStreams: TableStreams;
  faults: FaultSeam;
  stats: FrontStats;
  ttl: TtlSweeper | undefined;
  /** Where dynalite runs, and its pid when in a child process. */
  dynalite: { process: DynaliteProcess; pid?: number };
  close(): Promise<void>;
}

export async function startLocalDynamo(opts: LocalDynamoOptions = {}): Promise<LocalDynamo> {
  const host = opts.host ?? '127.0.0.1';
  const region = opts.region ?? 'us-east-1';
  const now = opts.now ?? Date.now;
  const logger = opts.logger ?? pino({ name: 'local-dynamo', level: process.env['LOG_LEVEL'] ?? 'info' });
  const tableStreams = new TableStreams({
    region,
    shardCount: opts.shardCount ?? 4,
    now,
    maxUnreadRecordsPerShard: opts.maxUnreadRecordsPerShard ?? 100_000,
  });
  const faults = new FaultSeam();
  faults.onUnreachableChange((unreachable) => tableStreams.setDeliveryPaused(unreachable));
  const dynalite = await startDynalite({
    host,
    tableStateMs: opts.tableStateMs ?? 0,
    process: opts.dynaliteProcess ?? 'inline',
    logger,
    ...(opts.path ? { path: opts.path } : {}),
  });
  let front: Front;
  try {
    front = await startFront({
      host,
      port: opts.port ?? 0,
      dynalite,
      changeLogFor: (tableName) => tableStreams.get(tableName),
      faults,
      logger,
    });
  } catch (error) {
    // e.g. the front's fixed port is taken: do not leave dynalite (a child process) behind.
    await dynalite.close();
    throw error;
  }
  const ttl = opts.ttl
    ? startTtlSweeper({
        front,
        dynalite,
        attributeName: opts.ttl.attributeName ?? 'ttl',
        sweepIntervalMs: opts.ttl.sweepIntervalMs ?? 1000,
        ...(opts.ttl.tables ? { tables: opts.ttl.tables } : {}),
        now,
        logger,
      })
    : undefined;
  logger.info({ endpoint: front.endpoint, dynalitePort: dynalite.port, dynaliteProcess: dynalite.process, dynalitePid: dynalite.pid }, 'local DynamoDB started');
  return {
    endpoint: front.endpoint,
    region,
    dynaliteEndpoint: `http://${host}:${dynalite.port}`,
    tableStreams,
    faults,
    stats: front.stats,
    ttl,
    dynalite: { process: dynalite.process, ...(dynalite.pid === undefined ? {} : { pid: dynalite.pid }) },
    async close() {
      await ttl?.stop();
      await front.close();
      await dynalite.close();
    },
  };
}
