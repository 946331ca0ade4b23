// A server caps concurrent HTTP/2 streams per connection (the gateway: 100 by default). A fleet that
// put more Envoys on one channel than that would leave the extra ones queued by HTTP/2, never
// connected, without any error. The fleet opens channels as needed instead.
import { CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, CLUSTER_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL } from '../../../common/xds';
import type { ControlPlane } from '../../../infra/local/control-plane/control-plane';
import { Fleet } from '../../../infra/local/envoys';
import type { Relay } from '../../../xds-gateway/relay';
import { eventually, newSource, RecordingObserver, startTestControlPlane, startTestRelay, testLogger } from '../gateway-relay/helpers';

const TYPES = [CLUSTER_TYPE_URL, CLUSTER_LOAD_ASSIGNMENT_TYPE_URL, LISTENER_TYPE_URL, ROUTE_CONFIGURATION_TYPE_URL];

describe('Fleet: per-channel stream cap', () => {
  let controlPlane: ControlPlane;
  let relay: Relay;
  let fleet: Fleet;

  beforeAll(async () => {
    controlPlane = await startTestControlPlane(newSource());
    relay = await startTestRelay(controlPlane.address, new RecordingObserver(), { limits: { maxStreamsPerConnection: 20 } });
  });

  afterAll(async () => {
    fleet.close();
    await relay.control.close();
    await controlPlane.close();
  });

  it('connects every Envoy when the Envoys outnumber channels × the server\'s streams per connection', async () => {
    // 2 channels × 20 streams hold 40 ADS Envoys; 45 ADS Envoys and 5 per-type Envoys (4 streams each)
    // need 65 streams, i.e. at least 4 channels.
    fleet = new Fleet({ target: `127.0.0.1:${relay.port}`, channels: 2, maxStreamsPerChannel: 20, logger: testLogger });
    const subscriptions = TYPES.map((typeUrl) => ({ typeUrl }));
    const ads = fleet.addMany(45, { transport: 'ads', protocol: 'sotw', subscriptions, node: (index) => ({ id: `cap-${index}`, cluster: 'cap' }) });
    const perType = fleet.addMany(5, { transport: 'per-type', protocol: 'sotw', subscriptions, node: (index) => ({ id: `cap-${index}`, cluster: 'cap' }) });
    fleet.connectAll();
    const envoys = [...ads, ...perType];
    await eventually(() => envoys.every((envoy) => TYPES.every((typeUrl) => envoy.acceptedVersion(typeUrl) !== undefined)), 'every Envoy ACKed every type', 30_000);
    expect(relay.openStreams()).toBe(45 + 5 * TYPES.length);
    expect(fleet.channels).toBeGreaterThanOrEqual(4);
    // No more channels than the cap requires: 65 streams at 20 per channel fit in 4.
    expect(fleet.channels).toBeLessThanOrEqual(4);
  });
});
