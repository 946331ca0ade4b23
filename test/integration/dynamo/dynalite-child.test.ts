// dynalite in its own process (startDynalite / startLocalDynamo with dynaliteProcess 'child'): the
// front and the stream work as inline, close() waits for the child, a child that cannot start rejects
// with its stderr, persistence survives a restart, and the child dies with its parent (IPC closed).
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import pino from 'pino';
import { createStreamDelivery, startLocalDynamo } from '../../../infra/local/dynamo';
import { startDynalite } from '../../../infra/local/dynamo/dynalite';
import { eventually } from '../../support/eventually';
import { clientFor, createTestTable, pkOf, silentLogger } from '../../support/dynamo-local';

const CHILD_ENTRY = path.join(__dirname, '..', '..', '..', 'infra', 'local', 'dynamo', 'dynalite-child.cjs');

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM would mean it exists under another user; ESRCH: gone.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

test('writes through the front reach dynalite in a child process and the stream; close() ends the child', async () => {
  const dynamo = await startLocalDynamo({ logger: silentLogger, dynaliteProcess: 'child', shardCount: 2 });
  const pid = dynamo.dynalite.pid;
  const client = clientFor(dynamo.endpoint);
  try {
    expect(dynamo.dynalite.process).toBe('child');
    expect(pid).toEqual(expect.any(Number));
    expect(pid).not.toBe(process.pid);
    expect(isAlive(pid as number)).toBe(true);

    await createTestTable(client, 'child-table');
    const records: DynamoDBRecord[] = [];
    const delivery = createStreamDelivery({
      source: dynamo.tableStreams.get('child-table'),
      handler: async (event) => {
        records.push(...event.Records);
      },
      logger: silentLogger,
    });
    try {
      await client.send(new PutItemCommand({ TableName: 'child-table', Item: { pk: { S: 'a' }, sk: { S: 's' }, n: { N: '1' } } }));
      await client.send(new PutItemCommand({ TableName: 'child-table', Item: { pk: { S: 'a' }, sk: { S: 's' }, n: { N: '2' } } }));
      const read = await client.send(new GetItemCommand({ TableName: 'child-table', Key: { pk: { S: 'a' }, sk: { S: 's' } } }));
      expect(read.Item?.['n']).toEqual({ N: '2' });
      await delivery.idle();
    } finally {
      await delivery.stop();
    }
    expect(records.map((r) => [r.eventName, pkOf(r), r.dynamodb?.NewImage?.['n']?.N])).toEqual([
      ['INSERT', 'a', '1'],
      ['MODIFY', 'a', '2'],
    ]);
  } finally {
    client.destroy();
    await dynamo.close();
  }
  // close() resolved only after the child exited.
  expect(isAlive(pid as number)).toBe(false);
  await dynamo.close(); // idempotent
});

test('the child caches condition parses without changing outcomes: values, unused values, queries', async () => {
  const dynamo = await startLocalDynamo({ logger: silentLogger, dynaliteProcess: 'child' });
  const client = clientFor(dynamo.endpoint);
  try {
    await createTestTable(client, 'cond');
    const key = { pk: { S: 'c' }, sk: { S: 's' } };
    await client.send(new PutItemCommand({ TableName: 'cond', Item: { ...key, v: { N: '1' } } }));
    // The same expression again and again, with values that pass and fail (a cached tree must not
    // carry the values of an earlier request).
    const casTo = (expected: number, next: number) =>
      client.send(
        new UpdateItemCommand({
          TableName: 'cond',
          Key: key,
          UpdateExpression: 'SET #v = :next',
          ConditionExpression: 'attribute_exists(pk) AND (#v = :expected OR (#v > :expected AND #v < :expected))',
          ExpressionAttributeNames: { '#v': 'v' },
          ExpressionAttributeValues: { ':expected': { N: String(expected) }, ':next': { N: String(next) } },
        }),
      );
    await casTo(1, 2);
    await expect(casTo(1, 3)).rejects.toThrow(/conditional request failed/i);
    await casTo(2, 3);
    await expect(casTo(2, 4)).rejects.toThrow(/conditional request failed/i);
    await casTo(3, 4);
    const read = await client.send(new GetItemCommand({ TableName: 'cond', Key: key }));
    expect(read.Item?.['v']).toEqual({ N: '4' });
    // An unused value is still refused when the expression's parse is cached.
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: 'cond',
          Key: key,
          UpdateExpression: 'SET #v = :next',
          ConditionExpression: 'attribute_exists(pk) AND (#v = :expected OR (#v > :expected AND #v < :expected))',
          ExpressionAttributeNames: { '#v': 'v' },
          ExpressionAttributeValues: { ':expected': { N: '4' }, ':next': { N: '5' }, ':unused': { S: 'x' } },
        }),
      ),
    ).rejects.toThrow(/unused in expressions/);
    // Key conditions (rewritten in place by dynalite) keep working when repeated.
    for (let i = 0; i < 3; i++) {
      const queried = await client.send(
        new QueryCommand({ TableName: 'cond', KeyConditionExpression: ':pk = pk', ExpressionAttributeValues: { ':pk': { S: 'c' } } }),
      );
      expect(queried.Items?.map((item) => item['v'])).toEqual([{ N: '4' }]);
    }
  } finally {
    client.destroy();
    await dynamo.close();
  }
});

