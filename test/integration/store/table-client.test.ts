// The table definition and the connection factory: dynalite accepts the definition (GSI and stream
// specification included), ensureTable is idempotent, configuration is validated at the edge.
import { ZodError } from 'zod';

import { LDS_TYPE_URL } from '../../../common/core';
import { connectStore, openTableFromEnv, storeClientConfigFromEnv } from '../../../common/store';
import { decodePageToken, encodePageToken, InvalidPageTokenError } from '../../../common/store/page-token';
import { ENVOY_STATE_INDEX, ENVOY_STATE_INDEX_KEY, TTL_ATTRIBUTE, tableDefinition } from '../../../common/store/table';
import { startStoreFixture, type StoreFixture } from '../../support/store-fixture';
import { captureLogs } from '../../support/store-logger';

let fixture: StoreFixture;
beforeAll(async () => {
  fixture = await startStoreFixture();
});
afterAll(async () => {
  await fixture.close();
});

test('ensureTable creates the table once, ACTIVE, with keys, the sparse index and pay-per-request', async () => {
  const table = fixture.openTable('xds-programmed-local', captureLogs().logger);
  await table.ensureTable();
  await table.ensureTable(); // already there: no error
  const Table = await table.describeTable();
  expect(Table?.TableStatus).toBe('ACTIVE');
  expect(Table?.KeySchema).toEqual([
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'sk', KeyType: 'RANGE' },
  ]);
  expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
  expect(Table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.KeySchema?.[0]?.AttributeName])).toEqual([
    [ENVOY_STATE_INDEX, ENVOY_STATE_INDEX_KEY],
  ]);
});

test('the definition asks for a NEW_AND_OLD_IMAGES stream; the TTL attribute is exported for serverless.yml', () => {
  expect(tableDefinition('t').StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
  expect(TTL_ATTRIBUTE).toBe('ttl');
});

test('client configuration is validated, with a clear error naming the bad field', () => {
  expect(() => connectStore({ region: '' })).toThrow(ZodError);
  expect(() => connectStore({ region: 'us-east-1', endpoint: 'not a url' })).toThrow(/endpoint/);
  expect(() => connectStore({ region: 'us-east-1', maxAttempts: 0 })).toThrow(/maxAttempts/);
});

test('configuration from the environment: local endpoint gets dummy credentials, bad values are refused', async () => {
  const local = storeClientConfigFromEnv({ DYNAMODB_ENDPOINT: fixture.endpoint, DYNAMODB_MAX_ATTEMPTS: '7', DYNAMODB_RETRY_MODE: 'adaptive' });
  expect(local).toEqual({
    region: 'us-east-1',
    endpoint: fixture.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 7,
    retryMode: 'adaptive',
  });
  const connection = connectStore(local);
  try {
    const settings = await connection.retrySettings();
    expect(settings.maxAttempts).toBe(7);
    // The SDK turns retryMode into its retry strategy object, whose mode is read back.
    expect(settings).toHaveProperty('retryMode', 'adaptive');
  } finally {
    connection.close();
  }
  expect(storeClientConfigFromEnv({ AWS_REGION: 'eu-west-1' })).toEqual({ region: 'eu-west-1' });
  expect(() => storeClientConfigFromEnv({ DYNAMODB_RETRY_MODE: 'legacy' })).toThrow(/DYNAMODB_RETRY_MODE/);
  expect(() => storeClientConfigFromEnv({ DYNAMODB_MAX_ATTEMPTS: 'many' })).toThrow(/DYNAMODB_MAX_ATTEMPTS/);
});

test('openTableFromEnv builds a working store, and refuses a missing table name', async () => {
  const tableName = await fixture.newTable();
  const { logger } = captureLogs();
  const table = openTableFromEnv({ TABLE_NAME: tableName, DYNAMODB_ENDPOINT: fixture.endpoint }, logger);
  const { store } = table;
  try {
    const event = { nodeId: 'e1', outcome: 'ACK' as const, lineage: 'a.b.c', seq: 1, typeUrl: LDS_TYPE_URL, at: 1, ttl: 100 };
    expect(await store.putEvents([event])).toEqual({ written: 1, failed: [] });
    expect((await store.listEnvoyEvents('e1')).items).toEqual([event]);
  } finally {
    table.close();
  }
  expect(() => openTableFromEnv({ DYNAMODB_ENDPOINT: fixture.endpoint }, logger)).toThrow(/TABLE_NAME/);
});

describe('page tokens', () => {
  const rules = { listing: 'query:EnvoyEvent:asc', attributes: ['pk', 'sk'] };

  test('round-trip, and every kind of tampering is refused', () => {
    const token = encodePageToken(rules.listing, { pk: 'ENVOY#a', sk: 'EVENT#1' });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodePageToken(token, rules)).toEqual({ pk: 'ENVOY#a', sk: 'EVENT#1' });

    const forge = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const refused = [
      '',
      'a+b/c=',
      'A'.repeat(10_000),
      Buffer.from('not json').toString('base64url'),
      forge({ l: rules.listing, k: { pk: 'ENVOY#a' } }),
      forge({ l: rules.listing, k: { pk: 'ENVOY#a', sk: 'EVENT#1', extra: 'x' } }),
      forge({ l: rules.listing, k: { pk: 'ENVOY#a', sk: 7 } }),
      forge({ l: 'scan:*:0/1', k: { pk: 'ENVOY#a', sk: 'EVENT#1' } }),
      forge({ l: rules.listing, k: { pk: 'ENVOY#a', sk: 'EVENT#1' }, more: true }),
    ];
    for (const bad of refused) expect(() => decodePageToken(bad, rules)).toThrow(InvalidPageTokenError);
    expect(() =>
      decodePageToken(token, { ...rules, check: (key) => (key.pk === 'ENVOY#b' ? undefined : 'another partition') }),
    ).toThrow(/another partition/);
  });
});
