// A new gateway lineage must be in the convergence functions' lineage registry before any Envoy state
// on it is written: evaluation only reads the shards of registered lineages, so an unregistered
// lineage's Envoys would be missing from the denominator (docs/CONVERGENCE.md, "The denominator").
// Checked on the local DynamoDB's stream: the registry record precedes the first Envoy state record.
import type { DynamoDBRecord } from 'aws-lambda';
import { LINEAGE_REGISTRY_KEY } from '../../../common/store';
import { openTable } from '../../../common/store';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { createStreamDelivery, type LocalDynamo, type StreamDelivery } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { ALL_TYPES, adsSpec, eventually, newFleet, startDynamoAndControlPlane, startTestGateway, testLogger } from './helpers';

const TABLE = 'gw-registration';
let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let gateway: Gateway;
let delivery: StreamDelivery;
let fleet: Fleet | undefined;
const records: DynamoDBRecord[] = [];

beforeAll(async () => {
  ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
  delivery = createStreamDelivery({
    source: dynamo.tableStreams.get(TABLE),
    handler: async (event) => {
      records.push(...event.Records);
    },
    logger: testLogger,
  });
  gateway = await startTestGateway({
    upstream: `127.0.0.1:${controlPlane.port}`,
    table: TABLE,
    'dynamodb-endpoint': dynamo.endpoint,
    watermarks: 'provenance',
  });
});

afterAll(async () => {
  fleet?.close();
  await gateway.close();
  await delivery.stop();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

const keyOf = (record: DynamoDBRecord): string => `${record.dynamodb?.Keys?.['pk']?.S ?? ''} / ${record.dynamodb?.Keys?.['sk']?.S ?? ''}`;
const sequenceOf = (record: DynamoDBRecord): bigint => BigInt(record.dynamodb?.SequenceNumber ?? '0');

test('the lineage is registered before the first Envoy state on it is written', async () => {
  fleet = newFleet(gateway.xdsPort);
  fleet.addMany(2, adsSpec({ node: (i) => ({ id: `reg-${i}`, cluster: 'edge' }) }), 0);
  fleet.connectAll();
  await fleet.waitFor(() => fleet!.envoys().every((e) => ALL_TYPES.every((t) => e.acceptedVersion(t) !== undefined)), { timeoutMs: 30_000 }, () => 'both Envoys ACK every type');
  const lineage = gateway.tracker.snapshot().lineages.find((l) => l.group === 'edge')?.lineage;
  expect(lineage).toBeDefined();

  const registryKey = `${LINEAGE_REGISTRY_KEY.pk} / ${LINEAGE_REGISTRY_KEY.sk}`;
  const firstState = await eventually(() => records.find((r) => keyOf(r).startsWith('ENVOY#reg-') && keyOf(r).endsWith(' / STATE')), 'an Envoy state record');
  const registrations = records.filter((r) => keyOf(r) === registryKey);
  expect(registrations.length).toBeGreaterThan(0);
  expect(sequenceOf(registrations[0]!) < sequenceOf(firstState)).toBe(true);

  const table = openTable({ tableName: TABLE, client: { region: dynamo.region, endpoint: dynamo.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }, logger: testLogger });
  try {
    const registry = await table.aggregates.getLineageRegistry();
    expect(Object.keys(registry.lineages)).toContain(lineage);
  } finally {
    table.close();
  }
});
