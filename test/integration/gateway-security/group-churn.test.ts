// A client inventing node clusters creates a node group (and a lineage) per stream. The relay frees
// idle groups; here the whole gateway must let go of them too: the recorder's per-lineage state, the
// tracker's upstream status and the barrier's record, once nothing of the lineage is queued. What is
// stored stays right (every state written, its lineage counting it) and the gateway stays ready.
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { envoyState, eventually, lineageState, startGatewayOnLocalSystem, subscribeAllTypes, type GatewayOnLocalSystem } from '../gateway/helpers';

const GROUPS = 24;
let system: GatewayOnLocalSystem;
let gateway: Gateway;

beforeAll(async () => {
  system = await startGatewayOnLocalSystem('gw-group-churn', { 'group-idle-ms': '200' });
  gateway = system.gateway;
});

afterAll(async () => {
  await system.close();
});

async function serveOnce(nodeId: string, cluster: string): Promise<void> {
  const reader = subscribeAllTypes(system.client, { id: nodeId, cluster });
  const response = await reader.next(10_000);
  reader.send({ type_url: response.type_url ?? '', response_nonce: response.nonce ?? '', version_info: response.version_info ?? '', resource_names: [] });
  await eventually(() => envoyState(gateway.store, nodeId), `${nodeId} stored`);
  reader.call.cancel();
  await reader.status;
}

test(`${GROUPS} invented node clusters: every group, lineage and per-lineage record is let go; what was stored stays right`, async () => {
  for (let index = 0; index < GROUPS; index++) await serveOnce(`churn-${index}`, `invented-${index}`);
  await eventually(() => gateway.relay.control.groups().length === 0, 'every idle group freed');
  await gateway.recorder.whenIdle();
  await gateway.recorder.flushNow();
  // Nothing of the retired lineages is kept (their disconnect states are written first).
  await eventually(() => gateway.recorder.lineagesKept() === 0, 'the recorder keeps no retired lineage');
  expect(gateway.ready()).toBe(true);
  expect(gateway.tracker.upstreamReady()).toBe(true);
  // Each stored state is counted by its lineage's stored count.
  for (let index = 0; index < GROUPS; index++) {
    const state = await envoyState(gateway.store, `churn-${index}`);
    if (state === undefined) throw new Error(`churn-${index} not stored`);
    expect(state.status).toBe('DISCONNECTED');
    expect((await lineageState(gateway.store, state.lineage))?.envoysRecorded).toBe(1);
  }
  // A group that comes back is served again, on a new lineage.
  await serveOnce('churn-again', 'invented-0');
  const again = await envoyState(gateway.store, 'churn-again');
  const first = await envoyState(gateway.store, 'churn-0');
  expect(again?.lineage).not.toBe(first?.lineage);
}, 120_000);
