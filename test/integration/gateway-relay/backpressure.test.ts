// Backpressure that loses nothing, end to end: simulated Envoys → gateway (relay + tracker +
// recorder) → local DynamoDB whose writes are throttled by the fault seam, upstream the reference
// control plane making config changes. Above the recorder's high-water mark the relay pauses its
// downstream streams (no reads, responses held), so the event queue stays bounded; when the faults
// clear it drains, the relay resumes, the Envoys catch up, and every ACK ends in DynamoDB.
// A control run with --pause-on-backpressure false shows the same load overruns the bound.
import { startControlPlane, type ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import { startLocalDynamo, type LocalDynamo } from '../../../infra/local/dynamo';
import type { Fleet } from '../../../infra/local/envoys';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { ALL_TYPES, adsSpec, endpoints, envoyEvents, eventually, httpGet, newFleet, proxy, startTestGateway, testLogger } from '../gateway/helpers';

const ENVOYS = 6;
const HIGH_WATER = 12;
const LOW_WATER = 4;
const CHANGES = 6;
// Once paused, a stream reads nothing, so no ACK can be classified: the queue stops at the
// high-water mark. The slack allows, per stream, one event per type for a response already in
// flight when the pause began (the relay keeps at most one unanswered response per stream and type).
const BOUND = HIGH_WATER + ENVOYS * ALL_TYPES.length;

let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
const fleets: Fleet[] = [];
const gateways: Gateway[] = [];
let changeCounter = 0;

beforeAll(async () => {
  dynamo = await startLocalDynamo({ logger: testLogger });
  source = new InMemoryRouteSource();
  source.applyEndpoints(endpoints('app', '10.0.0.1'));
  source.applyProxy(proxy('app', 'app.example.com', 'app'));
  controlPlane = await startControlPlane({ port: 0, replicaId: 'cp-bp', source, versionScheme: 'counter', logger: testLogger, holdoffMs: 10, holdoffMaxMs: 50 });
  await controlPlane.rebuildNow();
});

afterAll(async () => {
  dynamo.faults.clear();
  for (const fleet of fleets) fleet.close();
  for (const gateway of gateways) await gateway.close();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

async function startGatewayUnderTest(instanceId: string, pause: boolean): Promise<Gateway> {
  const gateway = await startTestGateway({
    upstream: `127.0.0.1:${controlPlane.port}`,
    table: `gw-bp-${instanceId}`,
    'dynamodb-endpoint': dynamo.endpoint,
    'dynamodb-max-attempts': '1',
    'queue-high-water': String(HIGH_WATER),
    'queue-low-water': String(LOW_WATER),
    'pause-on-backpressure': String(pause),
    'ack-timeout-ms': '600000',
    'instance-id': instanceId,
    watermarks: 'provenance',
  });
  gateways.push(gateway);
  return gateway;
}

function connectFleet(gateway: Gateway, prefix: string): Fleet {
  const fleet = newFleet(gateway.xdsPort);
  fleets.push(fleet);
  // Wildcard: with Envoy-model clients a SotW subscription change carries the last ACKed nonce and
  // version, which the relay counts as one more 'ack' request (xds_programmed_gateway_requests_total) although no
  // new ACK is stored, and the count is compared with the stored ACKs below.
  fleet.addMany(ENVOYS, adsSpec({ node: (i) => ({ id: `${prefix}-${i}`, cluster: 'edge' }), subscriptionModel: 'wildcard' }), 0);
  fleet.connectAll();
  return fleet;
}

/** The gateway version of each type now (the seq of its last change on the group's lineage). */
function currentVersions(gateway: Gateway): Map<string, string> {
  const group = gateway.relay.control.groups().find((g) => g.group === 'edge');
  const versions = new Map<string, string>();
  if (group === undefined) return versions;
  for (const typeUrl of ALL_TYPES) {
    const history = group.typeHistory[typeUrl];
    const seq = history?.[history.length - 1];
    if (seq !== undefined) versions.set(typeUrl, `xp1:${group.lineage}:${seq}`);
  }
  return versions;
}

const allCurrent = (fleet: Fleet, gateway: Gateway): boolean => {
  const versions = currentVersions(gateway);
  return versions.size === ALL_TYPES.length && fleet.envoys().every((envoy) => ALL_TYPES.every((typeUrl) => envoy.acceptedVersion(typeUrl) === versions.get(typeUrl)));
};

/** Config changes touching CDS, EDS and RDS (a new service, its endpoints and a route to it). */
async function makeChanges(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    changeCounter += 1;
    source.applyEndpoints(endpoints(`svc-${changeCounter}`, `10.0.1.${changeCounter % 250}`));
    source.applyProxy(proxy(`svc-${changeCounter}`, `svc-${changeCounter}.example.com`, `svc-${changeCounter}`));
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/** Samples the recorder's queued events (queued + in flight) until stopped; returns the maximum seen. */
function sampleQueue(gateway: Gateway): { stop: () => number } {
  let max = 0;
  const timer = setInterval(() => (max = Math.max(max, gateway.recorder.stats().queuedEvents)), 2);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(max, gateway.recorder.stats().queuedEvents);
    },
  };
}

const throttleWrites = (): void => dynamo.faults.setHook((request) => (['BatchWriteItem', 'PutItem', 'UpdateItem'].includes(request.operation) ? 'throttle' : 'none'));

async function storedAcks(gateway: Gateway, fleet: Fleet): Promise<number> {
  let total = 0;
  for (const envoy of fleet.envoys()) total += (await envoyEvents(gateway.store, envoy.id)).filter((e) => e.outcome === 'ACK').length;
  return total;
}

async function latestAcksStored(gateway: Gateway, fleet: Fleet): Promise<boolean> {
  const versions = currentVersions(gateway);
  for (const envoy of fleet.envoys()) {
    const events = await envoyEvents(gateway.store, envoy.id);
    const has = (typeUrl: string): boolean => {
      const version = versions.get(typeUrl) ?? '';
      const seq = Number(version.slice(version.lastIndexOf(':') + 1));
      return events.some((e) => e.outcome === 'ACK' && e.typeUrl === typeUrl && e.seq === seq);
    };
    if (!ALL_TYPES.every(has)) return false;
  }
  return true;
}

async function ackRequestsCounted(gateway: Gateway): Promise<number> {
  const metric = await gateway.metrics.registry.getSingleMetric('xds_programmed_gateway_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels['class'] === 'ack').reduce((sum, v) => sum + v.value, 0);
}

test('while DynamoDB throttles, paused streams keep the queue bounded; after, every ACK is stored', async () => {
  const gateway = await startGatewayUnderTest('gw-paused', true);
  const fleet = connectFleet(gateway, 'bp');
  await fleet.waitFor(() => allCurrent(fleet, gateway), { timeoutMs: 30_000 }, () => 'all Envoys ACK every type');
  await gateway.recorder.whenIdle();

  throttleWrites();
  const sampler = sampleQueue(gateway);
  try {
    await makeChanges(CHANGES);
    await eventually(() => gateway.relay.control.paused(), 'the relay paused');
    // Held: the Envoys cannot have the latest config while the relay is paused.
    expect(allCurrent(fleet, gateway)).toBe(false);
    expect(gateway.backpressure?.isPaused()).toBe(true);
    const metricsWhilePaused = (await httpGet(gateway.opsPort, '/metrics')).body;
    expect(metricsWhilePaused).toContain('xds_programmed_gateway_relay_paused 1');
    expect(metricsWhilePaused).toMatch(/xds_programmed_gateway_relay_pauses_total [1-9]/);
    expect((await httpGet(gateway.opsPort, '/readyz')).status).toBe(503);
  } finally {
    dynamo.faults.clear();
  }
  // Faults gone: the queue drains below the low-water mark, streams resume, the Envoys catch up.
  await fleet.waitFor(() => allCurrent(fleet, gateway), { timeoutMs: 60_000 }, () => 'all Envoys ACK the latest config after the faults clear');
  // An Envoy has accepted a version as soon as it sends the ACK; a paused stream may still hold that
  // request unread, and reading it after a resume can pause once more. So wait until every latest ACK
  // is stored (an ACK is stored together with the Envoy state it moves) and the relay runs again.
  await eventually(async () => {
    await gateway.recorder.whenIdle();
    return (await latestAcksStored(gateway, fleet)) && !gateway.relay.control.paused() && gateway.recorder.stats().queuedEvents === 0;
  }, 'every latest ACK stored and the relay resumed');
  const maxQueued = sampler.stop();
  if (process.env['BP_VERBOSE'] === '1') process.stderr.write(`paused run: max queued ${maxQueued}, bound ${BOUND}, pauses ${gateway.backpressure?.pauseCount() ?? 0}\n`);
  expect(maxQueued).toBeGreaterThanOrEqual(HIGH_WATER);
  expect(maxQueued).toBeLessThanOrEqual(BOUND);
  expect(gateway.relay.control.paused()).toBe(false);
  expect(gateway.backpressure?.pauseCount()).toBeGreaterThanOrEqual(1);
  expect((await httpGet(gateway.opsPort, '/metrics')).body).toContain('xds_programmed_gateway_relay_paused 0');

  // Nothing lost: every ACK the gateway classified is an event in DynamoDB, including each Envoy's
  // ACK of the latest version of every type.
  const versions = currentVersions(gateway);
  for (const envoy of fleet.envoys()) {
    const events = await envoyEvents(gateway.store, envoy.id);
    for (const typeUrl of ALL_TYPES) {
      const version = versions.get(typeUrl) ?? '';
      const seq = Number(version.slice(version.lastIndexOf(':') + 1));
      expect(events.some((e) => e.outcome === 'ACK' && e.typeUrl === typeUrl && e.seq === seq)).toBe(true);
    }
  }
  expect(await storedAcks(gateway, fleet)).toBe(await ackRequestsCounted(gateway));
  expect(gateway.recorder.stats().dropped).toBe(0);
}, 120_000);

test('control: without pausing, the same load overruns the bound', async () => {
  const gateway = await startGatewayUnderTest('gw-unpaused', false);
  const fleet = connectFleet(gateway, 'nobp');
  await fleet.waitFor(() => allCurrent(fleet, gateway), { timeoutMs: 30_000 }, () => 'all Envoys ACK every type');
  await gateway.recorder.whenIdle();
  throttleWrites();
  const sampler = sampleQueue(gateway);
  try {
    await makeChanges(CHANGES);
    await fleet.waitFor(() => allCurrent(fleet, gateway), { timeoutMs: 30_000 }, () => 'Envoys keep ACKing (nothing pauses them)');
  } finally {
    dynamo.faults.clear();
  }
  const maxQueued = sampler.stop();
  if (process.env['BP_VERBOSE'] === '1') process.stderr.write(`unpaused run: max queued ${maxQueued}, bound ${BOUND}\n`);
  expect(maxQueued).toBeGreaterThan(BOUND);
  expect(gateway.relay.control.paused()).toBe(false);
  await gateway.recorder.whenIdle();
}, 120_000);
