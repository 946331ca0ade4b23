// Stream admission (docs/GATEWAY.md, "Stream admission"; RELIABILITY.md finding "invariant 1 at
// start-up"): a new stream's first response waits until the recorder has durably written the
// Envoy's state for it, and that write comes after a LINEAGE write whose `envoysRecorded` counts it.
// Without it, an Envoy could hold (or NACK) config from a lineage whose count leaves it out, and
// convergence decided without it. The store is made slow (the local DynamoDB front's latency seam)
// so that, without admission, the response would go out long before the count is stored.
import * as grpc from '@grpc/grpc-js';
import { ADS_SERVICE, createDiscoveryClient, openAdsSotw, type DiscoveryRequest, type DiscoveryResponse } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import type { InMemoryRouteSource } from '../../../infra/local/control-plane/route-source';
import type { LocalDynamo } from '../../../infra/local/dynamo';
import type { Gateway } from '../../../xds-gateway/ops/gateway';
import { ALL_TYPES, envoyState, eventually, lineageState, startDynamoAndControlPlane, startTestGateway } from './helpers';

const TABLE = 'gw-admission';
/** Far above the time the gateway needs to answer from its cache: the race is not close. */
const STORE_LATENCY_MS = 600;
let dynamo: LocalDynamo;
let source: InMemoryRouteSource;
let controlPlane: ControlPlane;
let gateway: Gateway;
let client: grpc.Client;

beforeAll(async () => {
  ({ dynamo, source, controlPlane } = await startDynamoAndControlPlane());
  gateway = await startTestGateway({ upstream: `127.0.0.1:${controlPlane.port}`, table: TABLE, 'dynamodb-endpoint': dynamo.endpoint });
  client = createDiscoveryClient(ADS_SERVICE, `127.0.0.1:${gateway.xdsPort}`);
});

afterAll(async () => {
  dynamo.faults.clear();
  client.close();
  await gateway.close();
  await controlPlane.close();
  await source.close();
  await dynamo.close();
});

interface Observed {
  typeUrl: string;
  /** Whether, when this response arrived, the gateway had durably written the Envoy's state. */
  stateWritten: boolean;
}

/** Opens an ADS stream for `nodeId`, subscribes to every type, resolves with the first response seen. */
function firstResponse(nodeId: string): { first: Promise<Observed>; cancel: () => void } {
  const call = openAdsSotw(client);
  call.on('error', () => undefined);
  const first = new Promise<Observed>((resolve) => {
    call.on('data', (response: DiscoveryResponse) => {
      // Synchronous: the recorder's view at the moment the Envoy holds config (no I/O in between).
      resolve({ typeUrl: response.type_url ?? '', stateWritten: gateway.recorder.storedEnvoyRev(nodeId) !== undefined });
    });
  });
  for (const typeUrl of ALL_TYPES) {
    const request: DiscoveryRequest = { node: { id: nodeId, cluster: 'edge' }, type_url: typeUrl, resource_names: [], version_info: '', response_nonce: '' };
    call.write(request);
  }
  return { first, cancel: () => call.cancel() };
}

test('a warm-up Envoy makes the gateway ready (upstream cache filled) before the store is slowed', async () => {
  const warm = firstResponse('warm-0');
  await expect(warm.first).resolves.toMatchObject({ stateWritten: true });
  warm.cancel();
});

test('with a slow store, a new Envoy gets no response before its state is written and counted', async () => {
  dynamo.faults.set({ latencyMs: STORE_LATENCY_MS });
  const late = firstResponse('late-0');
  const observed = await late.first;
  expect(observed.stateWritten).toBe(true);
  dynamo.faults.clear();
  // The stored state is on a lineage whose stored count includes it.
  const state = await eventually(() => envoyState(gateway.store, 'late-0'), 'late-0 state stored');
  const lineage = await eventually(() => lineageState(gateway.store, state.lineage), 'its lineage stored');
  expect(lineage.envoysRecorded ?? 0).toBeGreaterThanOrEqual(2);
  late.cancel();
}, 30_000);
