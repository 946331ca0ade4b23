// Helpers for tests of the local DynamoDB (infra/local/dynamo): a test table, an SDK client for the
// front, a handler that collects records, and a runner for the writer process.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import pino from 'pino';
import { startLocalDynamo, type LocalDynamo, type StreamDelivery } from '../../infra/local/dynamo';

export const silentLogger = pino({ level: 'silent' });

export function clientFor(endpoint: string, maxAttempts = 3): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts,
  });
}

/** pk/sk strings, PAY_PER_REQUEST, stream on (the front captures writes to every table anyway). */
export async function createTestTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
}

export function pkOf(record: DynamoDBRecord): string {
  return record.dynamodb?.Keys?.['pk']?.S ?? '';
}

/** Records grouped by partition key, each group in delivery order. */
export function byPartitionKey(records: DynamoDBRecord[]): Map<string, DynamoDBRecord[]> {
  const groups = new Map<string, DynamoDBRecord[]>();
  for (const record of records) {
    const group = groups.get(pkOf(record)) ?? [];
    group.push(record);
    groups.set(pkOf(record), group);
  }
  return groups;
}

const WRITER = path.join(__dirname, 'dynamo-writer.ts');

/** Runs test/support/dynamo-writer.ts in its own OS process; resolves with its stdout lines. */
export function runWriterProcess(args: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, ...args], {
      cwd: path.join(__dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(stdout.trim().split('\n').filter(Boolean));
      else reject(new Error(`writer process exited ${code}: ${stderr}\n${stdout}`));
    });
  });
}

export interface DeliveryDynamo {
  readonly dynamo: LocalDynamo;
  readonly client: DynamoDBClient;
  /** Deliveries a test started: stopped (drained) after each test. */
  readonly deliveries: StreamDelivery[];
  /** A new table for one test, named `<prefix><n>`. */
  freshTable(): Promise<string>;
}

/**
 * For a file of stream-delivery tests: one local DynamoDB and client for the file (registered with
 * beforeAll/afterAll), the test's deliveries stopped after each test, a table per test.
 */
export function useDeliveryDynamo(opts: { shardCount: number; tablePrefix: string }): DeliveryDynamo {
  let dynamo: LocalDynamo | undefined;
  let client: DynamoDBClient | undefined;
  const deliveries: StreamDelivery[] = [];
  let tables = 0;
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useDeliveryDynamo: used outside a test');
    return value;
  };
  beforeAll(async () => {
    dynamo = await startLocalDynamo({ logger: silentLogger, shardCount: opts.shardCount });
    client = clientFor(dynamo.endpoint);
  });
  afterEach(async () => {
    await Promise.all(deliveries.splice(0).map((delivery) => delivery.stop({ drainTimeoutMs: 1000 })));
  });
  afterAll(async () => {
    client?.destroy();
    await dynamo?.close();
  });
  return {
    get dynamo() {
      return started(dynamo);
    },
    get client() {
      return started(client);
    },
    deliveries,
    async freshTable() {
      const name = `${opts.tablePrefix}${++tables}`;
      await createTestTable(started(client), name);
      return name;
    },
  };
}