test('with a path, items survive a restart of the child', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dynalite-child-'));
  try {
    const first = await startLocalDynamo({ logger: silentLogger, dynaliteProcess: 'child', path: dir });
    const client1 = clientFor(first.endpoint);
    try {
      await createTestTable(client1, 'kept');
      await client1.send(new PutItemCommand({ TableName: 'kept', Item: { pk: { S: 'p' }, sk: { S: 's' }, v: { S: 'stays' } } }));
    } finally {
      client1.destroy();
      await first.close();
    }
    const second = await startLocalDynamo({ logger: silentLogger, dynaliteProcess: 'child', path: dir });
    const client2 = clientFor(second.endpoint);
    try {
      const read = await client2.send(new GetItemCommand({ TableName: 'kept', Key: { pk: { S: 'p' }, sk: { S: 's' } } }));
      expect(read.Item?.['v']).toEqual({ S: 'stays' });
    } finally {
      client2.destroy();
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a child that cannot listen rejects with its stderr', async () => {
  // TEST-NET-3 (RFC 5737) is never a local address: listen fails with EADDRNOTAVAIL.
  await expect(startDynalite({ host: '203.0.113.7', tableStateMs: 0, process: 'child' })).rejects.toThrow(
    /dynalite child process exited \(code 1\) before listening: dynalite child: listen on 203\.0\.113\.7 failed: .*EADDRNOTAVAIL/,
  );
});

test('a child that does not listen in time is killed and the start rejects', async () => {
  // A 1 ms timeout fires before any child can be up (node alone takes tens of ms to start).
  await expect(startDynalite({ host: '127.0.0.1', tableStateMs: 0, process: 'child', startTimeoutMs: 1 })).rejects.toThrow(
    /dynalite child process did not listen within 1 ms/,
  );
});

test('the child exits when its parent is SIGKILLed (the IPC channel closes)', async () => {
  // A stand-in parent that forks the child exactly as startDynalite does and prints the child's pid.
  const parentScript = [
    `const { fork } = require('node:child_process');`,
    `const child = fork(${JSON.stringify(CHILD_ENTRY)}, [JSON.stringify({ host: '127.0.0.1', tableStateMs: 0 })], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });`,
    `child.on('message', (m) => { if (m && m.type === 'listening') console.log('CHILD ' + child.pid + ' ' + m.port); });`,
  ].join('\n');
  const parent = spawn(process.execPath, ['-e', parentScript], { stdio: ['ignore', 'pipe', 'inherit'] });
  const parentExited = new Promise<void>((resolve) => parent.once('exit', () => resolve()));
  let childPid: number | undefined;
  try {
    childPid = await new Promise<number>((resolve, reject) => {
      let out = '';
      parent.stdout.on('data', (data: Buffer) => {
        out += data.toString('utf8');
        const match = /CHILD (\d+) (\d+)/.exec(out);
        if (match?.[1] !== undefined) resolve(Number(match[1]));
      });
      parent.once('exit', (code) => reject(new Error(`stand-in parent exited early (${String(code)})`)));
    });
    expect(isAlive(childPid)).toBe(true);
  } finally {
    parent.kill('SIGKILL');
    await parentExited;
  }
  const pid = childPid;
  await eventually(() => !isAlive(pid), `dynalite child ${pid} to exit after its parent was killed`, { timeoutMs: 15_000, intervalMs: 50 });
});

test('a child killed from outside is logged as an unexpected exit, and close() still resolves', async () => {
  const lines: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
  const running = await startDynalite({ host: '127.0.0.1', tableStateMs: 0, process: 'child', logger });
  process.kill(running.pid as number, 'SIGKILL');
  await eventually(() => lines.length > 0, 'the unexpected exit to be logged');
  expect(JSON.parse(lines[0] as string)).toMatchObject({ msg: 'dynalite child process exited unexpectedly', exit: 'signal SIGKILL', pid: running.pid });
  await running.close();
});

test('the child mode is opt-in: the default stays inline', async () => {
  const inline = await startDynalite({ host: '127.0.0.1', tableStateMs: 0 });
  try {
    expect(inline.process).toBe('inline');
    expect(inline.pid).toBeUndefined();
  } finally {
    await inline.close();
  }
});
