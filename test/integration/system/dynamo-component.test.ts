// The local system's DynamoDB component runs dynalite in a child process by default (its CPU off the
// system's one event loop), creates the table through the front, and ends the child on close.
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import pino from 'pino';
import { startDynamoComponent } from '../../../infra/local/system/dynamo';
import { localSystemOptionsSchema } from '../../../infra/local/system/options';
import { clientFor } from '../../support/dynamo-local';
import { isAlive } from './helpers';

const logger = pino({ level: 'silent' });

test('the system options default to a child dynalite and accept inline; a bad mode is refused', () => {
  expect(localSystemOptionsSchema.parse({}).dynaliteProcess).toBe('child');
  expect(localSystemOptionsSchema.parse({ dynaliteProcess: 'inline' }).dynaliteProcess).toBe('inline');
  expect(() => localSystemOptionsSchema.parse({ dynaliteProcess: 'thread' })).toThrow(/dynaliteProcess/);
  expect(() => localSystemOptionsSchema.parse({ convergenceBatchSize: 10_001 })).toThrow(/convergenceBatchSize/);
});

test('the component starts dynalite in a child, has the table ACTIVE, and close() ends the child', async () => {
  const component = await startDynamoComponent({ port: 0, tableName: 'component-table', logger });
  const pid = component.local.dynalite.pid;
  const client = clientFor(component.local.endpoint);
  try {
    expect(component.local.dynalite.process).toBe('child');
    expect(pid).toEqual(expect.any(Number));
    expect(isAlive(pid as number)).toBe(true);
    const described = await client.send(new DescribeTableCommand({ TableName: 'component-table' }));
    expect(described.Table?.TableStatus).toBe('ACTIVE');
  } finally {
    client.destroy();
    await component.close();
  }
  expect(isAlive(pid as number)).toBe(false);
});

test('inline on request: no child process', async () => {
  const component = await startDynamoComponent({ port: 0, tableName: 'component-inline', logger, dynaliteProcess: 'inline' });
  try {
    expect(component.local.dynalite).toEqual({ process: 'inline' });
  } finally {
    await component.close();
  }
});
