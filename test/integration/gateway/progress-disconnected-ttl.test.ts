// PROGRESS counts a disconnected Envoy for the TTL (docs/GATEWAY.md, "PROGRESS"), from the tracker's
// memory: the gateway must not forget it sooner. With a TTL longer than the tracker's default memory
// of a disconnected Envoy (FORGET_DISCONNECTED_MS), the Envoy stays a member until its TTL, as the
// functions' rule and the shard path count it, and leaves after.
//
// Time: the gateway runs on a clock the test moves (its timers still tick in real time); the
// tracker's heartbeat pass, where forgetting happens, is called at the moved time.
import { FORGET_DISCONNECTED_MS } from '../../../xds-gateway/tracking/envoy-tracker';
import { eventually, startGatewayOnLocalSystem, subscribeAllTypes, type GatewayOnLocalSystem } from './helpers';

const TTL_MS = FORGET_DISCONNECTED_MS + 5 * 60_000;

let system: GatewayOnLocalSystem;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

beforeAll(async () => {
  system = await startGatewayOnLocalSystem('gw-progress-disconnected-ttl', { progress: 'true', 'envoy-ttl-ms': String(TTL_MS), 'lineage-heartbeat-ms': '300' }, { clock });
});

afterAll(async () => {
  await system.close();
});

test('a disconnected Envoy stays in PROGRESS until its TTL, past the tracker\'s default memory, then leaves', async () => {
  const { gateway, client } = system;
  const publisher = gateway.progress!;
  const reader = subscribeAllTypes(client, { id: 'envoy-kept', cluster: 'edge' });
  const lineage = await eventually(() => gateway.tracker.envoyState('envoy-kept')?.lineage, 'the Envoy tracked on a lineage');
  await eventually(() => (publisher.published(lineage)?.members === 1 ? true : undefined), 'PROGRESS counts the connected Envoy');

  reader.close();
  await eventually(() => (gateway.tracker.envoyState('envoy-kept')?.status === 'DISCONNECTED' ? true : undefined), 'the Envoy disconnected');

  // Past the tracker's default memory, within the TTL: still tracked, still a member.
  offsetMs = FORGET_DISCONNECTED_MS + 60_000;
  gateway.tracker.heartbeatEnvoys();
  await publisher.whenIdle();
  expect(gateway.tracker.envoyState('envoy-kept')?.status).toBe('DISCONNECTED');
  expect(publisher.published(lineage)?.members).toBe(1);

  // Past the TTL: forgotten, and the next item no longer counts it.
  offsetMs = TTL_MS + 60_000;
  gateway.tracker.heartbeatEnvoys();
  await eventually(() => (gateway.tracker.envoyState('envoy-kept') === undefined ? true : undefined), 'the Envoy forgotten after its TTL');
  await eventually(() => (publisher.published(lineage)?.members === 0 ? true : undefined), 'PROGRESS without the Envoy');
});
