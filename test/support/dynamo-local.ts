// Helpers for tests of the local DynamoDB (infra/local/dynamo): a test table, an SDK client for the
// front, a handler that collects records, and a runner for the writer process.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import pino from 'pino';

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
